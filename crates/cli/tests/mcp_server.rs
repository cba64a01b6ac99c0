//! `stepwise mcp` as a real MCP client sees it: the official TypeScript SDK
//! (the version crates/mcp/tests/npm pins) starts it over stdio, lists its
//! tools, runs a goal offline with progress notifications, starts a run
//! that writes, approves the paused write and reads the run back.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

mod common;

use common::Home;

fn sdk() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../mcp/tests/npm/node_modules/@modelcontextprotocol/sdk")
}

#[test]
fn an_mcp_client_runs_a_goal_and_approves_a_paused_write() {
    assert!(
        sdk().join("dist/cjs/client/index.js").exists(),
        "{} is missing: run scripts/test (npm ci --prefix crates/mcp/tests/npm)",
        sdk().display()
    );
    let home = Home::new();
    let work = home.work();
    std::fs::create_dir_all(&work).unwrap();
    let plan = work.join("plan.json");
    std::fs::write(&plan, common::save_plan().to_string()).unwrap();
    let ws = work.join("ws");
    let notes = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/notes");
    let (bin, env, removed) = home.for_child();
    let mut node = Command::new("node");
    node.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_client/client.mjs"))
        .current_dir(&work)
        .env("MCP_SDK_DIR", sdk())
        .env("STEPWISE_BIN", &bin)
        .env("NOTES", &notes)
        .env("PLAN", &plan)
        .env("WORKSPACE", &ws);
    for (var, value) in env {
        node.env(var, value);
    }
    for var in removed {
        node.env_remove(var);
    }
    let out = node
        .output()
        .expect("node is needed to run the MCP client (scripts/test needs it too)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the MCP client failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let seen: Value = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("the client printed no JSON ({e}): {stdout}"));

    // Six tools, each with an output schema; only the readers read-only,
    // and approving (which lets a write run) and cancelling destructive.
    let tools = seen["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "run_goal",
            "get_run",
            "list_runs",
            "approve_step",
            "reject_step",
            "cancel_run"
        ]
    );
    for t in tools {
        let name = t["name"].as_str().unwrap();
        assert_eq!(t["hasOutputSchema"], true, "{t}");
        assert_eq!(
            t["readOnly"],
            matches!(name, "get_run" | "list_runs"),
            "{t}"
        );
        assert_eq!(
            t["destructive"],
            matches!(name, "approve_step" | "cancel_run"),
            "{t}"
        );
    }

    // The offline run: ok, its report, and its progress as it went.
    assert_eq!(seen["run"]["isError"], false, "{seen}");
    assert_eq!(seen["run"]["status"], "ok", "{seen}");
    assert!(
        seen["run"]["report"]
            .as_str()
            .unwrap()
            .contains("[latency-budget]")
    );
    let progress: Vec<&str> = seen["progress"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    assert!(
        progress.iter().any(|p| p.starts_with("plan v1 validated")),
        "{progress:?}"
    );
    assert!(
        progress.last().unwrap().starts_with("run ok"),
        "{progress:?}"
    );

    // The write waits for a person, then runs once approved.
    assert_eq!(seen["paused"]["status"], "awaiting_approval", "{seen}");
    assert_eq!(
        seen["listed"],
        serde_json::json!(["awaiting_approval", "ok"])
    );
    assert_eq!(seen["approved"]["status"], "ok", "{seen}");
    assert_eq!(seen["got"]["status"], "ok");
    let written = std::fs::read_to_string(ws.join("latency.md")).unwrap();
    assert!(written.contains("1.5 seconds"), "{written}");

    // A bad id is an error result with the CLI's message, not a crash.
    assert_eq!(seen["bad"]["isError"], true);
    assert!(
        seen["bad"]["text"]
            .as_str()
            .unwrap()
            .contains("no run with id run_nope")
    );
    home.assert_untouched("mcp");
}
