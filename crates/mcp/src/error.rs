//! Why servers could not be brought up. (A failed *call* is a
//! [`stepwise_core::ToolError`], classified for the retry policy.)

use std::fmt;

/// A server that cannot be configured, started, initialised or listed:
/// reported before a run plans anything, naming the command (or URL) and
/// what the server wrote on stderr.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// The configuration makes no sense.
    #[error("mcp server {server:?} {problem}")]
    Config {
        /// The server's name.
        server: String,
        /// What is wrong.
        problem: String,
    },
    /// The process could not be spawned (no such program, not executable).
    #[error("mcp server {server:?} could not be started (`{target}`): {message}{stderr}")]
    Spawn {
        /// The server's name.
        server: String,
        /// The command line.
        target: String,
        /// What the OS said.
        message: String,
        /// Its last stderr lines, formatted.
        stderr: Stderr,
    },
    /// It started but the handshake failed (it exited, spoke no MCP, refused).
    #[error("mcp server {server:?} (`{target}`) did not initialise: {message}{stderr}")]
    Initialize {
        /// The server's name.
        server: String,
        /// The command line or URL.
        target: String,
        /// What went wrong.
        message: String,
        /// Its last stderr lines, formatted.
        stderr: Stderr,
    },
    /// It initialised but `tools/list` failed.
    #[error("mcp server {server:?} (`{target}`) did not list its tools: {message}{stderr}")]
    ListTools {
        /// The server's name.
        server: String,
        /// The command line or URL.
        target: String,
        /// What went wrong.
        message: String,
        /// Its last stderr lines, formatted.
        stderr: Stderr,
    },
    /// Starting, initialising and listing took longer than `startup_timeout_ms`.
    #[error(
        "mcp server {server:?} (`{target}`) did not start within {ms} ms (raise startup_timeout_ms){stderr}"
    )]
    StartupTimeout {
        /// The server's name.
        server: String,
        /// The command line or URL.
        target: String,
        /// The limit.
        ms: u64,
        /// Its last stderr lines, formatted.
        stderr: Stderr,
    },
    /// `bearer_token_env` names a variable that is not set.
    #[error(
        "mcp server {server:?}: the environment variable {var} (its bearer_token_env) is not set"
    )]
    MissingToken {
        /// The server's name.
        server: String,
        /// The variable.
        var: String,
    },
    /// Two servers would publish a tool under the same name.
    #[error("mcp servers publish the tool {tool:?} twice")]
    DuplicateTool {
        /// The namespaced name.
        tool: String,
    },
}

impl McpError {
    /// The server it concerns, if one.
    pub fn server(&self) -> Option<&str> {
        match self {
            Self::Config { server, .. }
            | Self::Spawn { server, .. }
            | Self::Initialize { server, .. }
            | Self::ListTools { server, .. }
            | Self::StartupTimeout { server, .. }
            | Self::MissingToken { server, .. } => Some(server),
            Self::DuplicateTool { .. } => None,
        }
    }
}

/// The last lines a server wrote on stderr, shown under an error (empty
/// shows nothing).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stderr(pub Vec<String>);

impl fmt::Display for Stderr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return Ok(());
        }
        f.write_str("; its stderr ended with:")?;
        for line in &self.0 {
            write!(f, "\n    {line}")?;
        }
        Ok(())
    }
}
