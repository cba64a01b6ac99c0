//! `stepwise serve`: the HTTP API of `stepwise-server` over this run
//! database. Its runs are worked on by the same machinery as `stepwise run`
//! and `stepwise resume` — the one [`EngineBuilder`], the store's sink fenced
//! by the run's lease, the idempotency log, the settings recorded in
//! `run_started.host` — so a run the server started can be resumed by the
//! CLI and a run the CLI started can be resumed by the server.
//!
//! The server records a run's first event when it accepts it and works on
//! it once a slot is free ([`Engine::start_recorded`]); it records the
//! tenant (and the approval mode) beside the CLI's settings in the host
//! JSON, which the CLI keeps as it is when it resumes the run. On
//! PostgreSQL it works on nothing itself: it puts the run in the workers'
//! queue, and a `stepwise worker` picks it up the same way
//! ([`crate::cmd::pickup`]).

use std::collections::{BTreeMap, HashSet};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::anyhow;
use async_trait::async_trait;
use serde_json::Value;
use stepwise_core::engine::{ResumeOptions, what_changed};
use stepwise_core::{
    Event, EventKind, EventSink, Lease, RunId, RunState, RunStatus, StoreError, StoreSink, Usage,
};
use stepwise_server::{
    Auth, DEFAULT_LISTEN, DeliveredApproval, ErrorCode, LaunchError, Launcher, NewRun, Resume,
    Server, ServerOptions, Stop, TENANT_KEY, Work,
};
use stepwise_store::PgStore;
use stepwise_tools::notes::LoadedCorpus;

use crate::cli::{ApproveMode, ServeArgs};
use crate::cmd::pickup::{self, APPROVE_KEY, Pickup, Recorded};
use crate::cmd::wiring::Wiring;
use crate::config::Config;
use crate::db::{self, LEASE_TTL_MS};
use crate::error::{CliError, CliResult};
use crate::output;
use crate::render::usage::priced_output_with;
use crate::session::{self, EngineBuilder, Host};

/// `stepwise serve [--listen ADDR] [--insecure-no-auth]`.
pub(crate) fn serve(args: &ServeArgs, db_flag: Option<&PathBuf>) -> CliResult {
    let cwd = std::env::current_dir()
        .map_err(|e| CliError::usage(anyhow!("cannot read the current directory: {e}")))?;
    let config = Config::load(&cwd)?;
    let mut serve = config.serve().cloned().unwrap_or_default();
    // Roots are relative to the folder stepwise.toml is read from.
    for root in &mut serve.notes_roots {
        *root = cwd.join(&*root);
    }
    if let Some(root) = &mut serve.workspace_root {
        *root = cwd.join(&*root);
    }
    let configured = config.mcp_servers(&[], &cwd)?;
    for (name, set) in &serve.tool_sets {
        if let Some(missing) = set.mcp.iter().find(|s| !configured.contains_key(*s)) {
            return Err(CliError::usage(anyhow!(
                "[serve.tool_sets.{name}] names MCP server {missing:?}, which [mcp.servers] does not configure"
            )));
        }
    }
    let listen = args
        .listen
        .clone()
        .or_else(|| serve.listen.clone())
        .unwrap_or_else(|| DEFAULT_LISTEN.to_owned());
    let addr: SocketAddr = listen.parse().map_err(|_| {
        CliError::usage(anyhow!(
            "--listen {listen}: expected an address and port, e.g. 127.0.0.1:8472"
        ))
    })?;
    let auth = if args.insecure_no_auth {
        if !addr.ip().is_loopback() {
            return Err(CliError::usage(anyhow!(
                "--insecure-no-auth only works on a loopback address (127.0.0.1 or ::1), not {addr}: anyone who can reach it could act on every run"
            )));
        }
        Auth::none()
    } else {
        Auth::from_config(&serve.tokens, |var| std::env::var(var).ok())
            .map_err(|e| CliError::usage(anyhow!("{e}")))?
    };
    let store = db::open(db_flag)?;
    // Reads (and a person's changes) on a connection of their own.
    let reads = db::open(db_flag)?;
    // On PostgreSQL, `stepwise worker`s work on the runs: the server queues them.
    let queue = match db::url(db_flag) {
        Some(url) => Some(db::open_postgres(&url)?),
        None => None,
    };
    if let Some(queue) = &queue {
        // Otherwise a server with no worker looks as if it never starts a run.
        output::note(&format!(
            "runs are queued in {} for `stepwise worker`s (start at least one); at most {} wait (max_queued), and max_running does not apply",
            queue.name(),
            serve.limits.max_queued
        ));
    }
    let launcher = Arc::new(ServeLauncher {
        store,
        queue,
        config,
        cwd,
    });
    let log: stepwise_server::Log = Arc::new(|line: &str| output::note(line));
    let insecure = auth.is_none();
    let server = Server::new(ServerOptions {
        store: reads,
        launcher,
        config: serve,
        auth,
        log,
    })
    .map_err(|e| CliError::usage(anyhow!("[serve]: {e}")))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::failed(anyhow!("cannot start the async runtime: {e}")))?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| CliError::usage(anyhow!("cannot listen on {addr}: {e}")))?;
        let local = listener
            .local_addr()
            .map_err(|e| CliError::failed(anyhow!("cannot read the address listened on: {e}")))?;
        if insecure {
            output::note(&format!(
                "WARNING: --insecure-no-auth: every request to http://{local} acts on every run, with no token; use it on this machine only"
            ));
        }
        output::stdout(&format!("stepwise serve: listening on http://{local}\n"))?;
        server
            .serve(listener, crate::mcp::interrupt())
            .await
            .map_err(|e| CliError::failed(anyhow!("{e}")))
    })
}

