//! The conformance suite every [`Store`] must pass (memory, SQLite, and any
//! store a user writes): call [`run`] from a test with a factory of fresh,
//! empty stores.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! stepwise_core::testing::store_conformance::run(stepwise_core::MemoryStore::new).await.unwrap();
//! # });
//! ```

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use serde_json::json;

use crate::event::{Event, EventKind};
use crate::goal::{Constraints, Goal};
use crate::ids::{RunId, StepId};
use crate::plan::{Plan, Step};
use crate::state::{RunState, RunStatus, StepResult};
use crate::store::{IdempotencyLog, IdempotencyRecord, RunLease, RunSummary, Store, StoreError};
use crate::usage::Usage;

/// A check that failed, and how.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("store conformance: {check}: {detail}")]
pub struct ConformanceFailure {
    /// Which check.
    pub check: &'static str,
    /// What was seen.
    pub detail: String,
}

fn fail(check: &'static str, detail: impl Into<String>) -> ConformanceFailure {
    ConformanceFailure {
        check,
        detail: detail.into(),
    }
}

fn ensure(
    ok: bool,
    check: &'static str,
    detail: impl FnOnce() -> String,
) -> Result<(), ConformanceFailure> {
    if ok {
        Ok(())
    } else {
        Err(fail(check, detail()))
    }
}

fn event(seq: u64, kind: EventKind) -> Event {
    Event {
        seq,
        at: Utc::now(),
        kind,
    }
}

/// A realistic log: a run that plans two steps, runs them and finishes.
pub fn sample_log(run: &RunId) -> Vec<Event> {
    let steps = vec![
        Step::new("a", "first", "t").accept("done"),
        Step::new("b", "second", "t").after(["a"]).accept("done"),
    ];
    let goal = Goal {
        input: "x".into(),
        goal: "x".into(),
        constraints: Constraints::default(),
    };
    let result = |v: &str| StepResult {
        output: json!(v),
        attempts: 1,
        duration_ms: 3,
    };
    let kinds = vec![
        EventKind::RunStarted {
            run_id: run.clone(),
            input: "x".into(),
            constraints: Box::new(Constraints::default()),
            max_replans: 1,
            max_steps: 5,
            max_repairs: 1,
            host: serde_json::Value::Null,
            strategy: "plan-execute".into(),
        },
        EventKind::InputPrepared {
            goal: Box::new(goal),
        },
        EventKind::PlanCreated {
            draft: json!({"steps": steps}),
            usage: Usage::llm_call(10, 5),
        },
        EventKind::PlanValidated {
            plan: Plan { version: 1, steps },
        },
        EventKind::PlanApproved {
            version: 1,
            by: "auto".into(),
            usage: Usage::default(),
        },
        EventKind::StepStarted {
            step: StepId::new("a"),
            attempt: 1,
        },
        EventKind::StepSucceeded {
            step: StepId::new("a"),
            result: result("A"),
            usage: Usage::default(),
        },
        EventKind::StepStarted {
            step: StepId::new("b"),
            attempt: 1,
        },
        EventKind::StepSucceeded {
            step: StepId::new("b"),
            result: result("B"),
            usage: Usage::default(),
        },
        EventKind::Synthesized {
            report: "# x".into(),
            evidence: vec![],
            rejected_evidence: vec![],
            usage: Usage::llm_call(7, 3),
        },
    ];
    kinds
        .into_iter()
        .enumerate()
        .map(|(i, k)| event(i as u64 + 1, k))
        .collect()
}

/// Runs every check against fresh stores from `make`.
pub async fn run<S, F>(make: F) -> Result<(), ConformanceFailure>
where
    S: Store + RunLease + IdempotencyLog + 'static,
    F: Fn() -> S,
{
    log_and_snapshot(Arc::new(make())).await?;
    appends_are_atomic_and_ordered(&make()).await?;
    unknown_runs(&make()).await?;
    listing(&make()).await?;
    holders(&make()).await?;
    leases(&make()).await?;
    idempotency(&make()).await?;
    Ok(())
}

/// Appends `log` one event at a time, as the engine appends.
async fn append_each<S: Store>(
    store: &S,
    run: &RunId,
    log: &[Event],
) -> Result<(), ConformanceFailure> {
    for e in log {
        store
            .append(run, std::slice::from_ref(e), None)
            .await
            .map_err(|e| fail("append", e.to_string()))?;
    }
    Ok(())
}

/// The run's state as the store loads it, and the fold of `log`.
async fn loaded_and_folded<S: Store>(
    store: &S,
    run: &RunId,
    log: &[Event],
) -> Result<(RunState, RunState), ConformanceFailure> {
    let state = store
        .state(run)
        .await
        .map_err(|e| fail("state", e.to_string()))?;
    let folded = RunState::from_events(log).map_err(|e| fail("fold", e.to_string()))?;
    Ok((state, folded))
}

