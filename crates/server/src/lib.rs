//! # stepwise-server
//!
//! Stepwise's HTTP API, as a library: `stepwise serve` wires it to the same
//! store, engine builder and leases as the CLI through a [`Launcher`].
//!
//! - `POST /v1/runs` records a run and queues it (at most
//!   [`Limits::max_running`] are worked on at once; the rest wait,
//!   `queued`); `GET /v1/runs` lists a tenant's runs (by status, a page at
//!   a time); `GET /v1/runs/{id}` is exactly `stepwise show RUN --json`;
//!   `GET /v1/runs/{id}/events` is the log, as JSON or as a live
//!   `text/event-stream` resumable with `Last-Event-ID`;
//!   `GET /v1/runs/{id}/approvals`, `POST /v1/runs/{id}/approve` (bound to
//!   each step's argument hash), `/reject`, `/resume` and `/cancel` (which
//!   reaches a running run and stops it);
//! - `GET /v1/openapi.json`: the OpenAPI document, generated from the
//!   handlers' types (aide + schemars); `GET /metrics`: Prometheus text;
//! - every route needs a bearer token bound to a tenant ([`Auth`]); another
//!   tenant's run is a 404; errors are JSON with a stable [`ErrorCode`];
//! - a client names notes folders and workspaces only under the configured
//!   roots ([`paths`]), models and tool sets only by configured names;
//! - limits: body size, request time, runs at once, queue length, streams;
//!   on shutdown the runs in flight stop at their last checkpoint and are
//!   resumed when the server starts again.
//!
//! - `/`: the dashboard ([`dashboard`]), a page embedded in the binary that
//!   reads the same API with the same token.

mod act;
mod api;
mod approval;
mod auth;
mod config;
pub mod dashboard;
mod error;
mod events;
mod extract;
mod hub;
mod jobs;
mod launcher;
mod metrics;
pub mod paths;
mod types;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use axum::body::Bytes;
use stepwise_core::{RunId, RunState, RunStatus, Store};
use tokio::net::TcpListener;
use tokio::sync::watch;

pub use crate::act::{Pending, PendingStep};
pub use crate::api::{
    ApiStatus, ApproveRequest, Approved, CancelRequest, Links, ListQuery, RejectRequest, Rejected,
    ResumeRequest, RunItem, RunList, RunStatusBody, SubmitRun, Submitted,
};
pub use crate::approval::{DeliveredApproval, StepApproval};
pub use crate::auth::{Auth, AuthError, TOKENS_ENV};
pub use crate::config::{
    DEFAULT_LISTEN, LOCAL_TENANT, Limits, ServeConfig, TokenConfig, ToolSetConfig,
};
pub use crate::error::{ApiError, ErrorBody, ErrorCode, ErrorDetail};
pub use crate::events::{EventPage, EventsQuery};
pub use crate::launcher::{
    ApproveMode, LaunchError, Launcher, NewRun, Resume, Stop, StopSignal, TENANT_KEY, Work,
    tenant_of,
};
pub use crate::paths::{RootError, Roots};

use crate::api::AppState;
use crate::error::ApiResult;
use crate::hub::Hub;
use crate::jobs::{Jobs, Phase};
use crate::metrics::Metrics;

/// A listed run's strategy and cost (`None`: no price for its model).
type ListExtras = (String, Option<f64>);

/// Where the server's log lines go (`stepwise serve`: stderr).
pub type Log = Arc<dyn Fn(&str) + Send + Sync>;

