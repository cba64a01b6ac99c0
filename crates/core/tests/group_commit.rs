//! Group commit: the events the dispatch loop decides in one pass reach the
//! sinks in one `record_all` (one transaction in a durable store), and
//! nothing outside the run acts on an event before it is committed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use futures::future::BoxFuture;
use serde_json::json;
use stepwise_core::event::SinkError;
use stepwise_core::roles::{AssessRequest, Assessor, Reply, RoleError};
use stepwise_core::testing::{
    FnTool, ScriptedAssessor, ScriptedPlanner, ScriptedRepairer, ScriptedReplanner,
    ScriptedSynthesizer, draft,
};
use stepwise_core::{
    Assessment, BatchSink, Constraints, Engine, Event, EventKind, EventSink, RunConfig, RunId,
    Step, ToolRegistry,
};

/// Keeps every batch it is handed, as the store would commit it; fails a
/// batch (committing none of it) that holds an event `fail_at` picks.
#[derive(Default)]
struct Batches {
    committed: Mutex<Vec<Vec<Event>>>,
    fail_at: Option<fn(&EventKind) -> bool>,
}

impl Batches {
    fn failing_at(fail_at: fn(&EventKind) -> bool) -> Self {
        Self {
            fail_at: Some(fail_at),
            ..Self::default()
        }
    }

    /// Whether this step's event of this kind is committed.
    fn has(&self, name: &str, step: &str) -> bool {
        self.committed
            .lock()
            .unwrap()
            .iter()
            .flatten()
            .any(|e| e.kind.name() == name && step_of(&e.kind) == Some(step))
    }

    /// The step events of each commit as `kind:step`, commits without any left out.
    fn step_batches(&self) -> Vec<Vec<String>> {
        self.committed
            .lock()
            .unwrap()
            .iter()
            .map(|batch| {
                batch
                    .iter()
                    .filter_map(|e| Some(format!("{}:{}", e.kind.name(), step_of(&e.kind)?)))
                    .collect::<Vec<_>>()
            })
            .filter(|b| !b.is_empty())
            .collect()
    }
}

fn step_of(kind: &EventKind) -> Option<&str> {
    match kind {
        EventKind::StepStarted { step, .. }
        | EventKind::StepSucceeded { step, .. }
        | EventKind::Assessed { step, .. } => Some(step.as_str()),
        _ => None,
    }
}

impl BatchSink for Batches {
    fn record_batch<'a>(
        &'a self,
        _run: &'a RunId,
        events: &'a [Event],
    ) -> BoxFuture<'a, Result<(), SinkError>> {
        Box::pin(async move {
            let fails = |e: &&Event| self.fail_at.is_some_and(|f| f(&e.kind));
            if let Some(e) = events.iter().find(fails) {
                return Err(SinkError {
                    seq: e.seq,
                    message: "crash".into(),
                });
            }
            self.committed.lock().unwrap().push(events.to_vec());
            Ok(())
        })
    }
}

/// An assessor that is not local (as a model-backed one): when asked, the
/// outcome it judges must already be committed.
struct Remote {
    inner: ScriptedAssessor,
    sink: Arc<Batches>,
    uncommitted: Arc<Mutex<Vec<String>>>,
}

#[async_trait]
impl Assessor for Remote {
    async fn assess(&self, request: AssessRequest<'_>) -> Result<Reply<Assessment>, RoleError> {
        let id = request.step.id.as_str();
        if !self.sink.has("step_succeeded", id) {
            self.uncommitted.lock().unwrap().push(id.to_owned());
        }
        self.inner.assess(request).await
    }
}

fn step(id: &str, deps: &[&str]) -> Step {
    Step::new(id, format!("do {id}"), "work")
        .after(deps.iter().copied())
        .accept(format!("{id} produced a result"))
}

/// An engine over `plan` whose `work` tool records, at each call, whether
/// that step's `step_started` was committed before it.
fn engine_for(
    plan: Vec<Step>,
    sink: &Arc<Batches>,
    assessor: Arc<dyn Assessor>,
    calls: &Arc<Mutex<Vec<(String, bool)>>>,
) -> Engine {
    let roles = stepwise_core::Roles::new(
        Arc::new(ScriptedPlanner::new([draft(plan)])),
        Arc::new(ScriptedRepairer::new([])),
        assessor,
        Arc::new(ScriptedReplanner::new([])),
        Arc::new(ScriptedSynthesizer::summarising()),
    );
    let (seen, calls) = (Arc::clone(sink), Arc::clone(calls));
    let mut tools = ToolRegistry::new();
    tools.register_dyn(Arc::new(FnTool::with_context("work", move |ctx, _args| {
        let committed = seen.has("step_started", ctx.step.as_str());
        calls
            .lock()
            .unwrap()
            .push((ctx.step.to_string(), committed));
        Box::pin(async move { Ok(json!(format!("{} done", ctx.step))) })
    })));
    let config = RunConfig {
        concurrency: 8,
        ..RunConfig::default()
    };
    Engine::new(roles, tools, config)
        .unwrap()
        .with_sink(Arc::clone(sink) as Arc<dyn EventSink>)
}

