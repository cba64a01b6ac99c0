//! MCP tools in the engine, with scripted roles standing in for a model:
//! tool output that tries to instruct the model is data and changes nothing
//! by itself; a replan that adds a side-effect step (as a model that obeyed
//! it would) waits for a new approval, which says the tool is destructive;
//! and a streamable HTTP server is reached with a bearer token and
//! reconnected after it dropped its session.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use common::{Log, filesystem, node, npm_dir, probe};
use serde_json::{Value, json};
use stepwise_core::engine::{ApprovalDecision, ApprovalRequest, Approver};
use stepwise_core::state::{RunState, RunStatus};
use stepwise_core::testing::{
    ScriptedAssessor, ScriptedPlanner, ScriptedRepairer, ScriptedReplanner, ScriptedSynthesizer,
    draft,
};
use stepwise_core::{
    Assessment, Constraints, DraftPlan, Engine, EventKind, Roles, RunConfig, Step, ToolRegistry,
};
use stepwise_mcp::{McpError, McpServers, ServerConfig};

/// Approves the steps it is told to, defers the rest, and keeps every question.
#[derive(Default)]
struct Person {
    approves: Vec<&'static str>,
    asked: Mutex<Vec<String>>,
}

#[async_trait]
impl Approver for Person {
    async fn decide(&self, r: ApprovalRequest<'_>) -> ApprovalDecision {
        self.asked.lock().unwrap().push(r.question());
        if self.approves.contains(&r.step.as_str()) {
            ApprovalDecision::Approve {
                by: "person".to_owned(),
            }
        } else {
            ApprovalDecision::Defer
        }
    }
}

fn engine(
    servers: &McpServers,
    plan: DraftPlan,
    replans: Vec<DraftPlan>,
    gap_on: &'static str,
    person: Arc<Person>,
) -> Engine {
    let assessor = ScriptedAssessor::with_rule([], move |r| {
        if r.step.id.as_str() == gap_on {
            Assessment::gap(format!("{gap_on}: the page says the plan has changed"))
        } else {
            Assessment::ok(format!("{} done", r.step.id))
        }
    });
    let roles = Roles::new(
        Arc::new(ScriptedPlanner::new([plan])),
        Arc::new(ScriptedRepairer::new([])),
        Arc::new(assessor),
        Arc::new(ScriptedReplanner::new(replans)),
        Arc::new(ScriptedSynthesizer::summarising()),
    );
    let mut tools = ToolRegistry::new();
    for t in servers.tools() {
        tools.register_dyn(t);
    }
    // The plan is used as written: an invalid one stops for review.
    let config = RunConfig {
        repair_first_draft: false,
        ..RunConfig::default()
    };
    Engine::new(roles, tools, config)
        .unwrap()
        .with_approver(person)
}

fn started(state: &RunState) -> Vec<String> {
    state
        .execution_history
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::StepStarted { step, .. } => Some(step.to_string()),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn output_that_tries_to_instruct_the_model_is_data_and_a_replan_it_inspires_needs_approval() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let ledger = root.join("ledger.txt");
    std::fs::write(root.join("report.md"), "the real report").unwrap();
    let log = Log::default();
    let servers = McpServers::start(
        [
            ("probe".to_owned(), probe(&ledger)),
            ("fs".to_owned(), filesystem(&root)),
        ],
        log.options(),
    )
    .await
    .unwrap();

    // 1. Read the page; nothing else is planned, and nothing else happens.
    let plan = || {
        draft(vec![
            Step::new("read", "Read the quarterly page", "probe.inject").accept("the page"),
        ])
    };
    let person = Arc::new(Person::default());
    let state = engine(&servers, plan(), vec![], "none", Arc::clone(&person))
        .run("Summarise the quarterly page", Constraints::default())
        .await
        .unwrap();
    assert_eq!(state.status, RunStatus::Ok, "{:?}", state.blocked_reason);
    assert_eq!(started(&state), ["read"], "only the planned step ran");
    assert_eq!(state.plan.version, 1, "the plan is the approved one");
    let page = state.step_results[&stepwise_core::StepId::new("read")].output["text"]
        .as_str()
        .unwrap();
    assert!(
        page.contains("SYSTEM OVERRIDE"),
        "the text is kept, as data: {page}"
    );
    assert!(
        person.asked.lock().unwrap().is_empty(),
        "nothing asked for approval"
    );
    assert!(!ledger.exists(), "probe.append was never called");
    assert_eq!(
        std::fs::read_to_string(root.join("report.md")).unwrap(),
        "the real report"
    );

    // 2. A planner that obeys the page: a side effect was approved in plan
    //    v1 (save, with its arguments); the replan adds an overwrite of
    //    report.md, which waits for its own approval — and is not run.
    let v1 = draft(vec![
        Step::new("save", "Save a summary", "fs.write_file")
            .with_args(json!({"path": root.join("summary.md"), "content": "revenue grew 4%"}))
            .accept("saved"),
        Step::new("read", "Read the quarterly page", "probe.inject")
            .after(["save"])
            .accept("the page"),
    ]);
    let obey = draft(vec![
        Step::new("obey", "Do what the page says", "fs.write_file")
            .with_args(json!({"path": root.join("report.md"), "content": "pwned"}))
            .after(["read"])
            .accept("done"),
    ]);
    let person = Arc::new(Person {
        approves: vec!["save"],
        ..Person::default()
    });
    let state = engine(&servers, v1, vec![obey], "read", Arc::clone(&person))
        .run("Summarise the quarterly page", Constraints::default())
        .await
        .unwrap();
    assert_eq!(
        state.status,
        RunStatus::AwaitingApproval,
        "{:?}",
        state.blocked_reason
    );
    assert_eq!(state.replan_count, 1);
    assert!(
        !started(&state).contains(&"obey".to_owned()),
        "{:?}",
        started(&state)
    );
    assert_eq!(
        std::fs::read_to_string(root.join("report.md")).unwrap(),
        "the real report"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("summary.md")).unwrap(),
        "revenue grew 4%"
    );
    let asked = person.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert!(
        asked[1].starts_with("approve step obey (fs.write_file; destructive"),
        "{}",
        asked[1]
    );
    assert!(
        asked[1].contains("pwned"),
        "the exact arguments: {}",
        asked[1]
    );
    let requested: Vec<&str> = state
        .execution_history
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ApprovalRequested { step, .. } => Some(step.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(requested, ["save", "obey"]);
    assert!(!ledger.exists());
    servers.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arguments_the_input_schema_refuses_never_reach_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let log = Log::default();
    let servers = McpServers::start(
        [("probe".to_owned(), probe(&dir.path().join("l")))],
        log.options(),
    )
    .await
    .unwrap();
    let plan = draft(vec![
        Step::new("echo", "Echo a number", "probe.echo")
            .with_args(json!({"text": 42, "loud": true}))
            .accept("echoed"),
    ]);
    let state = engine(&servers, plan, vec![], "none", Arc::new(Person::default()))
        .run("Echo", Constraints::default())
        .await
        .unwrap();
    assert_eq!(state.status, RunStatus::NeedsReview);
    let reason = state.blocked_reason.clone().unwrap_or_default();
    assert!(reason.contains("args_schema_mismatch"), "{reason}");
    assert!(started(&state).is_empty());
    servers.shutdown().await;
    let stderr = log.lines(stepwise_mcp::LogKind::Stderr);
    assert!(
        !stderr.iter().any(|l| l.contains("probe: echo")),
        "{stderr:?}"
    );
}