/// The CLI's run machinery, for the server.
struct ServeLauncher {
    /// The engines' store (a second connection serves the API's reads).
    store: db::Db,
    /// The workers' queue, on PostgreSQL: runs are put there, not worked on here.
    queue: Option<Arc<PgStore>>,
    config: Config,
    cwd: PathBuf,
}

fn invalid(code: ErrorCode, message: impl std::fmt::Display) -> LaunchError {
    LaunchError::Invalid {
        code,
        message: message.to_string(),
    }
}

fn failed(e: impl std::fmt::Display) -> LaunchError {
    LaunchError::Failed(e.to_string())
}

/// Loads a run's notes off the async threads.
async fn notes(dir: &Path) -> Result<LoadedCorpus, LaunchError> {
    let dir = dir.to_path_buf();
    tokio::task::spawn_blocking(move || session::load_notes(&dir, true))
        .await
        .map_err(failed)?
        .map_err(|e| invalid(ErrorCode::NotesUnavailable, format!("{e:#}")))
}

impl ServeLauncher {
    /// The MCP servers of a tool set, as `stepwise.toml` configures them.
    fn tool_set(
        &self,
        name: &str,
        servers: &[String],
    ) -> Result<BTreeMap<String, crate::mcp::ServerConfig>, LaunchError> {
        let configured = self
            .config
            .mcp_servers(&[], &self.cwd)
            .map_err(|e| invalid(ErrorCode::UnknownToolSet, format!("{e:#}")))?;
        servers
            .iter()
            .map(|server| {
                configured
                    .get(server)
                    .map(|c| (server.clone(), c.clone()))
                    .ok_or_else(|| {
                        invalid(
                            ErrorCode::UnknownToolSet,
                            format!(
                                "tool set {name:?} names MCP server {server:?}, which stepwise.toml does not configure"
                            ),
                        )
                    })
            })
            .collect()
    }

    /// Records `run_cancelled` (fenced by `lease`) unless the run ended.
    async fn record_cancel(
        &self,
        run: &RunId,
        lease: &Lease,
        reason: String,
        sink: &dyn EventSink,
    ) -> Result<RunStatus, LaunchError> {
        let state = self.store.state(run).await.map_err(failed)?;
        if state.status.has_ended() {
            return Ok(state.status);
        }
        let events = state.next_events([EventKind::RunCancelled { reason }]);
        self.store
            .append(run, &events, Some(lease.fence))
            .await
            .map_err(failed)?;
        let _ = sink.record_all(run, &events).await;
        Ok(RunStatus::Cancelled)
    }

