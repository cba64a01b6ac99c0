//! Run logs written straight into a database, for the tests of commands
//! that read them (`runs`, `show`, `prune`, `approve`, …).

use chrono::{DateTime, Duration, Utc};
use serde_json::Value;
use stepwise_core::{Constraints, Event, EventKind, Goal, RunId};

/// A run's first two events: `run_started` for `goal`, then the goal read.
pub(crate) fn started(run: &str, goal: &str) -> Vec<EventKind> {
    vec![
        EventKind::RunStarted {
            run_id: RunId(run.to_owned()),
            input: goal.to_owned(),
            constraints: Box::default(),
            max_replans: 2,
            max_steps: 10,
            max_repairs: 2,
            host: Value::Null,
            strategy: "plan-execute".into(),
        },
        EventKind::InputPrepared {
            goal: Box::new(Goal {
                input: goal.to_owned(),
                goal: goal.to_owned(),
                constraints: Constraints::default(),
            }),
        },
    ]
}

/// Events numbered from 1, the first at `start` and each `step_ms` after
/// the one before.
pub(crate) fn timed(kinds: Vec<EventKind>, start: DateTime<Utc>, step_ms: i64) -> Vec<Event> {
    kinds
        .into_iter()
        .zip(1u64..)
        .map(|(kind, seq)| Event {
            seq,
            at: start + Duration::milliseconds(step_ms * i64::try_from(seq).unwrap()),
            kind,
        })
        .collect()
}

/// Runs a future to its end on a runtime of its own (with timers).
pub(crate) fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}
