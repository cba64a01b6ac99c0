//! `RunConfig::keep_history` off: a run keeps only its folded state in
//! memory and hands every event to its sinks. Each scenario runs twice from
//! the same scripts, once keeping the history and once not (into a memory
//! store), and the two must agree: the same events, the same outcome, and
//! a returned state equal to the fold of what the store holds.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::{Behaviour, Harness, kinds, plan, step};
use serde_json::json;
use stepwise_core::engine::ResumeOptions;
use stepwise_core::{
    Assessment, Event, EventKind, MemoryStore, RunState, RunStatus, Store, StoreSink,
};

/// What a scenario's two runs gave.
struct Pair {
    kept: RunState,
    forgot: RunState,
    logged: Vec<Event>,
}

/// The harness's engine keeping no history, every event into `store`.
fn forgetting(h: Harness, store: &Arc<MemoryStore>) -> stepwise_core::Engine {
    h.config(|c| c.keep_history = false)
        .engine()
        .with_sink(Arc::new(StoreSink::new(store.clone(), None)))
}

async fn both(make: impl Fn() -> Harness, goal: &str) -> Pair {
    let kept = make().run(goal).await;
    let store = Arc::new(MemoryStore::new());
    let forgot = forgetting(make(), &store)
        .run(goal, Default::default())
        .await
        .unwrap();
    let logged = store.events(&forgot.run_id).await.unwrap();
    Pair {
        kept,
        forgot,
        logged,
    }
}

/// The checks every scenario passes.
fn agree(pair: &Pair) {
    let Pair {
        kept,
        forgot,
        logged,
    } = pair;
    assert!(
        forgot.execution_history.is_empty(),
        "the history was kept: {} events",
        forgot.execution_history.len()
    );
    assert!(!logged.is_empty(), "the store got no events");
    let names: Vec<&str> = logged.iter().map(|e| e.kind.name()).collect();
    assert_eq!(names, kinds(kept), "the two runs recorded different events");
    assert_eq!(forgot.last_seq(), logged.len() as u64);
    assert_eq!(
        forgot.started_at(),
        logged.first().map(|e| e.at),
        "the start time"
    );
    // The state returned is the fold of the log, less the log itself.
    let mut rebuilt = RunState::from_events(logged).unwrap();
    rebuilt.execution_history.clear();
    assert_eq!(&rebuilt, forgot);
    assert_eq!(forgot.usage.wall_time_ms, rebuilt.usage.wall_time_ms);
    // And it has the outcome the run that kept its history had.
    assert_eq!(forgot.status, kept.status);
    assert_eq!(forgot.final_report, kept.final_report);
    assert_eq!(forgot.evidence, kept.evidence);
    assert_eq!(forgot.knowledge_gaps, kept.knowledge_gaps);
    assert_eq!(forgot.step_results, kept.step_results);
    assert_eq!(forgot.step_terminations, kept.step_terminations);
    assert_eq!(forgot.plan, kept.plan);
    assert_eq!(forgot.replan_count, kept.replan_count);
}

#[tokio::test(start_paused = true)]
async fn a_plain_run_that_keeps_no_history_records_the_same_events() {
    let pair = both(
        || {
            Harness::new(vec![plan(vec![
                step("a", &[]),
                step("b", &["a"]),
                step("c", &["a"]),
            ])])
        },
        "Plain",
    )
    .await;
    agree(&pair);
    assert_eq!(pair.forgot.status, RunStatus::Ok);
}

#[tokio::test(start_paused = true)]
async fn retries_failures_and_a_replan_that_keep_no_history_agree() {
    let make = || {
        Harness::new(vec![plan(vec![
            step("a", &[]),
            step("b", &["a"]),
            step("c", &["b"]),
        ])])
        .config(|c| {
            c.retry.max_attempts = 3;
            c.retry.jitter = 0.0;
        })
        .assessments(vec![
            Assessment::ok("a fine"),
            Assessment::gap("b found nothing"),
        ])
        .replans(vec![plan(vec![step("b2", &["a"]), step("d", &["b2"])])])
    };
    let script = |h: Harness| {
        h.work.script(
            "a",
            vec![Behaviour::Transient(None), Behaviour::Ok(json!("a"), 5)],
        );
        h.work.script("b", vec![Behaviour::Persistent]);
        h.work.script("d", vec![Behaviour::Panic]);
        h
    };
    let pair = both(|| script(make()), "Retries").await;
    agree(&pair);
    assert_eq!(pair.forgot.replan_count, 1);
    assert!(
        pair.forgot
            .step_terminations
            .keys()
            .any(|s| s.as_str() == "b"),
        "{:?}",
        pair.forgot.step_terminations
    );
}

#[tokio::test(start_paused = true)]
async fn a_resumed_run_that_keeps_no_history_finishes_like_one_never_stopped() {
    let make = || Harness::new(vec![plan(vec![step("a", &[]), step("b", &["a"])])]);
    let whole = make().run("Resume").await;
    // The log as a crash after a's success would leave it.
    let cut = whole
        .execution_history
        .iter()
        .position(|e| matches!(e.kind, EventKind::StepSucceeded { .. }))
        .unwrap()
        + 1;
    let store = Arc::new(MemoryStore::new());
    store
        .append(&whole.run_id, &whole.execution_history[..cut], None)
        .await
        .unwrap();
    let stopped = store.state(&whole.run_id).await.unwrap();
    let resumed = forgetting(make(), &store)
        .resume(stopped, ResumeOptions::default())
        .await
        .unwrap();

    assert!(resumed.execution_history.is_empty());
    assert_eq!(resumed.status, RunStatus::Ok);
    assert_eq!(resumed.final_report, whole.final_report);
    assert_eq!(resumed.step_results.len(), 2);
    let logged = store.events(&whole.run_id).await.unwrap();
    assert_eq!(resumed.last_seq(), logged.len() as u64);
    let mut rebuilt = RunState::from_events(&logged).unwrap();
    rebuilt.execution_history.clear();
    assert_eq!(rebuilt, resumed);
    assert!(
        logged
            .iter()
            .any(|e| matches!(e.kind, EventKind::RunResumed { .. })),
        "the resume is on record"
    );
}