/// Why the server could not start or serve.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// A root in `[serve]` cannot be used.
    #[error(transparent)]
    Root(#[from] RootError),
    /// `[serve]` makes no sense.
    #[error("{0}")]
    Config(String),
    /// Accepting connections failed.
    #[error("cannot serve: {0}")]
    Io(#[from] std::io::Error),
}

/// What every handler shares.
pub(crate) struct Shared {
    /// Reads, and the events a person's change appends.
    store: Arc<dyn Store>,
    launcher: Arc<dyn Launcher>,
    jobs: Arc<Jobs>,
    hub: Arc<Hub>,
    metrics: Arc<Metrics>,
    auth: Auth,
    roots: Roots,
    models: std::collections::BTreeMap<String, String>,
    default_model: String,
    tool_sets: std::collections::BTreeMap<String, ToolSetConfig>,
    cli_runs_tenant: Option<String>,
    limits: Limits,
    /// The tenant of each run seen so far (`None`: recorded without one).
    tenants: Mutex<HashMap<RunId, Option<String>>>,
    /// Approvals pending per run at rest, by the run's last seq.
    pending: Mutex<HashMap<RunId, (u64, u64)>>,
    /// The list's strategy and cost of each run, by the run's last seq.
    extras: Mutex<HashMap<RunId, (u64, ListExtras)>>,
    streams: AtomicUsize,
    /// Open event streams per tenant.
    tenant_streams: Mutex<HashMap<String, usize>>,
    shutdown: watch::Sender<bool>,
    openapi: OnceLock<Bytes>,
    log: Log,
}

impl Shared {
    /// Queues work on a run: in this server's own queue, or — when workers
    /// elsewhere work on the store's runs — in theirs.
    async fn submit(self: &Arc<Self>, run: RunId, resume: Option<Resume>) -> Result<(), ApiError> {
        if !self.launcher.delegates() {
            return self.jobs.submit(self, run, resume, jobs::Admit::Queue);
        }
        if self.jobs.is_closed() {
            return Err(jobs::shutting_down());
        }
        self.queue_room().await?;
        self.launcher.enqueue(&run, resume).await?;
        self.hub.notify(&run, 0);
        Ok(())
    }

    /// Holds a place in the queue for a run about to be recorded, so a
    /// submit past `max_queued` is refused before anything is written
    /// (`None` when workers elsewhere take the runs: their queue is checked).
    async fn reserve(self: &Arc<Self>) -> Result<Option<jobs::Slot>, ApiError> {
        if self.launcher.delegates() {
            if self.jobs.is_closed() {
                return Err(jobs::shutting_down());
            }
            self.queue_room().await?;
            return Ok(None);
        }
        self.jobs.reserve().map(Some)
    }

    /// Queues a run just recorded, in the place reserved for it.
    async fn submit_new(
        self: &Arc<Self>,
        run: RunId,
        slot: Option<jobs::Slot>,
    ) -> Result<(), ApiError> {
        match slot {
            Some(slot) => self
                .jobs
                .submit(self, run, None, jobs::Admit::Reserved(slot)),
            None => self.submit(run, None).await,
        }
    }

    /// On PostgreSQL, `max_queued` bounds the workers' queue as it bounds
    /// this server's: a submit is refused (`503 queue_full`) while that many
    /// runs wait for a worker. (`max_running` has no say there: each
    /// worker's `--concurrency` bounds what it works on.) Always room when
    /// this server works on its runs itself: its own queue counts then.
    pub(crate) async fn queue_room(&self) -> Result<(), ApiError> {
        if !self.launcher.delegates() {
            return Ok(());
        }
        let waiting = self.launcher.waiting().await?.len();
        if waiting >= self.limits.max_queued {
            return Err(ApiError::new(
                ErrorCode::QueueFull,
                format!(
                    "{waiting} runs are already waiting for a worker (max_queued); try again later"
                ),
            ));
        }
        Ok(())
    }

    /// Asks the worker holding `run` to cancel it and waits (up to 30 s)
    /// until the run ended; `leased` is the answer if no worker has it.
    async fn cancel_by_worker(
        &self,
        run: &RunId,
        reason: &str,
        leased: ApiError,
    ) -> Result<RunStatus, ApiError> {
        let Some(worker) = self.launcher.request_cancel(run, reason).await? else {
            return Err(leased);
        };
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            let state = self.store.state(run).await.map_err(ApiError::from)?;
            if state.status.has_ended() {
                return Ok(state.status);
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(ApiError::new(
                    ErrorCode::Timeout,
                    format!(
                        "run {run}: worker {worker} was asked to cancel it and has not within 30 s"
                    ),
                ));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The runs waiting in the workers' queue (empty when this server
    /// works on its runs itself).
    async fn waiting(&self) -> HashSet<RunId> {
        if !self.launcher.delegates() {
            return HashSet::new();
        }
        match self.launcher.waiting().await {
            Ok(waiting) => waiting,
            Err(e) => {
                (self.log)(&format!("cannot read the workers' queue: {e}"));
                HashSet::new()
            }
        }
    }

    /// Where `run` stands: in this server, or waiting in the workers' queue.
    async fn phase(&self, run: &RunId) -> Option<Phase> {
        match self.jobs.phase(run) {
            Some(phase) => Some(phase),
            None => self.waiting().await.contains(run).then_some(Phase::Queued),
        }
    }

    /// Whether `tenant` owns a run recorded with `owner`.
    fn owns(&self, tenant: &auth::Tenant, owner: Option<&str>) -> bool {
        match owner {
            Some(owner) => owner == tenant.0,
            None => self.cli_runs_tenant.as_deref() == Some(tenant.0.as_str()),
        }
    }

    fn remember(&self, run: &RunId, owner: Option<String>) {
        self.tenants
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(run.clone(), owner);
    }

    /// A run the tenant may see, or the same 404 as a run that does not exist.
    async fn owned(&self, tenant: &auth::Tenant, id: &str) -> ApiResult<RunState> {
        let run = RunId(id.to_owned());
        let state = self.store.state(&run).await.map_err(ApiError::from)?;
        let owner = tenant_of(&state).map(str::to_owned);
        let mine = self.owns(tenant, owner.as_deref());
        self.remember(&run, owner);
        if mine {
            Ok(state)
        } else {
            Err(ApiError::run_not_found(id))
        }
    }

    /// Whether the tenant owns `run` (its tenant read once, then cached).
    async fn owns_run(&self, tenant: &auth::Tenant, run: &RunId) -> bool {
        let cached = self
            .tenants
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(run)
            .cloned();
        let owner = match cached {
            Some(owner) => owner,
            None => match self.recorded_tenant(run).await {
                Some(owner) => {
                    self.remember(run, owner.clone());
                    owner
                }
                None => return false,
            },
        };
        self.owns(tenant, owner.as_deref())
    }

    /// The tenant recorded in a run's first event (`None` inside: none on
    /// record), read without loading the run; `None`: unreadable.
    async fn recorded_tenant(&self, run: &RunId) -> Option<Option<String>> {
        let first = self.store.events_since(run, 0, 1).await.ok()?;
        match first.first().map(|e| &e.kind) {
            Some(stepwise_core::EventKind::RunStarted { host, .. }) => Some(
                host.get(TENANT_KEY)
                    .and_then(serde_json::Value::as_str)
                    .map(str::to_owned),
            ),
            _ => None,
        }
    }

    /// The model spec a client's model name stands for.
    fn model(&self, name: Option<&str>) -> ApiResult<String> {
        let name = name.unwrap_or(&self.default_model);
        if name == "offline" {
            return Ok("offline".to_owned());
        }
        self.models.get(name).cloned().ok_or_else(|| {
            let mut names: Vec<&str> = self.models.keys().map(String::as_str).collect();
            names.insert(0, "offline");
            ApiError::new(
                ErrorCode::UnknownModel,
                format!(
                    "this server has no model named {name:?}; it has: {}",
                    names.join(", ")
                ),
            )
        })
    }

    /// The tool set a client's name stands for.
    fn tool_set(&self, name: &str) -> ApiResult<(String, Vec<String>)> {
        self.tool_sets
            .get(name)
            .map(|t| (name.to_owned(), t.mcp.clone()))
            .ok_or_else(|| {
                let names: Vec<&str> = self.tool_sets.keys().map(String::as_str).collect();
                ApiError::new(
                    ErrorCode::UnknownToolSet,
                    if names.is_empty() {
                        format!("this server has no tool sets (asked for {name:?})")
                    } else {
                        format!(
                            "this server has no tool set named {name:?}; it has: {}",
                            names.join(", ")
                        )
                    },
                )
            })
    }

    /// A listed run's strategy and cost: read from its output (the same
    /// `cost` as `GET /v1/runs/{id}`), once per change of the run.
    async fn list_extras(&self, run: &RunId, last_seq: u64) -> ListExtras {
        let cached = self
            .extras
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(run)
            .filter(|(seq, _)| *seq == last_seq)
            .map(|(_, extras)| extras.clone());
        if let Some(extras) = cached {
            return extras;
        }
        let Ok(state) = self.store.state(run).await else {
            return (String::new(), None);
        };
        let cost = self.launcher.output(&state).ok().and_then(|output| {
            output
                .pointer("/cost/usd")
                .and_then(serde_json::Value::as_f64)
        });
        let extras = (state.strategy.clone(), cost);
        self.extras
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(run.clone(), (last_seq, extras.clone()));
        extras
    }

    /// The text of `/metrics`.
    async fn metrics_text(&self) -> ApiResult<String> {
        let summaries = self
            .store
            .list_runs()
            .await
            .map_err(|e| ApiError::internal(&e.to_string()))?;
        let (mut queued, working) = self.jobs.counts();
        // Runs waiting in the workers' queue count as queued, not running.
        let waiting = self.waiting().await;
        queued += summaries
            .iter()
            .filter(|s| s.status == RunStatus::Running && waiting.contains(&s.run_id))
            .count() as u64;
        let mut snapshot = metrics::Snapshot {
            streams: self.streams.load(std::sync::atomic::Ordering::SeqCst) as u64,
            working,
            ..Default::default()
        };
        snapshot.runs.insert("queued", queued);
        let mut awaiting = Vec::new();
        for s in &summaries {
            *snapshot.runs.entry(s.status.as_str()).or_insert(0) += 1;
            if s.status == RunStatus::AwaitingApproval {
                awaiting.push((s.run_id.clone(), s.last_seq));
            }
        }
        if let Some(running) = snapshot.runs.get_mut("running") {
            *running = running.saturating_sub(queued);
        }
        for (run, last_seq) in awaiting {
            let cached = self
                .pending
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get(&run)
                .copied();
            let n = match cached {
                Some((seq, n)) if seq == last_seq => n,
                _ => match self.store.state(&run).await {
                    Ok(state) => {
                        let n = state.pending_approvals.len() as u64
                            + u64::from(state.pending_review.is_some());
                        self.pending
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .insert(run, (last_seq, n));
                        n
                    }
                    Err(_) => 0,
                },
            };
            snapshot.approvals_pending += n;
        }
        let launcher = Arc::clone(&self.launcher);
        Ok(self
            .metrics
            .render(&snapshot, &move |model, usage| launcher.cost(model, usage)))
    }
}

/// What a [`Server`] is built from.
pub struct ServerOptions {
    /// The run database, for reads and for the events a person's change
    /// appends (a second connection to the launcher's database is best: reads
    /// then never wait for a run's write).
    pub store: Arc<dyn Store>,
    /// The run machinery.
    pub launcher: Arc<dyn Launcher>,
    /// `[serve]`.
    pub config: ServeConfig,
    /// Who may call it.
    pub auth: Auth,
    /// Where log lines go.
    pub log: Log,
}

impl std::fmt::Debug for ServerOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerOptions")
            .field("config", &self.config)
            .field("auth", &self.auth)
            .finish_non_exhaustive()
    }
}

/// The HTTP API over a store and a launcher.
pub struct Server {
    shared: Arc<Shared>,
    router: axum::Router,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server").finish_non_exhaustive()
    }
}

