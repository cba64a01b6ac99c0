//! `stepwise runs` filters (`--status`, `--since`, `--goal`, `--limit`) and
//! `runs delete` / `runs prune`, over a database the test writes through
//! the library: a running run and a run another process holds are never
//! deleted, and prune without --yes deletes nothing.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use chrono::{Duration, Utc};
use stepwise_core::{EventKind, RunId, RunLease, Store, Usage};
use stepwise_store::SqliteStore;

mod common;

use common::log::{block_on, started, timed};

use common::{Out, Scratch, Stepwise};

/// How a test run ends.
#[derive(Clone, Copy)]
enum End {
    Running,
    Failed,
    Cancelled,
}

/// A run of goal `goal` started `age` ago (its last event a second later).
fn write(store: &SqliteStore, run: &str, goal: &str, age: Duration, end: End) {
    let start = Utc::now() - age;
    let mut kinds = started(run, goal);
    match end {
        End::Running => {}
        End::Failed => kinds.push(EventKind::RunFailed {
            error: "the planner failed".to_owned(),
            usage: Usage::default(),
        }),
        End::Cancelled => kinds.push(EventKind::RunCancelled {
            reason: "not needed".to_owned(),
        }),
    }
    let events = timed(kinds, start, 500);
    block_on(store.append(&RunId(run.to_owned()), &events, None)).unwrap();
}

/// A database of five runs, newest first: `new_failed` (1 h, "RAG
/// latency"), `leased` (8 d, held by a worker on another host), `running`
/// (8 d), `old_cancelled` (9 d), `old_failed` (10 d, "Compare rag vendors").
fn seeded(name: &str) -> (Scratch, SqliteStore) {
    let scratch = Scratch::new("runs_manage", name);
    let store = SqliteStore::open(&scratch.db()).unwrap();
    let day = Duration::days(1);
    write(
        &store,
        "old_failed",
        "Compare rag vendors",
        day * 10,
        End::Failed,
    );
    write(
        &store,
        "old_cancelled",
        "Budget review",
        day * 9,
        End::Cancelled,
    );
    write(&store, "running", "Still going", day * 8, End::Running);
    write(
        &store,
        "leased",
        "Held elsewhere",
        day * 8 - Duration::hours(1),
        End::Failed,
    );
    write(
        &store,
        "new_failed",
        "RAG latency",
        Duration::hours(1),
        End::Failed,
    );
    block_on(store.acquire(&RunId("leased".into()), "elsewhere.host:4242", 600_000)).unwrap();
    (scratch, store)
}

fn stepwise(db: &Path, args: &[&str]) -> Out {
    Stepwise::new().db(db).args(args).run()
}

/// The run ids `stepwise runs ARGS --json` lists.
fn listed(db: &Path, args: &[&str]) -> Vec<String> {
    let mut all = vec!["runs", "--json"];
    all.extend_from_slice(args);
    let out = stepwise(db, &all);
    assert_eq!(out.code, 0, "{args:?}: {}", out.stderr);
    out.json()
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["run_id"].as_str().unwrap().to_owned())
        .collect()
}

fn ids(db: &Path) -> Vec<String> {
    listed(db, &[])
}

#[test]
fn runs_filter_by_status_age_goal_and_count() {
    let (scratch, _store) = seeded("filters");
    let db = scratch.db();
    assert_eq!(
        ids(&db),
        [
            "new_failed",
            "leased",
            "running",
            "old_cancelled",
            "old_failed"
        ]
    );
    assert_eq!(
        listed(&db, &["--status", "failed"]),
        ["new_failed", "leased", "old_failed"]
    );
    let both = ["new_failed", "leased", "old_cancelled", "old_failed"];
    assert_eq!(listed(&db, &["--status", "failed,cancelled"]), both);
    assert_eq!(
        listed(&db, &["--status", "failed", "--status", "cancelled"]),
        both
    );
    assert_eq!(listed(&db, &["--since", "2h"]), ["new_failed"]);
    assert_eq!(listed(&db, &["--since", "7d"]), ["new_failed"]);
    assert_eq!(listed(&db, &["--since", "8d12h"]).len(), 3);
    assert_eq!(
        listed(&db, &["--goal", "rag"]),
        ["new_failed", "old_failed"]
    );
    assert_eq!(listed(&db, &["--limit", "2"]), ["new_failed", "leased"]);
    assert_eq!(
        listed(
            &db,
            &["--status", "failed", "--goal", "RAG", "--limit", "1"]
        ),
        ["new_failed"]
    );

    // The table too; and a filter nothing matches says so.
    let table = stepwise(&db, &["runs", "--status", "cancelled"]);
    assert_eq!(table.code, 0, "{}", table.stderr);
    assert!(table.stdout.contains("old_cancelled"), "{}", table.stdout);
    assert!(!table.stdout.contains("old_failed"), "{}", table.stdout);
    let none = stepwise(&db, &["runs", "--goal", "no such goal"]);
    assert!(none.stdout.starts_with("no runs match"), "{}", none.stdout);

    // Bad values are usage errors naming what is expected.
    let bad = stepwise(&db, &["runs", "--status", "done"]);
    assert_eq!(bad.code, 2);
    assert!(bad.stderr.contains("awaiting_approval"), "{}", bad.stderr);
    for since in ["5x", "30", "1.5h"] {
        let bad = stepwise(&db, &["runs", "--since", since]);
        assert_eq!(bad.code, 2, "{since}");
        assert!(bad.stderr.contains("30m, 2h, 7d"), "{}", bad.stderr);
    }
    assert_eq!(stepwise(&db, &["runs", "--limit", "0"]).code, 2);
}

