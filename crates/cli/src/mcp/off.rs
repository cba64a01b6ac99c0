//! MCP left out of this build (the `mcp` feature): server settings are read
//! as written (stepwise.toml's `[mcp.servers]`, a run's record) so files
//! stay valid, but a run or command that needs a server is refused, naming
//! the feature.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use stepwise_core::DynTool;

use crate::error::{not_built, not_built_message};

/// An MCP server's settings, kept as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub(crate) struct ServerConfig(serde_json::Value);

impl ServerConfig {
    /// `--mcp NAME=…`: refused.
    pub(crate) fn from_flag(_spec: &str) -> Result<Self, String> {
        Err(not_built_message("mcp"))
    }

    /// Nothing to resolve: the settings are never used.
    pub(crate) fn resolve(self, _base: &Path) -> Self {
        self
    }

    /// Nothing to check: a server is refused when it would be started.
    #[allow(clippy::unnecessary_wraps)]
    pub(crate) fn check(&self, _server: &str) -> Result<(), String> {
        Ok(())
    }
}

/// A tool of an MCP server, as `stepwise tools` lists it: never one here.
#[derive(Debug, Clone)]
pub(crate) struct ToolInfo {
    pub(crate) server: String,
    pub(crate) tool: String,
    pub(crate) hints: serde_json::Value,
    pub(crate) overridden: Vec<&'static str>,
    pub(crate) timeout_ms: u64,
    pub(crate) spec: stepwise_core::ToolSpec,
}

/// Running MCP servers: none.
#[derive(Debug, Default)]
pub(crate) struct McpServers;

impl McpServers {
    pub(crate) fn none() -> Self {
        Self
    }

    pub(crate) fn tools(&self) -> Vec<Arc<dyn DynTool>> {
        Vec::new()
    }

    pub(crate) fn infos(&self) -> Vec<ToolInfo> {
        Vec::new()
    }

    pub(crate) fn is_empty(&self) -> bool {
        true
    }

    pub(crate) async fn shutdown(&self) {}
}

/// No servers: none to start. Any: refused, naming them and the feature.
pub(crate) async fn start(
    servers: &BTreeMap<String, ServerConfig>,
    _log: Option<&Path>,
) -> crate::error::CliResult<McpServers> {
    if servers.is_empty() {
        return Ok(McpServers::none());
    }
    let names: Vec<&str> = servers.keys().map(String::as_str).collect();
    Err(not_built("mcp").context(format!("MCP servers {}", names.join(", "))))
}