async fn log_and_snapshot<S: Store>(store: Arc<S>) -> Result<(), ConformanceFailure> {
    let run = RunId("run_conformance_1".into());
    let log = sample_log(&run);
    append_each(store.as_ref(), &run, &log).await?;
    let events = store
        .events(&run)
        .await
        .map_err(|e| fail("events", e.to_string()))?;
    ensure(events == log, "events", || {
        "the log read back differs from the log written".into()
    })?;
    for (after, limit) in [(0, usize::MAX), (2, 3), (3, 1), (log.len() as u64, 5)] {
        let tail = store
            .events_since(&run, after, limit)
            .await
            .map_err(|e| fail("events_since", e.to_string()))?;
        let expected: Vec<Event> = log
            .iter()
            .filter(|e| e.seq > after)
            .take(limit)
            .cloned()
            .collect();
        ensure(tail == expected, "events_since", || {
            format!(
                "after {after}, limit {limit}: got seqs {:?}",
                tail.iter().map(|e| e.seq).collect::<Vec<_>>()
            )
        })?;
    }
    let (state, folded) = loaded_and_folded(store.as_ref(), &run, &log).await?;
    ensure(state == folded, "snapshot", || {
        "the snapshot differs from the fold of the events".into()
    })?;
    ensure(state.status == RunStatus::Ok, "snapshot", || {
        format!("status {:?}", state.status)
    })?;
    stopped_for_review(store.as_ref()).await
}

/// A run at rest after a stop for review: its snapshot must hold what a
/// resume reads (the decision it stopped on, steps not yet assessed).
async fn stopped_for_review<S: Store>(store: &S) -> Result<(), ConformanceFailure> {
    let run = RunId("run_conformance_review".into());
    // The sample run, with step a judged unusable before b ran, stopped
    // for review instead of writing its report.
    let sample: Vec<EventKind> = sample_log(&run).into_iter().map(|e| e.kind).collect();
    let assessed = EventKind::Assessed {
        step: StepId::new("a"),
        acceptance_met: false,
        verdict: crate::decision::Verdict::NeedsReview,
        reason: "nothing usable".into(),
        new_gaps: vec!["evidence for a".into()],
        resolved_gaps: Vec::new(),
        observations: Vec::new(),
        usage: Usage::default(),
    };
    let stop = EventKind::NeedsReview {
        reason: "nothing usable".into(),
        usage: Usage::default(),
        brief: None,
        ask_again: false,
    };
    let kinds = sample[..7]
        .iter()
        .cloned()
        .chain([assessed])
        .chain(sample[7..9].iter().cloned())
        .chain([stop]);
    let log: Vec<Event> = kinds.zip(1..).map(|(k, seq)| event(seq, k)).collect();
    append_each(store, &run, &log).await?;
    let (state, folded) = loaded_and_folded(store, &run, &log).await?;
    ensure(!folded.cursor.is_empty(), "snapshot", || {
        "the fold holds no cursor to keep".into()
    })?;
    ensure(state == folded, "snapshot", || {
        format!(
            "the state of a run stopped for review differs from the fold of its events: \
             cursor {:?}, folded {:?}",
            state.cursor, folded.cursor
        )
    })
}

async fn appends_are_atomic_and_ordered<S: Store>(store: &S) -> Result<(), ConformanceFailure> {
    let run = RunId("run_conformance_2".into());
    let log = sample_log(&run);
    store
        .append(&run, &log[..3], None)
        .await
        .map_err(|e| fail("batch append", e.to_string()))?;
    // A gap in the sequence is a conflict, and changes nothing.
    let gap = store.append(&run, &log[4..5], None).await;
    ensure(
        matches!(gap, Err(StoreError::Conflict { .. })),
        "conflict",
        || format!("{gap:?}"),
    )?;
    // A repeated sequence number (a second writer) is a conflict too.
    let dup = store.append(&run, &log[2..3], None).await;
    ensure(
        matches!(dup, Err(StoreError::Conflict { .. })),
        "conflict",
        || format!("{dup:?}"),
    )?;
    // A batch whose second event does not fold is refused whole.
    let mut bad = log[3..5].to_vec();
    bad[1] = event(
        5,
        EventKind::StepSucceeded {
            step: StepId::new("nope"),
            result: StepResult {
                output: json!(null),
                attempts: 1,
                duration_ms: 0,
            },
            usage: Usage::default(),
        },
    );
    let refused = store.append(&run, &bad, None).await;
    ensure(
        matches!(refused, Err(StoreError::Invalid { .. })),
        "invalid batch",
        || format!("{refused:?}"),
    )?;
    let events = store
        .events(&run)
        .await
        .map_err(|e| fail("events", e.to_string()))?;
    ensure(events.len() == 3, "atomicity", || {
        format!("{} events after refused appends", events.len())
    })?;
    store
        .append(&run, &log[3..], None)
        .await
        .map_err(|e| fail("append rest", e.to_string()))?;
    let state = store
        .state(&run)
        .await
        .map_err(|e| fail("state", e.to_string()))?;
    ensure(
        state.execution_history.len() == log.len(),
        "append rest",
        || "log incomplete".into(),
    )
}

