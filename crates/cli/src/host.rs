//! The settings a run records so another process can rebuild it, and
//! what they allow: which tools a run with them can call.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::anyhow;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use stepwise_core::RunState;

/// Settings recorded with a run (in `run_started.host`), so a resume in
/// another process rebuilds the same tools and roles.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Host {
    /// The notes folder (absolute).
    pub(crate) notes: PathBuf,
    /// The folder `write_file` may write in, if enabled.
    #[serde(default)]
    pub(crate) workspace: Option<PathBuf>,
    /// Steps in flight at once.
    pub(crate) concurrency: usize,
    /// A plan given with --plan, used instead of the planner.
    #[serde(default)]
    pub(crate) plan: Option<Value>,
    /// Whether the plan is reviewed before it runs.
    #[serde(default)]
    pub(crate) review: bool,
    /// Whether an invalid --plan may be repaired (--repair); without it an
    /// invalid plan stops for review, unchanged.
    #[serde(default)]
    pub(crate) repair: bool,
    /// Who judges acceptance criteria (`--assess`).
    #[serde(default)]
    pub(crate) assess: crate::cli::AssessArg,
    /// A fingerprint of the notes' content when the run started (or last
    /// resumed), so a resume can tell whether they changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) notes_fingerprint: Option<String>,
    /// The model behind the roles (`offline`, `openai:…`, `script:/abs/file`, …).
    #[serde(default = "offline")]
    pub(crate) model: String,
    /// Prompt templates overriding the built-in ones.
    #[serde(default)]
    pub(crate) prompts: Option<PathBuf>,
    /// Roles on a model of their own (`[roles.NAME] model = …` in
    /// stepwise.toml when the run started): role name → model spec.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) role_models: BTreeMap<String, String>,
    /// The MCP servers whose tools the run may call (from stepwise.toml and
    /// `--mcp`, their folders absolute), so a resume starts the same ones.
    /// A bearer token is named by its variable, never recorded.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) mcp: BTreeMap<String, crate::mcp::ServerConfig>,
    /// The strategy's name. Not stored here: the run records it in
    /// `run_started.strategy`, and [`Host::of`] reads it from there.
    #[serde(skip)]
    pub(crate) strategy: String,
}

pub(crate) fn offline() -> String {
    "offline".to_owned()
}

impl Host {
    /// The host settings a run recorded.
    pub(crate) fn of(state: &RunState) -> anyhow::Result<Host> {
        let mut host: Host = serde_json::from_value(state.host.clone()).map_err(|e| {
            anyhow!(
                "run {} was not started by `stepwise run` (no notes folder on record: {e})",
                state.run_id
            )
        })?;
        host.strategy.clone_from(&state.strategy);
        Ok(host)
    }
}

/// Whether `tool` is named as one of the run's MCP servers' tools
/// (`NAME.tool`): which tools a server has is known once it has started,
/// and the plan validator checks the name then.
pub(crate) fn from_mcp(tool: &str, host: &Host) -> bool {
    tool.split_once('.')
        .is_some_and(|(server, name)| !name.is_empty() && host.mcp.contains_key(server))
}

/// The built-in tools a run with these settings can call, by name.
pub(crate) fn available_tools(host: &Host) -> Vec<String> {
    builtin_specs()
        .into_iter()
        .map(|s| s.name)
        .filter(|name| needs(name, host).is_none())
        .collect()
}

/// The flag a built-in tool needs and these settings lack, if any
/// (`write_file` is off without `--workspace DIR`).
pub(crate) fn needs(tool: &str, host: &Host) -> Option<&'static str> {
    (tool == <stepwise_tools::WriteFile as stepwise_core::tool::Tool>::NAME
        && host.workspace.is_none())
    .then_some("--workspace DIR")
}

/// The built-in tools' specs, sorted by name.
pub(crate) fn builtin_specs() -> Vec<stepwise_core::ToolSpec> {
    let mut specs = stepwise_tools::builtin_specs();
    specs.sort_by(|a, b| a.name.cmp(&b.name));
    specs
}

/// What changed outside the log since a run stopped for review (its notes),
/// and the settings to record if it goes on.
pub(crate) fn host_changes(
    state: &RunState,
    host: &Host,
    loaded: &stepwise_tools::notes::LoadedCorpus,
) -> (Vec<String>, Value) {
    let now = loaded.fingerprint();
    let mut changed = Vec::new();
    // A run recorded without a fingerprint cannot tell: only a known
    // difference counts as a change.
    if host
        .notes_fingerprint
        .as_ref()
        .is_some_and(|was| *was != now)
    {
        changed.push(format!(
            "the notes in {} changed ({} notes now)",
            host.notes.display(),
            loaded.corpus.len()
        ));
    }
    let mut value = state.host.clone();
    if let Value::Object(map) = &mut value {
        map.insert("notes_fingerprint".to_owned(), Value::String(now));
    }
    (changed, value)
}

/// The run's model and its price, if `stepwise.toml` has one for it — and
/// only if every role ran on that model: one price for calls to several
/// models would be a wrong cost, so none is shown.
pub(crate) fn price(state: &RunState) -> Option<(String, crate::config::Price)> {
    let host = Host::of(state).ok()?;
    if host.role_models.values().any(|m| *m != host.model) {
        return None;
    }
    let cwd = std::env::current_dir().ok()?;
    let price = crate::config::Config::load(&cwd).ok()?.price(&host.model)?;
    Some((host.model, price))
}
