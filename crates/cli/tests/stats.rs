//! `stepwise stats` over a database filled with a known mix of runs: each
//! figure must equal the count made by hand here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use chrono::{Duration, Utc};
use serde_json::Value;
use stepwise_core::{EventKind, RunId, Store, Usage};
use stepwise_store::SqliteStore;

mod common;

use common::log::{block_on, started, timed};
use common::{Out, Scratch, Stepwise};

fn notes() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/notes")
}

fn stepwise(dir: &Scratch, args: &[&str], env: &[(&str, &str)]) -> Out {
    Stepwise::new()
        .db(&dir.db())
        .current_dir(dir.path())
        .envs(env)
        .env("USER", "alice")
        .args(args)
        .run()
}

/// An offline run of the README's goal, `ok` with no one involved.
fn plain(dir: &Scratch, id: &str, env: &[(&str, &str)]) -> Out {
    let notes = notes();
    stepwise(
        dir,
        &[
            "run",
            "Should our team adopt retrieval-augmented generation for customer support?",
            "--notes",
            notes.to_str().unwrap(),
            "--run-id",
            id,
            "--quiet",
        ],
        env,
    )
}

#[test]
fn stats_count_a_known_mix_of_runs() {
    let dir = Scratch::new("stats", "mix");
    // 1, 2: two runs that reach ok alone: the closed loop.
    assert_eq!(plain(&dir, "run_a", &[]).code, 0);
    assert_eq!(plain(&dir, "run_b", &[]).code, 0);
    // 3: a crash mid-run (the process aborts after its 6th write), then a
    // resume with nobody deciding anything: ok, recovered and closed-loop.
    let crashed = plain(
        &dir,
        "run_c",
        &[("STEPWISE_FAILPOINT", "abort-after-writes=6")],
    );
    assert_ne!(crashed.code, 0, "the failpoint did not abort");
    let resumed = stepwise(&dir, &["resume", "run_c", "--quiet"], &[]);
    assert_eq!(resumed.code, 0, "{}", resumed.stderr);
    // 4: a write that waits for approval, approved by alice, resumed: ok and
    // recovered, not closed-loop.
    let plan = dir.path().join("plan.json");
    std::fs::write(&plan, common::save_plan().to_string()).unwrap();
    let notes = notes();
    let ws = dir.path().join("ws");
    let paused = stepwise(
        &dir,
        &[
            "run",
            "Save the latency budget",
            "--notes",
            notes.to_str().unwrap(),
            "--plan",
            plan.to_str().unwrap(),
            "--workspace",
            ws.to_str().unwrap(),
            "--run-id",
            "run_d",
            "--quiet",
        ],
        &[],
    );
    assert_eq!(paused.code, 4, "{}", paused.stderr);
    assert_eq!(stepwise(&dir, &["approve", "run_d"], &[]).code, 0);
    assert_eq!(stepwise(&dir, &["resume", "run_d", "--quiet"], &[]).code, 0);
    // 5: a failed run, written straight into the database, 10 days old.
    let store = SqliteStore::open(&dir.db()).unwrap();
    let mut kinds = started("run_e", "Plan a launch");
    kinds.push(EventKind::RunFailed {
        error: "the planner failed".to_owned(),
        usage: Usage::default(),
    });
    let events = timed(kinds, Utc::now() - Duration::days(10), 500);
    block_on(store.append(&RunId("run_e".to_owned()), &events, None)).unwrap();
    drop(store);

    let out = stepwise(&dir, &["stats", "--json"], &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    let all = &v["all"];
    assert_eq!(all["runs"], 5, "{v:#}");
    assert_eq!(all["by_status"]["ok"], 4);
    assert_eq!(all["by_status"]["failed"], 1);
    assert_eq!(all["closed_loop"], 3, "a, b and the crashed c: {v:#}");
    assert_eq!(all["recovered"], 2, "c after its crash, d after its pause");
    assert_eq!(all["closed_loop_rate"], 0.6);
    assert_eq!(all["resumes_per_recovered"], 1.0);
    assert_eq!(all["decisions_per_recovered"], 0.5, "alice's one approval");
    assert_eq!(
        all["model_calls_per_run"], 0.0,
        "offline roles call no model"
    );
    assert_eq!(v["by_model"]["offline"]["runs"], 4);
    assert_eq!(
        v["by_model"]["-"]["runs"], 1,
        "the run written by hand has no host"
    );
    assert_eq!(v["by_strategy"]["plan-execute"]["runs"], 5);

    // --since leaves out the 10-day-old failure, --strategy what is not asked.
    let recent = stepwise(&dir, &["stats", "--json", "--since", "1d"], &[]);
    let v: Value = serde_json::from_str(&recent.stdout).unwrap();
    assert_eq!(v["all"]["runs"], 4);
    assert_eq!(v["all"]["closed_loop_rate"], 0.75);
    let none = stepwise(&dir, &["stats", "--json", "--strategy", "react"], &[]);
    let v: Value = serde_json::from_str(&none.stdout).unwrap();
    assert_eq!(v["all"]["runs"], 0);

    // The table says the same.
    let table = stepwise(&dir, &["stats"], &[]);
    assert_eq!(table.code, 0, "{}", table.stderr);
    let all_row = table
        .stdout
        .lines()
        .find(|l| l.starts_with("all"))
        .unwrap_or_else(|| panic!("{}", table.stdout));
    assert!(all_row.contains("3 (60%)"), "{}", table.stdout);
    assert!(all_row.contains("2 (40%)"), "{}", table.stdout);
    assert!(table.stdout.contains("strategy plan-execute"));
    assert!(table.stdout.contains("model offline"));
}

#[test]
fn stats_of_no_database_say_so_and_create_nothing() {
    let dir = Scratch::new("stats", "empty");
    let out = stepwise(&dir, &["stats"], &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.starts_with("no runs to count in"),
        "{}",
        out.stdout
    );
    assert!(!dir.db().exists(), "stats never creates a database");
}
