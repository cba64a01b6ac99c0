//! Snapshots taken now and then (schema 2): a run's state is its snapshot
//! plus the fold of the events after it. These check that state against the
//! fold of the whole log — from a cold cache, across a crash between two
//! snapshot rewrites, and in a file migrated from schema 1, where the
//! snapshot sat in the `runs` row and was rewritten at every append.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout
)]

mod common;

use common::block_on;
use std::path::Path;
use std::process::Command;

use chrono::{DateTime, SecondsFormat, TimeZone, Utc};
use rusqlite::Connection;
use serde_json::json;
use stepwise_core::testing::store_conformance::sample_log;
use stepwise_core::{
    Event, EventKind, RunId, RunState, RunStatus, RunSummary, Step, StepId, Store,
};
use stepwise_store::{FAILPOINT_ENV, SCHEMA_VERSION, SNAPSHOT_MIN_EVENTS, SqliteStore};

fn at(i: usize) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2025, 3, 4, 9, 30, 0).unwrap()
        + chrono::Duration::microseconds(1500 * i as i64 + 7)
}

/// A run of `steps` sequential steps, each started and succeeded, then a
/// report: `2 * steps + 6` events, the same on every call (fixed times), so
/// a child process builds the very log its parent checks. Built from the
/// sample log's events so that it follows the event format wherever it goes.
fn long_log(run: &RunId, steps: usize) -> Vec<Event> {
    let sample = sample_log(run);
    let kind = |i: usize| sample[i].kind.clone();
    let plan: Vec<Step> = (0..steps)
        .map(|i| {
            let step = Step::new(format!("s{i}"), format!("step number {i}"), "t").accept("done");
            if i == 0 {
                step
            } else {
                step.after([format!("s{}", i - 1)])
            }
        })
        .collect();
    let mut kinds = vec![kind(0), kind(1)];
    let mut created = kind(2);
    if let EventKind::PlanCreated { draft, .. } = &mut created {
        *draft = json!({ "steps": plan });
    }
    let mut validated = kind(3);
    match &mut validated {
        EventKind::PlanValidated { plan: p } => p.steps = plan,
        other => panic!("sample event 4 is {other:?}"),
    }
    kinds.extend([created, validated, kind(4)]);
    for i in 0..steps {
        let id = StepId::new(format!("s{i}"));
        let mut started = kind(5);
        let mut succeeded = kind(6);
        match (&mut started, &mut succeeded) {
            (
                EventKind::StepStarted { step, .. },
                EventKind::StepSucceeded {
                    step: done, result, ..
                },
            ) => {
                *step = id.clone();
                *done = id;
                result.output = json!(format!("output of step {i}: {}", "x".repeat(i % 40)));
            }
            other => panic!("sample events 6 and 7 are {other:?}"),
        }
        kinds.extend([started, succeeded]);
    }
    kinds.push(kind(9));
    kinds
        .into_iter()
        .enumerate()
        .map(|(i, kind)| Event {
            seq: i as u64 + 1,
            at: at(i),
            kind,
        })
        .collect()
}

/// The `seq` of the run's snapshot, as the file has it (0: none yet).
fn snapshot_seq(conn: &Connection, run: &RunId) -> u64 {
    conn.query_row(
        "SELECT coalesce((SELECT seq FROM snapshots WHERE run_id = ?1), 0)",
        [run.as_str()],
        |r| r.get::<_, i64>(0),
    )
    .map(|n| n as u64)
    .unwrap()
}

fn summary(log: &[Event]) -> RunSummary {
    RunSummary::of(&RunState::from_events(log).unwrap())
}

/// Checks everything a reader sees of `run` in the file at `path`, through
/// a store opened now (so its cache is cold), against the fold of `log`.
fn check_cold(path: &Path, run: &RunId, log: &[Event]) {
    let store = SqliteStore::open(path).unwrap();
    block_on(async {
        let folded = RunState::from_events(log).unwrap();
        assert_eq!(
            store.state(run).await.unwrap(),
            folded,
            "{} events",
            log.len()
        );
        assert_eq!(store.events(run).await.unwrap(), log);
        let listed = store.list_runs().await.unwrap();
        let listed = listed.iter().find(|s| &s.run_id == run).unwrap();
        // Who holds the lease is the store's, not the fold's.
        let folded = RunSummary {
            held_by: listed.held_by.clone(),
            ..summary(log)
        };
        assert_eq!(listed, &folded);
    });
}

