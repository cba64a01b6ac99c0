//! Crash safety with real processes: abort after every durable write (the
//! store's failpoint), a real `kill -9` mid-run, and two resumers at once.
//! Each interrupted run is resumed in a new process and must end like an
//! uninterrupted one, with the side effect (a file written by `write_file`)
//! applied exactly once and no succeeded step run twice.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use serde_json::{Value, json};

mod common;

use common::{Scratch, Stepwise};

const GOAL: &str = "Save the latency budget";

fn plan() -> Value {
    json!({"steps": [
        {"id": "find", "description": "Find the latency budget", "tool": "search_notes",
         "args": {"query": "latency budget first token"}, "acceptance_criteria": ["a passage about latency"]},
        {"id": "cost", "description": "Find the operating cost", "tool": "search_notes",
         "args": {"query": "operating cost per month"}, "acceptance_criteria": ["a passage about cost"]},
        {"id": "save", "description": "Save the best passage", "tool": "write_file", "depends_on": ["find"],
         "args": {"path": "out/latency.md", "content": "${find.output.results[0].passages[0]}"},
         "acceptance_criteria": ["file written"]},
        {"id": "read", "description": "Read the latency note", "tool": "read_note", "depends_on": ["save", "cost"],
         "args": {"id": "latency-budget"}, "acceptance_criteria": ["the note"]}
    ]})
}

/// The plan of the killed runs: [`plan`] with `cost` behind a `price`
/// search, so that `cost` is still in flight (until twice the tool delay)
/// when `find` succeeds (after one), though every tool takes the same time.
fn kill_plan() -> Value {
    let mut plan = plan();
    let steps = plan["steps"].as_array_mut().unwrap();
    steps[1]["depends_on"] = json!(["price"]);
    steps.insert(
        1,
        json!({"id": "price", "description": "Find the price", "tool": "search_notes",
               "args": {"query": "price per token"}, "acceptance_criteria": ["a passage about price"]}),
    );
    plan
}

/// A scratch folder: the run database, the plan and the workspace.
struct Dir(Scratch);

impl Dir {
    fn new(name: &str) -> Self {
        Self::with_plan(name, &plan())
    }

    fn with_plan(name: &str, plan: &Value) -> Self {
        let scratch = Scratch::new("crash", name);
        std::fs::write(scratch.path().join("plan.json"), plan.to_string()).unwrap();
        Self(scratch)
    }
    fn db(&self) -> PathBuf {
        self.0.db()
    }
    fn ws(&self) -> PathBuf {
        self.0.path().join("ws")
    }
    fn ledger_lines(&self) -> usize {
        std::fs::read_to_string(self.ws().join(".stepwise/writes.jsonl"))
            .map_or(0, |t| t.lines().count())
    }
}

fn notes() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/notes")
}

/// The binary isolated (see [`common::Stepwise`]) on the folder's database.
fn command(dir: &Dir, args: &[&str], env: &[(&str, &str)]) -> Stepwise {
    Stepwise::new().db(&dir.db()).args(args).envs(env)
}

fn start_args(dir: &Dir, run_id: &str) -> Vec<String> {
    [
        "run",
        GOAL,
        "--notes",
        notes().to_str().unwrap(),
        "--plan",
        dir.0.path().join("plan.json").to_str().unwrap(),
        "--workspace",
        dir.ws().to_str().unwrap(),
        "--approve",
        "auto",
        "--json",
        "--quiet",
        "--run-id",
        run_id,
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect()
}

fn run(dir: &Dir, run_id: &str, env: &[(&str, &str)]) -> Output {
    let args = start_args(dir, run_id);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    command(dir, &args, env).output()
}

fn resume(dir: &Dir, run_id: &str) -> Output {
    command(
        dir,
        &["resume", run_id, "--approve", "auto", "--json", "--quiet"],
        &[],
    )
    .output()
}

/// The final output of a run, read from its database.
fn stored(dir: &Dir, run_id: &str) -> Value {
    use stepwise_core::Store;
    let store = stepwise_store::SqliteStore::open(&dir.db()).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let state = rt
        .block_on(store.state(&stepwise_core::RunId(run_id.to_owned())))
        .unwrap();
    serde_json::to_value(state.final_output()).unwrap()
}

/// The parts of the final output that must not depend on interruptions.
fn stable(out: &Output) -> Value {
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    stable_value(&v)
}

fn stable_value(v: &Value) -> Value {
    // Each result with its attempts, less those a crash cut short
    // (`step_interrupted`): a side-effect step whose recorded outcome is
    // reused counts as many attempts as in an uninterrupted run.
    let outputs: serde_json::Map<String, Value> = v["step_results"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, r)| {
            let attempts = common::attempts_uninterrupted(v, k);
            (
                k.clone(),
                json!({"output": r["output"], "attempts": attempts}),
            )
        })
        .collect();
    // Each step's final status, by id: where a replan's new steps sit in the
    // plan depends on which parallel steps had ended when it was drafted,
    // which is timing, in an uninterrupted run as well.
    let statuses: std::collections::BTreeMap<String, Value> = v["plan"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["id"].as_str().unwrap_or_default().to_owned(),
                s["status"].clone(),
            )
        })
        .collect();
    json!({
        "status": v["status"], "report": v["final_report"], "outputs": outputs, "statuses": statuses,
        "gaps": v["knowledge_gaps"], "evidence": v["evidence"],
    })
}

