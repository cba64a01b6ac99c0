//! The `/v1` handlers and the router. Every route takes the request's
//! [`Tenant`] first, so a request without a valid token is refused before
//! anything else; every route about one run loads it through
//! [`Shared::owned`], so another tenant's run is a 404 exactly like a run
//! that does not exist.

use std::sync::Arc;
use std::time::Duration;

use aide::axum::ApiRouter;
use aide::axum::routing::{get_with, post_with};
use aide::generate::GenContext;
use aide::openapi::{
    Info, OpenApi, Operation, Response, SecurityScheme, StatusCode as DocStatus, Tag,
};
use aide::{OperationInput, OperationOutput};
use axum::Json;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, FromRequest, FromRequestParts, Path, Request, State};
use axum::http::header::{CONTENT_TYPE, LOCATION};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::IntoResponse;
use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use stepwise_core::{Constraints, FinalOutput, RunId, RunState, RunStatus, RunSummary};

use crate::Shared;
use crate::act::{self, DeliveredApproval, Pending, StepApproval};
use crate::auth::{SCHEME, Tenant};
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::events;
use crate::jobs::{Phase, shutting_down};
use crate::launcher::{ApproveMode, NewRun, Resume};

/// How long an approval, a rejection or a resume waits for this server's
/// job to give back a run that its status already shows at rest (see
/// [`crate::jobs::Jobs::settle`]).
const SETTLE: Duration = Duration::from_secs(10);

/// The state every handler shares.
#[derive(Clone)]
pub(crate) struct AppState(pub(crate) Arc<Shared>);

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AppState")
    }
}

// ---------------------------------------------------------------- inputs

/// A JSON body, refused with a stable code: not JSON (`malformed_json`),
/// not what the route takes (`invalid_request`), another media type
/// (`unsupported_media_type`), too large (`body_too_large`). An empty body
/// is read as `{}`.
pub(crate) struct Body<T>(pub(crate) T);

impl<T: DeserializeOwned> FromRequest<AppState> for Body<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, Self::Rejection> {
        let json_type = req
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(|v| {
                let mime = v
                    .split(';')
                    .next()
                    .unwrap_or("")
                    .trim()
                    .to_ascii_lowercase();
                mime == "application/json" || mime.ends_with("+json")
            });
        let bytes = Bytes::from_request(req, state).await.map_err(|e| {
            if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::new(
                    ErrorCode::BodyTooLarge,
                    format!(
                        "the body is larger than this server accepts ({} bytes)",
                        state.0.limits.max_body_bytes
                    ),
                )
            } else {
                ApiError::new(
                    ErrorCode::InvalidRequest,
                    format!("cannot read the body: {e}"),
                )
            }
        })?;
        let text: &[u8] = if bytes.iter().all(u8::is_ascii_whitespace) {
            b"{}"
        } else {
            if json_type != Some(true) {
                return Err(ApiError::new(
                    ErrorCode::UnsupportedMediaType,
                    "the body must be JSON, sent with Content-Type: application/json",
                ));
            }
            &bytes
        };
        serde_json::from_slice(text).map(Body).map_err(|e| {
            let code = match e.classify() {
                serde_json::error::Category::Data => ErrorCode::InvalidRequest,
                _ => ErrorCode::MalformedJson,
            };
            let what = if code == ErrorCode::MalformedJson {
                "the body is not JSON"
            } else {
                "the body is not what this route takes"
            };
            ApiError::new(code, format!("{what}: {e}"))
        })
    }
}

impl<T: JsonSchema> OperationInput for Body<T> {
    fn operation_input(ctx: &mut GenContext, operation: &mut Operation) {
        Json::<T>::operation_input(ctx, operation);
    }
}

/// Query parameters; a bad one is `invalid_request`.
pub(crate) struct Query<T>(pub(crate) T);

impl<T: DeserializeOwned + Send> FromRequestParts<AppState> for Query<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        axum::extract::Query::<T>::from_request_parts(parts, state)
            .await
            .map(|q| Query(q.0))
            .map_err(|e| ApiError::new(ErrorCode::InvalidRequest, e.body_text()))
    }
}

impl<T: JsonSchema> OperationInput for Query<T> {
    fn operation_input(ctx: &mut GenContext, operation: &mut Operation) {
        axum::extract::Query::<T>::operation_input(ctx, operation);
    }
}

