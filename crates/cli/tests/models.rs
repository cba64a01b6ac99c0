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

#[path = "../../llm/tests/fake/mod.rs"]
mod fake;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

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
        Command::new(env!("CARGO_BIN_EXE_stepwise"))
            .current_dir(&self.dir)
            .arg("--db")
            .arg(self.dir.join("runs.db"))
            .args(args)
            .env("OPENAI_API_KEY", KEY)
            .env("OPENAI_BASE_URL", base_url)
            .env_remove("STEPWISE_MODEL")
            .output()
            .unwrap()
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
    let out = Command::new(env!("CARGO_BIN_EXE_stepwise"))
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
        .output()
        .unwrap();
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
    let out = Command::new(env!("CARGO_BIN_EXE_stepwise"))
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
        .output()
        .unwrap();
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