/// No step starts again after it succeeded.
fn assert_no_rerun(out: &Output) {
    assert_no_rerun_in(&serde_json::from_slice(&out.stdout).unwrap());
}

fn assert_no_rerun_in(v: &Value) {
    let mut done: Vec<String> = Vec::new();
    for e in v["execution_history"].as_array().unwrap() {
        let step = e["step"].as_str().unwrap_or_default().to_owned();
        match e["kind"].as_str() {
            Some("step_started") => assert!(
                !done.contains(&step),
                "{step} started again after it succeeded"
            ),
            Some("step_succeeded") => done.push(step),
            _ => {}
        }
    }
}

#[test]
fn abort_after_every_durable_write_then_resume_ends_like_an_uninterrupted_run() {
    let reference_dir = Dir::new("reference");
    let reference = run(&reference_dir, "run_reference", &[]);
    assert_eq!(
        reference.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&reference.stderr)
    );
    let expected = stable(&reference);
    assert_eq!(reference_dir.ledger_lines(), 1);

    for (aborted, n) in (1..400).enumerate() {
        let dir = Dir::new(&format!("n{n}"));
        let id = format!("run_abort_{n}");
        let first = run(
            &dir,
            &id,
            &[("STEPWISE_FAILPOINT", &format!("abort-after-writes={n}"))],
        );
        if first.status.success() {
            // N is past the last write: the run finished untouched.
            assert_eq!(stable(&first), expected);
            assert!(aborted > 10, "only {aborted} abort points were exercised");
            return;
        }
        assert_eq!(
            first.status.code(),
            None,
            "n={n}: expected an abort, got {:?}",
            first.status
        );
        let second = resume(&dir, &id);
        let stderr = String::from_utf8_lossy(&second.stderr);
        if stderr.contains("no run with id") {
            // Aborted before the run was recorded: nothing was accepted, nothing ran.
            assert_eq!(dir.ledger_lines(), 0, "n={n}");
            continue;
        }
        if stderr.contains("already ended (ok)") {
            // Aborted after the last event (e.g. while releasing the lease): the run is complete.
            let v = stored(&dir, &id);
            assert_eq!(stable_value(&v), expected, "n={n}");
            assert_no_rerun_in(&v);
        } else {
            assert_eq!(second.status.code(), Some(0), "n={n}: {stderr}");
            assert_eq!(stable(&second), expected, "n={n}");
            assert_no_rerun(&second);
        }
        assert_eq!(
            dir.ledger_lines(),
            1,
            "n={n}: the file was written exactly once"
        );
        let written = std::fs::read_to_string(dir.ws().join("out/latency.md")).unwrap();
        assert!(written.contains("1.5 seconds"), "n={n}: {written}");
    }
    panic!("the run never completed without aborting");
}

/// How long each tool call of the killed runs takes at first
/// (`STEPWISE_TOOL_DELAY_MS`): the window in which a kill sent on a progress
/// line lands mid-run. Doubled at each retry of a kill that missed.
const DELAY_MS: u64 = 300;

/// Tries per kill point before the test fails: a kill that missed its
/// window (the step ended before the signal) is retried on a fresh run.
const KILL_TRIES: u32 = 4;