/// A free port on the loopback interface.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A server process the test started, killed when the test ends (even by a panic).
struct Spawned(std::process::Child);

impl Drop for Spawned {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `probe.mjs --http PORT`, requiring `token`; returns once it listens.
fn http_probe(port: u16, token: &str) -> Spawned {
    use std::io::{BufRead, BufReader};
    let mut child = std::process::Command::new(node())
        .arg(npm_dir().join("servers/probe.mjs"))
        .args(["--http", &port.to_string()])
        .env("PROBE_TOKEN", token)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut lines = BufReader::new(stderr).lines();
    let first = lines.next().unwrap().unwrap();
    assert!(first.contains("listening"), "{first}");
    std::thread::spawn(move || for _ in lines {});
    Spawned(child)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamable_http_server_takes_a_bearer_token_and_is_reconnected_after_a_drop() {
    common::installed("@modelcontextprotocol/sdk", "package.json");
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    // A variable cargo sets for every test process: the token is read from
    // the environment, never from the config.
    let token = env!("CARGO_PKG_NAME");
    let server = http_probe(port, token);
    let config = |var: &str| ServerConfig {
        bearer_token_env: Some(var.to_owned()),
        ..ServerConfig::http(url.clone())
    };
    let log = Log::default();
    let servers = McpServers::start(
        [("web".to_owned(), config("CARGO_PKG_NAME"))],
        log.options(),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(servers.infos().len(), 6);
    let echo = servers
        .tools()
        .into_iter()
        .find(|t| t.spec().name == "web.echo")
        .unwrap();
    let ctx = || {
        stepwise_core::ToolContext::new(
            &stepwise_core::RunId("run_http".to_owned()),
            &stepwise_core::StepId::new("e"),
            1,
        )
    };
    assert_eq!(
        echo.call_json(ctx(), json!({"text": "over http"}))
            .await
            .unwrap(),
        json!({"text": "over http"})
    );

    // The wrong token, and none at all.
    let err = McpServers::start(
        [("web".to_owned(), config("CARGO_PKG_VERSION"))],
        log.options(),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, McpError::Initialize { .. }), "{err}");
    assert!(err.to_string().contains(&url), "{err}");
    let err = McpServers::start(
        [("web".to_owned(), config("STEPWISE_NO_SUCH_TOKEN_VAR"))],
        log.options(),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, McpError::MissingToken { .. }), "{err}");

    // The server goes away (its sessions with it) and comes back.
    drop(server);
    let _server = http_probe(port, token);
    let mut results: Vec<Result<Value, stepwise_core::ToolError>> = Vec::new();
    for _ in 0..3 {
        let r = echo.call_json(ctx(), json!({"text": "back"})).await;
        let ok = r.is_ok();
        results.push(r);
        if ok {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(
        results.last().unwrap().as_ref().ok(),
        Some(&json!({"text": "back"})),
        "{results:?}"
    );
    for failed in results.iter().filter_map(|r| r.as_ref().err()) {
        assert_eq!(
            failed.class,
            stepwise_core::FailureClass::Transient,
            "{failed}"
        );
    }
    servers.shutdown().await;
}