/// The run a route is about.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct RunPath {
    /// The run id.
    pub(crate) id: String,
}

// --------------------------------------------------------------- outputs

/// A 202 with a JSON body and a `Location` (the run).
pub(crate) struct Accepted<T>(T, String);

impl<T: Serialize> IntoResponse for Accepted<T> {
    fn into_response(self) -> axum::response::Response {
        let mut response = (StatusCode::ACCEPTED, Json(self.0)).into_response();
        if let Ok(location) = HeaderValue::from_str(&self.1) {
            response.headers_mut().insert(LOCATION, location);
        }
        response
    }
}

impl<T: JsonSchema> OperationOutput for Accepted<T> {
    type Inner = T;

    fn operation_response(ctx: &mut GenContext, operation: &mut Operation) -> Option<Response> {
        Json::<T>::operation_response(ctx, operation)
    }

    fn inferred_responses(
        ctx: &mut GenContext,
        operation: &mut Operation,
    ) -> Vec<(Option<DocStatus>, Response)> {
        Self::operation_response(ctx, operation)
            .map(|r| vec![(Some(DocStatus::Code(202)), r)])
            .unwrap_or_default()
    }
}

/// A run's output: exactly what `stepwise show RUN --json` prints (seed
/// 001's `final_output`, with `cost` when the server prices the model).
#[derive(Debug, Clone, Serialize)]
#[serde(transparent)]
pub(crate) struct RunOutput(Value);

impl JsonSchema for RunOutput {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        FinalOutput::schema_name()
    }

    fn schema_id() -> std::borrow::Cow<'static, str> {
        FinalOutput::schema_id()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        FinalOutput::json_schema(generator)
    }
}

// ------------------------------------------------------------------ types

/// A run's status as the API reports it: a run's status in the log, or
/// `queued` while it waits in this server for a slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ApiStatus {
    /// Recorded, waiting in this server for a slot.
    Queued,
    /// Being worked on (or interrupted: resumable).
    Running,
    /// Paused for an approval.
    AwaitingApproval,
    /// Stopped for a person.
    NeedsReview,
    /// Finished with a report.
    Ok,
    /// Failed.
    Failed,
    /// Cancelled.
    Cancelled,
}

impl ApiStatus {
    pub(crate) fn of(status: RunStatus, phase: Option<Phase>) -> ApiStatus {
        // Waiting here for a slot (a fresh run, or a resume of a paused one).
        if phase == Some(Phase::Queued) && !status.has_ended() {
            return ApiStatus::Queued;
        }
        match status {
            RunStatus::Running => ApiStatus::Running,
            RunStatus::AwaitingApproval => ApiStatus::AwaitingApproval,
            RunStatus::NeedsReview => ApiStatus::NeedsReview,
            RunStatus::Ok => ApiStatus::Ok,
            RunStatus::Failed => ApiStatus::Failed,
            RunStatus::Cancelled => ApiStatus::Cancelled,
        }
    }

    /// Its name in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            ApiStatus::Queued => "queued",
            ApiStatus::Running => "running",
            ApiStatus::AwaitingApproval => "awaiting_approval",
            ApiStatus::NeedsReview => "needs_review",
            ApiStatus::Ok => "ok",
            ApiStatus::Failed => "failed",
            ApiStatus::Cancelled => "cancelled",
        }
    }
}

/// `POST /v1/runs`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SubmitRun {
    /// What the run should achieve.
    pub goal: String,
    /// The notes folder: relative to one of the server's notes roots (the
    /// first under which it exists), or absolute under one.
    pub notes: String,
    /// A folder `write_file` may write in: relative to the server's
    /// workspace root (created if missing), or absolute under it. Without
    /// it the run has no `write_file`.
    pub workspace: Option<String>,
    /// Constraints, as `stepwise run --constraints` takes them; unknown
    /// keys are refused.
    pub constraints: Option<Constraints>,
    /// A built-in strategy (default `plan-execute`).
    pub strategy: Option<String>,
    /// A model by one of the names the server configured (`[serve.models]`),
    /// or `offline`; default: the server's default model.
    pub model: Option<String>,
    /// A tool set by one of the names the server configured (`[serve.tool_sets]`).
    pub tools: Option<String>,
    /// How side-effect steps are approved: `never` (pause for
    /// `POST /v1/runs/{id}/approve`, the default) or `auto`.
    #[serde(default)]
    pub approve: ApproveMode,
    /// Review the plan before it runs (approved like side-effect steps).
    #[serde(default)]
    pub review: bool,
    /// A plan to run instead of planning (see `stepwise plan schema`).
    pub plan: Option<Value>,
    /// Repair an invalid `plan` instead of stopping for review.
    #[serde(default)]
    pub repair: bool,
    /// Most steps the run may take (over the constraints).
    pub max_steps: Option<usize>,
    /// Most replans (over the constraints).
    pub max_replans: Option<u32>,
    /// Steps running at once (default 4, at most the server's limit).
    pub concurrency: Option<usize>,
}

