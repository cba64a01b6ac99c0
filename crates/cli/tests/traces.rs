//! OpenTelemetry traces against a real receiver: Arize Phoenix
//! (`phoenix serve`, from PyPI, installed by `scripts/test` into the build
//! folder and named by `STEPWISE_TEST_PHOENIX`). A scripted run is traced
//! over OTLP/HTTP, then Phoenix's REST API must hold the span tree (run →
//! nodes → step attempts → tool and model calls) with the GenAI attributes
//! and the run's token counts; `--trace-content` adds prompts and tool
//! arguments; a run paused for approval and resumed in another process is
//! one trace; so is a run crashed mid-step and resumed; runs driven by
//! `stepwise serve` and by `stepwise worker` (on `$STEPWISE_TEST_PG`) are
//! traced alike. Without a receiver (a closed port, or one that never answers)
//! a run finishes as fast as untraced and warns once.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    dead_code,
    unreachable_pub
)]

mod common;

use std::collections::HashMap;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{Out, Scratch, Stepwise};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use stepwise_store::postgres::testing::ScratchDb;

/// A port nothing listens on any more (bound, then released).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `phoenix serve` on free ports in a working folder of its own; killed when dropped.
struct Phoenix {
    child: Child,
    http: u16,
    _dir: Scratch,
}

impl Phoenix {
    fn start() -> Self {
        let bin = std::env::var_os("STEPWISE_TEST_PHOENIX").map(PathBuf::from).unwrap_or_else(|| {
            panic!(
                "STEPWISE_TEST_PHOENIX is not set: run scripts/test (it installs Arize Phoenix from \
                 scripts/phoenix-requirements.txt into the build folder and sets it)"
            )
        });
        assert!(
            bin.is_file(),
            "STEPWISE_TEST_PHOENIX={} is not a file: run scripts/test to install Arize Phoenix",
            bin.display()
        );
        let dir = Scratch::new("traces", "phoenix");
        let http = free_port();
        let grpc = free_port();
        let log = std::fs::File::create(dir.path().join("phoenix.log")).unwrap();
        let child = Command::new(&bin)
            .arg("serve")
            .env("PHOENIX_WORKING_DIR", dir.path())
            .env("PHOENIX_HOST", "127.0.0.1")
            .env("PHOENIX_PORT", http.to_string())
            .env("PHOENIX_GRPC_PORT", grpc.to_string())
            .env("PHOENIX_TELEMETRY_ENABLED", "false")
            .env("HOME", dir.path())
            .stdout(Stdio::from(log.try_clone().unwrap()))
            .stderr(Stdio::from(log))
            .spawn()
            .unwrap();
        let mut phoenix = Self {
            child,
            http,
            _dir: dir,
        };
        let deadline = Instant::now() + Duration::from_secs(300);
        loop {
            if let Some(status) = phoenix.child.try_wait().unwrap() {
                panic!("phoenix serve exited ({status}): {}", phoenix.log());
            }
            if phoenix.get("/healthz").is_some() {
                return phoenix;
            }
            assert!(
                Instant::now() < deadline,
                "phoenix serve did not come up in 300 s: {}",
                phoenix.log()
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self._dir.path().join("phoenix.log")).unwrap_or_default()
    }

    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.http)
    }

    /// GET `path`, the body if 200.
    fn get(&self, path: &str) -> Option<String> {
        let (status, body) = http(self.http, "GET", path, None)?;
        (status == 200).then_some(body)
    }

    /// The spans of `trace` Phoenix holds, once `until` holds for them.
    fn spans(&self, trace: &str, until: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let body = self
                .get("/v1/projects/default/spans?limit=1000")
                .unwrap_or_default();
            let all: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
            let spans: Vec<Value> = all["data"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|s| s["context"]["trace_id"] == trace)
                .cloned()
                .collect();
            if until(&spans) {
                return spans;
            }
            assert!(
                Instant::now() < deadline,
                "Phoenix did not get the spans expected in 60 s; it has {}: {spans:#?}",
                spans.len()
            );
            std::thread::sleep(Duration::from_millis(300));
        }
    }
}