#[test]
fn the_long_log_folds_and_outgrows_a_snapshot() {
    let run = RunId("r".into());
    let log = long_log(&run, 3);
    assert_eq!(log.len(), 12);
    let state = RunState::from_events(&log).unwrap();
    assert_eq!(state.status, RunStatus::Ok);
    assert_eq!(state.step_results.len(), 3);
    assert_eq!(long_log(&run, 3), log, "the same log every time");
}

/// Appends a long run one event at a time, alternating between two stores
/// on one file, and checks the state from a third, cold, store after every
/// append: snapshot plus tail must equal the fold, before and after each
/// snapshot rewrite.
#[test]
fn state_is_snapshot_plus_tail_from_a_cold_cache() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let (a, b) = (
        SqliteStore::open(&path).unwrap(),
        SqliteStore::open(&path).unwrap(),
    );
    let peek = Connection::open(&path).unwrap();
    let run = RunId("run_long".into());
    let log = long_log(&run, 200);
    let mut seqs = Vec::new();
    for (i, event) in log.iter().enumerate() {
        // Mostly `a` (warm cache); every 50th event `b`, which finds its
        // cache stale (or empty) and folds snapshot + tail from the file,
        // and so does `a` after it.
        let store = if i % 50 == 49 { &b } else { &a };
        block_on(store.append(&run, std::slice::from_ref(event), None)).unwrap();
        let seq = snapshot_seq(&peek, &run);
        seqs.push(seq);
        let n = i as u64 + 1;
        assert!(seq <= n);
        if i % 7 == 0 || i + 1 == log.len() || seqs.get(i.wrapping_sub(1)) != Some(&seq) {
            check_cold(&path, &run, &log[..=i]);
        }
    }
    // The snapshot lagged behind the log, by more than the minimum...
    let lag = seqs
        .iter()
        .enumerate()
        .map(|(i, s)| i as u64 + 1 - s)
        .max()
        .unwrap();
    assert!(lag >= SNAPSHOT_MIN_EVENTS, "largest lag {lag}");
    // ...was rewritten while the run was running...
    let mut rewrites: Vec<u64> = seqs.clone();
    rewrites.dedup();
    let last = log.len() as u64;
    assert!(
        rewrites.iter().any(|s| *s > 0 && *s < last),
        "no snapshot while running: {rewrites:?}"
    );
    // ...and is fresh once the run has finished.
    assert_eq!(seqs.last(), Some(&last));
    for store in [&a, &b] {
        assert_eq!(
            block_on(store.state(&run)).unwrap(),
            RunState::from_events(&log).unwrap()
        );
    }
}

/// A run that stops running (here: at its end; the same holds for a pause)
/// gets a fresh snapshot even if the last one is recent.
#[test]
fn a_short_run_gets_its_snapshot_when_it_stops() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let store = SqliteStore::open(&path).unwrap();
    let peek = Connection::open(&path).unwrap();
    let run = RunId("run_short".into());
    let log = sample_log(&run);
    block_on(store.append(&run, &log[..9], None)).unwrap();
    assert_eq!(snapshot_seq(&peek, &run), 0, "no snapshot while it runs");
    check_cold(&path, &run, &log[..9]);
    block_on(store.append(&run, &log[9..], None)).unwrap();
    assert_eq!(snapshot_seq(&peek, &run), 10);
    check_cold(&path, &run, &log);
}

/// Set (to the database's path) in the child process of
/// `a_crash_between_snapshot_rewrites...`, which then appends until the
/// failpoint aborts it instead of checking.
#[cfg(unix)]
const CHILD_DB: &str = "STEPWISE_TEST_CRASH_DB";
#[cfg(unix)]
const CRASH_STEPS: usize = 150;
/// What the child prints before its n-th append: the last one it printed
/// is the append it died in.
#[cfg(unix)]
const APPENDING: &str = "appending event ";

