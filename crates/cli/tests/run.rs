//! `stepwise run` end to end: the real binary over the example notes, offline.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

const GOAL: &str = "Should our support team adopt retrieval-augmented generation or fine-tuning?";

fn notes() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/notes")
}

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

fn stepwise(args: &[&str]) -> Out {
    let out = Command::new(env!("CARGO_BIN_EXE_stepwise"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

fn run(goal: &str, extra: &[&str]) -> Out {
    let notes = notes();
    let mut args = vec!["run", goal, "--notes", notes.to_str().unwrap()];
    args.extend_from_slice(extra);
    stepwise(&args)
}

/// The JSON output without the fields documented as varying between runs.
fn stable(mut v: Value) -> Value {
    fn scrub(v: &mut Value) {
        match v {
            Value::Object(map) => {
                for key in ["run_id", "at", "duration_ms", "wall_time_ms"] {
                    map.remove(key);
                }
                map.values_mut().for_each(scrub);
            }
            Value::Array(items) => items.iter_mut().for_each(scrub),
            _ => {}
        }
    }
    scrub(&mut v);
    v
}

#[test]
fn the_offline_run_writes_a_cited_brief_and_shows_progress() {
    let out = run(GOAL, &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.starts_with(&format!("# {GOAL}\n")),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("[rag-vs-fine-tuning]"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("## Unresolved gaps"));
    assert!(out.stdout.contains("## Sources"));
    // stderr is not a terminal here: plain progress, one line per event, no escape codes.
    assert!(
        out.stderr.contains("plan v1 validated: 4 steps"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("[q1] running"), "{}", out.stderr);
    assert!(out.stderr.contains("run ok"), "{}", out.stderr);
    assert!(!out.stderr.contains('\x1b'));
}

#[test]
fn json_output_is_seed_001s_final_output() {
    let out = run(GOAL, &["--json", "--quiet"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.is_empty(),
        "--quiet prints nothing: {}",
        out.stderr
    );
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["status"], "ok");
    for key in [
        "final_report",
        "plan",
        "step_results",
        "knowledge_gaps",
        "evidence",
        "usage",
        "run_id",
        "execution_history",
    ] {
        assert!(v.get(key).is_some(), "missing {key}");
    }
    assert!(
        v["plan"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["status"] == "succeeded")
    );
    let evidence = v["evidence"].as_array().unwrap();
    assert!(!evidence.is_empty());
    assert!(
        evidence
            .iter()
            .all(|e| e["source_id"].is_string() && e["quote"].is_string())
    );
    assert_eq!(
        v["usage"]["llm_calls"], 0,
        "the offline roles call no model"
    );
    assert!(v["usage"]["tool_calls"].as_u64().unwrap() >= 4);
}

#[test]
fn the_same_inputs_give_byte_identical_markdown_and_stable_json() {
    let a = run(GOAL, &["--quiet"]);
    let b = run(GOAL, &["--quiet"]);
    assert_eq!(a.stdout, b.stdout);
    let ja: Value = serde_json::from_str(&run(GOAL, &["--json", "--quiet"]).stdout).unwrap();
    let jb: Value = serde_json::from_str(&run(GOAL, &["--json", "--quiet"]).stdout).unwrap();
    assert_ne!(ja["run_id"], jb["run_id"]);
    assert_eq!(stable(ja), stable(jb));
}

#[test]
fn out_writes_the_brief_to_a_file() {
    let path = std::env::temp_dir().join(format!("stepwise-run-out-{}.md", std::process::id()));
    let out = run(GOAL, &["--out", path.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.is_empty());
    let written = std::fs::read_to_string(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    assert!(written.starts_with(&format!("# {GOAL}")));
    assert!(out.stderr.contains("wrote"), "{}", out.stderr);
}

#[test]
fn constraints_shape_the_brief() {
    let out = run(
        "RAG for customer support",
        &[
            "--quiet",
            "--constraints",
            r#"{"required_sections": ["Costs", "Latency"], "audience": "support leads"}"#,
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("## Costs\n"), "{}", out.stdout);
    assert!(out.stdout.contains("## Latency\n"));
    assert!(out.stdout.contains("_For: support leads_"));
}

#[test]
fn nothing_matching_is_needs_review_with_gaps_not_a_report() {
    let out = run("Quantum entanglement of penguins", &["--quiet"]);
    assert_eq!(out.code, 3, "{}", out.stdout);
    assert!(
        out.stdout
            .starts_with("# Needs review: Quantum entanglement of penguins"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("No evidence in the notes for: Quantum entanglement of penguins")
    );
    assert!(!out.stdout.contains("## Sources"));
}

#[test]
fn an_empty_goal_fails_with_a_clear_message() {
    let out = run("   ", &["--quiet"]);
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains("error: the goal is empty"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_missing_notes_folder_is_a_usage_error() {
    let out = stepwise(&["run", GOAL, "--notes", "/nonexistent/notes"]);
    assert_eq!(out.code, 2);
    assert_eq!(
        out.stderr.trim(),
        "error: notes folder /nonexistent/notes does not exist"
    );
}

#[test]
fn bad_constraints_are_a_usage_error() {
    let out = run(GOAL, &["--constraints", "{nope"]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.starts_with("error: --constraints is not JSON"),
        "{}",
        out.stderr
    );
}

#[test]
fn max_steps_bounds_the_plan() {
    let out = run(GOAL, &["--json", "--quiet", "--max-steps", "2"]);
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    assert!(v["plan"].as_array().unwrap().len() <= 2, "{}", v["plan"]);
}
