//! Tools from any [Model Context Protocol](https://modelcontextprotocol.io)
//! server, as Stepwise tools.
//!
//! [`McpServers::start`] starts every configured server once (a child
//! process over stdio, or a streamable HTTP endpoint), initialises it with
//! our client info and protocol version, and lists its tools page by page.
//! Each tool becomes a [`DynTool`] named `server.tool`, so two servers
//! cannot clash:
//!
//! - its `inputSchema` is the spec's argument schema, so the plan validator
//!   checks arguments before anything runs; its `outputSchema` (or, for a
//!   tool without one, the `{"text": …}` shape its results get) lets the
//!   validator check `${step.output.field}` references;
//! - it has side effects — and so waits for an approval bound to its
//!   arguments — unless it says `readOnlyHint: true` or the config says so;
//!   `destructiveHint` is said when the approval is asked for;
//!   `idempotentHint` decides whether a call interrupted by a crash is re-run
//!   on resume; each call of it carries the step's idempotency key in its
//!   request's `_meta` under [`IDEMPOTENCY_KEY_META`], the same key for
//!   every attempt, so a server that keeps the keys it has acted on can make
//!   a late or repeated call a no-op;
//! - a result with `isError: true` is a persistent failure with the
//!   server's message; a timeout, a crashed process or a dropped session is
//!   transient — the server is restarted or reconnected and the retry policy
//!   tries again — except for a non-idempotent side effect whose request may
//!   have reached the server, which stops the run with its outcome unknown.
//!
//! A server that cannot start fails [`McpServers::start`] with its command
//! and the end of its stderr, before a run plans anything. Stderr and the
//! server's log messages go to [`Options::log`], never into an output.
//! [`McpServers::shutdown`] stops every process (stdin closed, then SIGTERM,
//! then SIGKILL to its process group); dropping the set without it kills
//! the process groups at once.
//!
//! No rmcp type appears in this API: the SDK can move without moving Stepwise.

mod config;
mod error;
mod server;
mod tool;

use std::collections::BTreeSet;
use std::sync::Arc;

use stepwise_core::DynTool;

pub use config::{
    DEFAULT_STARTUP_TIMEOUT_MS, DEFAULT_TIMEOUT_MS, ServerConfig, ToolOverride, split_command_line,
};
pub use error::{McpError, Stderr};
pub use server::{IDEMPOTENCY_KEY_META, LogFn, LogKind, LogLine, Options, kill_group, set_guard};
pub use tool::{Hints, ToolInfo};

use crate::server::Server;
use crate::tool::McpTool;

/// The protocol version asked for in `initialize`.
pub fn protocol_version() -> String {
    server::PROTOCOL_VERSION.to_string()
}

/// Running servers and their tools. Shut it down with [`McpServers::shutdown`].
pub struct McpServers {
    servers: Vec<Arc<Server>>,
    tools: Vec<Arc<McpTool>>,
}

impl std::fmt::Debug for McpServers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServers")
            .field(
                "servers",
                &self.servers.iter().map(|s| &s.name).collect::<Vec<_>>(),
            )
            .field("tools", &self.tools.len())
            .finish()
    }
}

impl McpServers {
    /// No servers.
    pub fn none() -> Self {
        Self {
            servers: Vec::new(),
            tools: Vec::new(),
        }
    }

    /// Checks every config, then starts the servers (all at once) and lists
    /// their tools. If one fails, those already started are shut down and
    /// the first failure, in config order, is returned.
    pub async fn start(
        configs: impl IntoIterator<Item = (String, ServerConfig)>,
        options: Options,
    ) -> Result<Self, McpError> {
        let mut servers = Vec::new();
        for (name, config) in configs {
            config.check(&name)?;
            servers.push(Arc::new(Server::new(name, config, options.clone())));
        }
        let listed = futures::future::join_all(servers.iter().map(|s| s.start())).await;
        let mut set = Self {
            servers,
            tools: Vec::new(),
        };
        let mut failure = None;
        let mut names = BTreeSet::new();
        for (server, listed) in set.servers.clone().iter().zip(listed) {
            match listed {
                Err(e) => {
                    failure.get_or_insert(e);
                }
                Ok(tools) => {
                    let total = tools.len();
                    let mut kept = 0;
                    for tool in &tools {
                        let Some(info) = tool::describe(server, tool) else {
                            continue;
                        };
                        if !names.insert(info.spec.name.clone()) {
                            failure.get_or_insert(McpError::DuplicateTool {
                                tool: info.spec.name.clone(),
                            });
                            continue;
                        }
                        kept += 1;
                        set.tools.push(Arc::new(McpTool {
                            server: Arc::clone(server),
                            structured: tool.output_schema.is_some(),
                            info,
                        }));
                    }
                    tool::note_listing(server, total, kept);
                }
            }
        }
        if let Some(e) = failure {
            set.shutdown().await;
            return Err(e);
        }
        Ok(set)
    }

    /// Every tool, as the engine's registry takes them.
    pub fn tools(&self) -> Vec<Arc<dyn DynTool>> {
        self.tools
            .iter()
            .map(|t| Arc::clone(t) as Arc<dyn DynTool>)
            .collect()
    }

    /// Every tool with its source and the hints behind its spec, by server then name.
    pub fn infos(&self) -> Vec<ToolInfo> {
        let mut infos: Vec<ToolInfo> = self.tools.iter().map(|t| t.info.clone()).collect();
        infos.sort_by(|a, b| a.spec.name.cmp(&b.spec.name));
        infos
    }

    /// The configured servers' names.
    pub fn names(&self) -> Vec<String> {
        self.servers.iter().map(|s| s.name.clone()).collect()
    }

    /// Whether there are no servers.
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// The pid of each stdio server's current process (the leader of its
    /// process group), by server name.
    pub async fn pids(&self) -> Vec<(String, u32)> {
        let mut pids = Vec::new();
        for server in &self.servers {
            if let Some(pid) = server.pid().await {
                pids.push((server.name.clone(), pid));
            }
        }
        pids
    }

    /// Stops every server and waits for them to exit; calls made after this fail.
    pub async fn shutdown(&self) {
        futures::future::join_all(self.servers.iter().map(|s| s.shutdown())).await;
    }
}

impl Drop for McpServers {
    fn drop(&mut self) {
        for server in &self.servers {
            server.stop_groups();
        }
    }
}
