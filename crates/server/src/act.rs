//! A person's change to a run nobody works on — approve, reject, cancel —
//! as `stepwise approve`, `reject` and `cancel` make it: take the run's
//! lease, reload its state under it, append the events (fenced by the
//! lease), give the lease back.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use stepwise_core::act::{self, ActError, Approve};

use crate::approval::StepApproval;

use stepwise_core::{EventKind, Lease, RunId, RunState, RunStatus, StoreError};

use crate::Shared;
use crate::error::{ApiError, ErrorCode};
use crate::launcher::LaunchError;

/// A store error as the API reports it (each names its run).
impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound(run) => ApiError::run_not_found(run.as_str()),
            StoreError::Leased { run, holder, .. } => ApiError::new(
                ErrorCode::RunLeased,
                format!("run {run} is being worked on by {holder}"),
            ),
            StoreError::Fenced { run, .. } | StoreError::Conflict { run, .. } => ApiError::new(
                ErrorCode::RunBusy,
                format!("run {run} changed underneath; try again"),
            ),
            other => ApiError::internal(&other.to_string()),
        }
    }
}

/// How long a person's change waits for a worker that recorded a pause
/// to give the run's lease back.
const WORKER_SETTLE: Duration = Duration::from_secs(10);

/// Takes the run's lease. A worker (on PostgreSQL) records a run's pause
/// before it winds down and gives the lease back, so for a moment a paused
/// run is still held: a change made then waits for it rather than being
/// refused as `run_leased`. A run a worker is working on is refused at once.
async fn lease_at_rest(shared: &Shared, run: &RunId) -> Result<Lease, ApiError> {
    let deadline = tokio::time::Instant::now() + WORKER_SETTLE;
    loop {
        match shared.launcher.lease(run).await {
            Err(LaunchError::Leased { .. })
                if shared.launcher.delegates()
                    && tokio::time::Instant::now() < deadline
                    && paused(shared, run).await =>
            {
                tokio::time::sleep(Duration::from_millis(25)).await;
            }
            other => return other.map_err(ApiError::from),
        }
    }
}

/// Whether the run's record says it waits for a person.
async fn paused(shared: &Shared, run: &RunId) -> bool {
    shared.store.state(run).await.is_ok_and(|s| {
        matches!(
            s.status,
            RunStatus::AwaitingApproval | RunStatus::NeedsReview
        )
    })
}

/// Takes the run's lease, records what `decide` returns under it (see
/// [`stepwise_core::act::under_lease`]), tells the metrics and the event
/// streams, and gives the lease back. Returns the state after, and the
/// kinds appended.
pub(crate) async fn with_lease(
    shared: &Shared,
    run: &RunId,
    decide: impl FnOnce(&RunState) -> Result<Vec<EventKind>, ApiError>,
) -> Result<(RunState, Vec<EventKind>), ApiError> {
    let lease = lease_at_rest(shared, run).await?;
    let result = act::under_lease(shared.store.as_ref(), run, lease.fence, decide).await;
    shared.launcher.release(&lease).await;
    let (state, events) = result?;
    shared.metrics.observe(run, &events);
    if let Some(last) = events.last() {
        shared.hub.notify(run, last.seq);
    }
    Ok((state, events.into_iter().map(|e| e.kind).collect()))
}

/// A refused change as the API reports it.
pub(crate) fn act_error(e: ActError) -> ApiError {
    let code = match &e {
        ActError::NotAwaitingApproval { .. } | ActError::Answered { .. } => {
            ErrorCode::NotAwaitingApproval
        }
        ActError::StalePlan { .. } | ActError::StaleStep { .. } => ErrorCode::StaleApproval,
        ActError::NoPlanReview { .. } | ActError::NotPending { .. } => ErrorCode::NotPending,
        ActError::NothingNamed => ErrorCode::NothingToApprove,
        ActError::Ended { .. } => ErrorCode::RunEnded,
    };
    ApiError::new(code, e.to_string())
}

/// A side-effect step waiting for an approval: exactly what it would call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PendingStep {
    /// The step.
    pub step: String,
    /// The tool it calls.
    pub tool: String,
    /// The arguments, resolved (what the call would receive).
    pub args: Value,
    /// The hash of the tool and arguments: an approval must name it.
    pub args_hash: String,
    /// The tool says it may delete or overwrite data (`destructiveHint`).
    #[serde(default)]
    pub destructive: bool,
}

/// What a run waits for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Pending {
    /// The run.
    pub run_id: String,
    /// Its status.
    pub status: RunStatus,
    /// A plan version waiting for review, if any.
    pub plan_version: Option<u32>,
    /// Side-effect steps waiting for an approval.
    pub steps: Vec<PendingStep>,
}

/// What a run waits for, with each step's tool and arguments as it asked.
pub(crate) fn pending(state: &RunState) -> Pending {
    let steps = state
        .pending_approvals
        .iter()
        .map(|(step, hash)| {
            let asked = state
                .execution_history
                .iter()
                .rev()
                .find_map(|e| match &e.kind {
                    EventKind::ApprovalRequested {
                        step: s,
                        tool,
                        args,
                        args_hash,
                        destructive,
                    } if s == step && args_hash == hash => {
                        Some((tool.clone(), args.clone(), *destructive))
                    }
                    _ => None,
                });
            let (tool, args, destructive) = asked.unwrap_or_default();
            PendingStep {
                step: step.to_string(),
                tool,
                args,
                args_hash: hash.clone(),
                destructive,
            }
        })
        .collect();
    Pending {
        run_id: state.run_id.to_string(),
        status: state.status,
        plan_version: state.pending_review,
        steps,
    }
}

/// The approval events for a request, checked against what the run waits
/// for now: a step not pending, or a hash or plan version other than the
/// pending one, refuses the whole request.
pub(crate) fn approvals(
    state: &RunState,
    plan_version: Option<u32>,
    steps: &[StepApproval],
    by: &str,
) -> Result<Vec<EventKind>, ApiError> {
    act::awaiting(state).map_err(act_error)?;
    grants(state, plan_version, steps, by)
}

/// The approval events for a request, checked against what the run has
/// asked for so far, whether or not it has paused yet.
pub(crate) fn grants(
    state: &RunState,
    plan_version: Option<u32>,
    steps: &[StepApproval],
    by: &str,
) -> Result<Vec<EventKind>, ApiError> {
    let steps = crate::approval::named(steps);
    act::grants(
        state,
        Approve::Named {
            plan_version,
            steps: &steps,
        },
        by,
    )
    .map_err(act_error)
}

/// The refusal events for everything a run waits for, then `needs_review`
/// (as `stepwise reject` records them).
pub(crate) fn refusals(
    state: &RunState,
    reason: &str,
    by: &str,
) -> Result<Vec<EventKind>, ApiError> {
    act::reject(state, reason, by).map_err(act_error)
}
