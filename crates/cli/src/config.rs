//! Choosing a model: `--model` (default `offline`), provider settings from
//! the environment, a `.env` file and `stepwise.toml`, how model calls are
//! retried and timed out (`[retry]`, overridden per provider by
//! `[openai.retry]` and the like), and an optional price table that turns
//! tokens into cost. Keys are read from the environment (or `.env`) only —
//! never from `stepwise.toml`, and never printed or stored.
//!
//! Also the MCP servers whose tools a run may call (`[mcp.servers.NAME]`,
//! see [`crate::mcp::ServerConfig`]), merged with `--mcp NAME=COMMAND`.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, anyhow};
use serde::Deserialize;
use stepwise_core::roles::RoleName;
use stepwise_core::{ChatModel, Usage};
use stepwise_llm::call::CallPolicy;
use stepwise_llm::providers::{ModelSpec, Provider, ProviderEnv, Timeouts, from_spec_with};
use stepwise_llm::script::ScriptModel;

use crate::error::{CliError, CliResult};

/// Prices of one model, in US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
pub(crate) struct Price {
    /// Per million prompt tokens.
    pub(crate) input_per_mtok: f64,
    /// Per million completion tokens.
    pub(crate) output_per_mtok: f64,
}

impl Price {
    /// What `usage` cost.
    pub(crate) fn cost(&self, usage: &Usage) -> f64 {
        (usage.input_tokens as f64 * self.input_per_mtok
            + usage.output_tokens as f64 * self.output_per_mtok)
            / 1e6
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Endpoint {
    base_url: Option<String>,
    /// This provider's `[retry]` keys, over the shared table.
    retry: Option<RetryTable>,
}

/// `[retry]`: how model calls are retried and how long each attempt may
/// wait (milliseconds; a timeout of 0 means no limit). Unset keys keep the
/// defaults of [`CallPolicy`] and [`Timeouts::for_provider`].
#[derive(Debug, Default, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
struct RetryTable {
    max_attempts: Option<u32>,
    initial_delay_ms: Option<u64>,
    /// Caps every wait between attempts, Retry-After included.
    max_delay_ms: Option<u64>,
    multiplier: Option<f64>,
    jitter: Option<f64>,
    connect_timeout_ms: Option<u64>,
    first_byte_timeout_ms: Option<u64>,
    idle_timeout_ms: Option<u64>,
    /// One whole attempt, from the request to the end of the answer.
    call_timeout_ms: Option<u64>,
}

impl RetryTable {
    /// `self`'s keys where set, else `base`'s.
    fn over(self, base: RetryTable) -> RetryTable {
        RetryTable {
            max_attempts: self.max_attempts.or(base.max_attempts),
            initial_delay_ms: self.initial_delay_ms.or(base.initial_delay_ms),
            max_delay_ms: self.max_delay_ms.or(base.max_delay_ms),
            multiplier: self.multiplier.or(base.multiplier),
            jitter: self.jitter.or(base.jitter),
            connect_timeout_ms: self.connect_timeout_ms.or(base.connect_timeout_ms),
            first_byte_timeout_ms: self.first_byte_timeout_ms.or(base.first_byte_timeout_ms),
            idle_timeout_ms: self.idle_timeout_ms.or(base.idle_timeout_ms),
            call_timeout_ms: self.call_timeout_ms.or(base.call_timeout_ms),
        }
    }

    /// What serde cannot check: values that would make no sense.
    fn problem(&self) -> Option<&'static str> {
        if self.max_attempts == Some(0) {
            return Some("max_attempts must be at least 1 (1 means no retry)");
        }
        if self.multiplier.is_some_and(|m| !m.is_finite() || m < 1.0) {
            return Some("multiplier must be a number of at least 1.0");
        }
        if self.jitter.is_some_and(|j| !(0.0..=1.0).contains(&j)) {
            return Some("jitter must be between 0.0 and 1.0");
        }
        None
    }

    fn policy(&self) -> CallPolicy {
        let mut policy = CallPolicy::default();
        let retry = &mut policy.retry;
        retry.max_attempts = self.max_attempts.unwrap_or(retry.max_attempts);
        retry.initial_delay_ms = self.initial_delay_ms.unwrap_or(retry.initial_delay_ms);
        retry.max_delay_ms = self.max_delay_ms.unwrap_or(retry.max_delay_ms);
        retry.multiplier = self.multiplier.unwrap_or(retry.multiplier);
        retry.jitter = self.jitter.unwrap_or(retry.jitter);
        policy.timeout_ms = self.call_timeout_ms.unwrap_or(policy.timeout_ms);
        policy
    }

    fn timeouts(&self, provider: Provider) -> Timeouts {
        let defaults = Timeouts::for_provider(provider);
        Timeouts {
            connect_ms: self.connect_timeout_ms.unwrap_or(defaults.connect_ms),
            first_byte_ms: self.first_byte_timeout_ms.unwrap_or(defaults.first_byte_ms),
            idle_ms: self.idle_timeout_ms.unwrap_or(defaults.idle_ms),
        }
    }
}

/// `stepwise.toml` in the current directory (all keys optional).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    /// Default `--model`.
    model: Option<String>,
    openai: Option<Endpoint>,
    anthropic: Option<Endpoint>,
    ollama: Option<Endpoint>,
    /// Retries and timeouts of every model call.
    retry: Option<RetryTable>,
    /// Model spec (e.g. `openai:gpt-4o-mini`) -> price.
    #[serde(default)]
    prices: BTreeMap<String, Price>,
    /// `stepwise serve`: tokens, allowed roots, names, limits.
    #[cfg(feature = "serve")]
    serve: Option<stepwise_server::ServeConfig>,
    /// Read but unused by a build without `serve`, so the file stays valid.
    #[cfg(not(feature = "serve"))]
    #[serde(default, rename = "serve")]
    _serve: Option<serde::de::IgnoredAny>,
    /// `[mcp.servers.NAME]`: MCP servers whose tools runs may call.
    mcp: Option<McpTable>,
    /// `[roles.NAME] model = …`: a role on a model of its own.
    #[serde(default)]
    roles: BTreeMap<String, RoleTable>,
    /// `[router] model = …`: seed 000's spelling of `[roles.router]`, folded
    /// into `roles` when the file is read (one of the two, not both).
    router: Option<RoleTable>,
    /// `[planner]`: how plans are drafted.
    planner: Option<PlannerTable>,
}

