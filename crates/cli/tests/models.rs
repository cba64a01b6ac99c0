//! `stepwise run --model openai:…` end to end against a local server that
//! speaks OpenAI's streaming wire format; the request bodies are checked, a
//! rate limit is retried and recorded, a wrong key fails fast without leaking
//! the key, and `stepwise replay` reproduces a run with the server gone.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    dead_code,
    unreachable_pub
)]

mod common;
#[path = "../../llm/tests/fake/mod.rs"]
mod fake;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::Stepwise;
use fake::{FakeServer, Reply};
use serde_json::{Value, json};

const KEY: &str = "sk-test-3f9a1c7e5b2d";

/// An OpenAI streamed answer carrying `content`.
fn answer(content: &str) -> Reply {
    let chunk = |delta: Value, finish: Value| {
        json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-test",
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], "usage": null})
    };
    let usage = json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-test",
                       "choices": [], "usage": {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150}});
    let body = [
        chunk(json!({"role": "assistant", "content": ""}), Value::Null),
        chunk(json!({"content": content}), Value::Null),
        chunk(json!({}), json!("stop")),
        usage,
    ]
    .iter()
    .map(|c| format!("data: {c}\n\n"))
    .collect::<String>()
        + "data: [DONE]\n\n";
    Reply::sse(&body)
}

fn plan() -> String {
    json!({"steps": [{"id": "find", "description": "Find the latency budget", "tool": "search_notes",
        "args": {"query": "latency budget first token"}, "acceptance_criteria": ["a passage about the latency budget"]}]})
    .to_string()
}

fn assessment() -> String {
    json!({"acceptance_met": true, "verdict": "continue", "reason": "the budget is stated",
           "new_gaps": [], "resolved_gaps": [], "observations": []})
    .to_string()
}

fn report() -> String {
    json!({"text": "# Latency\n\nThe team set a budget of 1.5 seconds to first token [latency-budget].",
           "evidence": [{"source_id": "latency-budget", "step": "find",
                         "quote": "we set a budget of 1.5 seconds to first token at the 95th percentile"}]})
    .to_string()
}

struct Env {
    dir: PathBuf,
}

