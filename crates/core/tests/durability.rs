//! Durable runs in memory: resume after an interruption at every event,
//! approvals bound to arguments, and the fold of the log.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use stepwise_core::engine::{ApproveAll, ResumeOptions};
use stepwise_core::testing::{
    CrashAfter, FnTool, ScriptedAssessor, ScriptedPlanner, ScriptedRepairer, ScriptedReplanner,
    ScriptedSynthesizer, draft,
};
use stepwise_core::{
    Assessment, Constraints, Engine, Event, EventKind, EventSink, MemoryStore, RunId, RunState,
    RunStatus, Step, StepId, Store, StoreSink, ToolRegistry,
};

/// An external system that applies each idempotency key once, and counts.
#[derive(Clone, Default)]
struct Ledger {
    effects: Arc<Mutex<BTreeMap<String, Value>>>,
    calls: Arc<AtomicUsize>,
}

impl Ledger {
    fn tool(&self, idempotent: bool) -> FnTool {
        let me = self.clone();
        let mut tool = FnTool::with_context("send", move |ctx, args| {
            let me = me.clone();
            Box::pin(async move {
                me.calls.fetch_add(1, Ordering::SeqCst);
                let mut effects = me.effects.lock().unwrap();
                let entry = effects
                    .entry(ctx.idempotency_key.clone())
                    .or_insert(args.clone());
                Ok(json!({"sent": entry.clone()}))
            })
        })
        .with_side_effect();
        if idempotent {
            tool = tool.with_idempotent();
        }
        tool
    }
}

fn read(id: &str, deps: &[&str]) -> Step {
    Step::new(id, format!("read {id}"), "read")
        .with_args(json!({"step": id}))
        .after(deps.iter().copied())
        .accept("done")
}

fn send(id: &str, deps: &[&str], text: &str) -> Step {
    Step::new(id, format!("send {id}"), "send")
        .with_args(json!({"text": text}))
        .after(deps.iter().copied())
        .accept("sent")
}

struct Setup {
    plan: Vec<Step>,
    replans: Vec<Vec<Step>>,
    assessments: Vec<Assessment>,
    ledger: Ledger,
    idempotent: bool,
    reads: Arc<Mutex<Vec<String>>>,
}

impl Setup {
    fn new(plan: Vec<Step>) -> Self {
        Self {
            plan,
            replans: Vec::new(),
            assessments: Vec::new(),
            ledger: Ledger::default(),
            idempotent: true,
            reads: Arc::default(),
        }
    }

    fn engine(
        &self,
        store: &Arc<MemoryStore>,
        sink: Arc<dyn EventSink>,
        auto_approve: bool,
    ) -> Engine {
        let roles = stepwise_core::Roles::new(
            Arc::new(ScriptedPlanner::new([draft(self.plan.clone())])),
            Arc::new(ScriptedRepairer::new([])),
            Arc::new(ScriptedAssessor::new(self.assessments.clone())),
            Arc::new(ScriptedReplanner::new(
                self.replans.iter().cloned().map(draft),
            )),
            Arc::new(ScriptedSynthesizer::summarising()),
        );
        let reads = Arc::clone(&self.reads);
        let mut tools = ToolRegistry::new();
        tools.register_dyn(Arc::new(FnTool::new("read", move |args: Value| {
            let reads = Arc::clone(&reads);
            Box::pin(async move {
                let step = args["step"].as_str().unwrap_or_default().to_owned();
                reads.lock().unwrap().push(step.clone());
                Ok(json!(format!("text of {step}")))
            })
        })));
        tools.register_dyn(Arc::new(self.ledger.tool(self.idempotent)));
        let mut engine = Engine::new(roles, tools, Default::default())
            .unwrap()
            .with_sink(sink)
            .with_idempotency_log(Arc::clone(store) as _);
        if auto_approve {
            engine = engine.with_approver(Arc::new(ApproveAll));
        }
        engine
    }
}

fn stable(state: &RunState) -> Value {
    json!({
        "status": state.status,
        "report": state.final_report,
        "results": state.step_results.iter().map(|(k, v)| (k.to_string(), v.output.clone())).collect::<BTreeMap<_, _>>(),
        "gaps": state.knowledge_gaps,
        "statuses": state.plan.steps.iter().map(|s| (s.id.to_string(), s.status)).collect::<BTreeMap<_, _>>(),
    })
}