impl Server {
    /// Checks `[serve]` (the roots must exist) and builds the routes and
    /// their OpenAPI document.
    pub fn new(options: ServerOptions) -> Result<Server, ServerError> {
        let ServerOptions {
            store,
            launcher,
            config,
            auth,
            log,
        } = options;
        if let Some(problem) = config.limits.problem() {
            return Err(ServerError::Config(problem.to_owned()));
        }
        let default_model = config
            .default_model
            .clone()
            .unwrap_or_else(|| "offline".to_owned());
        if default_model != "offline" && !config.models.contains_key(&default_model) {
            return Err(ServerError::Config(format!(
                "[serve] default_model {default_model:?} is not in [serve.models]"
            )));
        }
        let roots = Roots::new(&config.notes_roots, config.workspace_root.as_deref())?;
        let cli_runs_tenant = config
            .cli_runs_tenant
            .clone()
            .or_else(|| auth.is_none().then(|| LOCAL_TENANT.to_owned()));
        let shared = Arc::new(Shared {
            store,
            launcher,
            jobs: Arc::new(Jobs::new(
                config.limits.max_running,
                config.limits.max_queued,
            )),
            hub: Arc::new(Hub::default()),
            metrics: Arc::new(Metrics::default()),
            auth,
            roots,
            models: config.models,
            default_model,
            tool_sets: config.tool_sets,
            cli_runs_tenant,
            limits: config.limits,
            tenants: Mutex::new(HashMap::new()),
            pending: Mutex::new(HashMap::new()),
            extras: Mutex::new(HashMap::new()),
            streams: AtomicUsize::new(0),
            tenant_streams: Mutex::new(HashMap::new()),
            shutdown: watch::channel(false).0,
            openapi: OnceLock::new(),
            log,
        });
        let (router, doc) = api::router(AppState(Arc::clone(&shared)));
        let json = serde_json::to_vec_pretty(&doc)
            .map_err(|e| ServerError::Config(format!("cannot encode the OpenAPI document: {e}")))?;
        let _ = shared.openapi.set(Bytes::from(json));
        Ok(Server { shared, router })
    }