/// `[planner]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct PlannerTable {
    /// Stream the first plan: steps start while the model still writes
    /// later ones (with a model that streams, and plans approved unread).
    #[serde(default)]
    stream: bool,
}

/// `[roles.NAME]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RoleTable {
    /// The role's model spec, as for `--model`.
    model: String,
}

/// The roles `[roles.NAME]` may name, as `stepwise.toml` spells them.
const ROLE_NAMES: [(&str, RoleName); 10] = [
    ("planner", RoleName::Planner),
    ("repairer", RoleName::Repairer),
    ("executor", RoleName::StepExecutor),
    ("assessor", RoleName::Assessor),
    ("replanner", RoleName::Replanner),
    ("synthesizer", RoleName::Synthesizer),
    ("verifier", RoleName::Verifier),
    ("actor", RoleName::Actor),
    ("summarizer", RoleName::Summarizer),
    ("router", RoleName::Router),
];

/// The role a `[roles.NAME]` table names.
pub(crate) fn role_named(name: &str) -> Option<RoleName> {
    ROLE_NAMES.iter().find(|(n, _)| *n == name).map(|(_, r)| *r)
}

/// `[mcp]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct McpTable {
    #[serde(default)]
    servers: BTreeMap<String, crate::mcp::ServerConfig>,
}

