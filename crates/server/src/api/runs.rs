//! The handlers of runs: submit, list, get, resume and cancel.

use std::time::Duration;

use axum::Json;
use axum::extract::{Path, State};
use stepwise_core::{Constraints, RunId, RunStatus, RunSummary};

use crate::auth::Tenant;
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::jobs::{Phase, shutting_down};
use crate::launcher::{NewRun, Resume};

use super::responses::{Accepted, RunOutput};
use crate::extract::{AppState, Body, Query, RunPath};
use crate::types::{
    ApiStatus, CancelRequest, Links, ListQuery, ResumeRequest, RunItem, RunList, RunStatusBody,
    SubmitRun, Submitted,
};

/// How long an approval, a rejection or a resume waits for this server's
/// job to give back a run that its status already shows at rest (see
/// [`crate::jobs::Jobs::settle`]).
pub(super) const SETTLE: Duration = Duration::from_secs(10);

fn submitted(run: &RunId, status: ApiStatus) -> Accepted<Submitted> {
    let links = Links {
        run: format!("/v1/runs/{run}"),
        events: format!("/v1/runs/{run}/events"),
    };
    let location = links.run.clone();
    Accepted(
        Submitted {
            run_id: run.to_string(),
            status,
            links,
        },
        location,
    )
}

pub(super) async fn submit(
    tenant: Tenant,
    State(AppState(shared)): State<AppState>,
    Body(req): Body<SubmitRun>,
) -> ApiResult<Accepted<Submitted>> {
    if shared.jobs.is_closed() {
        return Err(shutting_down());
    }
    check_goal(&req.goal, &shared.limits)?;
    let notes = shared.roots.notes(&req.notes)?;
    let workspace = req
        .workspace
        .as_deref()
        .map(|w| shared.roots.workspace(w))
        .transpose()?;
    let mut constraints = req.constraints.unwrap_or_default();
    if !constraints.extra.is_empty() {
        let mut keys: Vec<&String> = constraints.extra.keys().collect();
        keys.sort();
        let keys: Vec<String> = keys.iter().map(|k| format!("`{k}`")).collect();
        return Err(ApiError::new(
            ErrorCode::InvalidConstraints,
            format!(
                "unknown constraint key{} {}; expected one of {}",
                if keys.len() == 1 { "" } else { "s" },
                keys.join(", "),
                Constraints::KEYS.join(", ")
            ),
        ));
    }
    if let Some(n) = req.max_steps {
        constraints.max_steps = Some(n);
    }
    if let Some(n) = req.max_replans {
        constraints.max_replans = Some(n);
    }
    check_max_steps(constraints.max_steps, &shared.limits)?;
    let model = shared.model(req.model.as_deref())?;
    let tool_set = req
        .tools
        .as_deref()
        .map(|name| shared.tool_set(name))
        .transpose()?;
    let concurrency = req.concurrency.unwrap_or(4);
    if concurrency == 0 || concurrency > shared.limits.max_concurrency {
        return Err(ApiError::new(
            ErrorCode::InvalidRequest,
            format!(
                "concurrency must be between 1 and {}",
                shared.limits.max_concurrency
            ),
        ));
    }
    // Before the run is recorded, so a refused submit leaves nothing behind.
    let slot = shared.reserve().await?;
    let run_id = RunId::generate();
    shared
        .launcher
        .create(NewRun {
            run_id: run_id.clone(),
            tenant: tenant.0.clone(),
            goal: req.goal,
            notes,
            workspace,
            constraints,
            strategy: req
                .strategy
                .unwrap_or_else(|| stepwise_core::strategy::DEFAULT_STRATEGY.to_owned()),
            model,
            tool_set,
            approve: req.approve,
            review: req.review,
            plan: req.plan,
            repair: req.repair,
            concurrency,
        })
        .await?;
    shared.remember(&run_id, Some(tenant.0));
    shared.submit_new(run_id.clone(), slot).await?;
    Ok(submitted(&run_id, ApiStatus::Queued))
}

/// A goal the server takes: not blank, not longer than `max_goal_bytes`
/// (a goal is stored with its run and shown in every list page).
fn check_goal(goal: &str, limits: &crate::config::Limits) -> ApiResult<()> {
    if goal.trim().is_empty() {
        return Err(ApiError::new(
            ErrorCode::InvalidRequest,
            "goal is empty: say what the run should find out or do",
        ));
    }
    if goal.len() > limits.max_goal_bytes {
        return Err(ApiError::new(
            ErrorCode::InvalidRequest,
            format!(
                "goal is {} bytes; this server takes at most {} ([serve.limits] max_goal_bytes)",
                goal.len(),
                limits.max_goal_bytes
            ),
        ));
    }
    // Meaningless or a single word: refused before anything is recorded,
    // as the engine would refuse it before planning.
    if let Err(e) = stepwise_core::Goal::prepare_request(goal, Constraints::default()) {
        return Err(ApiError::new(ErrorCode::InvalidRequest, e.to_string()));
    }
    Ok(())
}

/// A step bound within 1..=`max_steps` of the server's limits.
fn check_max_steps(asked: Option<usize>, limits: &crate::config::Limits) -> ApiResult<()> {
    match asked {
        Some(n) if n == 0 || n > limits.max_steps => Err(ApiError::new(
            ErrorCode::InvalidRequest,
            format!(
                "max_steps must be between 1 and {} ([serve.limits] max_steps); got {n}",
                limits.max_steps
            ),
        )),
        _ => Ok(()),
    }
}