    /// The routes (e.g. to merge a dashboard into before serving).
    pub fn router(&self) -> axum::Router {
        self.router.clone()
    }

    /// The OpenAPI document, as JSON.
    pub fn openapi_json(&self) -> Bytes {
        self.shared.openapi.get().cloned().unwrap_or_default()
    }

    /// Queues every run a server was working on when it stopped (status
    /// `running`, a tenant on record) and that no live process holds;
    /// returns how many were queued.
    pub async fn recover(&self) -> usize {
        if self.shared.launcher.delegates() {
            return 0; // the workers own them: an orphan's lease runs out and one claims it
        }
        let Ok(summaries) = self.shared.store.list_runs().await else {
            return 0;
        };
        let mut queued = 0;
        for s in summaries.iter().rev() {
            if s.status != RunStatus::Running {
                continue;
            }
            let Some(owner) = self.shared.recorded_tenant(&s.run_id).await else {
                continue;
            };
            if owner.is_none() {
                continue; // a `stepwise run` of its own
            }
            self.shared.remember(&s.run_id, owner);
            if self
                .shared
                .jobs
                .submit(&self.shared, s.run_id.clone(), None, jobs::Admit::Recovered)
                .is_ok()
            {
                queued += 1;
            }
        }
        if queued > 0 {
            (self.shared.log)(&format!(
                "resuming {queued} run(s) that were in flight when the server last stopped"
            ));
        }
        queued
    }

