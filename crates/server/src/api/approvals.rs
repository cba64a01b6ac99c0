//! The handlers of approvals: what a run waits for, approve and reject.

use axum::Json;
use axum::extract::{Path, State};
use stepwise_core::{RunState, RunStatus};

use crate::act::Pending;
use crate::approval::DeliveredApproval;
use crate::auth::Tenant;
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::launcher::Resume;
use crate::{Shared, act};

use super::runs::SETTLE;
use crate::extract::{AppState, Body, RunPath};
use crate::types::{ApiStatus, ApproveRequest, Approved, RejectRequest, Rejected};

pub(super) async fn approvals(
    tenant: Tenant,
    State(AppState(shared)): State<AppState>,
    Path(path): Path<RunPath>,
) -> ApiResult<Json<Pending>> {
    let state = shared.owned(&tenant, &path.id).await?;
    Ok(Json(act::pending(&state)))
}

pub(super) async fn approve(
    tenant: Tenant,
    State(AppState(shared)): State<AppState>,
    Path(path): Path<RunPath>,
    Body(req): Body<ApproveRequest>,
) -> ApiResult<Json<Approved>> {
    let mut state = shared.owned(&tenant, &path.id).await?;
    let run = state.run_id.clone();
    if state.status == RunStatus::Running && shared.launcher.delegates() {
        if let Some(answer) = deliver(&shared, &state, &req, &tenant.0).await? {
            return Ok(Json(answer));
        }
        // No worker has it (any more: it may have paused just now): as for
        // a run at rest, from its record now.
        state = shared.owned(&tenant, &path.id).await?;
    }
    // Checked before the lease, and again under it.
    act::approvals(&state, req.plan_version, &req.steps, &tenant.0)?;
    let (state, kinds) = {
        shared.jobs.settle(&run, SETTLE).await?;
        let _claim = shared.jobs.claim(&run)?;
        act::with_lease(&shared, &run, |state| {
            act::approvals(state, req.plan_version, &req.steps, &tenant.0)
        })
        .await?
    };
    let approved = approved_names(&kinds);
    let pending = act::pending(&state);
    let mut resumed = false;
    if req.resume && pending.plan_version.is_none() && pending.steps.is_empty() {
        shared
            .submit(
                run.clone(),
                Some(Resume {
                    by: tenant.0.clone(),
                    ..Resume::default()
                }),
            )
            .await?;
        resumed = true;
    }
    Ok(Json(Approved {
        run_id: run.to_string(),
        approved,
        pending,
        resumed,
        status: ApiStatus::of(state.status, shared.phase(&run).await),
        delivered_to: None,
    }))
}

/// An approval of a run still running, asked for by a step while others
/// are in flight: handed to the worker working on it (`None` if no worker
/// has it: then it is refused as for any running run).
async fn deliver(
    shared: &Shared,
    state: &RunState,
    req: &ApproveRequest,
    by: &str,
) -> ApiResult<Option<Approved>> {
    let kinds = act::grants(state, req.plan_version, &req.steps, by)?;
    let approval = DeliveredApproval {
        by: by.to_owned(),
        plan_version: req.plan_version,
        steps: req.steps.clone(),
    };
    let Some(worker) = shared
        .launcher
        .deliver_approval(&state.run_id, &approval)
        .await?
    else {
        return Ok(None);
    };
    Ok(Some(Approved {
        run_id: state.run_id.to_string(),
        approved: approved_names(&kinds),
        pending: act::pending(state),
        resumed: false,
        status: ApiStatus::of(state.status, None),
        delivered_to: Some(worker),
    }))
}

/// What approval events approve, as an answer names them.
fn approved_names(kinds: &[stepwise_core::EventKind]) -> Vec<String> {
    kinds
        .iter()
        .filter_map(|k| match k {
            stepwise_core::EventKind::PlanApproved { version, .. } => {
                Some(format!("plan version {version}"))
            }
            stepwise_core::EventKind::ApprovalGranted { step, .. } => Some(format!("step {step}")),
            _ => None,
        })
        .collect()
}

pub(super) async fn reject(
    tenant: Tenant,
    State(AppState(shared)): State<AppState>,
    Path(path): Path<RunPath>,
    Body(req): Body<RejectRequest>,
) -> ApiResult<Json<Rejected>> {
    let reason = req.reason.split_whitespace().collect::<Vec<_>>().join(" ");
    let state = shared.owned(&tenant, &path.id).await?;
    if reason.is_empty() {
        return Err(ApiError::new(
            ErrorCode::InvalidRequest,
            "`reason` must say why (it is recorded)",
        ));
    }
    let run = state.run_id.clone();
    act::refusals(&state, &reason, &tenant.0)?;
    shared.jobs.settle(&run, SETTLE).await?;
    let _claim = shared.jobs.claim(&run)?;
    let (state, kinds) = act::with_lease(&shared, &run, |state| {
        act::refusals(state, &reason, &tenant.0)
    })
    .await?;
    let rejected = kinds
        .iter()
        .filter_map(|k| match k {
            stepwise_core::EventKind::PlanRejected { version, .. } => {
                Some(format!("plan version {version}"))
            }
            stepwise_core::EventKind::ApprovalDenied { step, .. } => Some(format!("step {step}")),
            _ => None,
        })
        .collect();
    Ok(Json(Rejected {
        run_id: run.to_string(),
        rejected,
        status: ApiStatus::of(state.status, None),
    }))
}
