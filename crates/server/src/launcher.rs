//! The border between the HTTP API and the run machinery: the server checks
//! what a client asked for (tenant, paths under the allowed roots, names it
//! configured), and a [`Launcher`] — `stepwise serve` implements it with the
//! same engine builder, store and leases as `stepwise run` and `stepwise
//! resume` — records runs and works on them. So a run the server started can
//! be resumed by the CLI, and the other way round.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use stepwise_core::{Constraints, EventSink, Lease, RunId, RunState, RunStatus, Usage};
use tokio::sync::watch;

use crate::approval::DeliveredApproval;
use crate::error::{ApiError, ErrorCode};

/// The key of `run_started.host` (and of the run's current host settings)
/// under which a launcher records the tenant that owns a run. A run without
/// it was started by something other than the server (`stepwise run`).
pub const TENANT_KEY: &str = "tenant";

/// The tenant recorded with a run, if any.
pub fn tenant_of(state: &RunState) -> Option<&str> {
    state.host.get(TENANT_KEY).and_then(Value::as_str)
}

/// How a run's side-effect steps (and, with review, its plans) get approved.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ApproveMode {
    /// The run pauses at `awaiting_approval` until a client approves
    /// (`POST /v1/runs/{id}/approve`).
    #[default]
    Never,
    /// Each is approved when it becomes ready, recorded as by `auto`.
    Auto,
}

/// A run to record, as the server checked it: every path resolved under an
/// allowed root, the model and tool set resolved from the server's names.
#[derive(Debug, Clone, PartialEq)]
pub struct NewRun {
    /// Its id (fresh).
    pub run_id: RunId,
    /// The tenant that owns it; record it under [`TENANT_KEY`].
    pub tenant: String,
    /// The goal, as given.
    pub goal: String,
    /// The notes folder (resolved, under a notes root).
    pub notes: PathBuf,
    /// The workspace `write_file` may write in (resolved, under the root).
    pub workspace: Option<PathBuf>,
    /// Constraints (no unknown keys).
    pub constraints: Constraints,
    /// A strategy name (not yet checked).
    pub strategy: String,
    /// The model spec the server's config maps the client's name to.
    pub model: String,
    /// The tool set the client named, with its MCP servers.
    pub tool_set: Option<(String, Vec<String>)>,
    /// How approvals are given.
    pub approve: ApproveMode,
    /// Whether the plan is reviewed before it runs.
    pub review: bool,
    /// A plan to run instead of planning.
    pub plan: Option<Value>,
    /// Whether an invalid given plan may be repaired.
    pub repair: bool,
    /// Steps in flight at once (bounded by the server).
    pub concurrency: usize,
}

/// What a person changes when resuming a run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resume {
    /// Who (the tenant), for the record.
    pub by: String,
    /// A new replan bound.
    pub max_replans: Option<u32>,
    /// A new step bound.
    pub max_steps: Option<usize>,
    /// The approval mode from here on (default: the one the run was started with).
    pub approve: Option<ApproveMode>,
}

/// Why a launcher must stop working on a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stop {
    /// A client cancelled it: stop at once and record `run_cancelled`.
    Cancel {
        /// Why (recorded).
        reason: String,
    },
    /// The server is shutting down: stop at the last checkpoint, record
    /// nothing, give the lease back. The next start resumes the run.
    Shutdown,
}

/// Tells a launcher when to stop working on a run.
#[derive(Debug, Clone)]
pub struct StopSignal(watch::Receiver<Option<Stop>>);

impl StopSignal {
    /// A signal and the sender that fires it.
    pub fn new() -> (watch::Sender<Option<Stop>>, StopSignal) {
        let (tx, rx) = watch::channel(None);
        (tx, StopSignal(rx))
    }

    /// Waits until it fires (a dropped sender counts as a shutdown).
    pub async fn stopped(&mut self) -> Stop {
        match self.0.wait_for(Option::is_some).await {
            Ok(stop) => stop.clone().unwrap_or(Stop::Shutdown),
            Err(_) => Stop::Shutdown,
        }
    }

    /// What it says now, if it fired.
    pub fn now(&self) -> Option<Stop> {
        self.0.borrow().clone()
    }
}

/// One piece of work: a run to start (from its recorded first event) or
/// continue.
pub struct Work {
    /// The run.
    pub run: RunId,
    /// `None`: start a freshly recorded run, or continue one the server was
    /// working on when it stopped; `Some`: a client's resume.
    pub resume: Option<Resume>,
    /// When to stop.
    pub stop: StopSignal,
    /// Add it after the store's sink: it tells the server's event streams
    /// and metrics what was recorded.
    pub sink: Arc<dyn EventSink>,
}

impl std::fmt::Debug for Work {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Work")
            .field("run", &self.run)
            .field("resume", &self.resume)
            .finish_non_exhaustive()
    }
}

