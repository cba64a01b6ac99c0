//! Durable runs: the [`Store`] trait (an append-only event log per run, with
//! a snapshot of the folded state for fast loading), and the capability traits
//! [`RunLease`] (one writer per run, fenced) and [`IdempotencyLog`] (what a
//! side-effect step did, by key). Implementations live at the leaves
//! (`stepwise-store`: SQLite); [`MemoryStore`] is here for tests.
//!
//! The log is the source of truth: the state a store returns must always
//! equal the fold of its events (a store may keep a snapshot of an earlier
//! point and fold the events after it), and an append only succeeds at the end of the log
//! (`events[0].seq == last_seq + 1`), so two writers can never interleave.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::event::{BatchSink, Event, SinkError};
use crate::ids::{RunId, StepId};
use crate::state::{RunState, RunStatus, StateError};
use crate::step_status::StepStatus;

/// A store operation failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StoreError {
    /// No run with this id.
    #[error("no run with id {0}")]
    NotFound(RunId),
    /// The append did not start right after the log's last event: another
    /// writer got there first.
    #[error(
        "run {run} changed underneath: the log ends at event {last_seq}, the append starts at {first_seq}"
    )]
    Conflict {
        /// The run.
        run: RunId,
        /// The log's last event.
        last_seq: u64,
        /// The first event of the append.
        first_seq: u64,
    },
    /// The events do not fold onto the run's state (a bug or a corrupt log).
    #[error("run {run}: {source}")]
    Invalid {
        /// The run.
        run: RunId,
        /// Why the fold refused.
        source: StateError,
    },
    /// Another process holds the run's lease.
    #[error("run {run} is being worked on by {holder} (lease until {until}); wait, or cancel it")]
    Leased {
        /// The run.
        run: RunId,
        /// Who holds it.
        holder: String,
        /// When the lease runs out.
        until: DateTime<Utc>,
    },
    /// The writer's lease was taken over; its writes are refused.
    #[error("run {run}: lost the lease (fence {fence} is stale); another process took over")]
    Fenced {
        /// The run.
        run: RunId,
        /// The stale fence.
        fence: u64,
    },
    /// The database cannot be used (corrupt, newer schema, read-only, unreachable).
    #[error("{0}")]
    Unavailable(String),
}

/// One line of `stepwise runs`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    /// The run.
    pub run_id: RunId,
    /// The normalised goal (or the raw input if it was rejected).
    pub goal: String,
    /// Where it is.
    pub status: RunStatus,
    /// When it started.
    pub started_at: DateTime<Utc>,
    /// When it last changed.
    pub updated_at: DateTime<Utc>,
    /// Steps that succeeded.
    pub steps_done: usize,
    /// Steps in the plan, skipped ones excluded.
    pub steps_total: usize,
    /// Replans made.
    pub replans: u32,
    /// Input plus output tokens.
    pub tokens: u64,
    /// Sequence number of the last event.
    pub last_seq: u64,
    /// Who holds the run's lease now (e.g. a worker's `host:pid`), if
    /// anyone does: an expired lease counts as nobody's. Not part of the
    /// fold: it comes from the store's leases.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_by: Option<String>,
}

impl RunSummary {
    /// The summary of a folded run.
    pub fn of(state: &RunState) -> Self {
        let at = |at: Option<DateTime<Utc>>| at.unwrap_or_else(Utc::now);
        Self {
            run_id: state.run_id.clone(),
            goal: if state.goal.is_empty() {
                state.input.clone()
            } else {
                state.goal.clone()
            },
            status: state.status,
            started_at: at(state.started_at()),
            updated_at: at(state.updated_at()),
            steps_done: state
                .plan
                .steps
                .iter()
                .filter(|s| s.status == StepStatus::Succeeded)
                .count(),
            steps_total: state.plan.active_steps(),
            replans: state.replan_count,
            tokens: state.usage.input_tokens + state.usage.output_tokens,
            last_seq: state.last_seq(),
            held_by: None,
        }
    }
}

/// The append-only event log of every run.
pub trait Store: Send + Sync {
    /// Appends events at the end of a run's log, atomically with whatever
    /// the store keeps beside it (summary, snapshot); the first event of a
    /// run (`seq` 1) creates it. With a
    /// `fence`, the append fails unless that fence still holds the run's lease.
    fn append<'a>(
        &'a self,
        run: &'a RunId,
        events: &'a [Event],
        fence: Option<u64>,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// Every event of a run, in order.
    fn events<'a>(&'a self, run: &'a RunId) -> BoxFuture<'a, Result<Vec<Event>, StoreError>>;