/// Where to find a run.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Links {
    /// `GET` it.
    pub run: String,
    /// Its events (JSON, or `text/event-stream`).
    pub events: String,
}

/// A run accepted: recorded and queued.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Submitted {
    /// The run.
    pub run_id: String,
    /// `queued` (it may already be running).
    pub status: ApiStatus,
    /// Where to find it.
    pub links: Links,
}

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

/// `GET /v1/runs` query.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    /// Only runs with this status.
    pub status: Option<ApiStatus>,
    /// The `next_cursor` of the previous page.
    pub cursor: Option<String>,
    /// Runs per page (default 50; 1 to 200, anything else is `invalid_request`).
    pub limit: Option<usize>,
}

/// One run in a list.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct RunItem {
    /// The run.
    pub run_id: String,
    /// The normalised goal.
    pub goal: String,
    /// Where it is.
    pub status: ApiStatus,
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
    /// The sequence number of its last event.
    pub last_seq: u64,
    /// Who holds the run's lease now (this server, a `stepwise` command or
    /// a worker, as `host:pid`), if anyone does.
    pub held_by: Option<String>,
    /// The strategy it runs with (as `run_started` recorded it).
    #[serde(default)]
    pub strategy: String,
    /// What its model calls cost so far, in US dollars: the `cost.usd` of
    /// `GET /v1/runs/{id}`; absent when the server has no price for its model.
    pub cost_usd: Option<f64>,
}

/// A page of runs, newest first.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct RunList {
    /// The runs.
    pub runs: Vec<RunItem>,
    /// Pass it as `cursor` for the next page; absent on the last.
    pub next_cursor: Option<String>,
}

/// `POST /v1/runs/{id}/approve`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApproveRequest {
    /// The plan version under review, as the pending request shows it.
    pub plan_version: Option<u32>,
    /// Side-effect steps, each with the `args_hash` it asked with.
    #[serde(default)]
    pub steps: Vec<StepApproval>,
    /// Resume the run once nothing is left pending (default true).
    #[serde(default = "yes")]
    pub resume: bool,
}

fn yes() -> bool {
    true
}

/// What an approval did.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Approved {
    /// The run.
    pub run_id: String,
    /// What was approved (`plan version 2`, `step save`).
    pub approved: Vec<String>,
    /// What the run still waits for.
    pub pending: Pending,
    /// Whether the run was queued to go on.
    pub resumed: bool,
    /// Its status now.
    pub status: ApiStatus,
    /// The worker the approval was handed to, when one was working on the
    /// run (PostgreSQL): it records the approval once the run's other
    /// steps are done, and the run goes on without a resume.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivered_to: Option<String>,
}

/// `POST /v1/runs/{id}/reject`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RejectRequest {
    /// Why (recorded).
    pub reason: String,
}

/// What a refusal did.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Rejected {
    /// The run.
    pub run_id: String,
    /// What was refused.
    pub rejected: Vec<String>,
    /// Its status now (`needs_review`).
    pub status: ApiStatus,
}

/// `POST /v1/runs/{id}/resume`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResumeRequest {
    /// Raise the replan bound.
    pub max_replans: Option<u32>,
    /// Raise the step bound.
    pub max_steps: Option<usize>,
    /// The approval mode from here on (default: the run's own).
    pub approve: Option<ApproveMode>,
}

/// `POST /v1/runs/{id}/cancel`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CancelRequest {
    /// Why (recorded; default "cancelled by TENANT").
    pub reason: Option<String>,
}

/// A run's status after a change.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct RunStatusBody {
    /// The run.
    pub run_id: String,
    /// Its status now.
    pub status: ApiStatus,
}

// --------------------------------------------------------------- handlers