    /// [`Launcher::work`] once the lease is held.
    async fn work_leased(&self, lease: &Lease, work: Work) -> Result<RunStatus, LaunchError> {
        let Work {
            run,
            resume,
            mut stop,
            sink,
        } = work;
        let state = self.store.state(&run).await.map_err(failed)?;
        if state.status.has_ended() {
            return Ok(state.status);
        }
        if let Some(Stop::Cancel { reason }) = stop.now() {
            return self.record_cancel(&run, lease, reason, sink.as_ref()).await;
        }
        let host = Host::of(&state).map_err(|e| LaunchError::NotResumable(format!("{e:#}")))?;
        let loaded = notes(&host.notes).await?;
        let approve = pickup::approve_mode(&state, resume.as_ref().and_then(|r| r.approve));
        let options = match pickup::pickup(&state, &host, &loaded, resume, "stepwise serve") {
            Pickup::Start => None,
            Pickup::Resume(options) => Some(options),
            Pickup::Unchanged => return Ok(RunStatus::NeedsReview), // it would only repeat itself
        };
        let wired = Wiring {
            config: &self.config,
            cwd: &self.cwd,
            host: &host,
            corpus: Arc::new(loaded.corpus),
            approve,
            mcp_log: crate::mcp::log_path(self.store.file(), run.as_str()),
            shared: None,
            idempotency: Arc::clone(&self.store) as _,
            sinks: vec![
                Arc::new(StoreSink::new(
                    Arc::clone(&self.store) as _,
                    Some(lease.fence),
                )),
                Arc::clone(&sink),
            ],
        }
        .wire(&run, &state.execution_history)
        .await
        .map_err(|e| failed(format!("{e:#}")))?;
        let renewal = db::keep_renewed(&self.store, lease);
        let driving = Box::pin(wired.drive(state, options));
        let outcome = {
            let mut driving = driving;
            tokio::select! {
                done = &mut driving => Ok(done),
                stop = stop.stopped() => {
                    // Dropping the run abandons its steps in flight; every
                    // transition so far is on record.
                    drop(driving);
                    Err(stop)
                }
            }
        };
        renewal.abort();
        wired.shutdown().await;
        match outcome {
            Ok(Ok(state)) => Ok(state.status),
            Ok(Err(e)) => Err(failed(e)),
            Err(Stop::Cancel { reason }) => {
                self.record_cancel(&run, lease, reason, sink.as_ref()).await
            }
            Err(Stop::Shutdown) => Ok(RunStatus::Running),
        }
    }
}

#[async_trait]
impl Launcher for ServeLauncher {
    async fn create(&self, run: NewRun) -> Result<(), LaunchError> {
        let strategy =
            session::strategy(&run.strategy).map_err(|e| invalid(ErrorCode::UnknownStrategy, e))?;
        let mcp = match &run.tool_set {
            None => BTreeMap::new(),
            Some((name, servers)) => self.tool_set(name, servers)?,
        };
        // A bad spec or a missing key fails here, before anything is
        // recorded; so does a role's own model (`[roles.NAME]`, as for `run`).
        let unusable = |e: CliError| invalid(ErrorCode::UnknownModel, e.to_string());
        self.config.model(&run.model, &self.cwd).map_err(unusable)?;
        let mut role_models = self.config.role_models();
        for spec in role_models.values_mut() {
            if let Some(file) = spec.strip_prefix("script:") {
                *spec = format!("script:{}", self.cwd.join(file).display());
            }
            self.config.model(spec, &self.cwd).map_err(unusable)?;
        }
        // The settings `stepwise run` records, each absent one at its default.
        let mut host: Host = serde_json::from_value(serde_json::json!({
            "notes": run.notes,
            "workspace": run.workspace,
            "concurrency": run.concurrency,
            "plan": run.plan,
            "review": run.review,
            "repair": run.repair,
            "model": run.model,
            "role_models": role_models,
            "mcp": mcp,
        }))
        .map_err(failed)?;
        host.strategy = strategy.name().to_owned();
        crate::cmd::run::check_allowed_tools(&run.constraints, &host)
            .map_err(|e| invalid(ErrorCode::InvalidConstraints, e))?;
        crate::cmd::run::check_plan_tools(run.plan.as_ref(), &host)
            .map_err(|e| invalid(ErrorCode::InvalidRequest, e))?;
        let loaded = notes(&host.notes).await?;
        host.notes_fingerprint = Some(loaded.fingerprint());
        let mut host_json = serde_json::to_value(&host).map_err(failed)?;
        if let Value::Object(map) = &mut host_json {
            map.insert(TENANT_KEY.to_owned(), Value::String(run.tenant));
            map.insert(
                APPROVE_KEY.to_owned(),
                serde_json::to_value(run.approve).map_err(failed)?,
            );
        }
        let engine = EngineBuilder::for_run(
            &self.config,
            &host,
            Arc::new(loaded.corpus),
            ApproveMode::Never,
            &self.cwd,
        )
        .and_then(EngineBuilder::build)
        .map_err(|e| failed(format!("{e:#}")))?;
        let event = Event {
            seq: 1,
            at: chrono::Utc::now(),
            kind: engine.started_event(run.run_id.clone(), &run.goal, run.constraints, host_json),
        };
        self.store
            .append(&run.run_id, &[event], None)
            .await
            .map_err(failed)
    }

