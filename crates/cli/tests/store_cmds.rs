//! `stepwise runs`, `show`, `approve`, `reject` and `cancel` end to end: the
//! real binary over a database whose runs the test writes through the library.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Output;

use chrono::{TimeZone, Utc};
use serde_json::{Value, json};
use stepwise_core::{
    Event, EventKind, Plan, RunId, RunLease, RunState, RunStatus, Step, StepId, StepResult, Store,
    Usage, Verdict,
};
use stepwise_store::SqliteStore;

mod common;

use common::log::{block_on, started, timed};

use common::Stepwise;

const GOAL: &str = "Should our support team adopt retrieval-augmented generation or fine-tuning?";
const HASH: &str = "3fa2c1d9e0ab44b5c6d7e8f90112233445566778899aabbccddeeff001122334";

/// A directory of its own under Cargo's scratch space, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("store_cmds-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    fn db(&self) -> PathBuf {
        self.0.join("x.db")
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs the binary isolated (see [`common::Stepwise`]) on the database `db`.
fn stepwise(db: &Path, args: &[&str]) -> Output {
    Stepwise::new()
        .db(db)
        .args(args)
        .env("USER", "alice")
        .output()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn code(out: &Output) -> i32 {
    out.status.code().unwrap()
}

/// Events at a fixed, increasing time: 2025-03-04 09:30:00 UTC plus `seq` × 250 ms.
fn events(kinds: Vec<EventKind>) -> Vec<Event> {
    timed(
        kinds,
        Utc.with_ymd_and_hms(2025, 3, 4, 9, 30, 0).unwrap(),
        250,
    )
}

fn plan() -> Plan {
    Plan {
        version: 1,
        steps: vec![
            Step::new(
                "search",
                "Find notes on RAG and fine-tuning",
                "search_notes",
            )
            .with_args(json!({"query": "rag fine-tuning"}))
            .accept("at least one note"),
            Step::new("save", "Save the \"brief\" to the workspace", "write_file")
                .with_args(json!({"path": "brief.md", "content": "${search.output}"}))
                .after(["search"])
                .accept("the file is written"),
        ],
    }
}

/// The start of a run, up to its plan being validated.
fn planned(run: &str) -> Vec<EventKind> {
    let mut kinds = started(run, GOAL);
    kinds.extend([
        EventKind::PlanCreated {
            draft: serde_json::to_value(plan()).unwrap(),
            usage: Usage::llm_call(1200, 300),
        },
        EventKind::PlanValidated { plan: plan() },
    ]);
    kinds
}

/// A run paused at `awaiting_approval`: `search` succeeded, `save` (a
/// side-effect tool) asked for an approval of its arguments.
fn paused_for_step(run: &str) -> Vec<Event> {
    let mut kinds = planned(run);
    kinds.extend([
        EventKind::PlanApproved {
            version: 1,
            by: "auto".to_owned(),
            usage: Usage::default(),
        },
        EventKind::StepStarted {
            step: StepId::new("search"),
            attempt: 1,
        },
        EventKind::StepSucceeded {
            step: StepId::new("search"),
            result: StepResult {
                output: json!(["note-rag", "note-ft"]),
                attempts: 1,
                duration_ms: 12,
            },
            usage: Usage::default(),
        },
        EventKind::Assessed {
            step: StepId::new("search"),
            acceptance_met: true,
            verdict: Verdict::Continue,
            reason: "two notes found".to_owned(),
            new_gaps: vec!["no cost figures for fine-tuning".to_owned()],
            resolved_gaps: Vec::new(),
            observations: Vec::new(),
            usage: Usage::llm_call(400, 50),
        },
        EventKind::ApprovalRequested {
            step: StepId::new("save"),
            tool: "write_file".to_owned(),
            args: json!({"path": "brief.md", "content": "[\"note-rag\",\"note-ft\"]"}),
            args_hash: HASH.to_owned(),
            destructive: false,
        },
        EventKind::AwaitingApproval {
            steps: vec![StepId::new("save")],
            plan_version: None,
        },
    ]);
    events(kinds)
}

/// A run paused for a person's review of plan version 1.
fn paused_for_review(run: &str) -> Vec<Event> {
    let mut kinds = planned(run);
    kinds.extend([
        EventKind::PlanReviewRequested { version: 1 },
        EventKind::AwaitingApproval {
            steps: Vec::new(),
            plan_version: Some(1),
        },
    ]);
    events(kinds)
}

fn write(db: &Path, run: &str, events: &[Event]) {
    let store = SqliteStore::open(db).unwrap();
    block_on(store.append(&RunId(run.to_owned()), events, None)).unwrap();
}

fn state(db: &Path, run: &str) -> RunState {
    let store = SqliteStore::open(db).unwrap();
    block_on(store.state(&RunId(run.to_owned()))).unwrap()
}

/// A database with one run paused for the approval of step `save`.
fn with_paused_run(name: &str) -> (Scratch, PathBuf) {
    let scratch = Scratch::new(name);
    let db = scratch.db();
    write(&db, "run_a", &paused_for_step("run_a"));
    (scratch, db)
}

#[test]
fn runs_lists_every_run_newest_first() {
    let (_scratch, db) = with_paused_run("runs");
    // A later run, paused for a plan review.
    let mut later = paused_for_review("run_b");
    for e in &mut later {
        e.at += chrono::Duration::hours(1);
    }
    write(&db, "run_b", &later);

    let out = stepwise(&db, &["runs"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let table = text(&out.stdout);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 3, "{table}");
    for header in [
        "RUN",
        "STATUS",
        "STARTED (UTC)",
        "STEPS",
        "REPLANS",
        "TOKENS",
        "GOAL",
    ] {
        assert!(lines[0].contains(header), "{table}");
    }
    assert!(lines[1].starts_with("run_b "), "newest first: {table}");
    assert!(lines[2].starts_with("run_a "), "{table}");
    assert!(lines[2].contains("awaiting_approval"), "{table}");
    assert!(lines[2].contains("2025-03-04 09:30"), "{table}");
    assert!(lines[2].contains("1/2"), "{table}");
    assert!(lines[2].contains("1950"), "tokens: {table}");
    assert!(
        lines[2].contains("Should our support team adopt"),
        "{table}"
    );
    assert!(lines[2].ends_with('…'), "the goal is clipped: {table}");
    assert!(lines[2].chars().count() < 160, "{table}");

    let out = stepwise(&db, &["runs", "--json"]);
    assert_eq!(code(&out), 0);
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    let runs = json.as_array().unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[1]["run_id"], "run_a");
    assert_eq!(runs[1]["status"], "awaiting_approval");
    assert_eq!(runs[1]["steps_done"], 1);
    assert_eq!(runs[1]["steps_total"], 2);
    assert_eq!(runs[1]["goal"], GOAL);
}

#[test]
fn runs_in_a_database_that_does_not_exist_says_so_and_creates_nothing() {
    let scratch = Scratch::new("empty");
    let db = scratch.db();
    let out = stepwise(&db, &["runs"]);
    assert_eq!(code(&out), 0);
    assert_eq!(
        text(&out.stdout),
        format!("no runs yet in {}\n", db.display())
    );
    assert!(!db.exists(), "a read-only command created the database");
    let out = stepwise(&db, &["runs", "--json"]);
    assert_eq!(code(&out), 0);
    assert_eq!(
        serde_json::from_slice::<Value>(&out.stdout).unwrap(),
        json!([])
    );

    // An existing, empty database.
    drop(SqliteStore::open(&db).unwrap());
    let out = stepwise(&db, &["runs"]);
    assert_eq!(code(&out), 0);
    assert!(text(&out.stdout).starts_with("no runs yet in "));
}

#[test]
fn show_summarises_the_run_and_says_what_to_do_next() {
    let (_scratch, db) = with_paused_run("show");
    let out = stepwise(&db, &["show", "run_a"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let summary = text(&out.stdout);
    for expected in [
        "run       run_a",
        &format!("goal      {GOAL}"),
        "status    awaiting_approval",
        "why       waiting for approval of step save",
        "plan      version 1, 2 steps",
        "replans   0 of at most 2",
        "2 model calls · 1950 tokens (1600 in, 350 out) · 1 tool call",
        "Plan (version 1)",
        "✓ succeeded  search  search_notes",
        "· pending    save    write_file    after search",
        "Waiting for approval",
        "step save (write_file) {\"content\":\"[\\\"note-rag\\\",\\\"note-ft\\\"]\",\"path\":\"brief.md\"}  hash 3fa2c1d9e0ab",
        "Knowledge gaps",
        "- no cost figures for fine-tuning",
        "next: stepwise approve run_a",
        "stepwise reject run_a --reason",
    ] {
        assert!(
            summary.contains(expected),
            "missing {expected:?} in:\n{summary}"
        );
    }
    assert!(!summary.contains("Report"), "{summary}");
}

#[test]
fn show_mermaid_draws_the_plan_with_statuses() {
    let (_scratch, db) = with_paused_run("mermaid");
    let out = stepwise(&db, &["show", "run_a", "--mermaid"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let chart = text(&out.stdout);
    let lines: Vec<&str> = chart.lines().map(str::trim).collect();
    assert_eq!(lines[0], "flowchart TD");
    assert!(
        lines.contains(&"s_search[\"search: search_notes<br/>succeeded\"]"),
        "{chart}"
    );
    assert!(
        lines.contains(&"s_save[\"save: write_file<br/>pending\"]"),
        "{chart}"
    );
    assert!(lines.contains(&"s_search --> s_save"), "{chart}");
    assert!(lines.contains(&"class s_search succeeded;"), "{chart}");
    assert!(lines.contains(&"class s_save pending;"), "{chart}");
    for status in [
        "pending",
        "running",
        "succeeded",
        "failed",
        "retrying",
        "terminated",
        "skipped",
    ] {
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with(&format!("classDef {status} "))),
            "no classDef for {status}: {chart}"
        );
    }
    let skipped = lines
        .iter()
        .find(|l| l.starts_with("classDef skipped"))
        .unwrap();
    assert!(skipped.contains("stroke-dasharray"), "{skipped}");
    assert_eq!(
        lines.iter().filter(|l| l.contains("-->")).count(),
        1,
        "{chart}"
    );
}

#[test]
fn show_events_prints_one_line_per_event() {
    let (_scratch, db) = with_paused_run("events");
    let out = stepwise(&db, &["show", "run_a", "--events"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let listing = text(&out.stdout);
    let lines: Vec<&str> = listing.lines().collect();
    assert_eq!(lines.len(), 10, "{listing}");
    assert!(
        lines[0].starts_with(" 1  09:30:00.250  run_started "),
        "{listing}"
    );
    assert!(
        lines[6].contains("step_succeeded") && lines[6].contains("search in 12 ms"),
        "{listing}"
    );
    assert!(
        lines[7].contains("assessed") && lines[7].contains("search continue: two notes found"),
        "{listing}"
    );
    assert!(
        lines[8].contains("approval_requested")
            && lines[8].contains("save (write_file) hash 3fa2c1d9e0ab"),
        "{listing}"
    );
    assert!(
        lines[9].starts_with("10  09:30:02.500  awaiting_approval"),
        "{listing}"
    );
    assert!(lines[9].ends_with("step save"), "{listing}");

    let out = stepwise(&db, &["show", "run_a", "--events", "--json"]);
    assert_eq!(code(&out), 0);
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json.as_array().unwrap().len(), 10);
    assert_eq!(json[9]["kind"], "awaiting_approval");
}

#[test]
fn show_json_is_the_final_output() {
    let (_scratch, db) = with_paused_run("json");
    let out = stepwise(&db, &["show", "run_a", "--json"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    let expected = serde_json::to_value(state(&db, "run_a").final_output()).unwrap();
    assert_eq!(json, expected);
    assert_eq!(json["status"], "awaiting_approval");
    assert_eq!(json["plan"].as_array().unwrap().len(), 2);
    assert_eq!(json["execution_history"].as_array().unwrap().len(), 10);
}

#[test]
fn approve_grants_the_requested_hash_and_points_to_resume() {
    let (_scratch, db) = with_paused_run("approve");
    let out = stepwise(&db, &["approve", "run_a"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let said = text(&out.stdout);
    assert!(said.contains("approved step save (write_file)"), "{said}");
    assert!(said.contains("hash 3fa2c1d9e0ab"), "{said}");
    assert!(
        said.contains("continue with: stepwise resume run_a"),
        "{said}"
    );

    let state = state(&db, "run_a");
    assert_eq!(
        state
            .approvals
            .get(&StepId::new("save"))
            .map(String::as_str),
        Some(HASH)
    );
    assert!(state.pending_approvals.is_empty());
    assert_eq!(state.execution_history.len(), 11);
    match &state.execution_history[10].kind {
        EventKind::ApprovalGranted {
            step,
            args_hash,
            by,
        } => {
            assert_eq!(step.as_str(), "save");
            assert_eq!(args_hash, HASH);
            assert_eq!(by, "alice");
        }
        other => panic!("expected approval_granted, got {other:?}"),
    }
    // Still paused until resumed; show now points to resume.
    assert_eq!(state.status, RunStatus::AwaitingApproval);
    let out = stepwise(&db, &["show", "run_a"]);
    assert!(
        text(&out.stdout).contains("next: stepwise resume run_a"),
        "{}",
        text(&out.stdout)
    );

    // Approving again changes nothing.
    let out = stepwise(&db, &["approve", "run_a"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("nothing left to approve"));
    assert_eq!(event_count(&db), 11);
}

fn event_count(db: &Path) -> usize {
    state(db, "run_a").execution_history.len()
}

#[test]
fn approve_approves_a_plan_waiting_for_review() {
    let scratch = Scratch::new("review");
    let db = scratch.db();
    write(&db, "run_r", &paused_for_review("run_r"));
    let out = stepwise(&db, &["show", "run_r"]);
    assert!(
        text(&out.stdout).contains("plan version 1 (review the plan above)"),
        "{}",
        text(&out.stdout)
    );
    let out = stepwise(&db, &["approve", "run_r"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("approved plan version 1 (2 steps)"),
        "{}",
        text(&out.stdout)
    );
    let state = state(&db, "run_r");
    assert_eq!(state.pending_review, None);
    assert_eq!(state.approved_version, Some(1));
    assert!(matches!(
        &state.execution_history.last().unwrap().kind,
        EventKind::PlanApproved { version: 1, by, .. } if by == "alice"
    ));
}

#[test]
fn approve_step_names_a_pending_step() {
    let (_scratch, db) = with_paused_run("approve-step");
    let out = stepwise(&db, &["approve", "run_a", "--step", "search"]);
    assert_eq!(code(&out), 1);
    let err = text(&out.stderr);
    assert!(err.contains("no approval pending for step search"), "{err}");
    assert!(err.contains("it waits for: step save"), "{err}");
    assert_eq!(event_count(&db), 10);

    let out = stepwise(&db, &["approve", "run_a", "--step", "save"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(state(&db, "run_a").approvals.len(), 1);
}

#[test]
fn approve_refuses_a_run_that_is_not_waiting() {
    let (_scratch, db) = with_paused_run("not-waiting");
    let out = stepwise(&db, &["cancel", "run_a"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let out = stepwise(&db, &["approve", "run_a"]);
    assert_eq!(code(&out), 1);
    let err = text(&out.stderr);
    assert_eq!(
        err,
        "error: run run_a is not waiting for an approval (it is cancelled)\n"
    );
    let out = stepwise(&db, &["reject", "run_a", "--reason", "x"]);
    assert_eq!(code(&out), 1);
}

#[test]
fn reject_stops_the_run_for_review() {
    let (_scratch, db) = with_paused_run("reject");
    let out = stepwise(&db, &["reject", "run_a", "--reason", "no writes today"]);
    assert_eq!(code(&out), 3, "{}", text(&out.stderr));
    let said = text(&out.stdout);
    assert!(said.contains("now needs review"), "{said}");

    let state = state(&db, "run_a");
    assert_eq!(state.status, RunStatus::NeedsReview);
    assert_eq!(
        state.blocked_reason.as_deref(),
        Some("alice rejected step save: no writes today")
    );
    assert!(state.pending_approvals.is_empty());
    assert!(state.approvals.is_empty());
    let kinds: Vec<&str> = state.execution_history[10..]
        .iter()
        .map(|e| e.kind.name())
        .collect();
    assert_eq!(kinds, ["approval_denied", "needs_review"]);
}

#[test]
fn cancel_ends_the_run_once() {
    let (_scratch, db) = with_paused_run("cancel");
    let out = stepwise(&db, &["cancel", "run_a", "--reason", "wrong goal"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("cancelled run run_a: wrong goal"));
    let state = state(&db, "run_a");
    assert_eq!(state.status, RunStatus::Cancelled);
    assert!(matches!(
        &state.execution_history.last().unwrap().kind,
        EventKind::RunCancelled { reason } if reason == "wrong goal"
    ));

    let out = stepwise(&db, &["cancel", "run_a"]);
    assert_eq!(code(&out), 1);
    assert_eq!(
        text(&out.stderr),
        "error: run run_a already ended (cancelled)\n"
    );
}

#[test]
fn a_run_leased_by_another_process_is_left_alone() {
    let (_scratch, db) = with_paused_run("leased");
    let store = SqliteStore::open(&db).unwrap();
    let lease = block_on(store.acquire(&RunId("run_a".into()), "worker-7:4242", 60_000)).unwrap();

    for args in [
        &["approve", "run_a"][..],
        &["reject", "run_a", "--reason", "x"],
        &["cancel", "run_a"],
    ] {
        let out = stepwise(&db, args);
        assert_eq!(code(&out), 1, "{args:?}");
        let err = text(&out.stderr);
        assert!(
            err.starts_with("error: run run_a is being worked on by worker-7:4242 "),
            "{err}"
        );
        assert!(err.contains("until "), "{err}");
        assert!(
            err.trim_end()
                .ends_with("; wait for it to finish or stop that process"),
            "{err}"
        );
        assert_eq!(err.lines().count(), 1, "{err}");
    }
    assert_eq!(event_count(&db), 10, "nothing was written");

    // Once the other process lets go, approving works.
    block_on(store.release(&lease)).unwrap();
    let out = stepwise(&db, &["approve", "run_a"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    // The command gave its own lease back.
    block_on(store.acquire(&RunId("run_a".into()), "worker-7:4242", 1_000)).unwrap();
}

#[test]
fn an_unknown_run_is_a_usage_error() {
    let (_scratch, db) = with_paused_run("unknown");
    for args in [
        &["show", "run_nope"][..],
        &["show", "run_nope", "--mermaid"],
        &["approve", "run_nope"],
        &["reject", "run_nope", "--reason", "x"],
        &["cancel", "run_nope"],
    ] {
        let out = stepwise(&db, args);
        assert_eq!(code(&out), 2, "{args:?}");
        let err = text(&out.stderr);
        assert!(err.starts_with("error: no run with id run_nope"), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
    assert!(state(&db, "run_a").execution_history.len() == 10);

    // No database at all: the same usage error, and nothing is created.
    let missing = db.with_file_name("missing.db");
    let out = stepwise(&missing, &["show", "run_a"]);
    assert_eq!(code(&out), 2);
    assert!(
        text(&out.stderr).contains("no run with id run_a"),
        "{}",
        text(&out.stderr)
    );
    assert!(!missing.exists());
}

#[test]
fn a_corrupt_database_is_a_usage_error_and_left_alone() {
    let scratch = Scratch::new("corrupt");
    let db = scratch.db();
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let bytes: Vec<u8> = (0..4096)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect();
    std::fs::write(&db, &bytes).unwrap();
    for args in [
        &["runs"][..],
        &["show", "run_a"],
        &["approve", "run_a"],
        &["cancel", "run_a"],
    ] {
        let out = stepwise(&db, args);
        assert_eq!(code(&out), 2, "{args:?}");
        let err = text(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.starts_with("error: "), "{err}");
        assert!(
            err.contains(&db.display().to_string()),
            "names the file: {err}"
        );
        assert!(out.stdout.is_empty());
    }
    assert_eq!(std::fs::read(&db).unwrap(), bytes, "the file was changed");
}

#[test]
fn a_run_is_named_by_any_prefix_no_other_run_shares() {
    let (_scratch, db) = with_paused_run("prefix");
    write(&db, "run_ab", &paused_for_review("run_ab"));
    write(&db, "run_b", &paused_for_review("run_b"));
    // `run_b` is a whole id; `run_ab` and `run_a` are too. A prefix of one id only:
    let shown = stepwise(&db, &["show", "run_ab", "--json"]);
    assert_eq!(code(&shown), 0, "{}", text(&shown.stderr));
    let shown = stepwise(&db, &["show", "run_b", "--json"]);
    let json: Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert_eq!(json["run_id"], "run_b");
    write(&db, "run_cdef", &paused_for_review("run_cdef"));
    let shown = stepwise(&db, &["show", "run_c", "--json"]);
    assert_eq!(code(&shown), 0, "{}", text(&shown.stderr));
    let json: Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert_eq!(json["run_id"], "run_cdef");
    // A prefix several ids share is refused, naming them.
    let ambiguous = stepwise(&db, &["show", "run_"]);
    assert_eq!(code(&ambiguous), 2);
    let message = text(&ambiguous.stderr);
    assert!(message.contains("names 4 runs"), "{message}");
    assert!(message.contains("run_cdef"), "{message}");
    // Approving by a prefix acts on the whole id.
    let approved = stepwise(&db, &["approve", "run_cd"]);
    assert_eq!(code(&approved), 0, "{}", text(&approved.stderr));
    assert_eq!(state(&db, "run_cdef").approved_version, Some(1));
}

#[test]
fn show_diff_names_what_a_replan_changed() {
    let scratch = Scratch::new("diff");
    let db = scratch.db();
    let examples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let notes = examples.join("notes");
    let brief = examples.join("brief.json");
    let out = stepwise(
        &db,
        &[
            "run",
            "Should our team adopt retrieval-augmented generation for customer support?",
            "--notes",
            notes.to_str().unwrap(),
            "--constraints",
            brief.to_str().unwrap(),
            "--run-id",
            "run_replanned",
            "--quiet",
        ],
    );
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(
        state(&db, "run_replanned").plan.version,
        2,
        "the README's run replans once"
    );
    let shown = stepwise(&db, &["show", "run_replanned", "--diff"]);
    assert_eq!(code(&shown), 0, "{}", text(&shown.stderr));
    let diff = text(&shown.stdout);
    assert!(diff.starts_with("plan v1 → v2: "), "{diff}");
    let json = stepwise(&db, &["show", "run_replanned", "--diff", "1..2", "--json"]);
    let json: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(
        (json["from"].as_u64(), json["to"].as_u64()),
        (Some(1), Some(2))
    );
    let distance = json["distance"].as_u64().unwrap();
    assert!(distance > 0, "{json}");
    // One line per change, after the heading.
    assert_eq!(diff.lines().count() as u64, distance + 1, "{diff}");
    // The same version twice: no change; a version it does not have: refused.
    let same = stepwise(&db, &["show", "run_replanned", "--diff", "2..2"]);
    assert!(
        text(&same.stdout).contains("the same steps"),
        "{}",
        text(&same.stdout)
    );
    let none = stepwise(&db, &["show", "run_replanned", "--diff", "1..7"]);
    assert_eq!(code(&none), 2);
    assert!(
        text(&none.stderr).contains("no plan version 7"),
        "{}",
        text(&none.stderr)
    );
}
