//! `[serve]` in `stepwise.toml`: who may call the server (bearer tokens,
//! each bound to a tenant), what a client may name (notes folders and
//! workspaces under allowed roots; models and tool sets by the names
//! configured here), and the limits. Unknown keys are refused.
//!
//! ```toml
//! [serve]
//! listen = "127.0.0.1:8472"
//! notes_roots = ["/srv/notes"]
//! workspace_root = "/srv/workspaces"
//!
//! [[serve.tokens]]
//! tenant = "acme"
//! token_env = "STEPWISE_TOKEN_ACME"
//!
//! [serve.models]
//! fast = "openai:gpt-4o-mini"
//!
//! [serve.limits]
//! max_running = 4
//! ```

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

/// The address `stepwise serve` listens on unless told otherwise.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8472";

/// The tenant of every request when the server runs without auth
/// (`--insecure-no-auth`, loopback only).
pub const LOCAL_TENANT: &str = "local";

/// `[serve]`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServeConfig {
    /// Where to listen (`--listen` overrides it); default [`DEFAULT_LISTEN`].
    pub listen: Option<String>,
    /// Bearer tokens, each bound to a tenant (more come from
    /// `STEPWISE_SERVE_TOKENS`).
    #[serde(default)]
    pub tokens: Vec<TokenConfig>,
    /// Folders under which a client may name a notes folder.
    #[serde(default)]
    pub notes_roots: Vec<PathBuf>,
    /// The folder under which a client may name (or have created) a
    /// workspace for `write_file`; without it, runs get no workspace.
    pub workspace_root: Option<PathBuf>,
    /// Model names a client may pick, each a model spec (`openai:gpt-4o-mini`,
    /// `script:/abs/file.json`, …). `offline` is always available.
    #[serde(default)]
    pub models: BTreeMap<String, String>,
    /// The model of a run that names none: `offline` or a name in `models`.
    pub default_model: Option<String>,
    /// Tool set names a client may pick, each a list of MCP servers
    /// configured in `[mcp.servers.NAME]`.
    #[serde(default)]
    pub tool_sets: BTreeMap<String, ToolSetConfig>,
    /// The tenant that owns runs recorded without one (started by
    /// `stepwise run`); without it no token sees them. With
    /// `--insecure-no-auth` they belong to [`LOCAL_TENANT`] unless this says otherwise.
    pub cli_runs_tenant: Option<String>,
    /// Limits.
    #[serde(default)]
    pub limits: Limits,
}

/// One bearer token and the tenant it acts for; exactly one of `token`
/// and `token_env`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenConfig {
    /// The tenant whose runs the token sees and acts on.
    pub tenant: String,
    /// The token itself (prefer `token_env`: a file is easier to leak).
    pub token: Option<String>,
    /// The environment variable that holds the token.
    pub token_env: Option<String>,
}

/// One tool set: MCP servers by their `[mcp.servers.NAME]` names.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolSetConfig {
    /// The MCP servers whose tools the set holds.
    #[serde(default)]
    pub mcp: Vec<String>,
}

/// `[serve.limits]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// Largest request body, in bytes.
    pub max_body_bytes: usize,
    /// Longest a request may take to be answered (an event stream's
    /// headers, not its whole life), in milliseconds.
    pub request_timeout_ms: u64,
    /// Runs worked on at once; more wait, `queued`, in order.
    pub max_running: usize,
    /// Runs that may wait for a slot; beyond it a submit is refused.
    pub max_queued: usize,
    /// Event streams open at once.
    pub max_streams: usize,
    /// Event streams one tenant may have open at once, so one tenant's
    /// streams cannot take every slot.
    pub max_streams_per_tenant: usize,
    /// The most steps a client may ask to run at once within one run.
    pub max_concurrency: usize,
    /// How long a shutdown waits for runs to stop at their last
    /// checkpoint, in milliseconds.
    pub shutdown_grace_ms: u64,
    /// How often an event stream looks at the log of a run this server does
    /// not work on (one a `stepwise` command drives), in milliseconds.
    pub poll_ms: u64,
    /// Longest goal a run may be submitted with, in bytes.
    pub max_goal_bytes: usize,
    /// Most steps a client may let a run take (`max_steps`).
    pub max_steps: usize,
    /// Longest a connection may take to send a request's head (its line
    /// and headers), in milliseconds; then it is closed.
    pub header_read_timeout_ms: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_body_bytes: 1024 * 1024,
            request_timeout_ms: 30_000,
            max_running: 4,
            max_queued: 1_000,
            max_streams: 1_024,
            max_streams_per_tenant: 256,
            max_concurrency: 16,
            shutdown_grace_ms: 10_000,
            poll_ms: 500,
            max_goal_bytes: 16 * 1024,
            max_steps: 200,
            header_read_timeout_ms: 10_000,
        }
    }
}

impl Limits {
    /// What cannot work (a zero where at least one is needed).
    pub fn problem(&self) -> Option<&'static str> {
        if self.max_running == 0 {
            return Some("[serve.limits] max_running must be at least 1");
        }
        if self.max_body_bytes == 0 {
            return Some("[serve.limits] max_body_bytes must be at least 1");
        }
        if self.max_goal_bytes == 0 {
            return Some("[serve.limits] max_goal_bytes must be at least 1");
        }
        if self.max_steps == 0 {
            return Some("[serve.limits] max_steps must be at least 1");
        }
        if self.max_concurrency == 0 {
            return Some("[serve.limits] max_concurrency must be at least 1");
        }
        if self.poll_ms == 0 {
            return Some("[serve.limits] poll_ms must be at least 1");
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_keys_are_refused_at_every_level() {
        let ok: Result<ServeConfig, _> = toml_like(
            r#"{"notes_roots": ["/n"], "tokens": [{"tenant": "a", "token": "t"}], "limits": {"max_running": 2}}"#,
        );
        let ok = ok.ok();
        assert_eq!(ok.as_ref().map(|c| c.limits.max_running), Some(2));
        assert_eq!(
            ok.map(|c| c.limits.max_body_bytes),
            Some(Limits::default().max_body_bytes)
        );
        for bad in [
            r#"{"notes_root": ["/n"]}"#,
            r#"{"tokens": [{"tenant": "a", "secret": "t"}]}"#,
            r#"{"limits": {"max_runing": 2}}"#,
            r#"{"tool_sets": {"x": {"mpc": []}}}"#,
        ] {
            assert!(toml_like::<ServeConfig>(bad).is_err(), "{bad}");
        }
    }

    fn toml_like<T: serde::de::DeserializeOwned>(json: &str) -> Result<T, serde_json::Error> {
        serde_json::from_str(json)
    }
}