pub(super) async fn list(
    tenant: Tenant,
    State(AppState(shared)): State<AppState>,
    Query(query): Query<ListQuery>,
) -> ApiResult<Json<RunList>> {
    let limit = crate::extract::page_limit(query.limit, 50, 200)?;
    let summaries = shared
        .store
        .list_runs()
        .await
        .map_err(|e| ApiError::internal(&e.to_string()))?;
    let mut mine: Vec<RunSummary> = Vec::new();
    for s in summaries {
        if shared.owns_run(&tenant, &s.run_id).await {
            mine.push(s);
        }
    }
    let start = match &query.cursor {
        Some(cursor) => {
            mine.iter()
                .position(|s| s.run_id.as_str() == cursor)
                .ok_or_else(|| {
                    ApiError::new(
                        ErrorCode::InvalidRequest,
                        "unknown cursor: pass the next_cursor of the previous page",
                    )
                })?
                + 1
        }
        None => 0,
    };
    let mut runs = Vec::new();
    let mut next_cursor = None;
    let waiting = shared.waiting().await;
    for s in mine.into_iter().skip(start) {
        let phase = shared
            .jobs
            .phase(&s.run_id)
            .or_else(|| waiting.contains(&s.run_id).then_some(Phase::Queued));
        let status = ApiStatus::of(s.status, phase);
        if query.status.is_some_and(|wanted| wanted != status) {
            continue;
        }
        if runs.len() == limit {
            next_cursor = runs.last().map(|r: &RunItem| r.run_id.clone());
            break;
        }
        let (strategy, cost_usd) = shared.list_extras(&s.run_id, s.last_seq).await;
        runs.push(RunItem {
            run_id: s.run_id.to_string(),
            goal: s.goal,
            status,
            started_at: s.started_at,
            updated_at: s.updated_at,
            steps_done: s.steps_done,
            steps_total: s.steps_total,
            replans: s.replans,
            tokens: s.tokens,
            last_seq: s.last_seq,
            held_by: s.held_by,
            strategy,
            cost_usd,
        });
    }
    Ok(Json(RunList { runs, next_cursor }))
}

/// `GET /v1/stats`: run health over the tenant's runs (see
/// `stepwise_core::stats`), each run read from its log.
pub(super) async fn stats(
    tenant: Tenant,
    State(AppState(shared)): State<AppState>,
) -> ApiResult<Json<stepwise_core::stats::Stats>> {
    let summaries = shared
        .store
        .list_runs()
        .await
        .map_err(|e| ApiError::internal(&e.to_string()))?;
    let mut facts = Vec::new();
    for s in summaries {
        if !shared.owns_run(&tenant, &s.run_id).await {
            continue;
        }
        let state = shared
            .store
            .state(&s.run_id)
            .await
            .map_err(|e| ApiError::internal(&e.to_string()))?;
        facts.push(stepwise_core::stats::RunFacts::of(&state));
    }
    Ok(Json(stepwise_core::stats::stats(&facts)))
}

pub(super) async fn get_run(
    tenant: Tenant,
    State(AppState(shared)): State<AppState>,
    Path(path): Path<RunPath>,
) -> ApiResult<Json<RunOutput>> {
    let state = shared.owned(&tenant, &path.id).await?;
    let output = shared.launcher.output(&state)?;
    Ok(Json(RunOutput(output)))
}

pub(super) async fn resume(
    tenant: Tenant,
    State(AppState(shared)): State<AppState>,
    Path(path): Path<RunPath>,
    Body(req): Body<ResumeRequest>,
) -> ApiResult<Accepted<Submitted>> {
    let state = shared.owned(&tenant, &path.id).await?;
    let run = state.run_id.clone();
    if state.status.has_ended() {
        return Err(ApiError::new(
            ErrorCode::RunEnded,
            format!(
                "run {run} already ended ({}); there is nothing to resume",
                state.status.as_str()
            ),
        ));
    }
    check_max_steps(req.max_steps, &shared.limits)?;
    let resume = Resume {
        by: tenant.0.clone(),
        max_replans: req.max_replans,
        max_steps: req.max_steps,
        approve: req.approve,
    };
    shared.launcher.check_resume(&state, &resume).await?;
    if state.status != RunStatus::Running {
        shared.jobs.settle(&run, SETTLE).await?;
    }
    shared.submit(run.clone(), Some(resume)).await?;
    Ok(submitted(&run, ApiStatus::Queued))
}

pub(super) async fn cancel(
    tenant: Tenant,
    State(AppState(shared)): State<AppState>,
    Path(path): Path<RunPath>,
    Body(req): Body<CancelRequest>,
) -> ApiResult<Json<RunStatusBody>> {
    let state = shared.owned(&tenant, &path.id).await?;
    let run = state.run_id.clone();
    let reason = req
        .reason
        .map(|r| r.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|r| !r.is_empty())
        .unwrap_or_else(|| format!("cancelled by {}", tenant.0));
    if state.status.has_ended() {
        return Err(ApiError::new(
            ErrorCode::RunEnded,
            format!("run {run} already ended ({})", state.status.as_str()),
        ));
    }
    // A run this server has (queued or running) is stopped by its worker.
    shared
        .jobs
        .cancel(&run, &reason, Duration::from_secs(30))
        .await?;
    let state = shared.store.state(&run).await.map_err(ApiError::from)?;
    let status = if state.status.has_ended() {
        state.status
    } else {
        // At rest (or it paused before the signal reached it): record it here.
        let claim = shared.jobs.claim(&run)?;
        match crate::jobs::cancel_at_rest(&shared, &run, &reason).await {
            // A worker holds it (PostgreSQL): ask it to stop.
            Err(e) if e.code == ErrorCode::RunLeased && shared.launcher.delegates() => {
                drop(claim);
                shared.cancel_by_worker(&run, &reason, e).await?
            }
            other => other?,
        }
    };
    Ok(Json(RunStatusBody {
        run_id: run.to_string(),
        status: ApiStatus::of(status, None),
    }))
}