impl Drop for Phoenix {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One HTTP/1.0 request to 127.0.0.1:`port`: the status and the body.
fn http(port: u16, method: &str, path: &str, json: Option<&Value>) -> Option<(u16, String)> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .ok()?;
    let body = json.map(Value::to_string).unwrap_or_default();
    let head = format!(
        "{method} {path} HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).ok()?;
    stream.write_all(body.as_bytes()).ok()?;
    let mut text = String::new();
    stream.read_to_string(&mut text).ok()?;
    let (head, body) = text.split_once("\r\n\r\n")?;
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    Some((status, body.to_owned()))
}

/// `stepwise serve` exports the runs it drives: the same tree, under the
/// run id the server gave.
fn served_run_is_traced(phoenix: &Phoenix) {
    let site = Scratch::new("traces", "serve");
    let tiny = site.path().join("roots/tiny");
    std::fs::create_dir_all(&tiny).unwrap();
    std::fs::copy(
        notes().join("latency-budget.txt"),
        tiny.join("latency-budget.txt"),
    )
    .unwrap();
    std::fs::write(
        site.path().join("stepwise.toml"),
        "[serve]\nnotes_roots = [\"roots\"]\n",
    )
    .unwrap();
    let mut server = Stepwise::new()
        .current_dir(site.path())
        .db(&site.db())
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", phoenix.endpoint())
        .args(["serve", "--listen", "127.0.0.1:0", "--insecure-no-auth"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn();
    let mut line = String::new();
    let mut stdout = std::io::BufReader::new(server.take_stdout().unwrap());
    std::io::BufRead::read_line(&mut stdout, &mut line).unwrap();
    let port: u16 = line
        .trim()
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no address printed: {line:?}"));
    let goal = json!({"goal": "What is the latency budget for the first token?", "notes": "tiny"});
    let (status, body) = http(port, "POST", "/v1/runs", Some(&goal)).unwrap();
    assert_eq!(status, 202, "{body}");
    let run = serde_json::from_str::<Value>(&body).unwrap()["run_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let spans = phoenix.spans(&trace_of(&run), has_root);
    let ids = by_id(&spans);
    let root = named(&spans, "run")[0];
    assert_eq!(root["attributes"]["stepwise.run_id"], run.as_str());
    assert_eq!(root["attributes"]["stepwise.status"], "ok");
    let (_, shown) = http(port, "GET", &format!("/v1/runs/{run}"), None).unwrap();
    let shown: Value = serde_json::from_str(&shown).unwrap();
    assert_eq!(
        root["attributes"]["stepwise.tool_calls"],
        shown["usage"]["tool_calls"]
    );
    let mut tools = 0;
    for tool in spans
        .iter()
        .filter(|s| s["attributes"]["gen_ai.operation.name"] == "execute_tool")
    {
        let step = ids[tool["parent_id"].as_str().unwrap()];
        assert_eq!(step["name"], "execute_step");
        assert_eq!(parent_name(&ids, step), "dispatch_wave");
        tools += 1;
    }
    assert_eq!(json!(tools), shown["usage"]["tool_calls"], "{spans:#?}");
    for node in [
        "prepare_input",
        "create_plan",
        "validate_plan",
        "synthesize_report",
    ] {
        assert_eq!(named(&spans, node).len(), 1, "{node}: {spans:#?}");
    }
    server.kill();
}

/// `stepwise worker` exports the runs it claims from a PostgreSQL queue
/// (`$STEPWISE_TEST_PG`, which `scripts/test` starts): the same tree.
fn worked_run_is_traced(phoenix: &Phoenix, env: &Env) {
    let db = ScratchDb::new("traces").unwrap_or_else(|e| panic!("{e}"));
    let pg = |args: &[&str]| {
        Stepwise::new()
            .current_dir(env.dir.path())
            .env("STEPWISE_DB", db.url())
            .args(args)
            .run()
    };
    let migrated = pg(&["migrate"]);
    assert_eq!(migrated.code, 0, "{}", migrated.stderr);
    std::fs::write(env.dir.path().join("worker.json"), script().to_string()).unwrap();
    let notes = notes();
    let queued = pg(&[
        "run",
        "What is our latency budget?",
        "--notes",
        notes.to_str().unwrap(),
        "--model",
        "script:worker.json",
        "--run-id",
        "run_worker",
        "--detach",
    ]);
    assert_eq!(queued.code, 0, "{}", queued.stderr);
    let worked = Stepwise::new()
        .current_dir(env.dir.path())
        .env("STEPWISE_DB", db.url())
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", phoenix.endpoint())
        .args(["worker", "--drain", "--poll-ms", "50", "--quiet"])
        .run();
    assert_eq!(worked.code, 0, "{}", worked.stderr);
    let spans = phoenix.spans(&trace_of("run_worker"), |s| has_root(s) && s.len() >= 14);
    let ids = by_id(&spans);
    let root = named(&spans, "run")[0];
    assert_eq!(root["attributes"]["stepwise.status"], "ok");
    assert_eq!(
        root["attributes"]["gen_ai.usage.input_tokens"],
        101 + 52 + 73
    );
    let tool = named(&spans, "execute_tool search_notes");
    assert_eq!(tool.len(), 1, "{spans:#?}");
    assert_eq!(parent_name(&ids, tool[0]), "execute_step");
    let planner = spans
        .iter()
        .find(|s| s["attributes"]["stepwise.role"] == "planner")
        .unwrap_or_else(|| panic!("no planner call: {spans:#?}"));
    assert_eq!(parent_name(&ids, planner), "create_plan");
    assert_eq!(planner["attributes"]["gen_ai.usage.input_tokens"], 101);
}

/// The trace id Stepwise derives from a run id (hex).
fn trace_of(run: &str) -> String {
    Sha256::digest(run.as_bytes())[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn notes() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/notes")
}

/// One search step, then an assessment and a report: three model calls
/// with distinct token counts.
fn script() -> Value {
    json!([
        {"purpose": "planner", "usage": {"input_tokens": 101, "output_tokens": 21},
         "json": {"steps": [{"id": "find", "description": "Find the latency budget", "tool": "search_notes",
            "args": {"query": "latency budget first token"},
            "acceptance_criteria": ["a passage about the latency budget"]}]}},
        {"purpose": "assessor", "usage": {"input_tokens": 52, "output_tokens": 12},
         "json": {"acceptance_met": true, "verdict": "continue", "reason": "the budget is stated",
            "new_gaps": [], "resolved_gaps": [], "observations": []}},
        {"purpose": "synthesizer", "usage": {"input_tokens": 73, "output_tokens": 33},
         "json": {"text": "# Latency\n\nThe team set a budget to first token [latency-budget].",
            "evidence": [{"source_id": "latency-budget", "step": "find", "quote": "1.5 seconds"}]}}
    ])
}

/// The first N such that a run of the test's script aborted after its
/// N-th committed write ends with `step_started`: where a crash cuts a step
/// in flight. Found by trying each N on a scratch database of its own, so
/// the test does not depend on how the engine groups its commits.
fn writes_to_a_step_start(env: &Env) -> usize {
    for n in 1..=40 {
        let db = env.dir.path().join(format!("probe-{n}.db"));
        let out = Stepwise::new()
            .current_dir(env.dir.path())
            .db(&db)
            .env("STEPWISE_FAILPOINT", format!("abort-after-writes={n}"))
            .args(["run", "What is our latency budget?", "--notes"])
            .args([notes().to_str().unwrap(), "--model", "script:script.json"])
            .args(["--run-id", "run_probe", "--quiet"])
            .run();
        assert_ne!(
            out.code, 0,
            "write {n} is past the run's end: {}",
            out.stderr
        );
        let shown = Stepwise::new()
            .current_dir(env.dir.path())
            .db(&db)
            .args(["show", "run_probe", "--json"])
            .run();
        if shown.code != 0 {
            continue; // aborted before the run's first event
        }
        let shown = shown.json();
        let last = shown["execution_history"]
            .as_array()
            .and_then(|h| h.last())
            .cloned();
        if last.is_some_and(|e| e["kind"] == "step_started") {
            return n;
        }
    }
    panic!("no write of the first 40 leaves a step started and unfinished");
}

struct Env {
    dir: Scratch,
}

impl Env {
    fn new(name: &str) -> Self {
        let dir = Scratch::new("traces", name);
        std::fs::write(dir.path().join("script.json"), script().to_string()).unwrap();
        Self { dir }
    }

    fn stepwise(&self, endpoint: Option<&str>, args: &[&str]) -> Out {
        let mut cmd = Stepwise::new()
            .current_dir(self.dir.path())
            .db(&self.dir.db());
        if let Some(endpoint) = endpoint {
            cmd = cmd.env("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint);
        }
        cmd.args(args).run()
    }

    fn run(&self, endpoint: Option<&str>, run_id: &str, extra: &[&str]) -> (Out, Value) {
        let notes = notes();
        let mut args = vec![
            "run",
            "What is our latency budget?",
            "--notes",
            notes.to_str().unwrap(),
            "--model",
            "script:script.json",
            "--run-id",
            run_id,
            "--json",
            "--quiet",
        ];
        args.extend_from_slice(extra);
        let out = self.stepwise(endpoint, &args);
        assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
        let v = out.json();
        (out, v)
    }
}

fn by_id(spans: &[Value]) -> HashMap<String, &Value> {
    spans
        .iter()
        .map(|s| (s["context"]["span_id"].as_str().unwrap().to_owned(), s))
        .collect()
}

fn named<'a>(spans: &'a [Value], name: &str) -> Vec<&'a Value> {
    spans.iter().filter(|s| s["name"] == name).collect()
}

fn parent_name<'a>(ids: &HashMap<String, &'a Value>, span: &Value) -> &'a str {
    let parent = span["parent_id"]
        .as_str()
        .unwrap_or_else(|| panic!("no parent: {span:#}"));
    ids.get(parent)
        .unwrap_or_else(|| panic!("parent {parent} not exported: {span:#}"))["name"]
        .as_str()
        .unwrap()
}

fn time(span: &Value, which: &str) -> chrono::DateTime<chrono::FixedOffset> {
    chrono::DateTime::parse_from_rfc3339(span[which].as_str().unwrap()).unwrap()
}

fn has_root(spans: &[Value]) -> bool {
    spans.iter().any(|s| s["name"] == "run")
}

#[test]
fn phoenix_receives_the_span_tree_with_genai_attributes_and_the_runs_tokens() {
    let phoenix = Phoenix::start();
    let env = Env::new("tree");
    let (out, v) = env.run(Some(&phoenix.endpoint()), "run_traced", &[]);
    assert!(!out.stderr.contains("warning"), "{}", out.stderr);
    assert_eq!(v["status"], "ok");
    let trace = trace_of("run_traced");
    // The root is sent last: its arrival means the run's spans are in.
    let spans = phoenix.spans(&trace, |s| has_root(s) && s.len() >= 14);
    let ids = by_id(&spans);

    // One root: the run, with the run's totals.
    let roots: Vec<_> = spans.iter().filter(|s| s["parent_id"].is_null()).collect();
    assert_eq!(roots.len(), 1, "{roots:#?}");
    let root = roots[0];
    assert_eq!(root["name"], "run");
    let a = &root["attributes"];
    assert_eq!(a["stepwise.run_id"], "run_traced");
    assert_eq!(a["stepwise.status"], "ok");
    assert_eq!(a["gen_ai.operation.name"], "invoke_agent");
    assert_eq!(a["gen_ai.usage.input_tokens"], v["usage"]["input_tokens"]);
    assert_eq!(a["gen_ai.usage.output_tokens"], v["usage"]["output_tokens"]);
    assert_eq!(v["usage"]["input_tokens"], 101 + 52 + 73);

    // Graph nodes under the run, in DESIGN.md's names.
    for node in [
        "prepare_input",
        "create_plan",
        "validate_plan",
        "review_plan",
        "dispatch_wave",
        "assess_progress",
        "synthesize_report",
    ] {
        let found = named(&spans, node);
        assert_eq!(found.len(), 1, "{node}: {spans:#?}");
        assert_eq!(parent_name(&ids, found[0]), "run", "{node}");
        assert_eq!(
            found[0]["attributes"]["stepwise.plan_version"]
                .as_i64()
                .unwrap_or(1),
            1
        );
    }

    // The step attempt under its wave, its tool call under it.
    let step = named(&spans, "execute_step");
    assert_eq!(step.len(), 1, "{spans:#?}");
    assert_eq!(parent_name(&ids, step[0]), "dispatch_wave");
    assert_eq!(step[0]["attributes"]["stepwise.step_id"], "find");
    assert_eq!(step[0]["attributes"]["stepwise.attempt"], 1);
    assert_eq!(step[0]["attributes"]["stepwise.plan_version"], 1);
    let tool = named(&spans, "execute_tool search_notes");
    assert_eq!(tool.len(), 1, "{spans:#?}");
    assert_eq!(parent_name(&ids, tool[0]), "execute_step");
    assert_eq!(
        tool[0]["attributes"]["gen_ai.operation.name"],
        "execute_tool"
    );
    assert_eq!(tool[0]["attributes"]["gen_ai.tool.name"], "search_notes");
    assert_eq!(tool[0]["attributes"]["stepwise.step_id"], "find");

    // Model calls under the node they decided, with their own tokens.
    let chats: Vec<&Value> = spans
        .iter()
        .filter(|s| s["attributes"]["gen_ai.operation.name"] == "chat")
        .collect();
    assert_eq!(chats.len(), 3, "{spans:#?}");
    let mut tokens = (0, 0);
    for (role, node, input, output) in [
        ("planner", "create_plan", 101, 21),
        ("assessor", "assess_progress", 52, 12),
        ("synthesizer", "synthesize_report", 73, 33),
    ] {
        let chat = chats
            .iter()
            .find(|s| s["attributes"]["stepwise.role"] == role)
            .unwrap_or_else(|| panic!("no {role} call: {chats:#?}"));
        let a = &chat["attributes"];
        assert_eq!(parent_name(&ids, chat), node, "{role}");
        assert_eq!(chat["name"], "chat script.json");
        assert_eq!(a["gen_ai.request.model"], "script.json");
        assert_eq!(a["gen_ai.provider.name"], "script");
        assert_eq!(a["gen_ai.system"], "script");
        assert_eq!(a["gen_ai.usage.input_tokens"], input, "{role}");
        assert_eq!(a["gen_ai.usage.output_tokens"], output, "{role}");
        assert_eq!(a["stepwise.run_id"], "run_traced");
        tokens.0 += a["gen_ai.usage.input_tokens"].as_u64().unwrap();
        tokens.1 += a["gen_ai.usage.output_tokens"].as_u64().unwrap();
    }
    assert_eq!(json!(tokens.0), v["usage"]["input_tokens"]);
    assert_eq!(json!(tokens.1), v["usage"]["output_tokens"]);

    // Every span is within its parent, carries the run id, and no text:
    // neither the goal nor a note's words (no --trace-content).
    for span in &spans {
        assert_eq!(
            span["attributes"]["stepwise.run_id"], "run_traced",
            "{span:#}"
        );
        if let Some(parent) = span["parent_id"].as_str() {
            let parent = ids[parent];
            assert!(
                time(span, "start_time") >= time(parent, "start_time"),
                "{span:#}\n{parent:#}"
            );
            assert!(
                time(span, "end_time") <= time(parent, "end_time"),
                "{span:#}\n{parent:#}"
            );
        }
        let text = span.to_string();
        for secret in [
            "latency budget first token",
            "What is our latency budget",
            "1.5 seconds",
        ] {
            assert!(!text.contains(secret), "{secret:?} in {span:#}");
        }
    }

    // --trace-content: prompts, answers, tool arguments and results.
    let (_, v) = env.run(
        Some(&phoenix.endpoint()),
        "run_content",
        &["--trace-content"],
    );
    assert_eq!(v["status"], "ok");
    let spans = phoenix.spans(&trace_of("run_content"), |s| has_root(s) && s.len() >= 14);
    let planner = spans
        .iter()
        .find(|s| s["attributes"]["stepwise.role"] == "planner")
        .unwrap();
    let prompt = planner["attributes"]["gen_ai.input.messages"]
        .as_str()
        .unwrap();
    assert!(prompt.contains("What is our latency budget?"), "{prompt}");
    let tool = named(&spans, "execute_tool search_notes")[0];
    let args = tool["attributes"]["gen_ai.tool.call.arguments"]
        .as_str()
        .unwrap();
    assert!(args.contains("latency budget first token"), "{args}");
    assert!(
        tool["attributes"]["gen_ai.tool.call.result"]
            .as_str()
            .unwrap()
            .contains("latency-budget")
    );

    served_run_is_traced(&phoenix);
    worked_run_is_traced(&phoenix, &env);

    // A crash mid-step (the process aborts after writing `step_started`),
    // then a resume: one trace whose root the resuming process sends, the
    // cut attempt as an error, the retry under the same wave, no orphan.
    let failpoint = format!("abort-after-writes={}", writes_to_a_step_start(&env));
    let crash = Stepwise::new()
        .current_dir(env.dir.path())
        .db(&env.dir.db())
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", phoenix.endpoint())
        .env("STEPWISE_FAILPOINT", &failpoint)
        .args([
            "run",
            "What is our latency budget?",
            "--notes",
            notes().to_str().unwrap(),
        ])
        .args([
            "--model",
            "script:script.json",
            "--run-id",
            "run_crash",
            "--quiet",
        ])
        .run();
    assert_ne!(
        crash.code, 0,
        "the failpoint did not abort: {}",
        crash.stderr
    );
    let shown = env.stepwise(None, &["show", "run_crash", "--json"]).json();
    let last = shown["execution_history"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(
        last["kind"], "step_started",
        "the crash is mid-step: {last:#}"
    );
    let rest = json!(script().as_array().unwrap()[1..].to_vec());
    std::fs::write(env.dir.path().join("script.json"), rest.to_string()).unwrap();
    let resumed = env.stepwise(
        Some(&phoenix.endpoint()),
        &["resume", "run_crash", "--json", "--quiet"],
    );
    assert_eq!(resumed.code, 0, "{}{}", resumed.stdout, resumed.stderr);
    std::fs::write(env.dir.path().join("script.json"), script().to_string()).unwrap();
    let v = resumed.json();
    assert_eq!(v["status"], "ok");
    let spans = phoenix.spans(&trace_of("run_crash"), has_root);
    let ids = by_id(&spans);
    assert_eq!(named(&spans, "run").len(), 1, "{spans:#?}");
    assert!(
        named(&spans, "resume").is_empty(),
        "the root was not sent before the crash"
    );
    let root = named(&spans, "run")[0];
    assert_eq!(
        root["attributes"]["gen_ai.usage.input_tokens"],
        v["usage"]["input_tokens"]
    );
    let mut attempts = named(&spans, "execute_step");
    attempts.sort_by_key(|s| s["attributes"]["stepwise.attempt"].as_i64());
    assert_eq!(attempts.len(), 2, "{spans:#?}");
    assert_eq!(attempts[0]["status_code"], "ERROR");
    assert_eq!(attempts[0]["attributes"]["error.type"], "interrupted");
    assert_eq!(attempts[1]["status_code"], "UNSET");
    assert_eq!(
        attempts[0]["parent_id"], attempts[1]["parent_id"],
        "one wave"
    );
    for span in &spans {
        let parent = span["parent_id"].as_str();
        assert!(
            parent.is_none_or(|p| ids.contains_key(p)),
            "orphan: {span:#}"
        );
    }

    // A run that waits for an approval, then is resumed by another process:
    // one trace, the root sent once, the resume under it.
    let ws = env.dir.path().join("ws");
    let react = json!([
        {"purpose": "actor", "usage": {"input_tokens": 40, "output_tokens": 4},
         "json": {"action": "call", "thought": "save a note",
            "tool": "write_file", "args": {"path": "note.md", "content": "budget"}}},
        {"purpose": "actor", "usage": {"input_tokens": 60, "output_tokens": 6},
         "json": {"action": "answer", "report": {"text": "Saved note.md. [call-1]", "evidence": [
                {"source_id": "call-1", "step": "call-1", "quote": "note.md"}]}, "gaps": []}}
    ]);
    std::fs::write(env.dir.path().join("react.json"), react.to_string()).unwrap();
    let notes = notes();
    let endpoint = phoenix.endpoint();
    let paused = env.stepwise(
        Some(&endpoint),
        &[
            "run",
            "Save a note",
            "--notes",
            notes.to_str().unwrap(),
            "--workspace",
            ws.to_str().unwrap(),
            "--model",
            "script:react.json",
            "--strategy",
            "react",
            "--run-id",
            "run_paused",
            "--quiet",
        ],
    );
    assert_eq!(paused.code, 4, "{}{}", paused.stdout, paused.stderr);
    let trace = trace_of("run_paused");
    let first = phoenix.spans(&trace, has_root);
    let root = named(&first, "run")[0];
    assert_eq!(root["attributes"]["stepwise.status"], "awaiting_approval");
    assert_eq!(env.stepwise(None, &["approve", "run_paused"]).code, 0);
    std::fs::write(
        env.dir.path().join("react.json"),
        json!([react[1].clone()]).to_string(),
    )
    .unwrap();
    let done = env.stepwise(
        Some(&endpoint),
        &["resume", "run_paused", "--json", "--quiet"],
    );
    assert_eq!(done.code, 0, "{}{}", done.stdout, done.stderr);
    let v = done.json();
    assert_eq!(v["status"], "ok");
    let spans = phoenix.spans(&trace, |s| !named(s, "resume").is_empty());
    let ids = by_id(&spans);
    assert_eq!(named(&spans, "run").len(), 1, "{spans:#?}");
    let resume = named(&spans, "resume")[0];
    assert_eq!(parent_name(&ids, resume), "run");
    assert_eq!(resume["attributes"]["stepwise.status"], "ok");
    assert_eq!(
        resume["attributes"]["gen_ai.usage.input_tokens"],
        v["usage"]["input_tokens"]
    );
    let write = named(&spans, "execute_tool write_file");
    assert_eq!(write.len(), 1, "{spans:#?}");
    let step = ids[write[0]["parent_id"].as_str().unwrap()];
    assert_eq!(parent_name(&ids, step), "dispatch_wave");
    let wave = ids[step["parent_id"].as_str().unwrap()];
    assert_eq!(parent_name(&ids, wave), "resume");
    let chats = spans
        .iter()
        .filter(|s| s["attributes"]["gen_ai.operation.name"] == "chat")
        .count();
    assert_eq!(chats, 2, "{spans:#?}");
    for span in &spans {
        let parent = span["parent_id"].as_str();
        assert!(
            parent.is_none_or(|p| ids.contains_key(p)),
            "orphan: {span:#}"
        );
    }
}

/// A collector that accepts connections and never answers.
fn silent_collector() -> (TcpListener, u16) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    (listener, port)
}

#[test]
fn a_run_with_the_collector_down_or_silent_finishes_at_untraced_speed_and_warns_once() {
    let env = Env::new("down");
    let started = Instant::now();
    let (plain, untraced) = env.run(None, "run_plain", &[]);
    let plain_took = started.elapsed();
    assert!(!plain.stderr.contains("warning"), "{}", plain.stderr);

    // Nothing listens: every export fails at once.
    let closed = format!("http://127.0.0.1:{}", free_port());
    let started = Instant::now();
    let (down, v) = env.run(Some(&closed), "run_down", &[]);
    let down_took = started.elapsed();
    assert_eq!(v["status"], untraced["status"]);
    assert_eq!(
        v["usage"]["input_tokens"],
        untraced["usage"]["input_tokens"]
    );
    assert_eq!(
        down.stderr.matches("warning: cannot export traces").count(),
        1,
        "{}",
        down.stderr
    );
    assert!(
        down_took < plain_took + Duration::from_secs(2),
        "with the collector down the run took {down_took:?}, untraced {plain_took:?}"
    );

    // It accepts and never answers: the run itself does not wait (its own
    // wall time is untraced-like); the exit flush gives up after the export
    // timeout (3 s) instead of hanging.
    let (_listener, port) = silent_collector();
    let silent = format!("http://127.0.0.1:{port}");
    let started = Instant::now();
    let (_, v) = env.run(Some(&silent), "run_silent", &[]);
    let silent_took = started.elapsed();
    assert_eq!(v["status"], untraced["status"]);
    let wall = v["usage"]["wall_time_ms"].as_u64().unwrap();
    let plain_wall = untraced["usage"]["wall_time_ms"].as_u64().unwrap();
    assert!(
        wall < plain_wall + 1000,
        "the run took {wall} ms traced, {plain_wall} ms untraced"
    );
    assert!(
        silent_took < plain_took + Duration::from_secs(8),
        "the exit flush did not give up: {silent_took:?} (untraced {plain_took:?})"
    );
}