fn demo() -> Vec<Step> {
    vec![
        read("a", &[]),
        read("b", &["a"]),
        send("c", &["b"], "${b.output}"),
        read("d", &["c"]),
    ]
}

#[tokio::test]
async fn an_interruption_at_every_event_resumes_to_the_same_result_with_one_effect() {
    // The uninterrupted run, for reference.
    let reference = {
        let setup = Setup::new(demo());
        let store = Arc::new(MemoryStore::new());
        let sink = Arc::new(StoreSink::new(store.clone(), None));
        let state = setup
            .engine(&store, sink, true)
            .run("demo", Constraints::default())
            .await
            .unwrap();
        assert_eq!(state.status, RunStatus::Ok);
        assert_eq!(setup.ledger.effects.lock().unwrap().len(), 1);
        (stable(&state), state.execution_history.len())
    };
    for limit in 1..reference.1 {
        let setup = Setup::new(demo());
        let store = Arc::new(MemoryStore::new());
        let run = RunId(format!("run_crash_{limit}"));
        let crashing = Arc::new(CrashAfter::new(
            Arc::new(StoreSink::new(store.clone(), None)),
            limit,
        ));
        let err = setup
            .engine(&store, crashing, true)
            .run_with_id(run.clone(), "demo", Constraints::default())
            .await;
        assert!(
            err.is_err(),
            "limit {limit}: the sink failure stops the engine"
        );
        let saved = store.state(&run).await.unwrap();
        assert_eq!(saved.execution_history.len(), limit);
        let reads_before = setup.reads.lock().unwrap().clone();
        let sink = Arc::new(StoreSink::new(store.clone(), None));
        let state = setup
            .engine(&store, sink, true)
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
            stable(&state),
            reference.0,
            "limit {limit}: same result as an uninterrupted run"
        );
        assert_eq!(
            setup.ledger.effects.lock().unwrap().len(),
            1,
            "limit {limit}: the effect happened once"
        );
        // A read that succeeded before the crash (recorded) is never repeated.
        let reads = setup.reads.lock().unwrap().clone();
        let recorded: Vec<&String> = reads_before
            .iter()
            .filter(|r| state.execution_history[..limit].iter().any(|e| matches!(&e.kind, EventKind::StepSucceeded { step, .. } if step.as_str() == r.as_str())))
            .collect();
        for r in recorded {
            assert_eq!(
                reads.iter().filter(|x| *x == r).count(),
                1,
                "limit {limit}: {r} re-run"
            );
        }
        assert_eq!(
            RunState::from_events(&store.events(&run).await.unwrap()).unwrap(),
            state
        );
    }
}

#[tokio::test]
async fn a_non_idempotent_side_effect_in_flight_is_an_unknown_outcome_for_review() {
    let mut setup = Setup::new(demo());
    setup.idempotent = false;
    let store = Arc::new(MemoryStore::new());
    let run = RunId("run_unknown".into());
    // Run until c has started (approval, start) and pretend the process died
    // during the call: the idempotency record is begun, never completed.
    let sink = Arc::new(StoreSink::new(store.clone(), None));
    let full = setup
        .engine(&store, sink, true)
        .run_with_id(RunId("ref".into()), "demo", Constraints::default())
        .await
        .unwrap();
    let cut = full
        .execution_history
        .iter()
        .position(
            |e| matches!(&e.kind, EventKind::StepStarted { step, .. } if step.as_str() == "c"),
        )
        .unwrap()
        + 1;
    let log: Vec<Event> = full.execution_history[..cut]
        .iter()
        .map(|e| {
            let mut e = e.clone();
            if let EventKind::RunStarted { run_id, .. } = &mut e.kind {
                *run_id = run.clone();
            }
            e
        })
        .collect();
    store.append(&run, &log, None).await.unwrap();
    use stepwise_core::IdempotencyLog;
    let key = stepwise_core::tool::idempotency_key(&run, &StepId::new("c"));
    store
        .begin(&stepwise_core::IdempotencyRecord {
            key,
            run: run.clone(),
            step: StepId::new("c"),
            args_hash: "x".into(),
            outcome: None,
        })
        .await
        .unwrap();
    let calls_before = setup.ledger.calls.load(Ordering::SeqCst);
    let saved = store.state(&run).await.unwrap();
    let sink = Arc::new(StoreSink::new(store.clone(), None));
    let state = setup
        .engine(&store, sink, true)
        .resume(saved, ResumeOptions::default())
        .await
        .unwrap();
    assert_eq!(state.status, RunStatus::NeedsReview);
    assert!(
        state
            .blocked_reason
            .as_deref()
            .unwrap()
            .contains("outcome unknown"),
        "{:?}",
        state.blocked_reason
    );
    assert_eq!(
        setup.ledger.calls.load(Ordering::SeqCst),
        calls_before,
        "not re-run blindly"
    );
}

