//! The MCP client against real servers: the official reference servers from
//! npm (filesystem, memory) and the SDK-built probe. Tools are listed with
//! their schemas and side-effect classes, calls read and write, `isError`
//! is a persistent failure, a killed server is restarted, a server that
//! cannot start says why, and nothing is left running afterwards.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use common::{Log, alive, eventually, filesystem, group, kill9, memory, probe};
use serde_json::{Value, json};
use stepwise_core::retry::FailureClass;
use stepwise_core::{DynTool, ToolContext, ToolError, ToolRegistry};
use stepwise_mcp::{LogKind, McpError, McpServers, Options, ServerConfig, ToolOverride};

fn ctx() -> ToolContext {
    ToolContext::new(
        &stepwise_core::RunId("run_t".to_owned()),
        &stepwise_core::StepId::new("s"),
        1,
    )
}

fn tool(servers: &McpServers, name: &str) -> Arc<dyn DynTool> {
    servers
        .tools()
        .into_iter()
        .find(|t| t.spec().name == name)
        .unwrap_or_else(|| panic!("no tool {name}"))
}

async fn call(servers: &McpServers, name: &str, args: Value) -> Result<Value, ToolError> {
    tool(servers, name).call_json(ctx(), args).await
}

async fn start(configs: Vec<(&str, ServerConfig)>, log: &Log) -> McpServers {
    McpServers::start(
        configs.into_iter().map(|(n, c)| (n.to_owned(), c)),
        log.options(),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"))
}

/// Every pid the servers run now, then a check after shutdown that none
/// of them — nor anything in their process groups — is left.
async fn shut_down_and_check(servers: McpServers) {
    let pids: Vec<u32> = servers.pids().await.into_iter().map(|(_, p)| p).collect();
    assert!(!pids.is_empty());
    servers.shutdown().await;
    for pid in pids {
        assert!(
            eventually(5, || !alive(pid) && group(pid).is_empty()),
            "server process {pid} (or its group: {:?}) outlived the shutdown",
            group(pid)
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reference_servers_tools_are_listed_namespaced_with_schemas_and_effects() {
    let dir = tempfile::tempdir().unwrap();
    let log = Log::default();
    let servers = start(
        vec![
            ("fs", filesystem(dir.path())),
            ("memory", memory(&dir.path().join("graph.jsonl"))),
        ],
        &log,
    )
    .await;
    let infos: BTreeMap<String, _> = servers
        .infos()
        .into_iter()
        .map(|i| (i.spec.name.clone(), i))
        .collect();
    for name in [
        "fs.read_text_file",
        "fs.write_file",
        "fs.list_directory",
        "memory.create_entities",
        "memory.read_graph",
    ] {
        assert!(infos.contains_key(name), "{name} not in {:?}", infos.keys());
    }
    assert!(
        infos
            .keys()
            .all(|n| n.starts_with("fs.") || n.starts_with("memory."))
    );
    let read = &infos["fs.read_text_file"];
    assert_eq!(
        (read.server.as_str(), read.tool.as_str()),
        ("fs", "read_text_file")
    );
    assert!(!read.spec.side_effect, "readOnlyHint: true");
    assert_eq!(read.hints.read_only, Some(true));
    assert_eq!(read.spec.args_schema["required"], json!(["path"]));
    assert_eq!(
        read.spec.output_schema.as_ref().unwrap()["properties"]["content"]["type"],
        "string"
    );
    let write = &infos["fs.write_file"];
    assert!(write.spec.side_effect && write.spec.idempotent && write.spec.destructive);
    let create = &infos["memory.create_entities"];
    assert!(create.spec.side_effect && !create.spec.idempotent && !create.spec.destructive);
    assert!(!infos["memory.read_graph"].spec.side_effect);
    // The schemas compile into the validator's catalogue.
    let mut registry = ToolRegistry::new();
    for t in servers.tools() {
        registry.register_dyn(t);
    }
    registry.catalog().unwrap();
    // Their stderr went to the log.
    let stderr = log.lines(LogKind::Stderr);
    assert!(
        stderr
            .iter()
            .any(|l| l.starts_with("fs: Secure MCP Filesystem Server")),
        "{stderr:?}"
    );
    shut_down_and_check(servers).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_and_writes_go_through_and_is_error_is_a_persistent_failure() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let log = Log::default();
    let servers = start(vec![("fs", filesystem(&root))], &log).await;
    let file = root.join("notes.md");
    let written = call(
        &servers,
        "fs.write_file",
        json!({"path": file, "content": "hello from stepwise"}),
    )
    .await
    .unwrap();
    assert!(
        written["content"]
            .as_str()
            .unwrap()
            .contains("Successfully wrote"),
        "{written}"
    );
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "hello from stepwise"
    );
    let read = call(&servers, "fs.read_text_file", json!({"path": file}))
        .await
        .unwrap();
    assert_eq!(read, json!({"content": "hello from stepwise"}));
    // Outside the allowed folder: the server answers isError.
    let err = call(
        &servers,
        "fs.read_text_file",
        json!({"path": "/etc/hostname"}),
    )
    .await
    .unwrap_err();
    assert_eq!(err.class, FailureClass::Persistent, "{err}");
    assert!(err.message.contains("fs.read_text_file failed"), "{err}");
    assert!(
        err.message.contains("Access denied"),
        "the server's message: {err}"
    );
    shut_down_and_check(servers).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_server_is_restarted_and_the_next_call_succeeds() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::write(root.join("a.txt"), "A").unwrap();
    let log = Log::default();
    let servers = start(vec![("fs", filesystem(&root))], &log).await;
    let first = servers.pids().await[0].1;
    kill9(first);
    assert!(eventually(5, || !alive(first)));
    // The death may or may not have been noticed when the call goes out:
    // either the call restarts the server first, or it fails transiently
    // and the next attempt does.
    let mut attempts = Vec::new();
    for _ in 0..2 {
        let result = call(
            &servers,
            "fs.read_text_file",
            json!({"path": root.join("a.txt")}),
        )
        .await;
        let done = result.is_ok();
        attempts.push(result);
        if done {
            break;
        }
    }
    let last = attempts.last().unwrap();
    assert_eq!(
        last.as_ref().ok(),
        Some(&json!({"content": "A"})),
        "{attempts:?}"
    );
    for failed in attempts.iter().filter_map(|r| r.as_ref().err()) {
        assert_eq!(failed.class, FailureClass::Transient, "{failed}");
    }
    let second = servers.pids().await[0].1;
    assert_ne!(first, second, "a new process");
    let notes = log.lines(LogKind::Lifecycle);
    assert!(notes.iter().any(|l| l.contains("start 2")), "{notes:?}");
    shut_down_and_check(servers).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_cut_off_by_a_crash_is_transient_and_one_that_may_have_acted_is_not_retried() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.txt");
    let log = Log::default();
    let mut config = probe(&ledger);
    // `slow` as a non-idempotent side effect, for the second half.
    config.tools.insert(
        "slow".to_owned(),
        ToolOverride {
            side_effect: Some(true),
            idempotent: Some(false),
            ..ToolOverride::default()
        },
    );
    let servers = Arc::new(start(vec![("probe", probe(&ledger)), ("unsafe", config)], &log).await);
    let pid_of = |name: &'static str| {
        let servers = Arc::clone(&servers);
        async move {
            servers
                .pids()
                .await
                .into_iter()
                .find(|(n, _)| n == name)
                .unwrap()
                .1
        }
    };
    for (server, class) in [
        ("probe", FailureClass::Transient),
        ("unsafe", FailureClass::Fatal),
    ] {
        let pid = pid_of(server).await;
        let slow = tool(&servers, &format!("{server}.slow"));
        let call = tokio::spawn(async move {
            slow.call_json(ctx(), json!({"text": "late", "ms": 5_000}))
                .await
        });
        tokio::time::sleep(Duration::from_millis(500)).await;
        kill9(pid);
        let err = call.await.unwrap().unwrap_err();
        assert_eq!(err.class, class, "{server}: {err}");
        if class == FailureClass::Fatal {
            assert!(err.message.contains("outcome unknown"), "{err}");
        }
        // The next call gets a new process.
        let echo = call_echo(&servers, server).await;
        assert_eq!(echo, json!({"text": "again"}));
        assert_ne!(pid_of(server).await, pid);
    }
    let servers = Arc::try_unwrap(servers).unwrap();
    shut_down_and_check(servers).await;
}

async fn call_echo(servers: &McpServers, server: &str) -> Value {
    call(servers, &format!("{server}.echo"), json!({"text": "again"}))
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timeout_is_transient_for_a_read_and_fatal_for_an_unrepeatable_side_effect() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.txt");
    let log = Log::default();
    let mut config = probe(&ledger);
    config.timeout_ms = Some(300);
    config.tools.insert(
        "append".to_owned(),
        ToolOverride {
            timeout_ms: Some(2_000),
            ..ToolOverride::default()
        },
    );
    let servers = start(vec![("probe", config)], &log).await;
    let err = call(&servers, "probe.slow", json!({"text": "x", "ms": 3_000}))
        .await
        .unwrap_err();
    assert_eq!(err.class, FailureClass::Transient, "{err}");
    assert!(err.message.contains("within 300 ms"), "{err}");
    // The server is only slow: it answers the ping, and keeps its process.
    let pid = servers.pids().await[0].1;
    assert_eq!(call_echo(&servers, "probe").await, json!({"text": "again"}));
    assert_eq!(servers.pids().await[0].1, pid);
    // A side effect: counted in its ledger, with its output schema.
    let out = call(&servers, "probe.append", json!({"line": "one"}))
        .await
        .unwrap();
    assert_eq!(out, json!({"count": 1, "line": "one"}));
    // It carried the step's idempotency key in `_meta`, under the key the
    // probe reads.
    assert_eq!(
        stepwise_mcp::IDEMPOTENCY_KEY_META,
        "io.stepwise/idempotency_key"
    );
    let keys = std::fs::read_to_string(ledger.with_extension("txt.keys")).unwrap();
    assert_eq!(keys, format!("{}\n", ctx().idempotency_key));
    shut_down_and_check(servers).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_are_listed_page_by_page_after_an_initialize_with_our_client_info() {
    let dir = tempfile::tempdir().unwrap();
    let log = Log::default();
    let mut config = probe(&dir.path().join("l"));
    config.tools.insert(
        "inject".to_owned(),
        ToolOverride {
            enabled: Some(false),
            ..ToolOverride::default()
        },
    );
    let servers = start(vec![("probe", config)], &log).await;
    let names: Vec<String> = servers.infos().into_iter().map(|i| i.spec.name).collect();
    // Six tools in three pages of two, one left out by the config.
    assert_eq!(
        names,
        [
            "probe.append",
            "probe.echo",
            "probe.fail",
            "probe.slow",
            "probe.whoami"
        ]
    );
    let me = call(&servers, "probe.whoami", json!({})).await.unwrap();
    assert_eq!(
        me,
        json!({"name": "stepwise", "version": env!("CARGO_PKG_VERSION"), "title": "Stepwise"})
    );
    let notes = log.lines(LogKind::Lifecycle);
    assert!(
        notes
            .iter()
            .any(|l| l.contains(&format!("protocol {}", stepwise_mcp::protocol_version()))),
        "{notes:?}"
    );
    assert!(
        notes.iter().any(|l| l.contains("1 disabled by the config")),
        "{notes:?}"
    );
    // A tool without an output schema gives {"text": …}; isError its message.
    let err = call(
        &servers,
        "probe.fail",
        json!({"message": "no such column: ORDR_DT"}),
    )
    .await
    .unwrap_err();
    assert_eq!(err.class, FailureClass::Persistent);
    assert_eq!(err.message, "probe.fail failed: no such column: ORDR_DT");
    shut_down_and_check(servers).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_cannot_start_says_its_command_and_stderr_and_leaves_nothing_running() {
    let dir = tempfile::tempdir().unwrap();
    let log = Log::default();
    let mut failing = probe(&dir.path().join("l"));
    failing.args.push("--fail-start".to_owned());
    let err = McpServers::start(
        [
            ("fs".to_owned(), filesystem(dir.path())),
            ("probe".to_owned(), failing),
        ],
        log.options(),
    )
    .await
    .unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, McpError::Initialize { .. }), "{text}");
    assert!(text.contains("mcp server \"probe\""), "{text}");
    assert!(
        text.contains("probe.mjs --fail-start"),
        "the command: {text}"
    );
    assert!(
        text.contains("cannot open the database /nowhere/probe.db"),
        "its stderr: {text}"
    );
    // The filesystem server that did start was shut down again.
    let notes = log.lines(LogKind::Lifecycle);
    assert!(notes.iter().any(|l| l == "fs: shut down"), "{notes:?}");
    let started: Vec<u32> = notes
        .iter()
        .filter_map(|l| l.split("(pid ").nth(1)?.split(',').next()?.parse().ok())
        .collect();
    assert!(!started.is_empty(), "{notes:?}");
    for pid in started {
        assert!(eventually(5, || !alive(pid)), "{pid} still runs");
    }

    let missing = ServerConfig::stdio("stepwise-no-such-mcp-server", ["--stdio"]);
    let err = McpServers::start([("x".to_owned(), missing)], Options::default())
        .await
        .unwrap_err();
    assert!(matches!(err, McpError::Spawn { .. }), "{err}");
    assert!(
        err.to_string()
            .contains("`stepwise-no-such-mcp-server --stdio`")
            && err.to_string().contains("installed and on PATH"),
        "{err}"
    );
}