async fn submit(
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

/// A page size a client asked for: `default` when it did not, and a clear
/// error outside 1..=`max` (rather than silently another size).
pub(crate) fn page_limit(asked: Option<usize>, default: usize, max: usize) -> ApiResult<usize> {
    match asked {
        None => Ok(default),
        Some(n) if (1..=max).contains(&n) => Ok(n),
        Some(n) => Err(ApiError::new(
            ErrorCode::InvalidRequest,
            format!("limit must be between 1 and {max} (got {n})"),
        )),
    }
}

async fn list(
    tenant: Tenant,
    State(AppState(shared)): State<AppState>,
    Query(query): Query<ListQuery>,
) -> ApiResult<Json<RunList>> {
    let limit = page_limit(query.limit, 50, 200)?;
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

async fn get_run(
    tenant: Tenant,
    State(AppState(shared)): State<AppState>,
    Path(path): Path<RunPath>,
) -> ApiResult<Json<RunOutput>> {
    let state = shared.owned(&tenant, &path.id).await?;
    let output = shared.launcher.output(&state)?;
    Ok(Json(RunOutput(output)))
}

async fn approvals(
    tenant: Tenant,
    State(AppState(shared)): State<AppState>,
    Path(path): Path<RunPath>,
) -> ApiResult<Json<Pending>> {
    let state = shared.owned(&tenant, &path.id).await?;
    Ok(Json(act::pending(&state)))
}

async fn approve(
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

async fn reject(
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

async fn resume(
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

async fn cancel(
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
    let state = shared
        .store
        .state(&run)
        .await
        .map_err(|e| act::store_error(&run, e))?;
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

async fn openapi(State(AppState(shared)): State<AppState>) -> axum::response::Response {
    let body = shared.openapi.get().cloned().unwrap_or_default();
    ([(CONTENT_TYPE, "application/json")], body).into_response()
}

async fn metrics(
    _tenant: Tenant,
    State(AppState(shared)): State<AppState>,
) -> ApiResult<axum::response::Response> {
    let text = shared.metrics_text().await?;
    Ok((
        [(CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")],
        text,
    )
        .into_response())
}

async fn not_found() -> ApiError {
    ApiError::new(ErrorCode::NotFound, "no such route (see /v1/openapi.json)")
}

/// A known route with another method: `405`, once the token is valid
/// (without one, `401`: the routes are not shown to anyone).
async fn method_not_allowed(_tenant: Tenant) -> ApiError {
    ApiError::new(
        ErrorCode::MethodNotAllowed,
        "this route does not take this method (see /v1/openapi.json)",
    )
}

/// Answers a request within the limit, or with `timeout`. An event
/// stream's headers count; its body, which follows a run, does not.
async fn time_limit(
    State(AppState(shared)): State<AppState>,
    request: Request,
    next: Next,
) -> axum::response::Response {
    let limit = Duration::from_millis(shared.limits.request_timeout_ms);
    match tokio::time::timeout(limit, next.run(request)).await {
        Ok(response) => response,
        Err(_) => ApiError::new(
            ErrorCode::Timeout,
            format!("the request took longer than {} ms", limit.as_millis()),
        )
        .into_response(),
    }
}

/// The router and the OpenAPI document generated from it.
pub(crate) fn router(state: AppState) -> (axum::Router, OpenApi) {
    let limits = state.0.limits;
    let api = ApiRouter::new()
        .api_route(
            "/v1/openapi.json",
            get_with(openapi, |op| {
                op.id("openApi")
                    .summary("This document")
                    .description("The OpenAPI document of this API, as JSON; no token needed.")
                    .response_with::<200, Json<Value>, _>(|r| r.description("The document."))
            }),
        )
        .api_route(
            "/metrics",
            get_with(metrics, |op| {
                op.id("metrics")
                    .summary("Metrics")
                    .description("Runs by status, queue and stream counts, model calls and cost, in the Prometheus text format (`text/plain; version=0.0.4`); any tenant's token.")
                    .response_with::<200, String, _>(|r| r.description("The metrics, as Prometheus text."))
            }),
        )
        .api_route(
            "/v1/runs",
            post_with(submit, |op| {
                op.id("submitRun")
                    .tag("runs")
                    .summary("Submit a run")
                    .description("Records the run and queues it; returns its id at once (202). The run proceeds in the background, at most `max_running` at a time; watch it with `GET /v1/runs/{id}/events`.")
            })
            .get_with(list, |op| {
                op.id("listRuns")
                    .tag("runs")
                    .summary("List runs")
                    .description("The tenant's runs, newest first, optionally of one status, a page at a time (`cursor`).")
            }),
        )
        .api_route(
            "/v1/runs/{id}",
            get_with(get_run, |op| {
                op.id("getRun")
                    .tag("runs")
                    .summary("Get a run")
                    .description("Exactly what `stepwise show RUN --json` prints: seed 001's final_output (status, report, plan, step results, gaps, evidence, usage, history).")
            }),
        )
        .api_route(
            "/v1/runs/{id}/events",
            get_with(events::events, |op| {
                op.id("runEvents")
                    .tag("events")
                    .summary("A run's events")
                    .description("With `Accept: text/event-stream`: every event as it is recorded (SSE `id` = the event's `seq`), resumable with `Last-Event-ID` (or `after`), ending with an `end` event once the run has ended. Otherwise a JSON page of the log after `after`.")
            }),
        )
        .api_route(
            "/v1/runs/{id}/approvals",
            get_with(approvals, |op| {
                op.id("pendingApprovals")
                    .tag("approvals")
                    .summary("What a run waits for")
                    .description("The plan version under review and each side-effect step waiting for an approval, with its tool, resolved arguments and `args_hash`.")
            }),
        )
        .api_route(
            "/v1/runs/{id}/approve",
            post_with(approve, |op| {
                op.id("approveRun")
                    .tag("approvals")
                    .summary("Approve")
                    .description("Approves the plan version and/or steps named, each bound to the `args_hash` it asked with: a stale hash or version refuses the whole request (409 stale_approval). Resumes the run once nothing is left pending unless `resume` is false.")
            }),
        )
        .api_route(
            "/v1/runs/{id}/reject",
            post_with(reject, |op| {
                op.id("rejectRun")
                    .tag("approvals")
                    .summary("Refuse")
                    .description("Refuses everything the run waits for; it stops at needs_review (a resume asks again).")
            }),
        )
        .api_route(
            "/v1/runs/{id}/resume",
            post_with(resume, |op| {
                op.id("resumeRun")
                    .tag("runs")
                    .summary("Resume")
                    .description("Queues the run to go on from its log: after a crash, once a person acted, or with raised bounds. A run stopped for review with nothing changed is refused (409 unchanged).")
            }),
        )
        .api_route(
            "/v1/runs/{id}/cancel",
            post_with(cancel, |op| {
                op.id("cancelRun")
                    .tag("runs")
                    .summary("Cancel")
                    .description("Ends a run that has not ended. A running run is stopped at once (its in-flight steps abandoned) and records run_cancelled; the answer comes once it has.")
            }),
        );
    let mut doc = OpenApi {
        info: Info {
            title: "Stepwise API".to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            description: Some(
                "Submit, watch, approve, resume and cancel Stepwise runs. Every route needs `Authorization: Bearer TOKEN`; a token acts for its tenant only (another tenant's run is 404). Errors are `{\"error\": {\"code\", \"message\"}}` with a stable `code`.".to_owned(),
            ),
            ..Info::default()
        },
        ..OpenApi::default()
    };
    let router = api
        .finish_api_with(&mut doc, |t| {
            t.security_scheme(
                SCHEME,
                SecurityScheme::Http {
                    scheme: "bearer".to_owned(),
                    bearer_format: None,
                    description: Some(
                        "A token from the server's [[serve.tokens]], bound to a tenant.".to_owned(),
                    ),
                    extensions: Default::default(),
                },
            )
            .tag(Tag {
                name: "runs".to_owned(),
                description: Some("Runs: submit, list, get, resume, cancel.".to_owned()),
                ..Tag::default()
            })
            .tag(Tag {
                name: "events".to_owned(),
                description: Some("A run's event log, live.".to_owned()),
                ..Tag::default()
            })
            .tag(Tag {
                name: "approvals".to_owned(),
                description: Some("What a paused run waits for, and a person's answer.".to_owned()),
                ..Tag::default()
            })
        })
        .merge(crate::dashboard::routes())
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(limits.max_body_bytes))
        .layer(middleware::from_fn_with_state(state.clone(), time_limit))
        .with_state(state);
    (router, doc)
}
