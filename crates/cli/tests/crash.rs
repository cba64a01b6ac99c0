//! Crash safety with real processes: abort after every durable write (the
//! store's failpoint), a real `kill -9` mid-run, and two resumers at once.
//! Each interrupted run is resumed in a new process and must end like an
//! uninterrupted one, with the side effect (a file written by `write_file`)
//! applied exactly once and no succeeded step run twice.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

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

struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Self {
        let p = std::env::temp_dir().join(format!("stepwise-crash-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        std::fs::write(p.join("plan.json"), plan().to_string()).unwrap();
        Self(p)
    }
    fn db(&self) -> PathBuf {
        self.0.join("runs.db")
    }
    fn ws(&self) -> PathBuf {
        self.0.join("ws")
    }
    fn ledger_lines(&self) -> usize {
        std::fs::read_to_string(self.ws().join(".stepwise/writes.jsonl"))
            .map_or(0, |t| t.lines().count())
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn notes() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/notes")
}

fn command(dir: &Dir, args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_stepwise"));
    c.arg("--db")
        .arg(dir.db())
        .args(args)
        .env_remove("STEPWISE_FAILPOINT")
        .env_remove("STEPWISE_TOOL_DELAY_MS");
    for (k, v) in env {
        c.env(k, v);
    }
    c
}

fn start_args(dir: &Dir, run_id: &str) -> Vec<String> {
    [
        "run",
        GOAL,
        "--notes",
        notes().to_str().unwrap(),
        "--plan",
        dir.0.join("plan.json").to_str().unwrap(),
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
    command(dir, &args, env).output().unwrap()
}

fn resume(dir: &Dir, run_id: &str) -> Output {
    command(
        dir,
        &["resume", run_id, "--approve", "auto", "--json", "--quiet"],
        &[],
    )
    .output()
    .unwrap()
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
    let outputs: serde_json::Map<String, Value> = v["step_results"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, r)| (k.clone(), r["output"].clone()))
        .collect();
    let statuses: Vec<Value> = v["plan"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| json!([s["id"], s["status"]]))
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

#[test]
fn kill_9_mid_run_then_resume_ends_like_an_uninterrupted_run() {
    let reference_dir = Dir::new("kill-reference");
    let expected = stable(&run(&reference_dir, "run_kill_ref", &[]));
    for (i, after_ms) in [150u64, 450, 750, 1050].into_iter().enumerate() {
        let dir = Dir::new(&format!("kill{i}"));
        let id = format!("run_kill_{i}");
        let args = start_args(&dir, &id);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut child = command(&dir, &args, &[("STEPWISE_TOOL_DELAY_MS", "300")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(after_ms));
        let _ = Command::new("kill")
            .args(["-9", &child.id().to_string()])
            .status();
        let status = child.wait().unwrap();
        let second = resume(&dir, &id);
        let stderr = String::from_utf8_lossy(&second.stderr);
        if status.success() || stderr.contains("already ended") {
            continue; // finished before the kill landed
        }
        if stderr.contains("no run with id") {
            assert_eq!(dir.ledger_lines(), 0);
            continue;
        }
        assert_eq!(
            second.status.code(),
            Some(0),
            "kill after {after_ms} ms: {stderr}"
        );
        assert_eq!(stable(&second), expected, "kill after {after_ms} ms");
        assert_no_rerun(&second);
        assert_eq!(
            dir.ledger_lines(),
            1,
            "kill after {after_ms} ms: written once"
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
        .unwrap()
    };
    let (a, b) = (spawn(), spawn());
    let outs = [a.wait_with_output().unwrap(), b.wait_with_output().unwrap()];
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