/// In the child process: appends the long run one event at a time until the
/// failpoint aborts; it never returns.
#[cfg(unix)]
fn crash_child(path: &Path) -> ! {
    let store = SqliteStore::open(path).unwrap();
    let run = RunId("run_crash".into());
    for event in long_log(&run, CRASH_STEPS) {
        println!("{APPENDING}{}", event.seq);
        block_on(store.append(&run, std::slice::from_ref(&event), None)).unwrap();
    }
    panic!("the failpoint did not fire");
}

/// Kills a run right after its n-th append — around each snapshot rewrite
/// and between two — then checks what a resuming process finds and that the
/// log goes on from there. The run is this test again, in a child process
/// (with [`CHILD_DB`] set), aborted by the store's failpoint.
#[cfg(unix)]
#[test]
fn a_crash_between_snapshot_rewrites_leaves_a_consistent_file() {
    const TEST: &str = "a_crash_between_snapshot_rewrites_leaves_a_consistent_file";
    if let Some(path) = std::env::var_os(CHILD_DB) {
        crash_child(Path::new(&path));
    }
    let dir = tempfile::tempdir().unwrap();
    let run = RunId("run_crash".into());
    let log = long_log(&run, CRASH_STEPS);
    // Where the snapshot is rewritten, from an uninterrupted run.
    let rewrites: Vec<usize> = {
        let path = dir.path().join("whole.db");
        let store = SqliteStore::open(&path).unwrap();
        let peek = Connection::open(&path).unwrap();
        let mut at = Vec::new();
        for (i, event) in log.iter().enumerate() {
            block_on(store.append(&run, std::slice::from_ref(event), None)).unwrap();
            if snapshot_seq(&peek, &run) == i as u64 + 1 {
                at.push(i + 1);
            }
        }
        at
    };
    let first = *rewrites.first().unwrap();
    assert!(
        first < log.len(),
        "the run needs a rewrite before its end: {rewrites:?}"
    );
    let mut points = vec![1, first - 1, first, first + 1, (first + log.len()) / 2];
    points.extend(rewrites.iter().skip(1).flat_map(|r| [r - 1, *r]));
    points.retain(|n| (1..log.len()).contains(n));
    points.sort_unstable();
    points.dedup();
    for n in points {
        let path = dir.path().join(format!("crash-{n}.db"));
        let out = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", TEST, "--nocapture", "--test-threads=1"])
            .env(CHILD_DB, &path)
            .env(FAILPOINT_ENV, format!("abort-after-writes={n}"))
            .output()
            .unwrap();
        assert_crashed_in_append(&out, n);
        check_cold(&path, &run, &log[..n]);
        // The run goes on where it stopped, from a cold cache.
        let store = SqliteStore::open(&path).unwrap();
        block_on(store.append(&run, &log[n..], None)).unwrap();
        drop(store);
        check_cold(&path, &run, &log);
    }
}

/// The child died of its failpoint's abort (SIGABRT, not a panic or an
/// exit) in its `n`-th append: the last one it started.
#[cfg(unix)]
fn assert_crashed_in_append(out: &std::process::Output, n: usize) {
    use std::os::unix::process::ExitStatusExt;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.signal(),
        Some(6),
        "after write {n}, the child should have been killed by its abort (SIGABRT): {}\n{stdout}\n{stderr}",
        out.status
    );
    let last = stdout
        .lines()
        .filter_map(|l| l.split_once(APPENDING).map(|(_, seq)| seq))
        .next_back();
    assert_eq!(
        last,
        Some(n.to_string().as_str()),
        "the child should have died in append {n}:\n{stdout}\n{stderr}"
    );
}

/// Schema 1, exactly as released: the statements `open.rs` runs as its
/// first migration.
const V1: &str = include_str!("../src/schema-v1.sql");

