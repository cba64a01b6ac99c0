//! Approvals end to end: a run pauses before a side-effect step (and, with
//! --review, before its plan), `stepwise approve` records the approval bound
//! to the step's arguments, `stepwise resume` carries on.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use serde_json::json;

mod common;

use common::{Out, Scratch, Stepwise};

/// A scratch folder: the run database, the plan and the workspace.
struct Dir(Scratch);

impl Dir {
    fn new(name: &str) -> Self {
        let scratch = Scratch::new("approval", name);
        let p = scratch.path();
        let plan = common::save_plan();
        std::fs::write(p.join("plan.json"), plan.to_string()).unwrap();
        Self(scratch)
    }

    fn path(&self) -> &Path {
        self.0.path()
    }
}

/// Runs the binary isolated (see [`common::Stepwise`]) on the folder's database.
fn stepwise(dir: &Dir, args: &[&str]) -> Out {
    Stepwise::new()
        .db(&dir.0.db())
        .args(args)
        .env("USER", "alice")
        .run()
}

fn start(dir: &Dir, run_id: &str, extra: &[&str]) -> Out {
    let notes = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/notes");
    let plan = dir.path().join("plan.json");
    let ws = dir.path().join("ws");
    let mut args = vec![
        "run",
        "Save the latency budget",
        "--notes",
        notes.to_str().unwrap(),
        "--plan",
        plan.to_str().unwrap(),
        "--workspace",
        ws.to_str().unwrap(),
        "--run-id",
        run_id,
        "--quiet",
    ];
    args.extend_from_slice(extra);
    stepwise(dir, &args)
}

#[test]
fn a_side_effect_step_waits_for_approve_then_resume() {
    let dir = Dir::new("step");
    let paused = start(&dir, "run_a", &[]);
    assert_eq!(paused.code, 4, "{}", paused.stderr);
    assert!(
        paused
            .stdout
            .starts_with("# Awaiting approval: Save the latency budget"),
        "{}",
        paused.stdout
    );
    assert!(paused.stdout.contains("- step save (write_file)"));
    assert!(
        !dir.path().join("ws/latency.md").exists(),
        "nothing written before the approval"
    );

    let early = stepwise(&dir, &["resume", "run_a", "--quiet"]);
    assert_eq!(
        early.code, 4,
        "resuming without an approval pauses again: {}",
        early.stderr
    );
    assert!(!dir.path().join("ws/latency.md").exists());

    let approved = stepwise(&dir, &["approve", "run_a"]);
    assert_eq!(approved.code, 0, "{}", approved.stderr);
    assert!(format!("{}{}", approved.stdout, approved.stderr).contains("stepwise resume run_a"));

    let done = stepwise(&dir, &["resume", "run_a", "--json", "--quiet"]);
    assert_eq!(done.code, 0, "{}", done.stderr);
    let v: serde_json::Value = serde_json::from_str(&done.stdout).unwrap();
    assert_eq!(v["status"], "ok");
    let granted: Vec<&serde_json::Value> = v["execution_history"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "approval_granted")
        .collect();
    assert_eq!(granted.len(), 1);
    assert_eq!(granted[0]["by"], "alice");
    let written = std::fs::read_to_string(dir.path().join("ws/latency.md")).unwrap();
    assert!(written.contains("1.5 seconds"), "{written}");
}

#[test]
fn with_review_the_plan_is_approved_first_then_the_step() {
    let dir = Dir::new("review");
    let paused = start(&dir, "run_r", &["--review"]);
    assert_eq!(paused.code, 4, "{}", paused.stderr);
    assert!(
        paused.stdout.contains("- plan version 1"),
        "{}",
        paused.stdout
    );
    assert_eq!(stepwise(&dir, &["approve", "run_r"]).code, 0);
    let at_step = stepwise(&dir, &["resume", "run_r", "--quiet"]);
    assert_eq!(
        at_step.code, 4,
        "now the side-effect step waits: {}",
        at_step.stdout
    );
    assert!(at_step.stdout.contains("- step save (write_file)"));
    assert_eq!(
        stepwise(&dir, &["approve", "run_r", "--step", "save"]).code,
        0
    );
    let done = stepwise(&dir, &["resume", "run_r", "--quiet"]);
    assert_eq!(done.code, 0, "{}", done.stderr);
    assert!(dir.path().join("ws/latency.md").exists());
}