impl Env {
    fn new(name: &str) -> Self {
        let dir =
            std::env::temp_dir().join(format!("stepwise-models-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Self { dir }
    }

    fn stepwise(&self, base_url: &str, args: &[&str]) -> Output {
        Stepwise::new()
            .current_dir(&self.dir)
            .arg("--db")
            .arg(self.dir.join("runs.db"))
            .args(args)
            .env("OPENAI_API_KEY", KEY)
            .env("OPENAI_BASE_URL", base_url)
            .env_remove("STEPWISE_MODEL")
            .output()
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn notes() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/notes")
        .to_str()
        .unwrap()
        .to_owned()
}

#[test]
fn an_openai_run_end_to_end_then_replayed_without_the_server() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(FakeServer::start());
    let env = Env::new("e2e");
    server
        .push(
            Reply::json(
                429,
                r#"{"error": {"message": "Rate limit reached", "type": "requests"}}"#,
            )
            .header("retry-after-ms", "50"),
        )
        .push(answer(&plan()))
        .push(answer(&assessment()))
        .push(answer(&report()));
    let base = format!("{}/v1", server.url);
    let notes = notes();
    let out = env.stepwise(
        &base,
        &[
            "run",
            "What is our latency budget?",
            "--notes",
            &notes,
            "--model",
            "openai:gpt-test",
            "--json",
            "--quiet",
            "--run-id",
            "run_llm",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["status"], "ok");
    assert_eq!(v["evidence"][0]["source_id"], "latency-budget");
    assert_eq!(v["usage"]["llm_calls"], 3);

    // The requests: streaming chat completions, bearer auth, the plan schema, the tools.
    let requests = server.requests();
    assert_eq!(
        requests.len(),
        4,
        "one rate-limited attempt and three answers"
    );
    let first = &requests[1];
    assert_eq!(
        first.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(first.body["model"], "gpt-test");
    assert_eq!(first.body["stream"], true);
    assert!(
        first.body["response_format"]["json_schema"]["schema"].is_object(),
        "{}",
        first.body
    );
    let prompt = first.body["messages"].to_string();
    assert!(
        prompt.contains("What is our latency budget?") && prompt.contains("search_notes"),
        "{prompt}"
    );

    // Every attempt is an event, the retry included.
    let calls: Vec<&Value> = v["execution_history"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "model_called")
        .collect();
    assert_eq!(calls.len(), 4);
    assert_eq!(calls[0]["exchange"]["outcome"], "error");
    assert_eq!(calls[1]["exchange"]["attempt"], 2);
    // The key is nowhere in the output or the database.
    assert!(!String::from_utf8_lossy(&out.stdout).contains(KEY));
    let db = std::fs::read(env.dir.join("runs.db")).unwrap();
    let wal = std::fs::read(env.dir.join("runs.db-wal")).unwrap_or_default();
    for bytes in [&db, &wal] {
        assert!(
            !bytes.windows(KEY.len()).any(|w| w == KEY.as_bytes()),
            "the key leaked into the database"
        );
    }

    // Replay with the server gone: zero network calls, same output.
    drop(server);
    let replay = env.stepwise(
        "http://127.0.0.1:9/v1",
        &["replay", "run_llm", "--json", "--quiet"],
    );
    assert_eq!(
        replay.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&replay.stdout),
        String::from_utf8_lossy(&replay.stderr)
    );
    let r: Value = serde_json::from_slice(&replay.stdout).unwrap();
    assert_eq!(r["identical"], true);
    assert_eq!(r["model_calls_replayed"], 4);
}

#[test]
fn a_wrong_key_fails_at_once_with_the_fix_and_no_retry() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(FakeServer::start());
    let env = Env::new("auth");
    server.push(Reply::json(
        401,
        &format!(r#"{{"error": {{"message": "Incorrect API key provided: {KEY}", "type": "invalid_request_error", "code": "invalid_api_key"}}}}"#),
    ));
    let base = format!("{}/v1", server.url);
    let notes = notes();
    let out = env.stepwise(
        &base,
        &[
            "run",
            "What is our latency budget?",
            "--notes",
            &notes,
            "--model",
            "openai:gpt-test",
            "--quiet",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("OPENAI_API_KEY"), "{stderr}");
    assert!(!stderr.contains(KEY) && !String::from_utf8_lossy(&out.stdout).contains(KEY));
    assert_eq!(server.requests().len(), 1, "not retried");
}

#[test]
fn a_missing_key_is_a_usage_error_before_anything_runs() {
    let env = Env::new("nokey");
    let notes = notes();
    let out = Stepwise::new()
        .current_dir(&env.dir)
        .args([
            "--db",
            "runs.db",
            "run",
            "x y",
            "--notes",
            &notes,
            "--model",
            "openai:gpt-test",
        ])
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .output();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("OPENAI_API_KEY"));
}

#[test]
fn a_script_model_drives_a_run_offline() {
    let env = Env::new("script");
    let script = json!([
        {"purpose": "planner", "text": format!("```json\n{}\n```", plan())},
        {"purpose": "assessor", "text": assessment()},
        {"purpose": "synthesizer", "text": report()}
    ]);
    std::fs::write(env.dir.join("script.json"), script.to_string()).unwrap();
    let notes = notes();
    let out = env.stepwise(
        "http://127.0.0.1:9/v1",
        &[
            "run",
            "What is our latency budget?",
            "--notes",
            &notes,
            "--model",
            "script:script.json",
            "--json",
            "--quiet",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["status"], "ok");
    assert_eq!(v["evidence"].as_array().unwrap().len(), 1);
}

#[test]
fn stepwise_toml_sets_the_base_url_and_prices_the_run() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(FakeServer::start());
    let env = Env::new("toml");
    server
        .push(answer(&plan()))
        .push(answer(&assessment()))
        .push(answer(&report()));
    std::fs::write(
        env.dir.join("stepwise.toml"),
        format!(
            "model = \"openai:gpt-test\"\n[openai]\nbase_url = \"{}/v1\"\n[prices.\"openai:gpt-test\"]\ninput_per_mtok = 1.0\noutput_per_mtok = 2.0\n",
            server.url
        ),
    )
    .unwrap();
    let notes = notes();
    let out = Stepwise::new()
        .current_dir(&env.dir)
        .args([
            "--db",
            "runs.db",
            "run",
            "What is our latency budget?",
            "--notes",
            &notes,
            "--json",
            "--quiet",
        ])
        .env("OPENAI_API_KEY", KEY)
        .env_remove("OPENAI_BASE_URL")
        .env_remove("STEPWISE_MODEL")
        .output();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    // 3 calls × (120 in, 30 out) tokens at $1 / $2 per million.
    let usd = v["cost"]["usd"].as_f64().unwrap();
    assert!(
        (usd - (360.0 * 1.0 + 90.0 * 2.0) / 1e6).abs() < 1e-12,
        "{usd}"
    );
    assert_eq!(server.requests().len(), 3);
}

/// A plan whose second step leaves the note id open for the model executor.
fn open_plan() -> Value {
    json!({"steps": [
        {"id": "find", "description": "Find the latency budget", "tool": "search_notes",
         "args": {"query": "latency budget first token"},
         "acceptance_criteria": ["a passage about the latency budget"]},
        {"id": "read", "description": "Read the note that sets the latency budget", "tool": "read_note",
         "args": {"id": {"$open": "the note_id of the search hit about the latency budget"}},
         "depends_on": ["find"], "acceptance_criteria": ["the note's full text"]}
    ]})
}

/// `(calls, in, out)` of a usage object in JSON.
fn triple(v: &Value) -> (u64, u64, u64) {
    (
        v["llm_calls"].as_u64().unwrap(),
        v["input_tokens"].as_u64().unwrap(),
        v["output_tokens"].as_u64().unwrap(),
    )
}

#[test]
fn an_open_argument_is_filled_by_the_model_and_show_splits_usage_by_step_and_role() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(FakeServer::start());
    let env = Env::new("open");
    server
        .push(answer(&assessment()))
        .push(answer(&json!({"id": "latency-budget"}).to_string()))
        .push(answer(&assessment()))
        .push(answer(&report()));
    std::fs::write(
        env.dir.join("stepwise.toml"),
        "[prices.\"openai:gpt-test\"]\ninput_per_mtok = 1.0\noutput_per_mtok = 2.0\n",
    )
    .unwrap();
    std::fs::write(env.dir.join("plan.json"), open_plan().to_string()).unwrap();
    let base = format!("{}/v1", server.url);
    let notes = notes();
    let out = env.stepwise(
        &base,
        &[
            "run",
            "What is our latency budget?",
            "--notes",
            &notes,
            "--plan",
            "plan.json",
            "--model",
            "openai:gpt-test",
            "--json",
            "--quiet",
            "--run-id",
            "run_open",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["status"], "ok");
    assert_eq!(
        v["step_results"]["read"]["output"]["note_id"],
        "latency-budget"
    );
    // The run's own output splits usage too.
    assert_eq!(triple(&v["usage_by_step"]["read"]), (1, 120, 30));

    // The executor's request: only the open argument, with the tool's schema
    // for it, and the step's isolated context.
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    let executor = &requests[1].body;
    let schema = &executor["response_format"]["json_schema"]["schema"];
    assert_eq!(schema["required"], json!(["id"]), "{executor}");
    assert_eq!(schema["properties"]["id"]["type"], "string");
    let prompt = executor["messages"].to_string();
    assert!(
        prompt.contains("the note_id of the search hit about the latency budget")
            && prompt.contains("note_id: latency-budget"),
        "{prompt}"
    );
    let calls: Vec<&Value> = v["execution_history"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "model_called")
        .collect();
    let roles: Vec<&str> = calls.iter().map(|c| c["role"].as_str().unwrap()).collect();
    assert_eq!(
        roles,
        ["assessor", "step_executor", "assessor", "synthesizer"]
    );

    // `show`: the cost, and a table of calls, tokens and cost per step and role.
    let show = env.stepwise(&base, &["show", "run_open"]);
    assert_eq!(show.status.code(), Some(0));
    let text = String::from_utf8_lossy(&show.stdout).into_owned();
    assert!(
        text.contains("cost      $0.000720 (openai:gpt-test)"),
        "{text}"
    );
    let table: Vec<&str> = text
        .lines()
        .skip_while(|l| *l != "Model usage")
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect();
    let row = |label: &str| -> Vec<&str> {
        let line = table
            .iter()
            .find(|l| l.trim_start().starts_with(label))
            .unwrap_or_else(|| panic!("no {label} row in\n{text}"));
        line[line.find(label).unwrap() + label.len()..]
            .split_whitespace()
            .collect()
    };
    assert_eq!(table.len(), 3, "{text}");
    assert_eq!(
        row("step read"),
        ["1", "call", "120", "in", "30", "out", "$0.000180"]
    );
    assert_eq!(
        row("assessor"),
        ["2", "calls", "240", "in", "60", "out", "$0.000360"]
    );
    assert_eq!(
        row("synthesizer"),
        ["1", "call", "120", "in", "30", "out", "$0.000180"]
    );

    // `show --json`: every step, every other role, and the parts add up.
    let show = env.stepwise(&base, &["show", "run_open", "--json"]);
    assert_eq!(show.status.code(), Some(0));
    let j: Value = serde_json::from_slice(&show.stdout).unwrap();
    assert_eq!(triple(&j["usage_by_step"]["read"]), (1, 120, 30));
    assert!(
        j["usage_by_step"].get("find").is_none(),
        "no model call, no entry"
    );
    assert!((j["usage_by_step"]["read"]["cost_usd"].as_f64().unwrap() - 180e-6).abs() < 1e-12);
    assert_eq!(triple(&j["usage_by_role"]["assessor"]), (2, 240, 60));
    assert_eq!(triple(&j["usage_by_role"]["synthesizer"]), (1, 120, 30));
    assert!(j["usage_by_role"].get("step_executor").is_none());
    let parts = j["usage_by_step"]
        .as_object()
        .unwrap()
        .values()
        .chain(j["usage_by_role"].as_object().unwrap().values())
        .map(triple)
        .fold((0, 0, 0), |a, b| (a.0 + b.0, a.1 + b.1, a.2 + b.2));
    assert_eq!(parts, triple(&j["usage"]));
    assert_eq!(parts, (4, 480, 120));
    assert!((j["cost"]["usd"].as_f64().unwrap() - 720e-6).abs() < 1e-12);
}

#[test]
fn offline_an_open_argument_fails_its_step_naming_the_argument() {
    let env = Env::new("open-offline");
    std::fs::write(env.dir.join("plan.json"), open_plan().to_string()).unwrap();
    let notes = notes();
    let out = env.stepwise(
        "http://127.0.0.1:9/v1",
        &[
            "run",
            "What is our latency budget?",
            "--notes",
            &notes,
            "--plan",
            "plan.json",
            "--json",
            "--quiet",
        ],
    );
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let failure = v["execution_history"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "step_failed" && e["step"] == "read")
        .unwrap_or_else(|| panic!("no step_failed for read: {v}"));
    assert_eq!(failure["failure"]["class"], "persistent");
    assert_eq!(failure["failure"]["kind"], "invalid_args");
    let message = failure["failure"]["message"].as_str().unwrap();
    assert!(
        message.contains("argument `id` of read_note is open and no model executor is configured"),
        "{message}"
    );
    assert_eq!(
        v["step_results"]["find"]["attempts"], 1,
        "the other step ran"
    );
}

#[test]
fn react_on_a_model_calls_a_tool_answers_and_replays_without_the_server() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(FakeServer::start());
    let env = Env::new("react");
    let call = json!({"action": "call", "thought": "find the latency budget",
                      "tool": "search_notes", "args": {"query": "latency budget first token"}});
    let answer_json = json!({"action": "answer",
        "report": {"text": "The budget is 1.5 seconds to first token [latency-budget].",
                   "evidence": [{"source_id": "latency-budget", "step": "call-1",
                                 "quote": "we set a budget of 1.5 seconds to first token at the 95th percentile"}]},
        "gaps": ["nothing on the budget's history"]});
    server
        .push(answer(&call.to_string()))
        .push(answer(&answer_json.to_string()));
    let base = format!("{}/v1", server.url);
    let notes = notes();
    let out = env.stepwise(
        &base,
        &[
            "run",
            "What is our latency budget?",
            "--notes",
            &notes,
            "--model",
            "openai:gpt-test",
            "--strategy",
            "react",
            "--json",
            "--quiet",
            "--run-id",
            "run_react",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["status"], "ok");
    assert_eq!(v["strategy"], "react");
    assert_eq!(v["evidence"][0]["step"], "call-1");
    assert_eq!(v["usage"]["llm_calls"], 2);
    assert!(
        v["knowledge_gaps"]
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g == "nothing on the budget's history")
    );
    // The second prompt shows the actor the raw result of its first call.
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let second = requests[1].body["messages"].to_string();
    assert!(second.contains("find the latency budget"), "{second}");
    assert!(second.contains("latency-budget"), "{second}");

    drop(server);
    let replay = env.stepwise(
        "http://127.0.0.1:9/v1",
        &["replay", "run_react", "--json", "--quiet"],
    );
    assert_eq!(
        replay.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&replay.stdout),
        String::from_utf8_lossy(&replay.stderr)
    );
    let r: Value = serde_json::from_slice(&replay.stdout).unwrap();
    assert_eq!(r["identical"], true);
    assert_eq!(r["model_calls_replayed"], 2);
}

/// `stepwise run` on the fake server from `env`'s folder, model from the flag.
fn run_on(env: &Env, server: &FakeServer) -> Output {
    let base = format!("{}/v1", server.url);
    let notes = notes();
    env.stepwise(
        &base,
        &[
            "run",
            "What is our latency budget?",
            "--notes",
            &notes,
            "--model",
            "openai:gpt-test",
            "--quiet",
        ],
    )
}

#[test]
fn stepwise_toml_retry_settings_make_a_silent_server_fail_fast_as_a_timeout() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(FakeServer::start());
    let env = Env::new("retry");
    // Headers, then nothing, the connection left open.
    server
        .push(Reply::sse_then_silence(""))
        .push(Reply::sse_then_silence(""))
        .push(Reply::sse_then_silence(""));
    std::fs::write(
        env.dir.join("stepwise.toml"),
        "[retry]\nmax_attempts = 4\ninitial_delay_ms = 10\nidle_timeout_ms = 300\n\
         [openai.retry]\nmax_attempts = 2\n",
    )
    .unwrap();
    let started = std::time::Instant::now();
    let out = run_on(&env, &server);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("timed out after 300 ms") && stderr.contains("idle timeout"),
        "{stderr}"
    );
    assert_eq!(server.requests().len(), 2, "[openai.retry] over [retry]");
    assert!(started.elapsed() >= std::time::Duration::from_millis(600));
}