    /// Serves on `listener` until `shutdown` resolves: then refuses new
    /// work, ends the event streams, tells every run to stop at its last
    /// checkpoint, and waits for them (up to `shutdown_grace_ms`).
    pub async fn serve(
        self,
        listener: TcpListener,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServerError> {
        self.recover().await;
        let shared = Arc::clone(&self.shared);
        let (stopping_tx, stopping) = tokio::sync::oneshot::channel::<()>();
        let signal = {
            let shared = Arc::clone(&shared);
            async move {
                shutdown.await;
                (shared.log)("shutting down: stopping runs at their last checkpoint");
                let _ = shared.shutdown.send(true);
                let _ = stopping_tx.send(());
            }
        };
        let jobs = Arc::clone(&shared.jobs);
        let grace = Duration::from_millis(shared.limits.shutdown_grace_ms);
        let drain = async move {
            if stopping.await.is_ok() {
                jobs.shutdown(grace).await
            } else {
                0
            }
        };
        let header_timeout = Duration::from_millis(shared.limits.header_read_timeout_ms);
        let serving = accept(listener, self.router, header_timeout, signal);
        let (served, left) = tokio::join!(serving, drain);
        if left > 0 {
            (shared.log)(&format!(
                "{left} run(s) did not stop within the grace period; their leases run out by themselves"
            ));
        }
        served.map_err(ServerError::Io)
    }
}

/// Serves HTTP/1 connections from `listener` until `signal` resolves, then
/// lets the requests in flight finish. A connection that has not sent a
/// request's whole head within `header_timeout` is closed (hyper's header
/// read timeout, which `axum::serve` leaves unset), so half-open clients
/// cannot hold the server's sockets.
async fn accept(
    listener: TcpListener,
    router: axum::Router,
    header_timeout: Duration,
    signal: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    use hyper_util::rt::{TokioIo, TokioTimer};
    use hyper_util::server::graceful::GracefulShutdown;
    use hyper_util::service::TowerToHyperService;

    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(Some(header_timeout));
    let graceful = GracefulShutdown::new();
    let mut signal = std::pin::pin!(signal);
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                // Out of file descriptors and the like: wait, then go on.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut signal => break,
        };
        let service = TowerToHyperService::new(router.clone());
        let connection = http.serve_connection(TokioIo::new(stream), service);
        let watched = graceful.watch(connection);
        tokio::spawn(async move {
            // A connection's own error (a client gone, a head too slow)
            // ends that connection only.
            let _ = watched.await;
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}