    /// The events of a run with a `seq` above `after`, in order, at most
    /// `limit` of them: how a reader that follows a run (a live event
    /// stream) reads only what is new. The default reads the whole log;
    /// stores override it to read only the tail.
    fn events_since<'a>(
        &'a self,
        run: &'a RunId,
        after: u64,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<Event>, StoreError>> {
        Box::pin(async move {
            let events = self.events(run).await?;
            Ok(events
                .into_iter()
                .filter(|e| e.seq > after)
                .take(limit)
                .collect())
        })
    }

    /// The run's state, equal to the fold of its events.
    fn state<'a>(&'a self, run: &'a RunId) -> BoxFuture<'a, Result<RunState, StoreError>>;

    /// Every run, newest first.
    fn list_runs(&self) -> BoxFuture<'_, Result<Vec<RunSummary>, StoreError>>;
}

/// A lease on a run: while it holds, only its holder may append.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    /// The run.
    pub run: RunId,
    /// Who holds it (e.g. `host:pid`).
    pub holder: String,
    /// Grows with every acquisition; appends carry it so a stale holder's writes fail.
    pub fence: u64,
    /// When it runs out unless renewed.
    pub until: DateTime<Utc>,
}

/// One writer per run, with fencing.
pub trait RunLease: Send + Sync {
    /// Takes the lease if it is free, expired or already `holder`'s.
    fn acquire<'a>(
        &'a self,
        run: &'a RunId,
        holder: &'a str,
        ttl_ms: u64,
    ) -> BoxFuture<'a, Result<Lease, StoreError>>;
    /// Extends a lease still held; fails with `Fenced` if it was taken over.
    fn renew<'a>(
        &'a self,
        lease: &'a Lease,
        ttl_ms: u64,
    ) -> BoxFuture<'a, Result<Lease, StoreError>>;
    /// Gives the lease up (a no-op if it was taken over).
    fn release<'a>(&'a self, lease: &'a Lease) -> BoxFuture<'a, Result<(), StoreError>>;
    /// Frees a lease held by `holder` — for a holder known to be dead (e.g. a
    /// crashed process on this host), so a resume need not wait out its
    /// lease. The fence is kept, so that holder's writes stay refused.
    /// Returns whether a lease was broken.
    fn break_lease<'a>(
        &'a self,
        run: &'a RunId,
        holder: &'a str,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;
}

/// What became of a side-effect call, by idempotency key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IdempotencyRecord {
    /// The step's idempotency key (run + step; never the attempt).
    pub key: String,
    /// The run.
    pub run: RunId,
    /// The step.
    pub step: StepId,
    /// Hash of the tool and its resolved arguments.
    pub args_hash: String,
    /// The tool's output, once the call is known to have completed.
    pub outcome: Option<Value>,
}

/// Records side-effect calls before they start and after they end, so a
/// resume can tell "done", "never started" and "unknown" apart.
pub trait IdempotencyLog: Send + Sync {
    /// Records that a call is about to start (idempotent for the same key).
    fn begin<'a>(&'a self, record: &'a IdempotencyRecord) -> BoxFuture<'a, Result<(), StoreError>>;
    /// Records the call's outcome.
    fn complete<'a>(
        &'a self,
        key: &'a str,
        outcome: &'a Value,
    ) -> BoxFuture<'a, Result<(), StoreError>>;
    /// The record for a key, if any.
    fn get<'a>(
        &'a self,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<IdempotencyRecord>, StoreError>>;
    /// Whether a call with a side effect may go out now: checked right
    /// before one leaves. A log fenced by a lease says no once the lease
    /// has lapsed or passed to another process (a worker frozen past its
    /// lease must not act for a run another worker now holds); `Ok` for a
    /// log no lease fences.
    fn check_held(&self) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(std::future::ready(Ok(())))
    }
}

/// Writes every event to a store before the engine acts on it.
pub struct StoreSink {
    store: Arc<dyn Store>,
    fence: Option<u64>,
}

