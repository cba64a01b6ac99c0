//! Streamed plans in the engine (LLMCompiler): steps start while the
//! planner still writes later ones, a refused step holds back only its
//! dependants, and a run stopped at any event of the stream resumes to the
//! same result without running a succeeded step again.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use stepwise_core::engine::ResumeOptions;
use stepwise_core::testing::{
    CrashAfter, FnTool, ScriptedAssessor, ScriptedRepairer, ScriptedReplanner, ScriptedSynthesizer,
    StreamingPlanner,
};
use stepwise_core::{
    Constraints, DraftPlan, Engine, EventKind, EventSink, MemoryStore, RunConfig, RunId, RunState,
    RunStatus, Store, StoreSink, ToolRegistry,
};

const WRITE_EVERY: Duration = Duration::from_millis(20);
const TOOL_TAKES: Duration = Duration::from_millis(5);

fn step(id: &str, deps: &[&str]) -> Value {
    json!({"id": id, "description": format!("look up {id}"), "tool": "look",
           "args": {"q": id}, "depends_on": deps, "acceptance_criteria": [{"check": "non_empty"}]})
}

/// Ten steps: `s10` needs `s1`, `s6` needs `s5`; the rest are independent.
fn ten() -> Vec<Value> {
    (1..=10)
        .map(|i| match i {
            6 => step("s6", &["s5"]),
            10 => step("s10", &["s1"]),
            _ => step(&format!("s{i}"), &[]),
        })
        .collect()
}

struct Setup {
    steps: Vec<Value>,
    repairs: Vec<DraftPlan>,
    calls: Arc<Mutex<Vec<String>>>,
}

impl Setup {
    fn new(steps: Vec<Value>) -> Self {
        Self {
            steps,
            repairs: Vec::new(),
            calls: Arc::default(),
        }
    }

    fn engine(&self, sink: Option<Arc<dyn EventSink>>) -> Engine {
        let roles = stepwise_core::Roles::new(
            Arc::new(StreamingPlanner::new(self.steps.clone(), WRITE_EVERY)),
            Arc::new(ScriptedRepairer::new(self.repairs.clone())),
            Arc::new(ScriptedAssessor::new([])),
            Arc::new(ScriptedReplanner::new([])),
            Arc::new(ScriptedSynthesizer::summarising()),
        );
        let calls = Arc::clone(&self.calls);
        let mut tools = ToolRegistry::new();
        tools.register_dyn(Arc::new(
            FnTool::new("look", move |args: Value| {
                let calls = Arc::clone(&calls);
                Box::pin(async move {
                    calls
                        .lock()
                        .unwrap()
                        .push(args["q"].as_str().unwrap_or_default().to_owned());
                    tokio::time::sleep(TOOL_TAKES).await;
                    Ok(json!({"found": args["q"]}))
                })
            })
            .with_schema(
                json!({"type": "object", "properties": {"q": {"type": "string"}},
                                "required": ["q"]}),
            ),
        ));
        let config = RunConfig {
            stream_plans: true,
            ..RunConfig::default()
        };
        let engine = Engine::new(roles, tools, config).unwrap();
        match sink {
            Some(sink) => engine.with_sink(sink),
            None => engine,
        }
    }
}

/// Position of the first event matching.
fn at(state: &RunState, what: impl Fn(&EventKind) -> bool) -> usize {
    state
        .execution_history
        .iter()
        .position(|e| what(&e.kind))
        .unwrap_or_else(|| panic!("no such event in {:#?}", state.execution_history))
}

fn started(state: &RunState, id: &str) -> usize {
    at(
        state,
        |k| matches!(k, EventKind::StepStarted { step, .. } if step.as_str() == id),
    )
}

fn added(state: &RunState, id: &str) -> Option<usize> {
    state.execution_history.iter().position(
        |e| matches!(&e.kind, EventKind::StepAdded { step, streamed: true, .. } if step.id.as_str() == id),
    )
}

fn plan_created(state: &RunState) -> usize {
    at(state, |k| matches!(k, EventKind::PlanCreated { .. }))
}