/// Where a run is killed: the progress line (stderr) on which the kill is
/// sent, and what the run's log must show at the kill for it to have landed
/// there — the steps then in flight (started, not ended) and those already
/// succeeded.
struct KillPoint {
    on: &'static str,
    in_flight: &'static [&'static str],
    succeeded: &'static [&'static str],
}

/// With the first searches in flight; after `find` succeeded, `cost` still
/// in flight (see [`kill_plan`]); with the side-effect step `save` in
/// flight; with `save` done and `read` in flight.
const KILL_ON: [KillPoint; 4] = [
    KillPoint {
        on: "[find] running",
        in_flight: &["find"],
        succeeded: &[],
    },
    KillPoint {
        on: "[find] succeeded",
        in_flight: &["cost"],
        succeeded: &["find"],
    },
    KillPoint {
        on: "[save] running",
        in_flight: &["save"],
        succeeded: &["find"],
    },
    KillPoint {
        on: "[read] running",
        in_flight: &["read"],
        succeeded: &["find", "price", "cost", "save"],
    },
];

/// The steps of the stored run whose last lifecycle event is `step_started`
/// (in flight when the process died), and those that succeeded.
fn in_flight_and_succeeded(dir: &Dir, run_id: &str) -> (Vec<String>, Vec<String>) {
    use stepwise_core::Store;
    let store = stepwise_store::SqliteStore::open(&dir.db()).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let events = rt
        .block_on(store.events(&stepwise_core::RunId(run_id.to_owned())))
        .unwrap();
    let mut last = std::collections::BTreeMap::new();
    let mut succeeded = Vec::new();
    for e in &events {
        let v = serde_json::to_value(&e.kind).unwrap();
        if let (Some(kind), Some(step)) = (v["kind"].as_str(), v["step"].as_str())
            && kind.starts_with("step_")
        {
            if kind == "step_succeeded" {
                succeeded.push(step.to_owned());
            }
            last.insert(step.to_owned(), kind.to_owned());
        }
    }
    let in_flight = last
        .into_iter()
        .filter(|(_, kind)| kind == "step_started")
        .map(|(step, _)| step)
        .collect();
    (in_flight, succeeded)
}

/// One try at killing a run at `point`: the run, killed or not, must end
/// like an uninterrupted one once resumed. `Ok` if the kill landed where
/// intended (and the resume continued the run); `Err` says how it missed.
#[cfg(unix)]
fn kill_once(point: &KillPoint, name: &str, delay_ms: u64, expected: &Value) -> Result<(), String> {
    use std::os::unix::process::ExitStatusExt;

    let trigger = point.on;
    let dir = Dir::with_plan(name, &kill_plan());
    let id = format!("run_{name}");
    // Progress on (no --quiet): the kill is sent when `trigger` is printed.
    let args = start_args(&dir, &id);
    let args: Vec<&str> = args
        .iter()
        .map(String::as_str)
        .filter(|a| *a != "--quiet")
        .collect();
    let delay = delay_ms.to_string();
    let mut child = command(&dir, &args, &[("STEPWISE_TOOL_DELAY_MS", &delay)])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn();
    let mut seen = Vec::new();
    let mut sent = false;
    for line in BufReader::new(child.take_stderr().unwrap()).lines() {
        let line = line.unwrap();
        sent = line.starts_with(trigger);
        seen.push(line);
        if sent {
            child.kill();
            break;
        }
    }
    let status = child.wait();
    let last = seen.last().cloned().unwrap_or_default();
    if status.signal() != Some(9) {
        // The run ended before the kill: it must still have ended well.
        assert!(
            status.success(),
            "on {trigger:?}: {status:?}\n{}",
            seen.join("\n")
        );
        assert_eq!(
            stable_value(&stored(&dir, &id)),
            *expected,
            "on {trigger:?}"
        );
        let why = if sent {
            "the kill came too late"
        } else {
            "never printed"
        };
        return Err(format!("{why}; exited {status} after {last:?}"));
    }
    // Where the kill landed, as the log has it before anything resumes.
    let (in_flight, succeeded) = in_flight_and_succeeded(&dir, &id);
    let second = resume(&dir, &id);
    let stderr = String::from_utf8_lossy(&second.stderr);
    if stderr.contains("no run with id") {
        // Killed before the run was recorded: nothing was accepted, nothing ran.
        assert_eq!(dir.ledger_lines(), 0, "kill on {trigger:?}");
        return Err("killed before the run was recorded".into());
    }
    if stderr.contains("already ended") {
        // Killed after the run's last event (e.g. releasing its lease).
        assert_eq!(
            stable_value(&stored(&dir, &id)),
            *expected,
            "on {trigger:?}"
        );
        return Err("killed after the run ended".into());
    }
    assert_eq!(
        second.status.code(),
        Some(0),
        "kill on {trigger:?}: {stderr}"
    );
    let v: Value = serde_json::from_slice(&second.stdout).unwrap();
    assert!(
        v["execution_history"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["kind"] == "run_resumed"),
        "kill on {trigger:?}: the resume continued the interrupted run"
    );
    assert_eq!(stable(&second), *expected, "kill on {trigger:?}");
    assert_no_rerun(&second);
    assert_eq!(dir.ledger_lines(), 1, "kill on {trigger:?}: written once");
    let landed = point
        .in_flight
        .iter()
        .all(|s| in_flight.iter().any(|f| f == s))
        && point
            .succeeded
            .iter()
            .all(|s| succeeded.iter().any(|d| d == s));
    if landed {
        Ok(())
    } else {
        Err(format!(
            "killed after {last:?}, with {in_flight:?} in flight and {succeeded:?} succeeded; \
             wanted {:?} in flight and {:?} succeeded",
            point.in_flight, point.succeeded
        ))
    }
}