impl FileConfig {
    fn endpoint(&self, provider: Provider) -> Option<&Endpoint> {
        match provider {
            Provider::OpenAi => self.openai.as_ref(),
            Provider::Anthropic => self.anthropic.as_ref(),
            Provider::Ollama => self.ollama.as_ref(),
        }
    }

    /// The first table whose values make no sense, and why.
    fn retry_problem(&self) -> Option<String> {
        let shared = self.retry.iter().map(|t| ("[retry]".to_owned(), t));
        let per_provider = Provider::PREFIXES
            .iter()
            .zip([&self.openai, &self.anthropic, &self.ollama])
            .filter_map(|(name, e)| {
                let table = e.as_ref()?.retry.as_ref()?;
                Some((format!("[{name}.retry]"), table))
            });
        shared
            .chain(per_provider)
            .find_map(|(name, t)| t.problem().map(|p| format!("{name}: {p}")))
    }
}

/// A model and how to call it.
#[derive(Clone)]
pub(crate) struct ModelChoice {
    pub(crate) model: Arc<dyn ChatModel>,
    /// Attempts, backoff and the whole-attempt timeout, from `[retry]`.
    pub(crate) policy: CallPolicy,
}

impl fmt::Debug for ModelChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModelChoice")
            .field("model", &self.model.name())
            .field("policy", &self.policy)
            .finish()
    }
}

/// Model settings for this invocation.
#[derive(Debug, Default)]
pub(crate) struct Config {
    file: FileConfig,
    /// The folder `stepwise.toml` was looked for in.
    dir: PathBuf,
}