/// Panics unless every tool call found its step's `step_started` committed.
fn assert_started_first(calls: &Mutex<Vec<(String, bool)>>) {
    let early: Vec<String> = calls
        .lock()
        .unwrap()
        .iter()
        .filter(|(_, committed)| !committed)
        .map(|(step, _)| step.clone())
        .collect();
    assert_eq!(
        early,
        Vec::<String>::new(),
        "called before their start was committed"
    );
}

fn strings(batches: &[&[&str]]) -> Vec<Vec<String>> {
    batches
        .iter()
        .map(|b| b.iter().map(|s| (*s).to_owned()).collect())
        .collect()
}

// The tests run on tokio's current-thread runtime: a spawned tool call runs
// only when the run's task waits, so which completions are in hand together
// is fixed, and so is every batch.

#[tokio::test]
async fn a_local_assessment_is_committed_with_its_outcome_and_the_next_start() {
    let sink = Arc::new(Batches::default());
    let calls = Arc::default();
    let plan = vec![step("a", &[]), step("b", &["a"]), step("c", &["b"])];
    let engine = engine_for(plan, &sink, Arc::new(ScriptedAssessor::new([])), &calls);
    engine.run("chain", Constraints::default()).await.unwrap();
    assert_eq!(
        sink.step_batches(),
        strings(&[
            &["step_started:a"],
            &["step_succeeded:a", "assessed:a", "step_started:b"],
            &["step_succeeded:b", "assessed:b", "step_started:c"],
            &["step_succeeded:c", "assessed:c"],
        ]),
        "one commit per step, not three"
    );
    assert_eq!(calls.lock().unwrap().len(), 3);
    assert_started_first(&calls);
}

#[tokio::test]
async fn a_wave_starts_in_one_commit_and_its_completions_in_hand_finish_in_one() {
    let sink = Arc::new(Batches::default());
    let calls = Arc::default();
    let plan = vec![
        step("a", &[]),
        step("b", &[]),
        step("c", &[]),
        step("d", &[]),
        step("join", &["a", "b", "c", "d"]),
    ];
    let engine = engine_for(plan, &sink, Arc::new(ScriptedAssessor::new([])), &calls);
    engine.run("fan out", Constraints::default()).await.unwrap();
    assert_eq!(
        sink.step_batches(),
        strings(&[
            &[
                "step_started:a",
                "step_started:b",
                "step_started:c",
                "step_started:d"
            ],
            &[
                "step_succeeded:a",
                "assessed:a",
                "step_succeeded:b",
                "assessed:b",
                "step_succeeded:c",
                "assessed:c",
                "step_succeeded:d",
                "assessed:d",
                "step_started:join",
            ],
            &["step_succeeded:join", "assessed:join"],
        ])
    );
    assert_started_first(&calls);
}

#[tokio::test]
async fn a_slow_assessor_is_asked_only_after_the_outcome_is_committed() {
    let sink = Arc::new(Batches::default());
    let calls = Arc::default();
    let uncommitted = Arc::default();
    let assessor = Arc::new(Remote {
        inner: ScriptedAssessor::new([]),
        sink: Arc::clone(&sink),
        uncommitted: Arc::clone(&uncommitted),
    });
    let plan = vec![step("a", &[]), step("b", &["a"])];
    let engine = engine_for(plan, &sink, assessor, &calls);
    engine.run("chain", Constraints::default()).await.unwrap();
    assert_eq!(*uncommitted.lock().unwrap(), Vec::<String>::new());
    // Two commits per step: the outcome alone, then its assessment with
    // the next start.
    assert_eq!(
        sink.step_batches(),
        strings(&[
            &["step_started:a"],
            &["step_succeeded:a"],
            &["assessed:a", "step_started:b"],
            &["step_succeeded:b"],
            &["assessed:b"],
        ])
    );
}

#[tokio::test]
async fn no_tool_is_called_whose_start_failed_to_commit() {
    // The commit of b's start fails (and with it the whole wave's).
    let sink = Arc::new(Batches::failing_at(
        |k| matches!(k, EventKind::StepStarted { step, .. } if step.as_str() == "b"),
    ));
    let calls = Arc::default();
    let plan = vec![
        step("a", &[]),
        step("b", &[]),
        step("c", &[]),
        step("d", &["a", "b", "c"]),
    ];
    let engine = engine_for(plan, &sink, Arc::new(ScriptedAssessor::new([])), &calls);
    let result = engine.run("fan out", Constraints::default()).await;
    assert!(result.is_err(), "the failed commit stops the run");
    assert_eq!(
        *calls.lock().unwrap(),
        Vec::new(),
        "no call without its committed start"
    );
    assert!(
        !sink.has("step_started", "a"),
        "the wave's starts commit together or not at all"
    );

    // Later in a run: the commit holding c's start (after a and b ran) fails.
    let sink = Arc::new(Batches::failing_at(
        |k| matches!(k, EventKind::StepStarted { step, .. } if step.as_str() == "c"),
    ));
    let calls = Arc::default();
    let plan = vec![step("a", &[]), step("b", &["a"]), step("c", &["b"])];
    let chain = engine_for(plan, &sink, Arc::new(ScriptedAssessor::new([])), &calls);
    assert!(chain.run("chain", Constraints::default()).await.is_err());
    assert_eq!(
        *calls.lock().unwrap(),
        vec![("a".to_owned(), true), ("b".to_owned(), true)]
    );
}