#[tokio::test]
async fn a_side_effect_step_waits_for_an_approval_bound_to_its_arguments() {
    let setup = Setup::new(demo());
    let store = Arc::new(MemoryStore::new());
    let sink = Arc::new(StoreSink::new(store.clone(), None));
    let engine = setup.engine(&store, sink, false);
    let paused = engine.run("demo", Constraints::default()).await.unwrap();
    assert_eq!(paused.status, RunStatus::AwaitingApproval);
    assert_eq!(
        setup.ledger.calls.load(Ordering::SeqCst),
        0,
        "nothing sent without approval"
    );
    let requested = paused
        .execution_history
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::ApprovalRequested {
                step,
                args,
                args_hash,
                ..
            } => Some((step.clone(), args.clone(), args_hash.clone())),
            _ => None,
        })
        .unwrap();
    assert_eq!(requested.0.as_str(), "c");
    assert_eq!(
        requested.1,
        json!({"text": "text of b"}),
        "the approval shows the resolved arguments"
    );

    // An approval for other arguments authorises nothing.
    let mut wrong = paused.clone();
    append(
        &store,
        &mut wrong,
        EventKind::ApprovalGranted {
            step: "c".into(),
            args_hash: "not-it".into(),
            by: "alice".into(),
        },
    )
    .await;
    let sink = Arc::new(StoreSink::new(store.clone(), None));
    let again = setup
        .engine(&store, sink, false)
        .resume(wrong, ResumeOptions::default())
        .await
        .unwrap();
    assert_eq!(again.status, RunStatus::AwaitingApproval);
    assert_eq!(setup.ledger.calls.load(Ordering::SeqCst), 0);

    // The right approval lets it run, once.
    let mut right = again.clone();
    append(
        &store,
        &mut right,
        EventKind::ApprovalGranted {
            step: "c".into(),
            args_hash: requested.2,
            by: "alice".into(),
        },
    )
    .await;
    let sink = Arc::new(StoreSink::new(store.clone(), None));
    let done = setup
        .engine(&store, sink, false)
        .resume(right, ResumeOptions::default())
        .await
        .unwrap();
    assert_eq!(done.status, RunStatus::Ok, "{:?}", done.blocked_reason);
    assert_eq!(setup.ledger.calls.load(Ordering::SeqCst), 1);
    assert_eq!(store.state(&done.run_id).await.unwrap(), done);
}

