//! Streamed plans through the real binary (`[planner] stream = true` and a
//! script model that streams its plan at a fixed rate): the first steps run
//! before the planner has written the last one, an invalid step in the
//! middle holds back only the steps that need it, and a run stopped in the
//! middle of the stream resumes without running a succeeded step again.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

mod common;

use common::{Out, Scratch};

const GOAL: &str = "What is our latency budget, and what do the notes say around it?";

fn notes() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/notes")
}

/// Ten search steps: `find` first, `s10` after it, the rest independent.
fn steps() -> Vec<Value> {
    let mut steps = vec![
        json!({"id": "find", "description": "Find the latency budget",
        "tool": "search_notes", "args": {"query": "latency budget first token"},
        "acceptance_criteria": [{"check": "non_empty"}]}),
    ];
    for i in 2..=9 {
        steps.push(
            json!({"id": format!("s{i}"), "description": format!("Search topic {i}"),
            "tool": "search_notes", "args": {"query": format!("latency percentile {i}")},
            "acceptance_criteria": [{"check": "non_empty"}]}),
        );
    }
    steps.push(
        json!({"id": "s10", "description": "Search again after the budget",
        "tool": "search_notes", "depends_on": ["find"], "args": {"query": "first token"},
        "acceptance_criteria": [{"check": "non_empty"}]}),
    );
    steps
}

/// The planner's answer, streamed 24 characters every 5 ms (about 0.6 s).
fn streamed_plan(steps: &[Value]) -> Value {
    json!({"purpose": "planner", "json": {"steps": steps},
           "stream": {"chunk_ms": 5, "chunk_chars": 24}})
}

fn synthesis() -> Value {
    json!({"purpose": "synthesizer", "json": {
        "text": "# Latency\n\nThe budget is 1.5 seconds to first token [latency-budget].",
        "evidence": [{"source_id": "latency-budget", "step": "find",
            "quote": "we set a budget of 1.5 seconds to first token at the 95th percentile"}]}})
}

/// A folder with `stepwise.toml` asking for streamed plans and a script.
struct Dir(Scratch);

impl Dir {
    fn new(name: &str, script: &[Value]) -> Self {
        let scratch = Scratch::new("streaming", name);
        std::fs::write(
            scratch.path().join("stepwise.toml"),
            "[planner]\nstream = true\n",
        )
        .unwrap();
        std::fs::write(
            scratch.path().join("script.json"),
            Value::Array(script.to_vec()).to_string(),
        )
        .unwrap();
        Self(scratch)
    }

    fn stepwise(&self, args: &[&str], env: &[(&str, &str)]) -> Out {
        common::stepwise(self.0.path(), &self.0.db(), args, env)
    }

    fn run(&self, id: &str, env: &[(&str, &str)]) -> Out {
        let notes = notes();
        let model = format!("script:{}", self.0.path().join("script.json").display());
        self.stepwise(
            &[
                "run",
                GOAL,
                "--notes",
                notes.to_str().unwrap(),
                "--model",
                &model,
                "--run-id",
                id,
                "--json",
                "--quiet",
            ],
            env,
        )
    }

    /// The run's events, read from its database.
    fn events(&self, id: &str) -> Vec<Value> {
        use stepwise_core::Store;
        let store = stepwise_store::SqliteStore::open(&self.0.db()).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let state = rt
            .block_on(store.state(&stepwise_core::RunId(id.to_owned())))
            .unwrap();
        state
            .execution_history
            .iter()
            .map(|e| serde_json::to_value(e).unwrap())
            .collect()
    }
}

/// Position of the first event of `kind` (for `step`, if given).
fn position(events: &[Value], kind: &str, step: Option<&str>) -> Option<usize> {
    events.iter().position(|e| {
        e["kind"] == kind && step.is_none_or(|s| e["step"] == s || e["step"]["id"] == s)
    })
}

fn at(events: &[Value], kind: &str, step: Option<&str>) -> usize {
    position(events, kind, step)
        .unwrap_or_else(|| panic!("no {kind} {step:?} in {:#?}", kinds(events)))
}

fn count(events: &[Value], kind: &str) -> usize {
    events.iter().filter(|e| e["kind"] == kind).count()
}

fn kinds(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| match e["step"].as_str().or(e["step"]["id"].as_str()) {
            Some(step) => format!("{} {step}", e["kind"].as_str().unwrap_or("?")),
            None => e["kind"].as_str().unwrap_or("?").to_owned(),
        })
        .collect()
}

fn json(out: &Out) -> Value {
    serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}\n{}", out.stdout, out.stderr))
}