#[test]
fn delete_removes_runs_but_refuses_running_and_held_ones() {
    let (scratch, _store) = seeded("delete");
    let db = scratch.db();
    let all = ids(&db);

    for refused in [&["running"][..], &["old_failed", "leased"][..]] {
        let mut args = vec!["runs", "delete"];
        args.extend_from_slice(refused);
        let out = stepwise(&db, &args);
        assert_eq!(out.code, 1, "{refused:?}: {}", out.stderr);
        assert!(out.stderr.contains("nothing deleted"), "{}", out.stderr);
        assert_eq!(ids(&db), all, "{refused:?}: nothing was deleted");
    }
    let out = stepwise(&db, &["runs", "delete", "leased"]);
    assert!(out.stderr.contains("elsewhere.host:4242"), "{}", out.stderr);

    let unknown = stepwise(&db, &["runs", "delete", "old_failed", "nope"]);
    assert_eq!(unknown.code, 2, "{}", unknown.stderr);
    assert!(unknown.stderr.contains("nope"), "{}", unknown.stderr);
    assert_eq!(ids(&db), all);

    // `--db` is global: after `runs` too.
    let out = Stepwise::new()
        .args(["runs", "--db"])
        .arg(&db)
        .args(["delete", "old_failed", "new_failed"])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("deleted 2 runs"), "{}", out.stdout);
    assert_eq!(ids(&db), ["leased", "running", "old_cancelled"]);
    let show = stepwise(&db, &["show", "old_failed"]);
    assert_eq!(show.code, 2, "the run is gone: {}", show.stderr);

    assert_eq!(
        stepwise(&db, &["runs", "delete"]).code,
        2,
        "a run id is required"
    );
}

#[test]
fn prune_lists_without_yes_and_deletes_with_it() {
    let (scratch, _store) = seeded("prune");
    let db = scratch.db();
    let all = ids(&db);

    let dry = stepwise(&db, &["runs", "prune", "--older-than", "7d"]);
    assert_eq!(dry.code, 0, "{}", dry.stderr);
    assert!(
        dry.stdout
            .contains("would delete 2 runs: old_cancelled, old_failed"),
        "running and held runs are never picked: {}",
        dry.stdout
    );
    assert!(dry.stdout.contains("--yes"), "{}", dry.stdout);
    assert_eq!(ids(&db), all, "without --yes nothing is deleted");

    let out = stepwise(
        &db,
        &[
            "runs",
            "prune",
            "--older-than",
            "7d",
            "--status",
            "cancelled",
            "--yes",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("deleted 1 run"), "{}", out.stdout);
    assert_eq!(ids(&db), ["new_failed", "leased", "running", "old_failed"]);

    let out = stepwise(&db, &["runs", "prune", "--older-than", "7d", "--yes"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("deleted 1 run"), "{}", out.stdout);
    assert_eq!(ids(&db), ["new_failed", "leased", "running"]);

    let nothing = stepwise(&db, &["runs", "prune", "--older-than", "30d"]);
    assert!(
        nothing.stdout.contains("no runs to prune"),
        "{}",
        nothing.stdout
    );

    let running = stepwise(
        &db,
        &["runs", "prune", "--older-than", "1d", "--status", "running"],
    );
    assert_eq!(running.code, 2, "{}", running.stderr);
    assert_eq!(
        stepwise(&db, &["runs", "prune"]).code,
        2,
        "--older-than is required"
    );
    // Listing flags mean nothing to prune: refused rather than ignored.
    let mixed = stepwise(
        &db,
        &[
            "runs",
            "--status",
            "failed",
            "prune",
            "--older-than",
            "1d",
            "--yes",
        ],
    );
    assert_eq!(mixed.code, 2, "{}", mixed.stderr);
    assert!(
        mixed.stderr.contains("--status lists runs"),
        "{}",
        mixed.stderr
    );
    assert_eq!(ids(&db), ["new_failed", "leased", "running"]);
}
