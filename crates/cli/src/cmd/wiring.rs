//! A picked-up run's engine, wired as `stepwise serve` and `stepwise worker`
//! both wire it: the run's recorded settings through the one
//! [`EngineBuilder`], its MCP servers started for this piece of work (and
//! stopped after it) or, in a worker, shared by its runs, the store's
//! idempotency log, the sinks that record its events fenced by the run's
//! lease, and tracing. One place, so a run
//! the server works on and one a worker takes over run the same way; what
//! to do with the run ([`crate::cmd::pickup`]) is decided before this.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use stepwise_core::engine::ResumeOptions;
use stepwise_core::{Engine, EngineError, Event, EventSink, IdempotencyLog, RunId, RunState};
use stepwise_tools::notes::Corpus;

use crate::cli::ApproveMode;
use crate::config::Config;
use crate::mcp::McpServers;
use crate::session::{EngineBuilder, Host};

/// What a run's engine is wired from.
pub(crate) struct Wiring<'a> {
    pub(crate) config: &'a Config,
    /// Where `stepwise.toml` and relative model files are read from.
    pub(crate) cwd: &'a Path,
    /// The run's recorded settings.
    pub(crate) host: &'a Host,
    pub(crate) corpus: Arc<Corpus>,
    pub(crate) approve: ApproveMode,
    /// Where the MCP servers' stderr goes, if anywhere.
    pub(crate) mcp_log: Option<PathBuf>,
    /// Side-effect records, fenced by the run's lease.
    pub(crate) idempotency: Arc<dyn IdempotencyLog>,
    /// Where events go, the store's (fenced by the lease) first.
    pub(crate) sinks: Vec<Arc<dyn EventSink>>,
    /// Servers shared by the runs of one process (a worker's), if any:
    /// then the run's MCP servers come from there, started once per
    /// configuration, and outlive the run.
    pub(crate) shared: Option<&'a SharedServers>,
}

/// MCP servers started once per configuration and shared by the runs of a
/// process (a worker): one set of server processes however many runs it
/// works on, instead of a set per run. [`SharedServers::shutdown`] stops
/// them when the process stops.
#[derive(Default)]
pub(crate) struct SharedServers(
    tokio::sync::Mutex<std::collections::HashMap<String, Arc<McpServers>>>,
);

impl SharedServers {
    /// The servers for `host`'s configuration, started now if no run
    /// started them yet (a start that fails is not kept: the next run tries
    /// again).
    async fn get(&self, host: &Host) -> anyhow::Result<Arc<McpServers>> {
        let key = serde_json::to_string(&host.mcp).context("the run's MCP settings")?;
        let mut servers = self.0.lock().await;
        if let Some(running) = servers.get(&key) {
            return Ok(Arc::clone(running));
        }
        let started = Arc::new(crate::mcp::start(&host.mcp, None).await.map_err(|e| {
            e.into_anyhow()
                .context("cannot start the run's MCP servers")
        })?);
        servers.insert(key, Arc::clone(&started));
        Ok(started)
    }

    /// Stops every server started here.
    pub(crate) async fn shutdown(&self) {
        let servers: Vec<Arc<McpServers>> = self.0.lock().await.drain().map(|(_, s)| s).collect();
        for s in servers {
            s.shutdown().await;
        }
    }
}

/// A run's MCP servers: its own, or a process's shared ones.
enum Servers {
    Own(McpServers),
    Shared(Arc<McpServers>),
}

impl Servers {
    fn get(&self) -> &McpServers {
        match self {
            Self::Own(s) => s,
            Self::Shared(s) => s,
        }
    }

    /// Stops the run's own servers; shared ones stay for the next run.
    async fn shutdown(self) {
        if let Self::Own(s) = self {
            s.shutdown().await;
        }
    }
}

/// A run's engine with its MCP servers running: drive it, then
/// [`shut it down`](Wired::shutdown).
pub(crate) struct Wired {
    engine: Engine,
    mcp: Servers,
}

impl Wiring<'_> {
    /// Starts the MCP servers and builds the engine; `prior` is the run's
    /// log so far (a resumed run stays one trace). The engine's runs keep
    /// no history in memory: the store's sink, first of `sinks`, holds it,
    /// and a worker or the server reads back only the status.
    pub(crate) async fn wire(self, run: &RunId, prior: &[Event]) -> anyhow::Result<Wired> {
        let mcp = match self.shared {
            Some(shared) => Servers::Shared(shared.get(self.host).await?),
            None => Servers::Own(
                crate::mcp::start(&self.host.mcp, self.mcp_log.as_deref())
                    .await
                    .map_err(|e| {
                        e.into_anyhow()
                            .context("cannot start the run's MCP servers")
                    })?,
            ),
        };
        let built =
            EngineBuilder::for_run(self.config, self.host, self.corpus, self.approve, self.cwd)
                .and_then(|builder| {
                    builder
                        .tools(mcp.get().tools())
                        .guard(Arc::clone(&self.idempotency))
                        .forget_history()
                        .build()
                });
        let engine = match built {
            Ok(engine) => engine,
            Err(e) => {
                mcp.shutdown().await;
                return Err(e.into_anyhow());
            }
        };
        let mut engine = engine.with_idempotency_log(self.idempotency);
        for sink in self.sinks {
            engine = engine.with_sink(sink);
        }
        Ok(Wired {
            engine: crate::trace::traced(engine, run, prior),
            mcp,
        })
    }
}

impl Wired {
    /// The engine, for a run not recorded yet ([`Engine::start`]).
    pub(crate) fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Works on a recorded run: from its `run_started` when `resume` is
    /// `None` ([`Engine::start_recorded`]), else resumed from its log.
    pub(crate) async fn drive(
        &self,
        state: RunState,
        resume: Option<ResumeOptions>,
    ) -> Result<RunState, EngineError> {
        match resume {
            None => self.engine.start_recorded(state).await,
            Some(options) => self.engine.resume(state, options).await,
        }
    }

    /// Stops the run's MCP servers.
    pub(crate) async fn shutdown(self) {
        self.mcp.shutdown().await;
    }
}
