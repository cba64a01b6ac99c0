//! The request and response bodies of the `/v1` routes, as the OpenAPI
//! document shows them.

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use stepwise_core::{Constraints, RunStatus};

use crate::act::Pending;
use crate::approval::StepApproval;
use crate::jobs::Phase;
use crate::launcher::ApproveMode;

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
