//! A person's change to a run nobody works on — approve, reject, cancel —
//! as `stepwise approve`, `reject` and `cancel` make it: take the run's
//! lease, reload its state under it, append the events (fenced by the
//! lease), give the lease back.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use stepwise_core::{EventKind, Lease, RunId, RunState, RunStatus, StepId, StoreError, Usage};

use crate::Shared;
use crate::error::{ApiError, ErrorCode};
use crate::launcher::LaunchError;

/// A store error as the API reports it.
pub(crate) fn store_error(run: &RunId, e: StoreError) -> ApiError {
    match e {
        StoreError::NotFound(_) => ApiError::run_not_found(run.as_str()),
        StoreError::Leased { holder, .. } => ApiError::new(
            ErrorCode::RunLeased,
            format!("run {run} is being worked on by {holder}"),
        ),
        StoreError::Fenced { .. } | StoreError::Conflict { .. } => ApiError::new(
            ErrorCode::RunBusy,
            format!("run {run} changed underneath; try again"),
        ),
        other => ApiError::internal(&other.to_string()),
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

/// Takes the run's lease, reloads its state, appends what `decide` returns
/// (nothing if it returns no events), gives the lease back. Returns the
/// state after, and the kinds appended.
pub(crate) async fn with_lease(
    shared: &Shared,
    run: &RunId,
    decide: impl FnOnce(&RunState) -> Result<Vec<EventKind>, ApiError>,
) -> Result<(RunState, Vec<EventKind>), ApiError> {
    let lease = lease_at_rest(shared, run).await?;
    let result = async {
        let state = shared
            .store
            .state(run)
            .await
            .map_err(|e| store_error(run, e))?;
        let kinds = decide(&state)?;
        if kinds.is_empty() {
            return Ok((state, kinds));
        }
        let events = state.next_events(kinds.iter().cloned());
        shared
            .store
            .append(run, &events, Some(lease.fence))
            .await
            .map_err(|e| store_error(run, e))?;
        shared.metrics.observe(run, &events);
        if let Some(last) = events.last() {
            shared.hub.notify(run, last.seq);
        }
        let state = shared
            .store
            .state(run)
            .await
            .map_err(|e| store_error(run, e))?;
        Ok((state, kinds))
    }
    .await;
    shared.launcher.release(&lease).await;
    result
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

/// One step's approval, bound to the hash it asked with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StepApproval {
    /// The step.
    pub step: String,
    /// The `args_hash` shown in the pending request
    /// (`GET /v1/runs/{id}/approvals`); any other is refused as stale.
    pub args_hash: String,
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
    if state.status != RunStatus::AwaitingApproval {
        return Err(ApiError::new(
            ErrorCode::NotAwaitingApproval,
            format!(
                "run {} is not waiting for an approval (it is {})",
                state.run_id,
                state.status.as_str()
            ),
        ));
    }
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
    let mut kinds = Vec::new();
    if let Some(version) = plan_version {
        match state.pending_review {
            Some(v) if v == version => kinds.push(EventKind::PlanApproved {
                version,
                by: by.to_owned(),
                usage: Usage::default(),
            }),
            Some(v) => {
                return Err(ApiError::new(
                    ErrorCode::StaleApproval,
                    format!(
                        "plan version {version} is stale: the run waits for a review of version {v}"
                    ),
                ));
            }
            None => {
                return Err(ApiError::new(
                    ErrorCode::NotPending,
                    format!("run {} waits for no plan review", state.run_id),
                ));
            }
        }
    }
    for approval in steps {
        let step = StepId::new(approval.step.as_str());
        match state.pending_approvals.get(&step) {
            Some(hash) if *hash == approval.args_hash => {
                kinds.push(EventKind::ApprovalGranted {
                    step,
                    args_hash: hash.clone(),
                    by: by.to_owned(),
                });
            }
            Some(hash) => {
                return Err(ApiError::new(
                    ErrorCode::StaleApproval,
                    format!(
                        "the approval of step {} names hash {}, but the step now asks with hash {hash}: its arguments changed; read the pending request again",
                        approval.step, approval.args_hash
                    ),
                ));
            }
            None => {
                return Err(ApiError::new(
                    ErrorCode::NotPending,
                    format!(
                        "run {} has no approval pending for step {}",
                        state.run_id, approval.step
                    ),
                ));
            }
        }
    }
    if kinds.is_empty() {
        return Err(ApiError::new(
            ErrorCode::NothingToApprove,
            "name what to approve: `plan_version` and/or `steps` with each step's `args_hash`",
        ));
    }
    Ok(kinds)
}

/// A person's approval of a run a worker is working on, as it rides in
/// the run's job to that worker, which records it when the run pauses
/// (see [`Launcher::deliver_approval`](crate::Launcher::deliver_approval)).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeliveredApproval {
    /// Who approved (the tenant).
    pub by: String,
    /// A plan version approved, if any.
    #[serde(default)]
    pub plan_version: Option<u32>,
    /// The steps approved, each bound to its hash.
    #[serde(default)]
    pub steps: Vec<StepApproval>,
}

impl DeliveredApproval {
    /// The events that record it on the paused run `state`, checked as a
    /// person's approval of a paused run is: a step no longer pending, or
    /// whose arguments changed since, refuses it whole (with the reason).
    pub fn events(&self, state: &RunState) -> Result<Vec<EventKind>, String> {
        approvals(state, self.plan_version, &self.steps, &self.by).map_err(|e| e.message)
    }
}

/// The refusal events for everything a run waits for, then `needs_review`
/// (as `stepwise reject` records them).
pub(crate) fn refusals(
    state: &RunState,
    reason: &str,
    by: &str,
) -> Result<Vec<EventKind>, ApiError> {
    if state.status != RunStatus::AwaitingApproval {
        return Err(ApiError::new(
            ErrorCode::NotAwaitingApproval,
            format!(
                "run {} is not waiting for an approval (it is {})",
                state.run_id,
                state.status.as_str()
            ),
        ));
    }
    let mut what: Vec<String> = state
        .pending_review
        .iter()
        .map(|v| format!("plan version {v}"))
        .collect();
    what.extend(state.pending_approvals.keys().map(|s| format!("step {s}")));
    if what.is_empty() {
        // Its last request was answered (by a concurrent reject, say): it
        // no longer waits for one.
        return Err(ApiError::new(
            ErrorCode::NotAwaitingApproval,
            format!(
                "run {} is not waiting for an approval: its requests are answered on record; resume or cancel it",
                state.run_id
            ),
        ));
    }
    let mut kinds = Vec::new();
    if let Some(version) = state.pending_review {
        kinds.push(EventKind::PlanRejected {
            version,
            reason: reason.to_owned(),
            usage: Usage::default(),
        });
    }
    for step in state.pending_approvals.keys() {
        kinds.push(EventKind::ApprovalDenied {
            step: step.clone(),
            reason: reason.to_owned(),
            by: by.to_owned(),
        });
    }
    kinds.push(EventKind::NeedsReview {
        reason: format!("{by} rejected {}: {reason}", what.join(", ")),
        usage: Usage::default(),
        brief: None,
        ask_again: false,
    });
    Ok(kinds)
}