#[test]
fn a_streamed_plan_runs_its_first_steps_before_the_planner_has_written_the_last() {
    let dir = Dir::new("ten", &[streamed_plan(&steps()), synthesis()]);
    let out = dir.run("run_streamed", &[]);
    let ev = dir.events("run_streamed");
    let inv: Vec<&Value> = ev.iter().filter(|e| e["kind"] == "plan_invalid").collect();
    assert_eq!(out.code, 0, "{} {inv:#?}", out.stderr);
    let output = json(&out);
    assert_eq!(output["status"], "ok", "{}", out.stdout);
    let events = dir.events("run_streamed");
    // The planner's stream ends where its answer is recorded.
    let stream_end = at(&events, "plan_created", None);
    let first_started = at(&events, "step_started", Some("find"));
    assert!(
        first_started < stream_end,
        "find started after the stream ended: {:#?}",
        kinds(&events)
    );
    // find ran while s10, the last step written, was not written yet.
    assert!(
        first_started < at(&events, "step_added", Some("s10")),
        "{:#?}",
        kinds(&events)
    );
    // Every streamed step was durable before it was dispatched.
    for step in steps() {
        let id = step["id"].as_str().unwrap();
        let added = at(&events, "step_added", Some(id));
        assert_eq!(events[added]["streamed"], true);
        assert!(added < at(&events, "step_started", Some(id)), "{id}");
        assert!(
            position(&events, "step_succeeded", Some(id)).is_some(),
            "{id}"
        );
    }
    // The whole plan is then recorded as a normal validated plan, version 1.
    let validated = &events[at(&events, "plan_validated", None)];
    assert_eq!(validated["plan"]["version"], 1);
    assert_eq!(validated["plan"]["steps"].as_array().unwrap().len(), 10);
    assert_eq!(
        count(&events, "step_started"),
        10,
        "no step ran twice: {:#?}",
        kinds(&events)
    );
    // show reads it as it reads any plan.
    let show = dir.stepwise(&["show", "run_streamed"], &[]);
    assert_eq!(show.code, 0, "{}", show.stderr);
    assert!(show.stdout.contains("s10"), "{}", show.stdout);
}

#[test]
fn an_invalid_step_mid_stream_holds_back_only_the_steps_that_need_it() {
    let mut plan = steps();
    // s5 calls a tool that does not exist; s6 needs s5; s7 does not.
    plan[4]["tool"] = json!("no_such_tool");
    plan[5]["depends_on"] = json!(["s5"]);
    let mut fixed = steps();
    fixed[5]["depends_on"] = json!(["s5"]);
    let repair = json!({"purpose": "repairer", "json": {"steps": fixed}});
    let dir = Dir::new("invalid", &[streamed_plan(&plan), repair, synthesis()]);
    let out = dir.run("run_invalid_step", &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(json(&out)["status"], "ok", "{}", out.stdout);
    let events = dir.events("run_invalid_step");
    let stream_end = at(&events, "plan_created", None);
    // Neither s5 nor its dependant was added or started while streaming …
    for held in ["s5", "s6"] {
        assert!(
            position(&events, "step_added", Some(held)).is_none(),
            "{held}: {:#?}",
            kinds(&events)
        );
        assert!(
            at(&events, "step_started", Some(held)) > stream_end,
            "{held}"
        );
    }
    // … while s7, written after s5, started before the stream ended.
    assert!(at(&events, "step_started", Some("s7")) < stream_end);
    // The bad step is reported as an invalid plan's would be, then repaired.
    let invalid = &events[at(&events, "plan_invalid", None)];
    let diagnostics = invalid["diagnostics"].as_array().unwrap();
    assert!(
        diagnostics
            .iter()
            .any(|d| d["code"] == "unknown_tool" && d["step"] == "s5"),
        "{diagnostics:?}"
    );
    assert!(at(&events, "plan_repaired", None) < at(&events, "plan_validated", None));
    // Steps that ran while streaming were not run again after the repair.
    assert_eq!(count(&events, "step_started"), 10, "{:#?}", kinds(&events));
}

#[test]
fn a_run_stopped_mid_stream_resumes_keeping_what_succeeded() {
    // The resume asks the planner again (the cut stream was never recorded),
    // whole, from the same script: its first entry again, then the report.
    let dir = Dir::new("crash", &[streamed_plan(&steps()), synthesis()]);
    let mut mid_stream = 0;
    let mut with_success = 0;
    for n in 1..80 {
        let id = format!("run_crash_{n}");
        let failpoint = format!("abort-after-writes={n}");
        let first = dir.run(&id, &[("STEPWISE_FAILPOINT", &failpoint)]);
        if first.code == 0 {
            break; // past the last write
        }
        let before = match std::panic::catch_unwind(|| dir.events(&id)) {
            Ok(events) => events,
            Err(_) => continue, // aborted before the run was recorded
        };
        let streaming = position(&before, "step_added", None).is_some()
            && position(&before, "plan_created", None).is_none();
        if !streaming {
            continue;
        }
        mid_stream += 1;
        let succeeded: Vec<String> = before
            .iter()
            .filter(|e| e["kind"] == "step_succeeded")
            .map(|e| e["step"].as_str().unwrap().to_owned())
            .collect();
        with_success += usize::from(!succeeded.is_empty());
        let resumed = dir.stepwise(&["resume", &id, "--json", "--quiet"], &[]);
        assert_eq!(resumed.code, 0, "n={n}: {}", resumed.stderr);
        assert_eq!(json(&resumed)["status"], "ok", "n={n}: {}", resumed.stdout);
        let after = dir.events(&id);
        let resumed_at = at(&after, "run_resumed", None);
        let rest = &after[resumed_at..];
        for step in &succeeded {
            assert!(
                position(rest, "step_started", Some(step)).is_none(),
                "n={n}: {step} succeeded before the crash and ran again: {:#?}",
                kinds(&after)
            );
        }
        let validated = &after[at(&after, "plan_validated", None)];
        assert_eq!(validated["plan"]["version"], 1, "n={n}");
        assert_eq!(
            count(&after, "step_succeeded"),
            10,
            "n={n}: every step succeeded once: {:#?}",
            kinds(&after)
        );
        if with_success >= 2 {
            break;
        }
    }
    assert!(
        with_success > 0,
        "no abort landed mid-stream after a step succeeded ({mid_stream} mid-stream aborts)"
    );
}