/// Why a launcher refused or failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LaunchError {
    /// The request cannot be run as asked (a bad strategy, model, tool set,
    /// constraints, notes); `code` says which.
    #[error("{message}")]
    Invalid {
        /// The API's code for it.
        code: ErrorCode,
        /// For a person.
        message: String,
    },
    /// Another process holds the run's lease.
    #[error("run {run} is being worked on by {holder}; wait for it to finish or stop that process")]
    Leased {
        /// The run.
        run: String,
        /// Who holds it.
        holder: String,
    },
    /// The run stopped for review and nothing changed since.
    #[error("{hint}")]
    Unchanged {
        /// What would have to change.
        hint: String,
    },
    /// The run cannot be worked on here (not started by `stepwise run` or a server).
    #[error("{0}")]
    NotResumable(String),
    /// Anything else (the store, the engine).
    #[error("{0}")]
    Failed(String),
}

impl From<LaunchError> for ApiError {
    fn from(e: LaunchError) -> ApiError {
        match e {
            LaunchError::Invalid { code, message } => ApiError::new(code, message),
            e @ LaunchError::Leased { .. } => ApiError::new(ErrorCode::RunLeased, e.to_string()),
            LaunchError::Unchanged { hint } => ApiError::new(ErrorCode::Unchanged, hint),
            LaunchError::NotResumable(m) => ApiError::new(ErrorCode::NotResumable, m),
            LaunchError::Failed(m) => ApiError::new(ErrorCode::Internal, m),
        }
    }
}

/// The run machinery the server drives (see the module docs).
#[async_trait]
pub trait Launcher: Send + Sync + 'static {
    /// Checks a run against what this program can run (strategy, model,
    /// tool set, constraints, notes) and records its `run_started` event —
    /// with the tenant under [`TENANT_KEY`] — without working on it: the
    /// run then waits in the server's queue.
    async fn create(&self, run: NewRun) -> Result<(), LaunchError>;

    /// Whether a client's resume of this run would change anything (a run
    /// stopped for review resumes only if something changed).
    async fn check_resume(&self, state: &RunState, resume: &Resume) -> Result<(), LaunchError>;

    /// Works on a run, holding its lease, until it ends, pauses for a
    /// person, or `work.stop` fires; returns its status then.
    async fn work(&self, work: Work) -> Result<RunStatus, LaunchError>;

    /// Takes a run's lease for a change a person makes (approve, reject,
    /// cancel) while nobody works on it; a dead holder on this host is
    /// taken over.
    async fn lease(&self, run: &RunId) -> Result<Lease, LaunchError>;

    /// Gives a lease back.
    async fn release(&self, lease: &Lease);

    /// The run as `stepwise show RUN --json` prints it.
    fn output(&self, state: &RunState) -> Result<Value, LaunchError>;

    /// What `usage` cost on `model` (a model spec), if the program knows its price.
    fn cost(&self, model: &str, usage: &Usage) -> Option<f64>;

    /// Whether other processes work on this store's runs (`stepwise
    /// worker`s sharing a PostgreSQL queue) rather than this server: then a
    /// submit, an approve-with-resume and a resume are
    /// [enqueued](Launcher::enqueue), and a restart re-submits nothing.
    fn delegates(&self) -> bool {
        false
    }

    /// Hands a recorded run — or a client's resume of it, with its bounds —
    /// to the workers' queue. Only called when [`Launcher::delegates`].
    async fn enqueue(&self, run: &RunId, resume: Option<Resume>) -> Result<(), LaunchError> {
        let _ = resume;
        Err(LaunchError::Failed(format!(
            "run {run}: this server works on its runs itself; it has no workers' queue"
        )))
    }

    /// Asks the worker holding `run` to cancel it (recording `run_cancelled`
    /// itself, under its lease); returns that worker, or `None` if no
    /// worker has it. Only called when [`Launcher::delegates`].
    async fn request_cancel(
        &self,
        run: &RunId,
        reason: &str,
    ) -> Result<Option<String>, LaunchError> {
        let _ = (run, reason);
        Ok(None)
    }

    /// Hands a person's approval of a run that a worker is working on to
    /// that worker, which records it under its lease once the run's other
    /// steps are done and goes on; returns that worker, or `None` if no
    /// worker has the run. Only called when [`Launcher::delegates`].
    async fn deliver_approval(
        &self,
        run: &RunId,
        approval: &DeliveredApproval,
    ) -> Result<Option<String>, LaunchError> {
        let _ = (run, approval);
        Ok(None)
    }

    /// The runs waiting in the workers' queue that no worker holds now.
    async fn waiting(&self) -> Result<HashSet<RunId>, LaunchError> {
        Ok(HashSet::new())
    }
}