#[test]
fn an_unknown_retry_key_is_refused_like_other_config_keys() {
    let env = Env::new("retry-typo");
    std::fs::write(env.dir.join("stepwise.toml"), "[retry]\nretries = 3\n").unwrap();
    let notes = notes();
    let out = env.stepwise(
        "http://127.0.0.1:9/v1",
        &[
            "run",
            "x y",
            "--notes",
            &notes,
            "--model",
            "openai:gpt-test",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("stepwise.toml") && stderr.contains("unknown field `retries`"),
        "{stderr}"
    );
}

#[test]
fn an_empty_answer_is_reported_as_an_empty_answer() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(FakeServer::start());
    let env = Env::new("empty");
    server.push(answer("")).push(answer(""));
    let out = run_on(&env, &server);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("the model returned an empty answer"),
        "{stderr}"
    );
    assert!(!stderr.contains("not a string"), "{stderr}");
    assert_eq!(server.requests().len(), 2);
}

/// The parts of a run's JSON that must not depend on where it was
/// interrupted: status, report, each step's output and its attempts — less
/// the attempts a crash cut short (`step_interrupted`), which were made —
/// gaps, evidence.
fn settled(v: &Value) -> Value {
    let steps: serde_json::Map<String, Value> = v["step_results"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(id, r)| {
            let attempts = common::attempts_uninterrupted(v, id);
            (
                id.clone(),
                json!({"output": r["output"], "attempts": attempts}),
            )
        })
        .collect();
    json!({"status": v["status"], "report": v["final_report"], "steps": steps,
           "gaps": v["knowledge_gaps"], "evidence": v["evidence"]})
}