#[test]
fn reject_stops_the_run_for_review_and_nothing_is_written() {
    let dir = Dir::new("reject");
    assert_eq!(start(&dir, "run_x", &[]).code, 4);
    let rejected = stepwise(&dir, &["reject", "run_x", "--reason", "not this file"]);
    assert_eq!(rejected.code, 3, "{}", rejected.stderr);
    let resumed = stepwise(&dir, &["resume", "run_x", "--quiet"]);
    assert_ne!(resumed.code, 0);
    assert!(!dir.path().join("ws/latency.md").exists());
}

#[test]
fn approve_auto_records_the_approval_up_front() {
    let dir = Dir::new("auto");
    let out = start(&dir, "run_auto", &["--approve", "auto", "--json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let granted: Vec<&serde_json::Value> = v["execution_history"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "approval_granted")
        .collect();
    assert_eq!(granted.len(), 1);
    assert_eq!(granted[0]["by"], "auto");
}

#[test]
fn a_workspace_escape_in_the_plan_fails_the_step_not_the_process() {
    let dir = Dir::new("escape");
    let plan = json!({"steps": [
        {"id": "save", "description": "Escape", "tool": "write_file",
         "args": {"path": "../../etc/evil", "content": "x"}, "acceptance_criteria": ["written"]}
    ]});
    std::fs::write(dir.path().join("plan.json"), plan.to_string()).unwrap();
    let out = start(&dir, "run_e", &["--approve", "auto", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_ne!(v["status"], "ok");
    let failed = v["execution_history"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "step_failed")
        .unwrap();
    assert!(
        failed["failure"]["message"]
            .as_str()
            .unwrap()
            .contains("without `..`"),
        "{failed}"
    );
    assert!(!dir.path().join("etc").exists());
}

#[test]
fn a_react_write_waits_for_approve_then_resume_writes_once() {
    let dir = Dir::new("react");
    let notes = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/notes");
    let ws = dir.path().join("ws");
    let script = json!([
        {"purpose": "actor", "json": {"action": "call", "thought": "save a note",
            "tool": "write_file", "args": {"path": "note.md", "content": "budget: 1.5 s"}}},
        // The answer cites the write's own result (a report citing nothing is never ok).
        {"purpose": "actor", "json": {"action": "answer",
            "report": {"text": "Saved note.md. [call-1]", "evidence": [
                {"source_id": "call-1", "step": "call-1", "quote": "note.md"}]}, "gaps": []}}
    ]);
    std::fs::write(dir.path().join("script.json"), script.to_string()).unwrap();
    let script_arg = format!("script:{}", dir.path().join("script.json").display());
    let paused = stepwise(
        &dir,
        &[
            "run",
            "Save a note on the latency budget",
            "--notes",
            notes.to_str().unwrap(),
            "--workspace",
            ws.to_str().unwrap(),
            "--model",
            &script_arg,
            "--strategy",
            "react",
            "--run-id",
            "run_react",
            "--quiet",
        ],
    );
    assert_eq!(paused.code, 4, "{}{}", paused.stdout, paused.stderr);
    assert!(paused.stdout.contains("write_file"), "{}", paused.stdout);
    assert!(
        !ws.join("note.md").exists(),
        "nothing written before the approval"
    );

    let approved = stepwise(&dir, &["approve", "run_react"]);
    assert_eq!(approved.code, 0, "{}", approved.stderr);
    // A script restarts in each process: from here on the model answers.
    std::fs::write(
        dir.path().join("script.json"),
        json!([script[1].clone()]).to_string(),
    )
    .unwrap();
    let done = stepwise(&dir, &["resume", "run_react", "--json", "--quiet"]);
    assert_eq!(done.code, 0, "{}{}", done.stdout, done.stderr);
    let v: serde_json::Value = serde_json::from_str(&done.stdout).unwrap();
    assert_eq!(v["status"], "ok");
    assert_eq!(v["strategy"], "react");
    assert_eq!(
        std::fs::read_to_string(ws.join("note.md")).unwrap(),
        "budget: 1.5 s"
    );
}