#[tokio::test]
async fn a_replan_that_adds_a_side_effect_step_pauses_for_approval() {
    let mut setup = Setup::new(vec![read("a", &[]), read("b", &["a"])]);
    setup.assessments = vec![Assessment::ok("a"), Assessment::gap("b needs a follow-up")];
    setup.replans = vec![vec![send("notify", &["a"], "follow up on ${a.output}")]];
    let store = Arc::new(MemoryStore::new());
    let sink = Arc::new(StoreSink::new(store.clone(), None));
    let state = setup
        .engine(&store, sink, false)
        .run("demo", Constraints::default())
        .await
        .unwrap();
    assert_eq!(state.replan_count, 1);
    assert_eq!(state.status, RunStatus::AwaitingApproval);
    assert!(state.pending_approvals.contains_key(&StepId::new("notify")));
    assert_eq!(setup.ledger.calls.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_refused_approval_stops_the_run_for_review() {
    struct Refuse;
    #[async_trait::async_trait]
    impl stepwise_core::engine::Approver for Refuse {
        async fn decide(
            &self,
            _r: stepwise_core::engine::ApprovalRequest<'_>,
        ) -> stepwise_core::engine::ApprovalDecision {
            stepwise_core::engine::ApprovalDecision::Deny {
                by: "bob".into(),
                reason: "not today".into(),
            }
        }
    }
    let setup = Setup::new(demo());
    let store = Arc::new(MemoryStore::new());
    let sink = Arc::new(StoreSink::new(store.clone(), None));
    let state = setup
        .engine(&store, sink, false)
        .with_approver(Arc::new(Refuse))
        .run("demo", Constraints::default())
        .await
        .unwrap();
    assert_eq!(state.status, RunStatus::NeedsReview);
    assert!(
        state
            .blocked_reason
            .as_deref()
            .unwrap()
            .contains("bob refused step c: not today")
    );
    assert_eq!(setup.ledger.calls.load(Ordering::SeqCst), 0);
}

/// A run whose only step falls short with no replan allowed: it stops for
/// review, with a replan (`a2`) ready for whoever resumes it.
async fn stopped_at_max_replans() -> (Setup, Arc<MemoryStore>, RunState) {
    let mut setup = Setup::new(vec![read("a", &[])]);
    setup.assessments = vec![Assessment::gap("thin")];
    setup.replans = vec![vec![read("a2", &[])]];
    let store = Arc::new(MemoryStore::new());
    let sink = Arc::new(StoreSink::new(store.clone(), None));
    let constraints = Constraints {
        max_replans: Some(0),
        ..Constraints::default()
    };
    let stopped = setup
        .engine(&store, sink, true)
        .run("demo", constraints)
        .await
        .unwrap();
    assert_eq!(stopped.status, RunStatus::NeedsReview);
    (setup, store, stopped)
}

#[tokio::test]
async fn a_breakpoint_at_max_replans_resumes_with_a_higher_bound() {
    let (mut setup, store, stopped) = stopped_at_max_replans().await;
    // The roles of the resuming process judge a2 fine.
    setup.assessments = vec![Assessment::ok("better")];
    let sink = Arc::new(StoreSink::new(store.clone(), None));
    let options = ResumeOptions {
        by: "alice".into(),
        max_replans: Some(1),
        ..ResumeOptions::default()
    };
    let state = setup
        .engine(&store, sink, true)
        .resume(stopped, options)
        .await
        .unwrap();
    assert_eq!(state.status, RunStatus::Ok, "{:?}", state.blocked_reason);
    assert_eq!(state.replan_count, 1);
    assert_eq!(
        setup
            .reads
            .lock()
            .unwrap()
            .iter()
            .filter(|r| *r == "a")
            .count(),
        1,
        "a is not re-run"
    );
}

#[tokio::test]
async fn an_unchanged_resume_of_a_needs_review_run_records_nothing_and_a_changed_one_goes_on() {
    let (mut setup, store, stopped) = stopped_at_max_replans().await;
    // Seed 000: past the replan cap, the person is asked to simplify.
    let why = stopped.blocked_reason.clone().unwrap();
    assert!(why.contains("please simplify it or narrow it"), "{why}");
    // It still returns its partial brief, citing what succeeded.
    assert!(
        stopped
            .final_report
            .as_deref()
            .unwrap()
            .contains("text of a")
    );
    assert_eq!(stopped.evidence.len(), 1);

    // Nothing changed (a bound "raised" to what it is is no change).
    for options in [
        ResumeOptions::default(),
        ResumeOptions {
            max_replans: Some(0),
            ..ResumeOptions::default()
        },
    ] {
        let sink = Arc::new(StoreSink::new(store.clone(), None));
        let err = setup
            .engine(&store, sink, true)
            .resume(stopped.clone(), options)
            .await
            .unwrap_err();
        assert!(
            matches!(
                err,
                stepwise_core::EngineError::Unchanged {
                    max_replans: 0,
                    max_steps: 20
                }
            ),
            "{err}"
        );
    }
    let saved = store.state(&stopped.run_id).await.unwrap();
    assert_eq!(saved, stopped, "nothing was recorded");

    // The resuming program says its sources changed: the run goes on (and
    // stops again at the same bound), recording what changed and the new host.
    setup.assessments = vec![Assessment::ok("better")];
    let sink = Arc::new(StoreSink::new(store.clone(), None));
    let options = ResumeOptions {
        by: "alice".into(),
        changed: vec!["the sources changed".into()],
        host: json!({"fingerprint": "new"}),
        ..ResumeOptions::default()
    };
    let state = setup
        .engine(&store, sink, true)
        .resume(saved, options)
        .await
        .unwrap();
    let resumed = state
        .execution_history
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::RunResumed { changed, host, .. } => Some((changed.clone(), host.clone())),
            _ => None,
        })
        .unwrap();
    assert_eq!(resumed.0, ["the sources changed"]);
    assert_eq!(state.host, json!({"fingerprint": "new"}));
    assert_eq!(store.state(&state.run_id).await.unwrap(), state);
}