impl Config {
    /// Loads `.env` (without overriding the environment) and `stepwise.toml` from `dir`.
    pub(crate) fn load(dir: &Path) -> CliResult<Config> {
        let env_file = dir.join(".env");
        if env_file.is_file() {
            dotenvy::from_path(&env_file)
                .map_err(|e| CliError::usage(anyhow!("cannot read {}: {e}", env_file.display())))?;
        }
        let path = dir.join("stepwise.toml");
        let file = if path.is_file() {
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("cannot read {}", path.display()))?;
            Self::parse(&text)
                .map_err(|e| CliError::usage(anyhow!("{} is not valid: {e}", path.display())))?
        } else {
            FileConfig::default()
        };
        Ok(Config {
            file,
            dir: dir.to_path_buf(),
        })
    }

    /// `stepwise.toml`'s text, checked.
    fn parse(text: &str) -> Result<FileConfig, String> {
        let mut file: FileConfig = toml::from_str(text).map_err(|e| e.to_string())?;
        if let Some(router) = file.router.take() {
            if file.roles.contains_key("router") {
                return Err(
                    "[router] and [roles.router] both set the router's model: keep one".to_owned(),
                );
            }
            file.roles.insert("router".to_owned(), router);
        }
        if let Some(problem) = file.retry_problem() {
            return Err(problem);
        }
        for name in file.roles.keys() {
            if role_named(name).is_none() {
                let known: Vec<&str> = ROLE_NAMES.iter().map(|(n, _)| *n).collect();
                return Err(format!(
                    "[roles.{name}]: no such role; the roles are {}",
                    known.join(", ")
                ));
            }
        }
        for (name, server) in file.mcp.iter().flat_map(|m| &m.servers) {
            server
                .check(name)
                .map_err(|e| format!("[mcp.servers.{name}]: {e}"))?;
        }
        Ok(file)
    }

    /// The MCP servers a run uses: `stepwise.toml`'s (their `cwd` resolved
    /// against its folder), then each `--mcp NAME=COMMAND` (or `NAME=URL`),
    /// which replaces a configured server of the same name. A malformed flag
    /// is a usage error.
    pub(crate) fn mcp_servers(
        &self,
        flags: &[String],
        cwd: &Path,
    ) -> CliResult<BTreeMap<String, crate::mcp::ServerConfig>> {
        let mut servers: BTreeMap<_, _> = self
            .file
            .mcp
            .iter()
            .flat_map(|m| &m.servers)
            .map(|(name, server)| (name.clone(), server.clone().resolve(&self.dir)))
            .collect();
        for flag in flags {
            let bad = |why: &dyn fmt::Display| CliError::usage(anyhow!("--mcp {flag}: {why}"));
            let Some((name, spec)) = flag.split_once('=') else {
                return Err(bad(&"expected NAME=COMMAND (or NAME=URL)"));
            };
            let name = name.trim();
            let server = crate::mcp::ServerConfig::from_flag(spec).map_err(|e| bad(&e))?;
            server.check(name).map_err(|e| bad(&e))?;
            servers.insert(name.to_owned(), server.resolve(cwd));
        }
        Ok(servers)
    }

    /// `[provider.retry]` over `[retry]`, for a spec's provider (script
    /// models have none: `[retry]` alone).
    fn retry_table(&self, provider: Option<Provider>) -> RetryTable {
        let shared = self.file.retry.unwrap_or_default();
        provider
            .and_then(|p| self.file.endpoint(p)?.retry)
            .map_or(shared, |own| own.over(shared))
    }

    /// Whether `[planner] stream = true` asks for streamed plans.
    pub(crate) fn stream_plans(&self) -> bool {
        self.file.planner.as_ref().is_some_and(|p| p.stream)
    }

    /// How calls to the model a spec names are retried.
    pub(crate) fn call_policy(&self, spec: &str) -> CallPolicy {
        let provider = spec.parse::<ModelSpec>().ok().map(|s| s.provider);
        self.retry_table(provider).policy()
    }

    /// The model to use: the flag, else `STEPWISE_MODEL`, else `stepwise.toml`, else offline.
    /// Each `[roles.NAME] model = …`: role name → model spec.
    pub(crate) fn role_models(&self) -> BTreeMap<String, String> {
        self.file
            .roles
            .iter()
            .map(|(name, t)| (name.clone(), t.model.clone()))
            .collect()
    }

    pub(crate) fn model_spec(&self, flag: Option<&str>) -> String {
        flag.map(str::to_owned)
            .or_else(|| {
                std::env::var("STEPWISE_MODEL")
                    .ok()
                    .filter(|m| !m.is_empty())
            })
            .or_else(|| self.file.model.clone())
            .unwrap_or_else(|| "offline".to_owned())
    }

    /// Provider settings: the environment first, then `stepwise.toml`'s base URLs.
    fn provider_env(&self) -> ProviderEnv {
        let mut env = ProviderEnv::from_env();
        let base = |e: &Option<Endpoint>| e.as_ref().and_then(|e| e.base_url.clone());
        env.openai_base_url = env.openai_base_url.or_else(|| base(&self.file.openai));
        env.anthropic_base_url = env
            .anthropic_base_url
            .or_else(|| base(&self.file.anthropic));
        env.ollama_base_url = env.ollama_base_url.or_else(|| base(&self.file.ollama));
        env
    }

    /// `[serve]`, if stepwise.toml has it.
    #[cfg(feature = "serve")]
    pub(crate) fn serve(&self) -> Option<&stepwise_server::ServeConfig> {
        self.file.serve.as_ref()
    }

    /// The price of a model, if the table has it.
    pub(crate) fn price(&self, spec: &str) -> Option<Price> {
        self.file.prices.get(spec).copied()
    }

    /// Builds the chat model for a spec (`offline` has none), with its
    /// provider's timeouts and retry policy.
    pub(crate) fn model(&self, spec: &str, base: &Path) -> CliResult<Option<ModelChoice>> {
        if spec == "offline" {
            return Ok(None);
        }
        let policy = self.call_policy(spec);
        let usage = |e: &dyn fmt::Display| CliError::usage(anyhow!("--model {spec}: {e}"));
        if let Some(file) = spec.strip_prefix("script:") {
            let path = resolve(base, file);
            let model = ScriptModel::from_file(&path).map_err(|e| usage(&e))?;
            return Ok(Some(ModelChoice {
                model: Arc::new(model),
                policy,
            }));
        }
        let provider = spec.parse::<ModelSpec>().map_err(|e| usage(&e))?.provider;
        let timeouts = self.retry_table(Some(provider)).timeouts(provider);
        let model = from_spec_with(spec, &self.provider_env(), timeouts).map_err(|e| usage(&e))?;
        Ok(Some(ModelChoice { model, policy }))
    }
}