/// What a schema 1 store wrote besides its tables: its marks and its meta.
const V1_MARKS: &str = "
PRAGMA application_id = 1398034519; -- 0x53545057, 'STPW'
PRAGMA user_version = 1;
INSERT INTO meta (key, value) VALUES
    ('created_at', '2025-03-04T09:00:00.000000000Z'),
    ('created_by', 'stepwise-store 0.1.0'),
    ('opened_at', '2025-03-04T09:00:00.000000000Z');
";

fn sql_time(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Nanos, true)
}

/// Writes `log` as a schema 1 store did: every event, and the run's row
/// with its snapshot (the fold without its history) at the last event.
fn write_v1_run(conn: &Connection, log: &[Event]) {
    let mut state = RunState::from_events(log).unwrap();
    let s = RunSummary::of(&state);
    state.execution_history.clear();
    conn.execute(
        "INSERT INTO runs VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
        rusqlite::params![
            s.run_id.as_str(),
            s.goal,
            s.status.as_str(),
            sql_time(s.started_at),
            sql_time(s.updated_at),
            s.last_seq as i64,
            s.steps_done as i64,
            s.steps_total as i64,
            i64::from(s.replans),
            s.tokens as i64,
            serde_json::to_string(&state).unwrap(),
        ],
    )
    .unwrap();
    for e in log {
        conn.execute(
            "INSERT INTO events VALUES (?1, ?2, ?3, ?4, ?5)",
            rusqlite::params![
                s.run_id.as_str(),
                e.seq as i64,
                sql_time(e.at),
                e.kind.name(),
                serde_json::to_string(e).unwrap(),
            ],
        )
        .unwrap();
    }
}

#[test]
fn a_schema_1_file_is_migrated_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v1.db");
    let done = RunId("run_done".into());
    let done_log = sample_log(&done);
    let running = RunId("run_running".into());
    let long = long_log(&running, 100);
    let cut = long.len() - 40;
    {
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(V1).unwrap();
        conn.execute_batch(V1_MARKS).unwrap();
        write_v1_run(&conn, &done_log);
        write_v1_run(&conn, &long[..cut]);
        conn.execute(
            "INSERT INTO leases VALUES ('run_running', NULL, 3, NULL)",
            [],
        )
        .unwrap();
    }
    let store = SqliteStore::open(&path).unwrap();
    let peek = Connection::open(&path).unwrap();
    let version: i64 = peek
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, i64::from(SCHEMA_VERSION));
    assert_eq!(SCHEMA_VERSION, 2);
    let columns: Vec<String> = peek
        .prepare("SELECT name FROM pragma_table_info('runs')")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(!columns.iter().any(|c| c == "snapshot"), "{columns:?}");
    // Each snapshot moved over, at the run's last event.
    assert_eq!(snapshot_seq(&peek, &done), done_log.len() as u64);
    assert_eq!(snapshot_seq(&peek, &running), cut as u64);
    block_on(async {
        let mut want = vec![summary(&done_log), summary(&long[..cut])];
        want.sort_by(|x, y| (y.started_at, &y.run_id).cmp(&(x.started_at, &x.run_id)));
        assert_eq!(store.list_runs().await.unwrap(), want);
        assert_eq!(store.events(&done).await.unwrap(), done_log);
        assert_eq!(
            store.state(&done).await.unwrap(),
            RunState::from_events(&done_log).unwrap()
        );
        assert_eq!(store.events(&running).await.unwrap(), &long[..cut]);
        assert_eq!(
            store.state(&running).await.unwrap(),
            RunState::from_events(&long[..cut]).unwrap()
        );
        // Leases kept their fence: a fresh acquisition goes past it.
        let lease = stepwise_core::RunLease::acquire(&store, &running, "me", 1000)
            .await
            .unwrap();
        assert_eq!(lease.fence, 4);
        // The migrated run goes on, under schema 2.
        store
            .append(&running, &long[cut..], Some(lease.fence))
            .await
            .unwrap();
    });
    drop(store);
    check_cold(&path, &running, &long);
    check_cold(&path, &done, &done_log);
    // A second open finds schema 2 and migrates nothing.
    drop(SqliteStore::open(&path).unwrap());
    check_cold(&path, &running, &long);
}