#[tokio::test]
async fn finished_runs_are_not_resumable() {
    let setup = Setup::new(vec![read("a", &[])]);
    let store = Arc::new(MemoryStore::new());
    let sink = Arc::new(StoreSink::new(store.clone(), None));
    let done = setup
        .engine(&store, sink.clone(), true)
        .run("demo", Constraints::default())
        .await
        .unwrap();
    let err = setup
        .engine(&store, sink, true)
        .resume(done, ResumeOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.to_string(), "the run is ok and cannot be resumed");
}

/// Appends a person's event to the store and the state, as `stepwise approve` does.
async fn append(store: &MemoryStore, state: &mut RunState, kind: EventKind) {
    let event = Event {
        seq: state.execution_history.len() as u64 + 1,
        at: chrono::Utc::now(),
        kind,
    };
    store
        .append(&state.run_id, std::slice::from_ref(&event), None)
        .await
        .unwrap();
    state.apply(&event).unwrap();
}

/// A run recorded ahead (its `run_started` alone, as a server that queues
/// runs records it) and started later ends exactly as one started at once,
/// with the same log apart from times.
#[tokio::test]
async fn a_run_recorded_ahead_starts_from_its_record_as_start_would() {
    let setup = Setup::new(demo());
    let at_once = {
        let store = Arc::new(MemoryStore::new());
        let sink = Arc::new(StoreSink::new(Arc::clone(&store) as _, None));
        setup
            .engine(&store, sink, true)
            .start(
                RunId("r".into()),
                "demo",
                Constraints::default(),
                json!({"k": 1}),
            )
            .await
            .unwrap()
    };
    let setup = Setup::new(demo());
    let store = Arc::new(MemoryStore::new());
    let sink = Arc::new(StoreSink::new(Arc::clone(&store) as _, None));
    let engine = setup.engine(&store, sink, true);
    let first = Event {
        seq: 1,
        at: chrono::Utc::now(),
        kind: engine.started_event(
            RunId("r".into()),
            "demo",
            Constraints::default(),
            json!({"k": 1}),
        ),
    };
    store
        .append(&RunId("r".into()), std::slice::from_ref(&first), None)
        .await
        .unwrap();
    let recorded = store.state(&RunId("r".into())).await.unwrap();
    let later = engine.start_recorded(recorded).await.unwrap();
    assert_eq!(stable(&later), stable(&at_once));
    let kinds = |s: &RunState| {
        s.execution_history
            .iter()
            .map(|e| e.kind.name())
            .collect::<Vec<_>>()
    };
    assert_eq!(kinds(&later), kinds(&at_once));
    assert_eq!(
        at_once.execution_history[0].kind, first.kind,
        "the same first event"
    );
    assert_eq!(store.state(&RunId("r".into())).await.unwrap(), later);
    // Only a run with nothing but its first event starts from its record.
    let again = engine.start_recorded(later).await;
    assert!(
        matches!(again, Err(stepwise_core::EngineError::Invariant(_))),
        "{again:?}"
    );
}