/// `usage.llm_calls` and the number of `model_called` events of a run.
fn calls_counted(v: &Value) -> (u64, usize) {
    let events = v["execution_history"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "model_called")
        .count();
    (v["usage"]["llm_calls"].as_u64().unwrap(), events)
}

#[test]
fn a_recorded_model_answer_is_never_asked_for_again_after_a_crash() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let notes = notes();
    let start = |env: &Env, base: &str, id: &str, failpoint: Option<String>| {
        let mut cmd = Stepwise::new()
            .current_dir(&env.dir)
            .arg("--db")
            .arg(env.dir.join("runs.db"))
            .args([
                "run",
                "What is our latency budget?",
                "--notes",
                &notes,
                "--model",
                "openai:gpt-test",
                "--json",
                "--quiet",
                "--run-id",
                id,
            ])
            .env("OPENAI_API_KEY", KEY)
            .env("OPENAI_BASE_URL", base)
            .env_remove("STEPWISE_MODEL");
        if let Some(f) = failpoint {
            cmd = cmd.env("STEPWISE_FAILPOINT", &f);
        }
        cmd.output()
    };
    let queue = |server: &FakeServer| {
        server
            .push(answer(&plan()))
            .push(answer(&assessment()))
            .push(answer(&report()));
    };
    let reference_server = rt.block_on(FakeServer::start());
    queue(&reference_server);
    let env = Env::new("exactly-once-ref");
    let reference = start(
        &env,
        &format!("{}/v1", reference_server.url),
        "run_ref",
        None,
    );
    assert_eq!(
        reference.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&reference.stderr)
    );
    let reference: Value = serde_json::from_slice(&reference.stdout).unwrap();
    let expected = settled(&reference);
    assert_eq!(calls_counted(&reference), (3, 3));
    for (aborted, n) in (1..200).enumerate() {
        let server = rt.block_on(FakeServer::start());
        queue(&server);
        let base = format!("{}/v1", server.url);
        let env = Env::new(&format!("exactly-once-{n}"));
        let id = format!("run_{n}");
        let first = start(&env, &base, &id, Some(format!("abort-after-writes={n}")));
        if first.status.success() {
            // N is past the last write: the run finished untouched.
            assert!(aborted > 5, "only {aborted} abort points were exercised");
            return;
        }
        assert_eq!(first.status.code(), None, "n={n}: expected an abort");
        let second = env.stepwise(&base, &["resume", &id, "--json", "--quiet"]);
        let stderr = String::from_utf8_lossy(&second.stderr);
        let bodies: Vec<String> = server
            .requests()
            .iter()
            .map(|r| r.body.to_string())
            .collect();
        let mut distinct = bodies.clone();
        distinct.sort();
        distinct.dedup();
        assert_eq!(
            distinct.len(),
            bodies.len(),
            "n={n}: a request was sent again after the crash ({} requests, {} distinct)",
            bodies.len(),
            distinct.len()
        );
        if stderr.contains("no run with id") {
            continue; // aborted before the run was recorded
        }
        let state: Value = if stderr.contains("already ended") {
            let shown = env.stepwise(&base, &["show", &id, "--json"]);
            serde_json::from_slice(&shown.stdout).unwrap()
        } else {
            assert_eq!(second.status.code(), Some(0), "n={n}: {stderr}");
            serde_json::from_slice(&second.stdout).unwrap()
        };
        assert_eq!(bodies.len(), 3, "n={n}: each answer asked for once");
        assert_eq!(settled(&state), expected, "n={n}");
        assert_eq!(
            calls_counted(&state),
            (3, 3),
            "n={n}: usage = model_called events"
        );
    }
    panic!("the run never completed without aborting");
}

