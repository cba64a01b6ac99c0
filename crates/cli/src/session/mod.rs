//! What `run`, `resume`, `replay` and `bench` share: the settings a run
//! records so another process can rebuild it ([`Host`]), the one
//! [`EngineBuilder`] that wires roles, tools and strategy for all four, and
//! the [`Session`] that holds a run's lease while it is worked on, with live
//! progress.

mod approvers;
mod builder;
mod corpus;
mod recorded;
mod roles;
mod slowed;

pub(crate) use crate::host::{Host, available_tools, from_mcp, needs};
pub(crate) use builder::EngineBuilder;
pub(crate) use corpus::{load_corpus, load_notes, note_skipped};
pub(crate) use roles::strategy;

use std::sync::Arc;

use anyhow::{Context, anyhow};
use stepwise_core::event::ChannelSink;
use stepwise_core::{ChatModel, Engine, EngineError, Lease, RunState, StoreSink};
use stepwise_tools::notes::Corpus;

use crate::cli::ApproveMode;
use crate::config::{Config, ModelChoice};

use crate::db::{self, Db};
use crate::error::{CliError, CliResult};
use crate::progress::{Mode, Progress};

/// A run being worked on: the engine, what it writes to, and the MCP
/// servers its tools call (stopped when the work ends).
pub(crate) struct Session {
    pub(crate) engine: Engine,
    pub(crate) store: Db,
    pub(crate) lease: Lease,
    events: tokio::sync::mpsc::UnboundedReceiver<stepwise_core::Event>,
    mcp: crate::mcp::McpServers,
    /// Time spent before the run (loading the notes), counted in its reported time.
    before: std::time::Duration,
}

impl Session {
    /// Builds the engine for a run over its loaded `corpus` (the model from
    /// the run's settings, `stepwise.toml` and the environment) and takes
    /// its lease.
    pub(crate) async fn open(
        store: Db,
        run: &stepwise_core::RunId,
        host: &Host,
        corpus: Arc<Corpus>,
        approve: ApproveMode,
    ) -> CliResult<Session> {
        let cwd = std::env::current_dir().context("cannot read the current directory")?;
        let config = Config::load(&cwd)?;
        let engine = EngineBuilder::for_run(&config, host, corpus, approve, &cwd)?;
        Self::build(store, run, engine, host).await
    }

    /// Builds the engine for a replay: the recorded model, recorded side effects.
    pub(crate) async fn open_replay(
        store: Db,
        run: &stepwise_core::RunId,
        host: &Host,
        corpus: Arc<Corpus>,
        model: Arc<stepwise_llm::replay::ReplayModel>,
        original: &RunState,
    ) -> CliResult<Session> {
        // Retried as a run here would be, so the recorded attempts line up.
        let cwd = std::env::current_dir().context("cannot read the current directory")?;
        let policy = Config::load(&cwd)?.call_policy(&host.model);
        let replayed = |policy| ModelChoice {
            model: Arc::clone(&model) as Arc<dyn ChatModel>,
            policy,
        };
        // Every role answers from the record, its own model's or not.
        let role_models = host
            .role_models
            .keys()
            .filter_map(|name| crate::config::role_named(name))
            .map(|role| (role, replayed(policy)))
            .collect();
        let model = (host.model != "offline").then(|| replayed(policy));
        let engine = EngineBuilder::for_host(host, corpus)?
            .model(model)
            .role_models(role_models)
            .approve(ApproveMode::Auto)
            .replay_of(original);
        Self::build(store, run, engine, host).await
    }

    /// Starts the run's MCP servers (one that cannot start fails here,
    /// before anything is planned), takes the run's lease, then builds the
    /// engine writing to the store (fenced by the lease) and to the progress
    /// display.
    async fn build(
        store: Db,
        run: &stepwise_core::RunId,
        engine: EngineBuilder<'_>,
        host: &Host,
    ) -> CliResult<Session> {
        let log = crate::mcp::log_path(store.file(), run.as_str());
        let mcp = crate::mcp::start(&host.mcp, log.as_deref()).await?;
        let lease = match db::take_lease(store.as_ref(), run).await {
            Ok(lease) => lease,
            Err(e) => {
                mcp.shutdown().await;
                return Err(e.into());
            }
        };
        let (tx, events) = tokio::sync::mpsc::unbounded_channel();
        let fenced: Arc<dyn stepwise_core::IdempotencyLog> =
            Arc::clone(&store).fenced_log(run, lease.fence);
        // The store holds the log: the run keeps only its fold in memory, and
        // `drive` reads the history back once the run stops.
        let engine = engine
            .tools(mcp.tools())
            .guard(Arc::clone(&fenced))
            .forget_history();
        let engine = match engine.build() {
            Ok(engine) => engine,
            Err(e) => {
                mcp.shutdown().await;
                let _ = store.release(&lease).await;
                return Err(e);
            }
        };
        let engine = engine
            .with_idempotency_log(fenced)
            .with_sink(Arc::new(StoreSink::new(
                Arc::clone(&store) as _,
                Some(lease.fence),
            )))
            .with_sink(Arc::new(ChannelSink(tx)));
        let engine = crate::trace::traced_from(engine, run, store.as_ref()).await;
        Ok(Session {
            engine,
            store,
            lease,
            events,
            mcp,
            before: std::time::Duration::ZERO,
        })
    }

    /// Counts `took` (loading the notes) in the time the progress reports.
    pub(crate) fn loading_took(mut self, took: std::time::Duration) -> Self {
        self.before = took;
        self
    }

    /// Drives `work` (a run or a resume) with live progress and the lease
    /// renewed, then releases the lease.
    pub(crate) async fn drive<F>(
        self,
        quiet: bool,
        so_far: Option<RunState>,
        work: impl FnOnce(Engine) -> F,
    ) -> CliResult<RunState>
    where
        F: std::future::Future<Output = Result<RunState, EngineError>>,
    {
        let Session {
            engine,
            store,
            lease,
            mut events,
            mcp,
            before,
        } = self;
        let mode = Mode::detect(quiet);
        let display = tokio::spawn(async move {
            let mut progress = Progress::new(mode, std::io::stderr()).after(before);
            if let Some(state) = so_far {
                progress = progress.resuming(state);
            }
            while let Some(event) = events.recv().await {
                progress.on_event(&event);
            }
            progress.finish();
        });
        let renewal = db::keep_renewed(&store, &lease);
        let run = lease.run.clone();
        // The engine (and its channel) is dropped when the work ends. With
        // MCP servers running, Ctrl-C stops them before the process exits
        // (the run's log is durable: `stepwise resume` continues it).
        let result = if mcp.is_empty() {
            Some(work(engine).await)
        } else {
            tokio::select! {
                result = work(engine) => Some(result),
                () = crate::mcp::interrupt() => None,
            }
        };
        mcp.shutdown().await;
        renewal.abort();
        let _ = display.await;
        let _ = store.release(&lease).await;
        match result {
            Some(result) => {
                let state = result.map_err(|e| anyhow!(e))?;
                // With its history, as the output and `show` give it.
                db::load(store.as_ref(), state.run_id.as_str()).await
            }
            None => Err(CliError::interrupted(format!(
                "interrupted; the MCP servers were stopped. `stepwise resume {run}` continues the run"
            ))),
        }
    }
}
