//! Workers on PostgreSQL (`$STEPWISE_TEST_PG`, which `scripts/test` starts;
//! without it these tests fail, saying how to get one): three `stepwise
//! worker` processes and fifty queued runs with side effects, one worker
//! killed with SIGKILL mid-run, another stopped with SIGSTOP past its lease
//! and then continued. Every run must end with the output of an
//! uninterrupted reference run, every side effect applied once, no step
//! lost or run twice, and — checked from the log — no event accepted from a
//! worker whose lease had been taken over.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use stepwise_core::{RunId, Store};
use stepwise_store::PgStore;
use stepwise_store::postgres::testing::ScratchDb;

mod common;

use common::log::block_on;

use common::{Running, Scratch, Stepwise};

const RUNS: usize = 50;
const LEASE_MS: u64 = 1500;
/// Each tool call's length in the workers, so signals land mid-run.
const DELAY_MS: &str = "150";

fn notes() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/notes")
}

/// Five steps, two of them side effects (`write_file`), in three waves.
fn plan() -> Value {
    json!({"steps": [
        {"id": "find", "description": "Find the latency budget", "tool": "search_notes",
         "args": {"query": "latency budget first token"}, "acceptance_criteria": ["a passage about latency"]},
        {"id": "cost", "description": "Find the operating cost", "tool": "search_notes",
         "args": {"query": "operating cost per month"}, "acceptance_criteria": ["a passage about cost"]},
        {"id": "save", "description": "Save the best passage", "tool": "write_file", "depends_on": ["find"],
         "args": {"path": "out/latency.md", "content": "${find.output.results[0].passages[0]}"},
         "acceptance_criteria": ["file written"]},
        {"id": "save_cost", "description": "Save the cost passage", "tool": "write_file", "depends_on": ["cost"],
         "args": {"path": "out/cost.md", "content": "${cost.output.results[0].passages[0]}"},
         "acceptance_criteria": ["file written"]},
        {"id": "read", "description": "Read the latency note", "tool": "read_note", "depends_on": ["save", "save_cost"],
         "args": {"id": "latency-budget"}, "acceptance_criteria": ["the note"]}
    ]})
}

fn run_args(plan: &Path, ws: &Path, run_id: &str) -> Vec<String> {
    [
        "run",
        "Save the latency budget",
        "--notes",
        notes().to_str().unwrap(),
        "--plan",
        plan.to_str().unwrap(),
        "--workspace",
        ws.to_str().unwrap(),
        "--approve",
        "auto",
        "--quiet",
        "--run-id",
        run_id,
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect()
}

/// What must not depend on interruptions: status, report, gaps, evidence,
/// step statuses, and each result (less `write_file`'s `written`, which a
/// reconciled call reports as false when its write had already landed —
/// the ledger check below is what says each write happened once) with its
/// attempts less those a takeover cut short.
fn stable(v: &Value) -> Value {
    let outputs: serde_json::Map<String, Value> = v["step_results"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, r)| {
            let mut output = r["output"].clone();
            if let Some(o) = output.as_object_mut() {
                o.remove("written");
            }
            let attempts = common::attempts_uninterrupted(v, k);
            (k.clone(), json!({"output": output, "attempts": attempts}))
        })
        .collect();
    let statuses: Vec<Value> = v["plan"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| json!([s["id"], s["status"]]))
        .collect();
    json!({
        "status": v["status"], "report": v["final_report"], "outputs": outputs,
        "statuses": statuses, "gaps": v["knowledge_gaps"], "evidence": v["evidence"],
    })
}

/// Each step succeeded exactly once, and never started again after it did.
fn assert_no_lost_or_repeated_step(run: &str, v: &Value) {
    let mut done: Vec<String> = Vec::new();
    for e in v["execution_history"].as_array().unwrap() {
        let step = e["step"].as_str().unwrap_or_default().to_owned();
        match e["kind"].as_str() {
            Some("step_started") => {
                assert!(
                    !done.contains(&step),
                    "{run}: {step} started again after it succeeded"
                );
            }
            Some("step_succeeded") => done.push(step),
            _ => {}
        }
    }
    done.sort();
    assert_eq!(done, ["cost", "find", "read", "save", "save_cost"], "{run}");
}