/// A one-step plan whose criterion is a typed check.
fn typed_plan() -> String {
    json!({"steps": [{"id": "find", "description": "Find the latency budget", "tool": "search_notes",
        "args": {"query": "latency budget first token"},
        "acceptance_criteria": [{"check": "min_results", "path": "results", "min": 1}]}]})
    .to_string()
}

#[test]
fn with_typed_criteria_plan_and_execute_costs_two_model_calls() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let notes = notes();
    let run_with = |strategy: &str, assess: &str, replies: Vec<String>| {
        let server = rt.block_on(FakeServer::start());
        for r in &replies {
            server.push(answer(r));
        }
        let env = Env::new(&format!("two-calls-{strategy}-{assess}"));
        let out = env.stepwise(
            &format!("{}/v1", server.url),
            &[
                "run",
                "What is our latency budget?",
                "--notes",
                &notes,
                "--model",
                "openai:gpt-test",
                "--strategy",
                strategy,
                "--assess",
                assess,
                "--json",
                "--quiet",
            ],
        );
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        (v, server.requests().len())
    };
    let run = |assess: &str, replies: Vec<String>| run_with("plan-execute", assess, replies);
    // auto: the engine checks the typed criterion; plan + synthesize.
    let (v, requests) = run("auto", vec![typed_plan(), report()]);
    assert_eq!(v["status"], "ok");
    assert_eq!(requests, 2);
    assert_eq!(calls_counted(&v), (2, 2));
    // model: the assessor is asked too.
    let (v, requests) = run("model", vec![typed_plan(), assessment(), report()]);
    assert_eq!(requests, 3);
    assert_eq!(calls_counted(&v), (3, 3));
    // Free-text criteria need judgement: plan + one assessment + synthesize.
    let (v, requests) = run("auto", vec![plan(), assessment(), report()]);
    assert_eq!(requests, 3);
    assert_eq!(calls_counted(&v), (3, 3));
    // react on the same task: one call per tool call, plus the answer — a
    // tie at one search; three searches are 2 against 4 (tests/bench.rs,
    // docs/bench.md).
    let search = json!({"action": "call", "thought": "Find the latency budget",
        "tool": "search_notes", "args": {"query": "latency budget first token"}});
    let answered = serde_json::from_str::<Value>(&report()).unwrap();
    let answered = json!({"action": "answer",
        "report": {"text": answered["text"], "evidence": [{"source_id": "latency-budget", "step": "call-1",
            "quote": answered["evidence"][0]["quote"]}]}, "gaps": []});
    let (v, requests) = run_with(
        "react",
        "auto",
        vec![search.to_string(), answered.to_string()],
    );
    assert_eq!(v["status"], "ok", "{v}");
    assert_eq!(v["usage"]["tool_calls"], 1);
    assert_eq!(requests, 2);
    assert_eq!(calls_counted(&v), (2, 2));
}