    async fn check_resume(&self, state: &RunState, resume: &Resume) -> Result<(), LaunchError> {
        let host = Host::of(state).map_err(|e| LaunchError::NotResumable(format!("{e:#}")))?;
        if state.status != RunStatus::NeedsReview {
            return Ok(());
        }
        let loaded = notes(&host.notes).await?;
        let (changed, new_host) = crate::host::host_changes(state, &host, &loaded);
        let options = ResumeOptions {
            by: resume.by.clone(),
            max_replans: resume.max_replans,
            max_steps: resume.max_steps,
            // The only change the host sees is its notes.
            sources_changed: !changed.is_empty(),
            changed,
            host: new_host,
        };
        if what_changed(state, &options).is_empty() {
            return Err(LaunchError::Unchanged {
                hint: format!(
                    "nothing changed since run {} stopped for review, so resuming it would only repeat itself: raise max_replans (now {}) or max_steps (now {}), or change its notes; or cancel it",
                    state.run_id, state.max_replans, state.max_steps
                ),
            });
        }
        Ok(())
    }

    async fn work(&self, work: Work) -> Result<RunStatus, LaunchError> {
        let lease = self.lease(&work.run).await?;
        let result = self.work_leased(&lease, work).await;
        self.release(&lease).await;
        result
    }

    async fn lease(&self, run: &RunId) -> Result<Lease, LaunchError> {
        let holder = db::holder();
        match self.store.acquire(run, &holder, LEASE_TTL_MS).await {
            Ok(lease) => Ok(lease),
            Err(StoreError::Leased { holder: other, .. }) if db::holder_is_dead(&other) => {
                self.store.break_lease(run, &other).await.map_err(failed)?;
                self.store
                    .acquire(run, &holder, LEASE_TTL_MS)
                    .await
                    .map_err(|e| lease_error(run, e))
            }
            Err(e) => Err(lease_error(run, e)),
        }
    }

    async fn release(&self, lease: &Lease) {
        let _ = self.store.release(lease).await;
    }

    fn output(&self, state: &RunState) -> Result<Value, LaunchError> {
        let price = Host::of(state)
            .ok()
            .and_then(|h| self.config.price(&h.model).map(|p| (h.model, p)));
        priced_output_with(state, price).map_err(|e| failed(format!("{e:#}")))
    }

    fn cost(&self, model: &str, usage: &Usage) -> Option<f64> {
        self.config.price(model).map(|p| p.cost(usage))
    }

    fn delegates(&self) -> bool {
        self.queue.is_some()
    }

    async fn enqueue(&self, run: &RunId, resume: Option<Resume>) -> Result<(), LaunchError> {
        let Some(queue) = &self.queue else {
            return Err(failed(
                "this server has no workers' queue (not on PostgreSQL)",
            ));
        };
        let spec = Recorded {
            resume: resume.map(Into::into),
        };
        let spec = serde_json::to_value(spec).map_err(failed)?;
        let queued = queue
            .requeue(run, &spec)
            .await
            .map_err(|e| lease_error(run, e))?;
        if !queued {
            return Err(invalid(
                ErrorCode::RunBusy,
                format!(
                    "run {run} is already waiting in the workers' queue; a worker will take it"
                ),
            ));
        }
        Ok(())
    }

    async fn request_cancel(
        &self,
        run: &RunId,
        reason: &str,
    ) -> Result<Option<String>, LaunchError> {
        match &self.queue {
            Some(queue) => queue.request_cancel(run, reason).await.map_err(failed),
            None => Ok(None),
        }
    }

    async fn deliver_approval(
        &self,
        run: &RunId,
        approval: &DeliveredApproval,
    ) -> Result<Option<String>, LaunchError> {
        let Some(queue) = &self.queue else {
            return Ok(None);
        };
        let approval = serde_json::to_value(approval).map_err(failed)?;
        queue.deliver_approval(run, &approval).await.map_err(failed)
    }

    async fn waiting(&self) -> Result<HashSet<RunId>, LaunchError> {
        let Some(queue) = &self.queue else {
            return Ok(HashSet::new());
        };
        Ok(queue.waiting().await.map_err(failed)?.into_iter().collect())
    }
}

fn lease_error(run: &RunId, e: StoreError) -> LaunchError {
    match e {
        StoreError::Leased { holder, .. } => LaunchError::Leased {
            run: run.to_string(),
            holder,
        },
        other => failed(other),
    }
}