fn one(db: &ScratchDb, sql: &str) -> String {
    db.query(sql).unwrap()[0][0].clone().unwrap_or_default()
}

fn signal(pid: u32, sig: &str) {
    let status = Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "kill {sig} {pid}");
}

/// `stepwise runs --json`.
fn runs_json(db: &ScratchDb) -> Vec<Value> {
    let out = Stepwise::new()
        .env("STEPWISE_DB", db.url())
        .args(["runs", "--json"])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    serde_json::from_str(&out.stdout).unwrap()
}

/// The worker's lease-holder name, once it has registered.
fn worker_id(db: &ScratchDb, pid: u32) -> String {
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        let id = one(
            db,
            &format!("SELECT min(id) FROM stepwise.workers WHERE pid = {pid}"),
        );
        if !id.is_empty() {
            return id;
        }
        assert!(Instant::now() < until, "worker {pid} never registered");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// How many runs `holder` held were taken over by another worker.
fn taken_over(db: &ScratchDb, holder: &str) -> u32 {
    one(
        db,
        &format!(
            "SELECT count(DISTINCT a.run_id) FROM stepwise.lease_grants a
             JOIN stepwise.lease_grants b ON b.run_id = a.run_id AND b.fence > a.fence
             WHERE a.holder = '{holder}' AND b.holder <> '{holder}'"
        ),
    )
    .parse::<u32>()
    .unwrap()
}

/// Waits until `holder` holds a lease on a run it has written to.
fn wait_mid_run(db: &ScratchDb, holder: &str) {
    let until = Instant::now() + Duration::from_secs(60);
    while one(
        db,
        &format!(
            "SELECT count(*) FROM stepwise.leases l WHERE l.holder = '{holder}'
               AND l.until > clock_timestamp()
               AND EXISTS (SELECT 1 FROM stepwise.events e WHERE e.run_id = l.run_id AND e.fence = l.fence)"
        ),
    ) == "0"
    {
        assert!(Instant::now() < until, "{holder} never got a run going");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn worker(url: &str) -> Running {
    worker_with(url, DELAY_MS, &["--drain"])
}

fn worker_with(url: &str, delay_ms: &str, extra: &[&str]) -> Running {
    Stepwise::new()
        .env("STEPWISE_DB", url)
        .env("STEPWISE_TOOL_DELAY_MS", delay_ms)
        .args([
            "worker",
            "--concurrency",
            "3",
            "--lease-ms",
            &LEASE_MS.to_string(),
            "--poll-ms",
            "50",
        ])
        .args(extra)
        .stderr(Stdio::piped())
        .spawn()
}

/// A migrated scratch database, a folder with the plan, and `n` runs queued
/// (`<prefix>_00`, …, each with its own workspace `ws/<i>`).
fn queued(tag: &str, prefix: &str, n: usize) -> (ScratchDb, Scratch, PathBuf) {
    let db = ScratchDb::new(tag).unwrap_or_else(|e| panic!("{e}"));
    let migrated = Stepwise::new()
        .env("STEPWISE_DB", db.url())
        .arg("migrate")
        .run();
    assert_eq!(migrated.code, 0, "{}", migrated.stderr);
    let dir = Scratch::new("workers", tag);
    let plan_file = dir.path().join("plan.json");
    std::fs::write(&plan_file, plan().to_string()).unwrap();
    for i in 0..n {
        let ws = dir.path().join(format!("ws/{i:02}"));
        let mut args = run_args(&plan_file, &ws, &format!("{prefix}_{i:02}"));
        args.push("--detach".to_owned());
        let out = Stepwise::new()
            .env("STEPWISE_DB", db.url())
            .args(args)
            .run();
        assert_eq!(out.code, 0, "{}", out.stderr);
    }
    (db, dir, plan_file)
}

/// Every run `<prefix>_<i>` is ok, each step done once, each write applied once.
fn assert_all_done_once(db: &ScratchDb, dir: &Scratch, prefix: &str, n: usize) {
    let store = PgStore::connect(db.url()).unwrap();
    for i in 0..n {
        let run = format!("{prefix}_{i:02}");
        let state = block_on(store.state(&RunId(run.clone()))).unwrap();
        let v = serde_json::to_value(state.final_output()).unwrap();
        assert_eq!(v["status"], "ok", "{run}: {}", v["blocked_reason"]);
        assert_no_lost_or_repeated_step(&run, &v);
        // The mode it was queued with is recorded, so a requeued resume keeps it.
        let first = &v["execution_history"][0];
        assert_eq!(first["kind"], "run_started", "{run}");
        assert_eq!(first["host"]["approve"], "auto", "{run}: {first}");
        let ledger =
            std::fs::read_to_string(dir.path().join(format!("ws/{i:02}/.stepwise/writes.jsonl")))
                .unwrap();
        assert_eq!(ledger.lines().count(), 2, "{run}: {ledger}");
    }
}

fn wait_for(what: &str, secs: u64, mut done: impl FnMut() -> bool) {
    let until = Instant::now() + Duration::from_secs(secs);
    while !done() {
        assert!(Instant::now() < until, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn sigterm_stops_claiming_and_gives_the_runs_in_hand_back_after_the_grace_period() {
    let (db, dir, _) = queued("sigterm", "run_term", 3);
    // Tool calls of a minute: a worker that waited for its steps in flight,
    // not only the 300 ms grace, would take that long to stop.
    let first = worker_with(db.url(), "60000", &["--grace-ms", "300"]);
    let id = worker_id(&db, first.id());
    wait_mid_run(&db, &id);
    // `stepwise runs` names the worker holding a run, in the table and in JSON.
    let runs = Stepwise::new()
        .env("STEPWISE_DB", db.url())
        .arg("runs")
        .run();
    assert_eq!(runs.code, 0, "{}", runs.stderr);
    assert!(runs.stdout.contains("HELD BY"), "{}", runs.stdout);
    assert!(runs.stdout.contains(&id), "{}", runs.stdout);
    let held = runs_json(&db);
    assert!(
        held.iter().any(|r| r["held_by"] == id.as_str()),
        "no run shows {id} as its holder: {held:?}"
    );
    let asked = Instant::now();
    signal(first.id(), "-TERM");
    let out = first.wait_with_output();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    assert!(
        asked.elapsed() < Duration::from_secs(30),
        "it waited {:?} for its steps",
        asked.elapsed()
    );
    assert!(stderr.contains("gave it back to the queue"), "{stderr}");
    // Given back at once (no lease left to expire), and it says it stopped.
    assert_eq!(
        one(
            &db,
            "SELECT count(*) FROM stepwise.leases WHERE holder IS NOT NULL"
        ),
        "0"
    );
    assert_eq!(
        one(
            &db,
            "SELECT count(*) FROM stepwise.jobs WHERE state = 'claimed'"
        ),
        "0"
    );
    assert_eq!(
        one(
            &db,
            &format!("SELECT state FROM stepwise.workers WHERE id = '{id}'")
        ),
        "stopped"
    );
    // Another worker picks them up and finishes them, from their logs.
    let second = worker_with(db.url(), "10", &["--drain"]);
    let out = second.wait_with_output();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_all_done_once(&db, &dir, "run_term", 3);
    // Done: nobody holds them.
    let held = runs_json(&db);
    assert_eq!(held.len(), 3, "{held:?}");
    assert!(held.iter().all(|r| r.get("held_by").is_none()), "{held:?}");
    let workers = Stepwise::new()
        .env("STEPWISE_DB", db.url())
        .arg("workers")
        .run();
    assert_eq!(workers.code, 0, "{}", workers.stderr);
    assert!(workers.stdout.contains(&id), "{}", workers.stdout);
    assert!(
        workers
            .stdout
            .contains("queue: 0 queued, 0 claimed, 3 done"),
        "{}",
        workers.stdout
    );
}

#[test]
fn a_worker_cut_off_from_the_database_reconnects_and_loses_nothing() {
    let (db, dir, _) = queued("netcut", "run_cut", 9);
    let name = db.url().rsplit('/').next().unwrap().to_owned();
    let w = worker_with(db.url(), "150", &["--drain"]);
    let id = worker_id(&db, w.id());
    let mut cuts = 0;
    // Cut every connection of the worker, from the server side, a few times while it works.
    for _ in 0..3 {
        wait_mid_run(&db, &id);
        db.execute_on_server(&format!(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
             WHERE datname = '{name}' AND application_name = 'stepwise'"
        ))
        .unwrap();
        cuts += 1;
        std::thread::sleep(Duration::from_millis(300));
        if one(
            &db,
            "SELECT count(*) FROM stepwise.jobs WHERE state <> 'done'",
        ) == "0"
        {
            break;
        }
    }
    wait_for("the queue to empty", 120, || {
        one(
            &db,
            "SELECT count(*) FROM stepwise.jobs WHERE state <> 'done'",
        ) == "0"
    });
    let out = w.wait_with_output();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(cuts >= 1);
    assert_all_done_once(&db, &dir, "run_cut", 9);
    assert_eq!(
        one(
            &db,
            "SELECT count(*) FROM stepwise.events WHERE fence IS NULL"
        ),
        "0"
    );
}

#[test]
fn three_workers_fifty_runs_kill_9_and_sigstop_every_run_ends_like_the_reference() {
    let db = ScratchDb::new("chaos").unwrap_or_else(|e| panic!("{e}"));
    let url = db.url().to_owned();
    let migrated = Stepwise::new()
        .env("STEPWISE_DB", &url)
        .arg("migrate")
        .run();
    assert_eq!(migrated.code, 0, "{}", migrated.stderr);
    let dir = Scratch::new("workers", "chaos");
    let plan_file = dir.path().join("plan.json");
    std::fs::write(&plan_file, plan().to_string()).unwrap();

    // The reference: the same run, uninterrupted, on SQLite.
    let mut args = run_args(
        &plan_file,
        &dir.path().join("ws-reference"),
        "run_reference",
    );
    args.push("--json".to_owned());
    let reference = Stepwise::new().db(&dir.db()).args(args).run();
    assert_eq!(reference.code, 0, "{}", reference.stderr);
    let expected = stable(&reference.json());

    for i in 0..RUNS {
        let ws = dir.path().join(format!("ws/{i:02}"));
        let mut args = run_args(&plan_file, &ws, &format!("run_chaos_{i:02}"));
        args.push("--detach".to_owned());
        let queued = Stepwise::new().env("STEPWISE_DB", &url).args(args).run();
        assert_eq!(queued.code, 0, "{}", queued.stderr);
        assert_eq!(queued.stdout.trim(), format!("run_chaos_{i:02}"));
    }
    assert_eq!(
        one(
            &db,
            "SELECT count(*) FROM stepwise.jobs WHERE state = 'queued'"
        ),
        RUNS.to_string()
    );

    let started = Instant::now();
    let mut killed = worker(&url);
    let stopped = worker(&url);
    let steady = worker(&url);
    let killed_id = worker_id(&db, killed.id());
    let stopped_id = worker_id(&db, stopped.id());

    // kill -9 one worker in the middle of a run…
    wait_mid_run(&db, &killed_id);
    killed.kill();
    let _ = killed.wait();
    // …and stop another past its lease, then let it go on — once a run of
    // its own was taken over. Stopped in the middle of an append, it holds
    // that run's lease row locked, which claims pass by (by design); if
    // every run it holds is frozen so, none can be taken over, and it is
    // let go briefly and stopped again (on a loaded machine the steady
    // worker may also take a while to have a free slot).
    let mut attempts = 0;
    loop {
        attempts += 1;
        wait_mid_run(&db, &stopped_id);
        signal(stopped.id(), "-STOP");
        std::thread::sleep(Duration::from_millis(LEASE_MS * 2 + 500));
        let until = Instant::now() + Duration::from_secs(30);
        while taken_over(&db, &stopped_id) == 0 && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(50));
        }
        if taken_over(&db, &stopped_id) > 0 {
            break;
        }
        assert!(
            attempts < 4,
            "no run of the stopped worker was taken over in {attempts} stops of 30 s: \
             jobs {:?}, leases {:?}, sessions {:?}",
            db.query("SELECT run_id, state, claimed_by FROM stepwise.jobs WHERE state <> 'done'"),
            db.query("SELECT run_id, holder, fence, until < clock_timestamp() FROM stepwise.leases"),
            db.query("SELECT pid, state, left(query, 80) FROM pg_stat_activity WHERE datname = current_database()"),
        );
        signal(stopped.id(), "-CONT");
        std::thread::sleep(Duration::from_millis(200));
    }
    signal(stopped.id(), "-CONT");

    let until = Instant::now() + Duration::from_secs(240);
    while one(
        &db,
        "SELECT count(*) FROM stepwise.jobs WHERE state <> 'done'",
    ) != "0"
    {
        assert!(
            Instant::now() < until,
            "the runs did not all finish: {:?}",
            db.query(
                "SELECT run_id, state, claimed_by, claims FROM stepwise.jobs WHERE state <> 'done'"
            )
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let elapsed = started.elapsed();
    let stopped_out = stopped.wait_with_output();
    let steady_out = steady.wait_with_output();
    let stopped_err = String::from_utf8_lossy(&stopped_out.stderr).into_owned();
    let steady_err = String::from_utf8_lossy(&steady_out.stderr).into_owned();
    assert!(stopped_out.status.success(), "{stopped_err}");
    assert!(steady_out.status.success(), "{steady_err}");

    // Every run ended like the reference, no step lost or repeated.
    let store = PgStore::connect(&url).unwrap();
    for i in 0..RUNS {
        let run = format!("run_chaos_{i:02}");
        let state = block_on(store.state(&RunId(run.clone()))).unwrap();
        let v = serde_json::to_value(state.final_output()).unwrap();
        assert_eq!(stable(&v), expected, "{run}");
        assert_no_lost_or_repeated_step(&run, &v);
        // Each side effect applied once: one ledger line per write.
        let ledger =
            std::fs::read_to_string(dir.path().join(format!("ws/{i:02}/.stepwise/writes.jsonl")))
                .unwrap();
        let mut keys: Vec<String> = ledger
            .lines()
            .map(|l| {
                serde_json::from_str::<Value>(l).unwrap()["key"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect();
        keys.sort();
        let total = keys.len();
        keys.dedup();
        assert_eq!((total, keys.len()), (2, 2), "{run}: {ledger}");
    }

    // From the log: every event carries a fence granted before it, and none
    // was accepted under a fence once a newer one had been granted.
    assert_eq!(
        one(
            &db,
            "SELECT count(*) FROM stepwise.events WHERE fence IS NULL"
        ),
        "0"
    );
    assert_eq!(
        one(
            &db,
            "SELECT count(*) FROM stepwise.events e
             LEFT JOIN stepwise.lease_grants g ON g.run_id = e.run_id AND g.fence = e.fence
             WHERE g.fence IS NULL OR e.appended_at < g.granted_at"
        ),
        "0"
    );
    let stale = db
        .query(
            "SELECT e.run_id, e.seq, e.fence, g.fence, g.holder FROM stepwise.events e
             JOIN stepwise.lease_grants g ON g.run_id = e.run_id AND g.fence > e.fence
             WHERE e.appended_at >= g.granted_at",
        )
        .unwrap();
    assert!(
        stale.is_empty(),
        "events accepted from fenced-out workers: {stale:?}"
    );

    // The chaos happened: runs of the killed worker and of the stopped one
    // were taken over by others, and the stopped one said it was fenced out.
    let taken_over = |holder: &str| taken_over(&db, holder);
    assert!(
        taken_over(&killed_id) >= 1,
        "no run of the killed worker was taken over"
    );
    assert!(
        taken_over(&stopped_id) >= 1,
        "no run of the stopped worker was taken over"
    );
    assert!(stopped_err.contains("fenced out"), "{stopped_err}");
    let resumed = one(
        &db,
        "SELECT count(DISTINCT run_id) FROM stepwise.events WHERE kind = 'run_resumed'",
    );
    eprintln!(
        "{RUNS} runs in {:.1} s; {} taken over from the killed worker, {} from the stopped one; {resumed} resumed from the log",
        elapsed.as_secs_f64(),
        taken_over(&killed_id),
        taken_over(&stopped_id)
    );
}

/// An idle worker is woken when a run is queued (PostgreSQL's NOTIFY), not
/// at its next look at the queue: with `--poll-ms` and the heartbeat both
/// ten minutes or more apart, a run detached after the worker went idle
/// is worked on at once.
#[test]
fn an_idle_worker_is_woken_by_a_queued_run_not_by_its_poll() {
    let (db, dir, plan_file) = queued("wake", "run_wake", 1);
    let mut w = Stepwise::new()
        .env("STEPWISE_DB", db.url())
        .args(["worker", "--poll-ms", "600000", "--lease-ms", "1800000"])
        .stderr(Stdio::piped())
        .spawn();
    let done = |run: &str| {
        one(
            &db,
            &format!("SELECT count(*) FROM stepwise.runs WHERE run_id = '{run}' AND status = 'ok'"),
        ) == "1"
    };
    let wait_done = |run: &str| {
        let until = Instant::now() + Duration::from_secs(60);
        while !done(run) {
            assert!(
                Instant::now() < until,
                "{run} was not worked on within 60 s: the worker slept through it"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    // The run queued before it started: claimed at once.
    wait_done("run_wake_00");
    // Idle now, waiting ten minutes for its next look; a new run wakes it.
    std::thread::sleep(Duration::from_millis(500));
    let mut args = run_args(&plan_file, &dir.path().join("ws/late"), "run_wake_late");
    args.push("--detach".to_owned());
    args.push("--json".to_owned());
    let queued = Stepwise::new()
        .env("STEPWISE_DB", db.url())
        .args(args)
        .run();
    assert_eq!(queued.code, 0, "{}", queued.stderr);
    // With --json, the queued run as JSON rather than a bare id.
    assert_eq!(
        queued.json(),
        serde_json::json!({"run_id": "run_wake_late", "status": "queued"}),
        "{}",
        queued.stdout
    );
    wait_done("run_wake_late");
    w.kill();
}

/// A run whose MCP server cannot start in time is never dropped: the
/// worker gives it back with a growing wait, and after its fifth claim
/// records it failed, with the reason, so the id `run --detach` printed
/// leads to a run that `show` explains.
#[test]
fn a_run_whose_tools_cannot_start_is_retried_then_recorded_failed() {
    let db = ScratchDb::new("mcp-slow").unwrap_or_else(|e| panic!("{e}"));
    let migrated = Stepwise::new()
        .env("STEPWISE_DB", db.url())
        .arg("migrate")
        .run();
    assert_eq!(migrated.code, 0, "{}", migrated.stderr);
    let dir = Scratch::new("workers", "mcp-slow");
    std::fs::write(
        dir.path().join("stepwise.toml"),
        "[mcp.servers.slow]\ncommand = \"sh\"\nargs = [\"-c\", \"sleep 30\"]\nstartup_timeout_ms = 300\n",
    )
    .unwrap();
    let queued = Stepwise::new()
        .current_dir(dir.path())
        .env("STEPWISE_DB", db.url())
        .args([
            "run",
            "What is the latency budget?",
            "--notes",
            notes().to_str().unwrap(),
            "--detach",
            "--json",
            "--run-id",
            "run_slow_tools",
        ])
        .run();
    assert_eq!(queued.code, 0, "{}", queued.stderr);
    let mut w = Stepwise::new()
        .current_dir(dir.path())
        .env("STEPWISE_DB", db.url())
        .args(["worker", "--poll-ms", "50", "--lease-ms", "3000"])
        .stderr(Stdio::piped())
        .spawn();
    let until = Instant::now() + Duration::from_secs(60);
    let status = loop {
        let status = one(
            &db,
            "SELECT coalesce((SELECT status FROM stepwise.runs WHERE run_id = 'run_slow_tools'), '')",
        );
        let job = one(
            &db,
            "SELECT state FROM stepwise.jobs WHERE run_id = 'run_slow_tools'",
        );
        if status == "failed" && job == "done" {
            break status;
        }
        assert!(
            Instant::now() < until,
            "not recorded failed within 60 s (status {status:?})"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    w.kill();
    assert_eq!(status, "failed");
    assert_eq!(
        one(
            &db,
            "SELECT claims::text FROM stepwise.jobs WHERE run_id = 'run_slow_tools'"
        ),
        "5"
    );
    assert_eq!(
        one(
            &db,
            "SELECT state FROM stepwise.jobs WHERE run_id = 'run_slow_tools'"
        ),
        "done"
    );
    let shown = Stepwise::new()
        .env("STEPWISE_DB", db.url())
        .args(["show", "run_slow_tools", "--json"])
        .run();
    let v = shown.json();
    assert_eq!(v["status"], "failed", "{}", shown.stdout);
    let log = v["execution_history"].as_array().unwrap();
    assert_eq!(log[0]["kind"], "run_started");
    assert_eq!(log[0]["input"], "What is the latency budget?");
    let failed = log.last().unwrap();
    assert_eq!(failed["kind"], "run_failed");
    let error = failed["error"].as_str().unwrap();
    assert!(
        error.contains("5 tries") && error.contains("slow"),
        "{error}"
    );
}

/// `stepwise workers` tells live, stopped and dead workers apart by their
/// heartbeat: a frozen one is `stale`, a killed one `gone`; `--prune`
/// removes the gone (never a live one), and a woken worker is `running`
/// again at its next heartbeat.
#[test]
fn workers_tell_live_stale_and_gone_apart_and_prune_the_gone() {
    let db = ScratchDb::new("workers-seen").unwrap_or_else(|e| panic!("{e}"));
    let pg = || Stepwise::new().env("STEPWISE_DB", db.url());
    assert_eq!(pg().arg("migrate").run().code, 0);
    let spawn = || {
        pg().args(["worker", "--lease-ms", "600", "--poll-ms", "50", "--quiet"])
            .stderr(Stdio::null())
            .spawn()
    };
    let (mut frozen, mut killed) = (spawn(), spawn());
    let (frozen_id, killed_id) = (worker_id(&db, frozen.id()), worker_id(&db, killed.id()));
    let states = |extra: &[&str]| -> std::collections::BTreeMap<String, String> {
        let mut args = vec!["workers", "--json", "--stale-after-ms", "500"];
        args.extend_from_slice(extra);
        let out = pg().args(&args).run();
        assert_eq!(out.code, 0, "{}", out.stderr);
        out.json()["workers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| {
                (
                    w["id"].as_str().unwrap().to_owned(),
                    w["state"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    };
    let seen = states(&[]);
    assert_eq!(seen[&frozen_id], "running");
    assert_eq!(seen[&killed_id], "running");
    signal(frozen.id(), "-STOP");
    killed.kill();
    std::thread::sleep(Duration::from_millis(1200));
    let seen = states(&[]);
    assert_eq!(seen[&frozen_id], "stale", "{seen:?}");
    assert_eq!(seen[&killed_id], "gone", "{seen:?}");
    let seen = states(&["--prune"]);
    assert!(!seen.contains_key(&killed_id), "{seen:?}");
    assert_eq!(seen[&frozen_id], "stale", "kept: it may wake");
    signal(frozen.id(), "-CONT");
    std::thread::sleep(Duration::from_millis(600));
    assert_eq!(states(&[])[&frozen_id], "running");
    frozen.kill();
}