async fn unknown_runs<S: Store>(store: &S) -> Result<(), ConformanceFailure> {
    let run = RunId("run_missing".into());
    let e = store.events(&run).await;
    ensure(
        matches!(e, Err(StoreError::NotFound(_))),
        "unknown run",
        || format!("events: {e:?}"),
    )?;
    let s = store.state(&run).await;
    ensure(
        matches!(s, Err(StoreError::NotFound(_))),
        "unknown run",
        || format!("state: {s:?}"),
    )?;
    let t = store.events_since(&run, 0, 10).await;
    ensure(
        matches!(t, Err(StoreError::NotFound(_))),
        "unknown run",
        || format!("events_since: {t:?}"),
    )?;
    // A run's first event must be seq 1.
    let log = sample_log(&run);
    let late = store.append(&run, &log[1..2], None).await;
    ensure(
        matches!(late, Err(StoreError::Conflict { .. })),
        "create",
        || format!("{late:?}"),
    )
}

async fn listing<S: Store>(store: &S) -> Result<(), ConformanceFailure> {
    for (i, name) in ["run_list_a", "run_list_b"].iter().enumerate() {
        let run = RunId((*name).into());
        let log = sample_log(&run);
        let n = if i == 0 { log.len() } else { 6 };
        store
            .append(&run, &log[..n], None)
            .await
            .map_err(|e| fail("listing append", e.to_string()))?;
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let runs = store
        .list_runs()
        .await
        .map_err(|e| fail("list_runs", e.to_string()))?;
    let ids: Vec<&str> = runs.iter().map(|r| r.run_id.as_str()).collect();
    ensure(ids == ["run_list_b", "run_list_a"], "list order", || {
        format!("{ids:?} (newest first expected)")
    })?;
    let a = &runs[1];
    ensure(
        a.status == RunStatus::Ok
            && a.steps_done == 2
            && a.steps_total == 2
            && a.tokens == 25
            && a.last_seq == 10,
        "summary",
        || format!("{a:?}"),
    )?;
    let b = &runs[0];
    ensure(
        b.status == RunStatus::Running && b.steps_done == 0,
        "summary",
        || format!("{b:?}"),
    )
}

/// The listing names who holds a run's lease, and nobody once it is given back.
async fn holders<S: Store + RunLease>(store: &S) -> Result<(), ConformanceFailure> {
    let (held, free) = (RunId("run_held".into()), RunId("run_free".into()));
    for run in [&held, &free] {
        store
            .append(run, &sample_log(run)[..6], None)
            .await
            .map_err(|e| fail("holders append", e.to_string()))?;
    }
    let lease = store
        .acquire(&held, "host:42", 60_000)
        .await
        .map_err(|e| fail("holders acquire", e.to_string()))?;
    let holder_of = |runs: &[RunSummary], run: &RunId| {
        runs.iter()
            .find(|r| &r.run_id == run)
            .and_then(|r| r.held_by.clone())
    };
    let runs = store
        .list_runs()
        .await
        .map_err(|e| fail("list_runs", e.to_string()))?;
    ensure(
        holder_of(&runs, &held).as_deref() == Some("host:42") && holder_of(&runs, &free).is_none(),
        "held_by while leased",
        || format!("{runs:?}"),
    )?;
    store
        .release(&lease)
        .await
        .map_err(|e| fail("holders release", e.to_string()))?;
    let runs = store
        .list_runs()
        .await
        .map_err(|e| fail("list_runs", e.to_string()))?;
    ensure(
        runs.iter().all(|r| r.held_by.is_none()),
        "held_by after release",
        || format!("{runs:?}"),
    )
}

async fn leases<S: Store + RunLease>(store: &S) -> Result<(), ConformanceFailure> {
    let run = RunId("run_lease".into());
    let log = sample_log(&run);
    let a = store
        .acquire(&run, "worker-a", 60_000)
        .await
        .map_err(|e| fail("acquire", e.to_string()))?;
    let b = store.acquire(&run, "worker-b", 60_000).await;
    ensure(
        matches!(b, Err(StoreError::Leased { .. })),
        "exclusive lease",
        || format!("{b:?}"),
    )?;
    store
        .append(&run, &log[..2], Some(a.fence))
        .await
        .map_err(|e| fail("fenced append", e.to_string()))?;
    let a = store
        .renew(&a, 60_000)
        .await
        .map_err(|e| fail("renew", e.to_string()))?;
    store
        .release(&a)
        .await
        .map_err(|e| fail("release", e.to_string()))?;
    let b = store
        .acquire(&run, "worker-b", 60_000)
        .await
        .map_err(|e| fail("acquire after release", e.to_string()))?;
    ensure(b.fence > a.fence, "fence grows", || {
        format!("{} then {}", a.fence, b.fence)
    })?;
    let stale = store.append(&run, &log[2..3], Some(a.fence)).await;
    ensure(
        matches!(stale, Err(StoreError::Fenced { .. })),
        "stale fence",
        || format!("{stale:?}"),
    )?;
    let renewed = store.renew(&a, 60_000).await;
    ensure(
        matches!(renewed, Err(StoreError::Fenced { .. })),
        "stale renew",
        || format!("{renewed:?}"),
    )?;
    store
        .append(&run, &log[2..3], Some(b.fence))
        .await
        .map_err(|e| fail("new holder appends", e.to_string()))?;
    // A dead holder's lease can be broken; its fence stays refused.
    let broken_run = RunId("run_lease_broken".into());
    let dead = store
        .acquire(&broken_run, "dead-worker", 60_000)
        .await
        .map_err(|e| fail("acquire", e.to_string()))?;
    let wrong = store
        .break_lease(&broken_run, "someone-else")
        .await
        .map_err(|e| fail("break", e.to_string()))?;
    ensure(!wrong, "break only the named holder", || {
        "broke another holder's lease".into()
    })?;
    let broke = store
        .break_lease(&broken_run, "dead-worker")
        .await
        .map_err(|e| fail("break", e.to_string()))?;
    ensure(broke, "break", || {
        "the named holder's lease was not broken".into()
    })?;
    let next = store
        .acquire(&broken_run, "worker-c", 60_000)
        .await
        .map_err(|e| fail("acquire after break", e.to_string()))?;
    ensure(next.fence > dead.fence, "fence after break", || {
        format!("{} then {}", dead.fence, next.fence)
    })?;
    let log = sample_log(&broken_run);
    let stale = store.append(&broken_run, &log[..1], Some(dead.fence)).await;
    ensure(
        matches!(stale, Err(StoreError::Fenced { .. })),
        "broken holder fenced",
        || format!("{stale:?}"),
    )?;
    // An expired lease can be taken over.
    let short = RunId("run_lease_expiry".into());
    store
        .acquire(&short, "worker-a", 1)
        .await
        .map_err(|e| fail("acquire", e.to_string()))?;
    tokio::time::sleep(Duration::from_millis(20)).await;
    store
        .acquire(&short, "worker-b", 60_000)
        .await
        .map_err(|e| fail("take over expired lease", e.to_string()))?;
    Ok(())
}

async fn idempotency<S: IdempotencyLog>(store: &S) -> Result<(), ConformanceFailure> {
    let record = IdempotencyRecord {
        key: "run_x:s1:0001".into(),
        run: RunId("run_x".into()),
        step: StepId::new("s1"),
        args_hash: "h".into(),
        outcome: None,
    };
    let none = store
        .get(&record.key)
        .await
        .map_err(|e| fail("get", e.to_string()))?;
    ensure(none.is_none(), "unknown key", || format!("{none:?}"))?;
    store
        .begin(&record)
        .await
        .map_err(|e| fail("begin", e.to_string()))?;
    let started = store
        .get(&record.key)
        .await
        .map_err(|e| fail("get", e.to_string()))?;
    ensure(
        started.as_ref().is_some_and(|r| r.outcome.is_none()),
        "begin",
        || format!("{started:?}"),
    )?;
    store
        .complete(&record.key, &json!({"ok": true}))
        .await
        .map_err(|e| fail("complete", e.to_string()))?;
    store
        .begin(&record)
        .await
        .map_err(|e| fail("begin again", e.to_string()))?;
    let done = store
        .get(&record.key)
        .await
        .map_err(|e| fail("get", e.to_string()))?;
    ensure(
        done.as_ref().and_then(|r| r.outcome.clone()) == Some(json!({"ok": true})),
        "outcome survives a repeated begin",
        || format!("{done:?}"),
    )
}
