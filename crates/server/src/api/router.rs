//! The router: every route with its OpenAPI description, the fallbacks
//! and the request time limit.

use std::time::Duration;

use aide::axum::ApiRouter;
use aide::axum::routing::{get_with, post_with};
use aide::openapi::{Info, OpenApi, SecurityScheme, Tag};
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::header::CONTENT_TYPE;
use axum::middleware::Next;
use axum::response::IntoResponse;
use axum::{Json, middleware};
use serde_json::Value;

use crate::auth::{SCHEME, Tenant};
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::events;

use super::approvals::{approvals, approve, reject};
use super::runs::{cancel, get_run, list, resume, stats, submit};
use crate::extract::AppState;

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
            "/v1/stats",
            get_with(stats, |op| {
                op.id("runStats")
                    .tag("runs")
                    .summary("Run health")
                    .description("What `stepwise stats --json` prints, over the tenant's runs: runs by status, the closed-loop rate (ok with no pause and no decision by a person), the recovered rate (ok after a pause or a crash) and what recovering took, duration mean and p95, model calls, tokens and replans per run; all, by strategy and by model.")
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