impl std::fmt::Debug for StoreSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreSink")
            .field("fence", &self.fence)
            .finish_non_exhaustive()
    }
}

impl StoreSink {
    /// A sink into `store`, fenced by a lease if given.
    pub fn new(store: Arc<dyn Store>, fence: Option<u64>) -> Self {
        Self { store, fence }
    }
}

impl BatchSink for StoreSink {
    fn record_batch<'a>(
        &'a self,
        run: &'a RunId,
        events: &'a [Event],
    ) -> BoxFuture<'a, Result<(), SinkError>> {
        Box::pin(async move {
            self.store
                .append(run, events, self.fence)
                .await
                .map_err(|e| SinkError {
                    seq: events.first().map_or(0, |e| e.seq),
                    message: e.to_string(),
                })
        })
    }
}

/// Refuses `events` unless they follow a log that ends at `last_seq`, with
/// [`StoreError::Conflict`]: the check every store's append starts with.
pub fn expect_next(run: &RunId, last_seq: u64, events: &[Event]) -> Result<(), StoreError> {
    let first_seq = events.first().map_or(0, |e| e.seq);
    if first_seq != last_seq + 1 {
        return Err(StoreError::Conflict {
            run: run.clone(),
            last_seq,
            first_seq,
        });
    }
    Ok(())
}

/// A store in memory: for tests, and for runs that need no durability.
#[derive(Debug, Default)]
pub struct MemoryStore {
    /// Each run's folded state; its `execution_history` is the run's log.
    runs: Mutex<BTreeMap<RunId, RunState>>,
    leases: Mutex<BTreeMap<RunId, Lease>>,
    fences: Mutex<BTreeMap<RunId, u64>>,
    idempotency: Mutex<BTreeMap<String, IdempotencyRecord>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }
}

fn poisoned() -> StoreError {
    StoreError::Unavailable("the in-memory store is unusable after a panic".to_owned())
}

impl Store for MemoryStore {
    fn append<'a>(
        &'a self,
        run: &'a RunId,
        events: &'a [Event],
        fence: Option<u64>,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            if let Some(fence) = fence {
                let current = self
                    .fences
                    .lock()
                    .map_err(|_| poisoned())?
                    .get(run)
                    .copied();
                if current != Some(fence) {
                    return Err(StoreError::Fenced {
                        run: run.clone(),
                        fence,
                    });
                }
            }
            let mut runs = self.runs.lock().map_err(|_| poisoned())?;
            let last_seq = runs
                .get(run)
                .map_or(0, |s| s.execution_history.len() as u64);
            expect_next(run, last_seq, events)?;
            let invalid = |source| StoreError::Invalid {
                run: run.clone(),
                source,
            };
            // The events fold in place (a copy would cost the whole run at
            // every group commit). `apply` refuses an event before changing
            // anything, so if one is refused, the run is folded again from
            // its log before the batch: the append is all or nothing.
            let state = runs.entry(run.clone()).or_default();
            for (i, e) in events.iter().enumerate() {
                if let Err(refused) = state.apply(e) {
                    if i > 0 {
                        let before = usize::try_from(last_seq).unwrap_or(usize::MAX);
                        *state = RunState::from_events(state.execution_history.iter().take(before))
                            .map_err(invalid)?;
                    }
                    if state.execution_history.is_empty() {
                        runs.remove(run);
                    }
                    return Err(invalid(refused));
                }
            }
            Ok(())
        })
    }

    fn events<'a>(&'a self, run: &'a RunId) -> BoxFuture<'a, Result<Vec<Event>, StoreError>> {
        Box::pin(async move {
            let runs = self.runs.lock().map_err(|_| poisoned())?;
            runs.get(run)
                .map(|s| s.execution_history.clone())
                .ok_or_else(|| StoreError::NotFound(run.clone()))
        })
    }

    fn state<'a>(&'a self, run: &'a RunId) -> BoxFuture<'a, Result<RunState, StoreError>> {
        Box::pin(async move {
            let runs = self.runs.lock().map_err(|_| poisoned())?;
            runs.get(run)
                .cloned()
                .ok_or_else(|| StoreError::NotFound(run.clone()))
        })
    }

    fn list_runs(&self) -> BoxFuture<'_, Result<Vec<RunSummary>, StoreError>> {
        Box::pin(async move {
            let runs = self.runs.lock().map_err(|_| poisoned())?;
            let leases = self.leases.lock().map_err(|_| poisoned())?;
            let now = Utc::now();
            let mut out: Vec<RunSummary> = runs
                .values()
                .map(|state| RunSummary {
                    held_by: leases
                        .get(&state.run_id)
                        .filter(|l| l.until > now)
                        .map(|l| l.holder.clone()),
                    ..RunSummary::of(state)
                })
                .collect();
            out.sort_by(|a, b| {
                b.started_at
                    .cmp(&a.started_at)
                    .then(b.run_id.cmp(&a.run_id))
            });
            Ok(out)
        })
    }
}

