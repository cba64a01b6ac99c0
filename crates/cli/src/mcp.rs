//! MCP servers in the CLI: the ones a run's settings name are started once
//! per run (before anything is planned, so one that cannot start fails the
//! run up front), their stderr and log messages go to a log file beside the
//! run database — never into the brief — and they are stopped when the run
//! ends, fails, or is interrupted with Ctrl-C.

#[cfg(feature = "mcp")]
use std::collections::BTreeMap;
#[cfg(feature = "mcp")]
use std::io::Write;
use std::path::{Path, PathBuf};
#[cfg(feature = "mcp")]
use std::sync::{Arc, Mutex};

#[cfg(feature = "mcp")]
use anyhow::anyhow;
#[cfg(feature = "mcp")]
use stepwise_mcp::{LogLine, Options};
#[cfg(feature = "mcp")]
pub(crate) use stepwise_mcp::{McpServers, ServerConfig, ToolInfo};

#[cfg(feature = "mcp")]
use crate::error::{CliError, CliResult};

/// Stand-ins for a build without MCP: servers are read, never started.
#[cfg(not(feature = "mcp"))]
mod off;
#[cfg(not(feature = "mcp"))]
pub(crate) use off::{McpServers, ServerConfig, ToolInfo, start};

/// Where the servers of `run` log: `<database folder>/mcp-logs/<run>.log`.
pub(crate) fn log_path(db: Option<&Path>, run: &str) -> Option<PathBuf> {
    let dir = db?.parent()?.join("mcp-logs");
    Some(dir.join(format!("{run}.log")))
}

/// Appends the servers' lines to a file, each with the time, server and source.
#[cfg(feature = "mcp")]
fn file_log(path: &Path) -> anyhow::Result<stepwise_mcp::LogFn> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| anyhow!("cannot create {}: {e}", dir.display()))?;
    }
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| anyhow!("cannot open {}: {e}", path.display()))?;
    let file = Mutex::new(file);
    Ok(Arc::new(move |line: LogLine<'_>| {
        let stamp = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%S%.3fZ");
        if let Ok(mut f) = file.lock() {
            let _ = writeln!(
                f,
                "{stamp} {} {}: {}",
                line.server,
                line.kind.as_str(),
                line.text
            );
        }
    }))
}

/// Starts `servers`, logging to `log` (or nowhere but the errors, e.g. for
/// `stepwise tools`). A server that cannot start is a usage error naming
/// its command and its stderr.
#[cfg(feature = "mcp")]
pub(crate) async fn start(
    servers: &BTreeMap<String, ServerConfig>,
    log: Option<&Path>,
) -> CliResult<McpServers> {
    if servers.is_empty() {
        return Ok(McpServers::none());
    }
    let sink: stepwise_mcp::LogFn = match log {
        Some(path) => file_log(path).map_err(CliError::usage)?,
        None => Arc::new(|_: LogLine<'_>| {}),
    };
    let options = Options {
        log: Some(sink),
        ..Options::default()
    };
    let configs = servers.iter().map(|(n, c)| (n.clone(), c.clone()));
    McpServers::start(configs, options)
        .await
        .map_err(|e| CliError::usage(anyhow!(e)))
}

/// Resolves on Ctrl-C, or on SIGTERM where there is one.
pub(crate) async fn interrupt() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