#[test]
fn a_role_in_stepwise_toml_runs_on_a_model_of_its_own() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(FakeServer::start());
    // The planner and the synthesizer ask the default model; the assessor
    // answers from a script of its own.
    server.push(answer(&plan())).push(answer(&report()));
    let env = Env::new("role-models");
    let script = env.dir.join("assessor.jsonl");
    std::fs::write(
        &script,
        format!("{}\n", json!({"purpose": "assessor", "json": serde_json::from_str::<Value>(&assessment()).unwrap()})),
    )
    .unwrap();
    std::fs::write(
        env.dir.join("stepwise.toml"),
        "[roles.assessor]\nmodel = \"script:assessor.jsonl\"\n",
    )
    .unwrap();
    let notes = notes();
    let base = format!("{}/v1", server.url);
    let args = [
        "run",
        "What is our latency budget?",
        "--notes",
        &notes,
        "--model",
        "openai:gpt-test",
        "--json",
        "--quiet",
    ];
    let out = env.stepwise(&base, &args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["status"], "ok");
    assert_eq!(
        server.requests().len(),
        2,
        "the assessor did not ask the server"
    );
    let models: Vec<(String, String)> = v["execution_history"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "model_called")
        .map(|e| {
            (
                e["role"].as_str().unwrap().to_owned(),
                e["exchange"]["model"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(models.len(), 3, "{models:?}");
    for (role, model) in &models {
        if role == "assessor" {
            assert!(model.starts_with("script:"), "{role}: {model}");
        } else {
            assert!(model.contains("gpt-test"), "{role}: {model}");
        }
    }
    assert_eq!(calls_counted(&v), (3, 3));

    // An unknown role is refused with the names that exist.
    std::fs::write(
        env.dir.join("stepwise.toml"),
        "[roles.planer]\nmodel = \"openai:gpt-test\"\n",
    )
    .unwrap();
    let out = env.stepwise(&base, &args);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("[roles.planer]") && err.contains("planner, repairer"),
        "{err}"
    );
}

#[test]
fn the_assessor_judges_a_wave_of_steps_in_one_model_call() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(FakeServer::start());
    // Two independent searches with text criteria: one wave.
    let plan = json!({"steps": [
        {"id": "find", "description": "Find the latency budget", "tool": "search_notes",
         "args": {"query": "latency budget first token"}, "acceptance_criteria": ["a passage about the latency budget"]},
        {"id": "cost", "description": "Find the running cost", "tool": "search_notes",
         "args": {"query": "cost per month"}, "acceptance_criteria": ["a passage with a monthly cost"]}
    ]})
    .to_string();
    let ok = |step: &str| {
        json!({"step": step, "acceptance_met": true, "verdict": "continue", "reason": "stated",
               "new_gaps": [], "resolved_gaps": [], "observations": []})
    };
    let wave = json!({"assessments": [ok("cost"), ok("find")]}).to_string();
    server
        .push(answer(&plan))
        .push(answer(&wave))
        .push(answer(&report()));
    let env = Env::new("wave");
    let notes = notes();
    let out = env.stepwise(
        &format!("{}/v1", server.url),
        &[
            "run",
            "What is our latency budget and what does it cost?",
            "--notes",
            &notes,
            "--model",
            "openai:gpt-test",
            "--json",
            "--quiet",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["status"], "ok");
    // plan + one assessment of the wave + synthesize.
    assert_eq!(server.requests().len(), 3);
    assert_eq!(calls_counted(&v), (3, 3));
    let wave_prompt = server.requests()[1].body["messages"].to_string();
    assert!(
        wave_prompt.contains("Step find") && wave_prompt.contains("Step cost"),
        "{wave_prompt}"
    );
    let assessed: Vec<&str> = v["execution_history"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "assessed")
        .map(|e| e["step"].as_str().unwrap())
        .collect();
    assert_eq!(assessed.len(), 2, "each step keeps its own assessment");
}