/// A relative path from the command line, made absolute against `base`.
fn resolve(base: &Path, file: &str) -> PathBuf {
    let p = Path::new(file);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        base.join(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn router_is_the_router_roles_model_and_not_beside_roles_router() {
        let file =
            Config::parse("model = \"openai:gpt-4o\"\n[router]\nmodel = \"ollama:llama3.2\"\n")
                .expect("[router] is accepted");
        let config = Config {
            file,
            ..Config::default()
        };
        let roles = config.role_models();
        assert_eq!(
            roles.get("router").map(String::as_str),
            Some("ollama:llama3.2")
        );
        assert_eq!(roles.len(), 1, "{roles:?}");
        let both =
            Config::parse("[router]\nmodel = \"ollama:a\"\n[roles.router]\nmodel = \"ollama:b\"\n")
                .map(|_| ())
                .expect_err("two spellings of one setting are refused");
        assert!(both.contains("keep one"), "{both}");
    }

    #[test]
    fn retry_tables_are_read_and_a_provider_table_overrides_the_shared_one() {
        let file = Config::parse(
            "[retry]\nmax_attempts = 5\nmax_delay_ms = 2000\nidle_timeout_ms = 700\n\
             call_timeout_ms = 0\n[anthropic]\nbase_url = \"http://x\"\n\
             [anthropic.retry]\nmax_attempts = 2\nfirst_byte_timeout_ms = 1500\n",
        )
        .unwrap();
        let config = Config {
            file,
            ..Config::default()
        };
        let openai = config.call_policy("openai:gpt-4o-mini");
        assert_eq!(
            (openai.retry.max_attempts, openai.retry.max_delay_ms),
            (5, 2_000)
        );
        assert_eq!(openai.timeout_ms, 0, "0: no limit");
        let defaults = CallPolicy::default();
        assert_eq!(
            openai.retry.initial_delay_ms,
            defaults.retry.initial_delay_ms
        );
        let claude = config.call_policy("anthropic:claude-sonnet-4-5");
        assert_eq!(
            (claude.retry.max_attempts, claude.retry.max_delay_ms),
            (2, 2_000)
        );
        let t = config
            .retry_table(Some(Provider::Anthropic))
            .timeouts(Provider::Anthropic);
        assert_eq!(
            (t.connect_ms, t.first_byte_ms, t.idle_ms),
            (Timeouts::default().connect_ms, 1_500, 700)
        );
        // Script models follow [retry] alone; unset keys keep each provider's defaults.
        assert_eq!(config.call_policy("script:a.json").retry.max_attempts, 5);
        let ollama = config
            .retry_table(Some(Provider::Ollama))
            .timeouts(Provider::Ollama);
        assert_eq!(
            ollama.first_byte_ms,
            Timeouts::for_provider(Provider::Ollama).first_byte_ms
        );
        assert_eq!(Config::default().call_policy("openai:m"), defaults);
    }

    #[cfg(feature = "mcp")]
    #[test]
    fn mcp_servers_come_from_the_file_then_the_flags() {
        let file = Config::parse(
            "[mcp.servers.fs]\ncommand = \"npx\"\nargs = [\"-y\", \"server-filesystem\", \"./data\"]\n\
             env = { SOME_VAR = \"x\" }\ntimeout_ms = 5000\n\
             [mcp.servers.fs.tools.write_file]\nside_effect = true\nidempotent = false\n\
             [mcp.servers.search]\nurl = \"http://127.0.0.1:8931/mcp\"\nbearer_token_env = \"SEARCH_MCP_TOKEN\"\n",
        )
        .unwrap();
        let config = Config {
            file,
            dir: PathBuf::from("/proj"),
        };
        let servers = config
            .mcp_servers(&["mem=node memory.js --x".to_owned()], Path::new("/cwd"))
            .unwrap();
        let names: Vec<&str> = servers.keys().map(String::as_str).collect();
        assert_eq!(names, ["fs", "mem", "search"]);
        let fs = &servers["fs"];
        assert_eq!(
            fs.cwd.as_deref(),
            Some(Path::new("/proj")),
            "the file's folder"
        );
        assert_eq!(fs.env["SOME_VAR"], "x");
        assert_eq!(fs.tools["write_file"].side_effect, Some(true));
        assert_eq!(fs.timeout_ms("write_file"), 5000);
        assert_eq!(servers["mem"].cwd.as_deref(), Some(Path::new("/cwd")));
        assert_eq!(servers["mem"].args, ["memory.js", "--x"]);
        assert_eq!(
            servers["search"].bearer_token_env.as_deref(),
            Some("SEARCH_MCP_TOKEN")
        );
        // A flag replaces the configured server of its name.
        let replaced = config
            .mcp_servers(&["fs=http://127.0.0.1:1/mcp".to_owned()], Path::new("/cwd"))
            .unwrap();
        assert_eq!(
            replaced["fs"].url.as_deref(),
            Some("http://127.0.0.1:1/mcp")
        );
        for bad in ["fs", "a.b=node x", "x="] {
            let err = config
                .mcp_servers(&[bad.to_owned()], Path::new("/"))
                .unwrap_err();
            assert_eq!(err.kind, crate::error::ErrorKind::Usage, "{bad}: {err}");
        }
    }

    #[cfg(feature = "mcp")]
    #[test]
    fn unknown_or_senseless_mcp_keys_are_refused() {
        let err = Config::parse("[mcp.servers.fs]\ncommand = \"x\"\nargz = []\n").unwrap_err();
        assert!(err.contains("unknown field `argz`"), "{err}");
        let err = Config::parse("[mcp.servers.fs.tools.w]\nside_effects = true\n").unwrap_err();
        assert!(err.contains("unknown field `side_effects`"), "{err}");
        let err = Config::parse("[mcp.server.fs]\ncommand = \"x\"\n").unwrap_err();
        assert!(err.contains("unknown field `server`"), "{err}");
        let err = Config::parse("[mcp.servers.fs]\nargs = [\"x\"]\n").unwrap_err();
        assert!(
            err.contains("[mcp.servers.fs]") && err.contains("needs `command`"),
            "{err}"
        );
        let err = Config::parse("[mcp.servers.s]\nurl = \"http://x\"\nbearer_token = \"secret\"\n")
            .unwrap_err();
        assert!(err.contains("unknown field `bearer_token`"), "{err}");
    }

    #[test]
    fn unknown_or_senseless_retry_keys_are_refused() {
        let err = Config::parse("[retry]\nmax_retries = 3\n").unwrap_err();
        assert!(err.contains("unknown field `max_retries`"), "{err}");
        assert!(
            err.contains("max_attempts"),
            "the valid keys are listed: {err}"
        );
        let err = Config::parse("[openai.retry]\ntimeout = 3\n").unwrap_err();
        assert!(err.contains("unknown field `timeout`"), "{err}");
        let err = Config::parse("[retry]\nmax_attempts = 0\n").unwrap_err();
        assert!(err.contains("[retry]: max_attempts"), "{err}");
        let err = Config::parse("[ollama.retry]\njitter = 2.0\n").unwrap_err();
        assert!(err.contains("[ollama.retry]: jitter"), "{err}");
        let err = Config::parse("[retry]\nidle_timeout_ms = -1\n").unwrap_err();
        assert!(err.contains("idle_timeout_ms"), "{err}");
    }
}