/// Every kill point must be hit: each is tried on fresh runs, with a longer
/// tool delay each time, until its kill lands where intended, and the test
/// fails if one never does (every try, landed or not, must also resume to
/// the uninterrupted outcome).
#[cfg(unix)]
#[test]
fn kill_9_mid_run_then_resume_ends_like_an_uninterrupted_run() {
    let reference_dir = Dir::with_plan("kill-reference", &kill_plan());
    let reference = run(&reference_dir, "run_kill_ref", &[]);
    assert_eq!(
        reference.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&reference.stderr)
    );
    let expected = stable(&reference);
    assert_eq!(reference_dir.ledger_lines(), 1);
    for (i, point) in KILL_ON.iter().enumerate() {
        let mut missed = Vec::new();
        let landed = (0..KILL_TRIES).any(|try_| {
            let delay = DELAY_MS << try_;
            match kill_once(point, &format!("kill{i}_{try_}"), delay, &expected) {
                Ok(()) => true,
                Err(why) => {
                    missed.push(format!("with {delay} ms per tool call: {why}"));
                    false
                }
            }
        });
        assert!(
            landed,
            "the kill -9 on {:?} never landed with {:?} in flight in {KILL_TRIES} tries: \
             {missed:#?}. A kill is sent as soon as its progress line appears on stderr, and \
             each tool call then takes STEPWISE_TOOL_DELAY_MS (DELAY_MS = {DELAY_MS} ms, \
             doubled per try): raise DELAY_MS if the runs finish first, or update KILL_ON if \
             the progress lines no longer read like that.",
            point.on, point.in_flight
        );
    }
}

#[test]
fn of_two_concurrent_resumers_exactly_one_proceeds() {
    let dir = Dir::new("concurrent");
    let id = "run_concurrent";
    // Stop the run partway: abort after its 8th durable write.
    let first = run(&dir, id, &[("STEPWISE_FAILPOINT", "abort-after-writes=8")]);
    assert_eq!(first.status.code(), None, "expected an abort");
    let spawn = || {
        command(
            &dir,
            &["resume", id, "--approve", "auto", "--json", "--quiet"],
            &[("STEPWISE_TOOL_DELAY_MS", "400")],
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    };
    let (a, b) = (spawn(), spawn());
    let outs = [a.wait_with_output(), b.wait_with_output()];
    let winners = outs.iter().filter(|o| o.status.success()).count();
    assert_eq!(
        winners,
        1,
        "{:?}",
        outs.iter()
            .map(|o| String::from_utf8_lossy(&o.stderr).into_owned())
            .collect::<Vec<_>>()
    );
    let loser = outs.iter().find(|o| !o.status.success()).unwrap();
    let message = String::from_utf8_lossy(&loser.stderr);
    assert!(message.contains("is being worked on by"), "{message}");
    assert_eq!(loser.status.code(), Some(1));
    assert_eq!(dir.ledger_lines(), 1);
}