impl RunLease for MemoryStore {
    fn break_lease<'a>(
        &'a self,
        run: &'a RunId,
        holder: &'a str,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move { self.break_now(run, holder) })
    }

    fn acquire<'a>(
        &'a self,
        run: &'a RunId,
        holder: &'a str,
        ttl_ms: u64,
    ) -> BoxFuture<'a, Result<Lease, StoreError>> {
        Box::pin(async move {
            let now = Utc::now();
            let mut leases = self.leases.lock().map_err(|_| poisoned())?;
            if let Some(l) = leases.get(run)
                && l.holder != holder
                && l.until > now
            {
                return Err(StoreError::Leased {
                    run: run.clone(),
                    holder: l.holder.clone(),
                    until: l.until,
                });
            }
            let mut fences = self.fences.lock().map_err(|_| poisoned())?;
            let fence = fences.get(run).copied().unwrap_or(0) + 1;
            fences.insert(run.clone(), fence);
            let lease = Lease {
                run: run.clone(),
                holder: holder.to_owned(),
                fence,
                until: now + ttl(ttl_ms),
            };
            leases.insert(run.clone(), lease.clone());
            Ok(lease)
        })
    }

    fn renew<'a>(
        &'a self,
        lease: &'a Lease,
        ttl_ms: u64,
    ) -> BoxFuture<'a, Result<Lease, StoreError>> {
        Box::pin(async move {
            let mut leases = self.leases.lock().map_err(|_| poisoned())?;
            match leases.get_mut(&lease.run) {
                Some(l) if l.fence == lease.fence => {
                    l.until = Utc::now() + ttl(ttl_ms);
                    Ok(l.clone())
                }
                _ => Err(StoreError::Fenced {
                    run: lease.run.clone(),
                    fence: lease.fence,
                }),
            }
        })
    }

    fn release<'a>(&'a self, lease: &'a Lease) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let mut leases = self.leases.lock().map_err(|_| poisoned())?;
            if leases
                .get(&lease.run)
                .is_some_and(|l| l.fence == lease.fence)
            {
                leases.remove(&lease.run);
            }
            Ok(())
        })
    }
}

impl MemoryStore {
    fn break_now(&self, run: &RunId, holder: &str) -> Result<bool, StoreError> {
        let mut leases = self.leases.lock().map_err(|_| poisoned())?;
        if leases.get(run).is_some_and(|l| l.holder == holder) {
            leases.remove(run);
            return Ok(true);
        }
        Ok(false)
    }
}

impl IdempotencyLog for MemoryStore {
    fn begin<'a>(&'a self, record: &'a IdempotencyRecord) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let mut log = self.idempotency.lock().map_err(|_| poisoned())?;
            log.entry(record.key.clone())
                .or_insert_with(|| record.clone());
            Ok(())
        })
    }

    fn complete<'a>(
        &'a self,
        key: &'a str,
        outcome: &'a Value,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let mut log = self.idempotency.lock().map_err(|_| poisoned())?;
            match log.get_mut(key) {
                Some(r) => {
                    r.outcome = Some(outcome.clone());
                    Ok(())
                }
                None => Err(StoreError::Unavailable(format!(
                    "no idempotency record {key} to complete"
                ))),
            }
        })
    }

    fn get<'a>(
        &'a self,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<IdempotencyRecord>, StoreError>> {
        Box::pin(async move {
            Ok(self
                .idempotency
                .lock()
                .map_err(|_| poisoned())?
                .get(key)
                .cloned())
        })
    }
}

fn ttl(ms: u64) -> chrono::Duration {
    chrono::Duration::milliseconds(i64::try_from(ms).unwrap_or(i64::MAX / 2))
}