#[tokio::test(start_paused = true)]
async fn steps_start_while_the_planner_writes_later_ones() {
    let setup = Setup::new(ten());
    let state = setup
        .engine(None)
        .run("look everything up", Constraints::default())
        .await
        .unwrap();
    assert_eq!(state.status, RunStatus::Ok, "{:?}", state.blocked_reason);
    // s1 ran (and finished) before s2 was even written; s10, which needs
    // s1, started as soon as it was written.
    assert!(started(&state, "s1") < added(&state, "s2").unwrap());
    assert!(started(&state, "s10") < plan_created(&state));
    for i in 1..=10 {
        let id = format!("s{i}");
        assert!(added(&state, &id).unwrap() < started(&state, &id), "{id}");
    }
    // Then a normal plan: version 1, every step once, rebuilt by the fold.
    assert_eq!(state.plan.version, 1);
    assert_eq!(state.step_results.len(), 10);
    assert_eq!(setup.calls.lock().unwrap().len(), 10);
    let mut folded = RunState::default();
    for event in &state.execution_history {
        folded.apply(event).unwrap();
    }
    assert_eq!(folded.plan, state.plan);
}

#[tokio::test(start_paused = true)]
async fn a_refused_step_holds_back_only_its_dependants() {
    let mut steps = ten();
    steps[4]["tool"] = json!("no_such_tool");
    let mut setup = Setup::new(steps);
    setup.repairs = vec![DraftPlan(json!({"steps": ten()}))];
    let state = setup
        .engine(None)
        .run("look everything up", Constraints::default())
        .await
        .unwrap();
    assert_eq!(state.status, RunStatus::Ok, "{:?}", state.blocked_reason);
    let end = plan_created(&state);
    assert_eq!(added(&state, "s5"), None);
    assert_eq!(added(&state, "s6"), None);
    assert!(started(&state, "s5") > end && started(&state, "s6") > end);
    for later in ["s7", "s8", "s9", "s10"] {
        assert!(started(&state, later) < end, "{later}");
    }
    let invalid = at(&state, |k| {
        matches!(k, EventKind::PlanInvalid { diagnostics }
        if diagnostics.iter().any(|d| d.step.as_ref().is_some_and(|s| s.as_str() == "s5")))
    });
    assert!(end < invalid);
    assert_eq!(setup.calls.lock().unwrap().len(), 10, "nothing ran twice");
}

#[tokio::test(start_paused = true)]
async fn a_run_stopped_at_any_event_of_the_stream_resumes_without_rerunning() {
    let reference = Setup::new(ten())
        .engine(None)
        .run("look everything up", Constraints::default())
        .await
        .unwrap();
    let stream_end = plan_created(&reference);
    let outcome = |state: &RunState| {
        state
            .step_results
            .iter()
            .map(|(k, v)| (k.to_string(), v.output.clone()))
            .collect::<BTreeMap<_, _>>()
    };
    for limit in 3..=stream_end {
        let setup = Setup::new(ten());
        let store = Arc::new(MemoryStore::new());
        let run = RunId(format!("run_stream_{limit}"));
        let crashing = Arc::new(CrashAfter::new(
            Arc::new(StoreSink::new(store.clone(), None)),
            limit,
        ));
        let stopped = setup
            .engine(Some(crashing))
            .run_with_id(run.clone(), "look everything up", Constraints::default())
            .await;
        assert!(
            stopped.is_err(),
            "limit {limit}: the sink failure stops the run"
        );
        let saved = store.state(&run).await.unwrap();
        let done_before: Vec<String> = saved.step_results.keys().map(ToString::to_string).collect();
        let calls_before = setup.calls.lock().unwrap().clone();
        let sink = Arc::new(StoreSink::new(store.clone(), None));
        let state = setup
            .engine(Some(sink))
            .resume(
                saved,
                ResumeOptions {
                    by: "test".into(),
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        assert_eq!(
            state.status,
            RunStatus::Ok,
            "limit {limit}: {:?}",
            state.blocked_reason
        );
        assert_eq!(outcome(&state), outcome(&reference), "limit {limit}");
        assert_eq!(state.plan.version, 1, "limit {limit}");
        let calls_after = setup.calls.lock().unwrap()[calls_before.len()..].to_vec();
        for done in &done_before {
            assert!(
                !calls_after.contains(done),
                "limit {limit}: {done} succeeded before the stop and ran again"
            );
        }
    }
}
