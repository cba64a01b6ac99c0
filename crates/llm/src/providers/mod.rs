//! Model providers: an OpenAI-compatible chat-completions client (OpenAI,
//! Azure, Ollama, vLLM, llama.cpp server, LM Studio, OpenRouter — anything
//! that speaks `/chat/completions`) and an Anthropic Messages client, both
//! written here on reqwest + eventsource-stream so that we control error
//! classes, usage accounting and lenient parsing of compatible servers.
//!
//! Neither client retries: retries live in [`crate::call`]. Each bounds its
//! own waits ([`Timeouts`]: connecting, the first byte, silences mid-stream),
//! so a server that goes quiet fails fast and is retried. A model is named
//! by a spec such as `openai:gpt-4o-mini`, `anthropic:claude-sonnet-4-5` or
//! `ollama:llama3.2`, and built with [`from_spec`].

mod anthropic;
mod errors;
mod http;
mod lenient;
mod openai;
mod sse;
mod streaming;

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use stepwise_core::{ChatModel, ModelError};

pub use anthropic::AnthropicClient;
pub use http::Timeouts;
pub use openai::OpenAiClient;

/// OpenAI's API, used when `OPENAI_BASE_URL` is not set.
pub const DEFAULT_OPENAI_BASE_URL: &str = "https://api.openai.com/v1";
/// Anthropic's API, used when `ANTHROPIC_BASE_URL` is not set.
pub const DEFAULT_ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com";
/// A local Ollama's OpenAI-compatible API, used when `OLLAMA_BASE_URL` is not set.
pub const DEFAULT_OLLAMA_BASE_URL: &str = "http://localhost:11434/v1";

/// Where the providers are and the keys to reach them. Filled from the
/// environment by [`ProviderEnv::from_env`]; the CLI also fills it from
/// `.env` and `stepwise.toml`. `None` means "not set" (the default URL, no key).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct ProviderEnv {
    /// `OPENAI_API_KEY`.
    pub openai_api_key: Option<String>,
    /// `OPENAI_BASE_URL`: any OpenAI-compatible server (default [`DEFAULT_OPENAI_BASE_URL`]).
    pub openai_base_url: Option<String>,
    /// `ANTHROPIC_API_KEY`.
    pub anthropic_api_key: Option<String>,
    /// `ANTHROPIC_BASE_URL` (default [`DEFAULT_ANTHROPIC_BASE_URL`]).
    pub anthropic_base_url: Option<String>,
    /// `OLLAMA_BASE_URL` (default [`DEFAULT_OLLAMA_BASE_URL`]).
    pub ollama_base_url: Option<String>,
}

impl ProviderEnv {
    /// Reads the five variables from the process environment; empty values
    /// count as unset (a blank `OPENAI_API_KEY=` line in `.env` is common).
    pub fn from_env() -> Self {
        let var = |name: &str| std::env::var(name).ok().and_then(non_empty);
        Self {
            openai_api_key: var("OPENAI_API_KEY"),
            openai_base_url: var("OPENAI_BASE_URL"),
            anthropic_api_key: var("ANTHROPIC_API_KEY"),
            anthropic_base_url: var("ANTHROPIC_BASE_URL"),
            ollama_base_url: var("OLLAMA_BASE_URL"),
        }
    }
}

/// Keys are shown as set or not, never printed.
impl fmt::Debug for ProviderEnv {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let key = |k: &Option<String>| if k.is_some() { "<redacted>" } else { "<unset>" };
        f.debug_struct("ProviderEnv")
            .field("openai_api_key", &key(&self.openai_api_key))
            .field("openai_base_url", &self.openai_base_url)
            .field("anthropic_api_key", &key(&self.anthropic_api_key))
            .field("anthropic_base_url", &self.anthropic_base_url)
            .field("ollama_base_url", &self.ollama_base_url)
            .finish()
    }
}

/// Which API a spec names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Provider {
    /// OpenAI, or any compatible server at `OPENAI_BASE_URL`.
    OpenAi,
    /// Anthropic Messages.
    Anthropic,
    /// A local Ollama, through its OpenAI-compatible API; no key needed.
    Ollama,
}

impl Provider {
    /// The prefixes [`ModelSpec`] accepts, for error messages.
    pub const PREFIXES: [&'static str; 3] = ["openai", "anthropic", "ollama"];

    /// The spec prefix, e.g. `openai`.
    pub fn prefix(self) -> &'static str {
        match self {
            Self::OpenAi => "openai",
            Self::Anthropic => "anthropic",
            Self::Ollama => "ollama",
        }
    }
}

/// A parsed `PROVIDER:MODEL`, e.g. `ollama:llama3.2:3b` (the model is
/// everything after the first colon, so Ollama tags survive).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ModelSpec {
    /// The API.
    pub provider: Provider,
    /// The model, as the provider names it.
    pub model: String,
}

impl FromStr for ModelSpec {
    type Err = ModelError;

    fn from_str(spec: &str) -> Result<Self, ModelError> {
        let valid = Provider::PREFIXES.join(", ");
        let Some((prefix, model)) = spec.trim().split_once(':') else {
            return Err(ModelError::Config(format!(
                "model {spec:?} should be PROVIDER:MODEL, e.g. openai:gpt-4o-mini \
                 (providers: {valid})"
            )));
        };
        let provider = match prefix.trim().to_ascii_lowercase().as_str() {
            "openai" => Provider::OpenAi,
            "anthropic" => Provider::Anthropic,
            "ollama" => Provider::Ollama,
            other => {
                return Err(ModelError::Config(format!(
                    "unknown model provider {other:?} in {spec:?}; use one of: {valid}"
                )));
            }
        };
        let model = model.trim();
        if model.is_empty() {
            return Err(ModelError::Config(format!(
                "model spec {spec:?} names no model, e.g. {}:MODEL",
                provider.prefix()
            )));
        }
        Ok(Self {
            provider,
            model: model.to_owned(),
        })
    }
}

impl fmt::Display for ModelSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.provider.prefix(), self.model)
    }
}

/// Builds the model a spec names, checking the configuration now (a missing
/// key is a [`ModelError::Config`] here, not a 401 at the first call), with
/// the provider's default [`Timeouts`].
pub fn from_spec(spec: &str, env: &ProviderEnv) -> Result<Arc<dyn ChatModel>, ModelError> {
    let provider = spec.parse::<ModelSpec>()?.provider;
    from_spec_with(spec, env, Timeouts::for_provider(provider))
}

/// [`from_spec`] with these timeouts.
pub fn from_spec_with(
    spec: &str,
    env: &ProviderEnv,
    timeouts: Timeouts,
) -> Result<Arc<dyn ChatModel>, ModelError> {
    let spec: ModelSpec = spec.parse()?;
    let name = spec.to_string();
    let key = |k: &Option<String>| k.clone().and_then(non_empty);
    let url = |u: &Option<String>| u.clone().and_then(non_empty);
    Ok(match spec.provider {
        Provider::OpenAi => {
            let base = url(&env.openai_base_url);
            let api_key = key(&env.openai_api_key);
            if api_key.is_none() && base.is_none() {
                return Err(ModelError::Config(
                    "set OPENAI_API_KEY (or OPENAI_BASE_URL for a local server) to use an \
                     openai: model"
                        .into(),
                ));
            }
            let base = base.as_deref().unwrap_or(DEFAULT_OPENAI_BASE_URL);
            Arc::new(OpenAiClient::new(name, spec.model, base, api_key)?.with_timeouts(timeouts)?)
        }
        Provider::Ollama => {
            let base = url(&env.ollama_base_url);
            let base = base.as_deref().unwrap_or(DEFAULT_OLLAMA_BASE_URL);
            Arc::new(
                OpenAiClient::new(name, spec.model, base, None)?
                    .with_auth_fix(
                        "Ollama needs no key: check that OLLAMA_BASE_URL points at Ollama itself",
                    )
                    .with_timeouts(timeouts)?,
            )
        }
        Provider::Anthropic => {
            let base = url(&env.anthropic_base_url);
            let api_key = key(&env.anthropic_api_key);
            if api_key.is_none() && base.is_none() {
                return Err(ModelError::Config(
                    "set ANTHROPIC_API_KEY (or ANTHROPIC_BASE_URL for a compatible proxy) to \
                     use an anthropic: model"
                        .into(),
                ));
            }
            let base = base.as_deref().unwrap_or(DEFAULT_ANTHROPIC_BASE_URL);
            Arc::new(
                AnthropicClient::new(name, spec.model, base, api_key)?.with_timeouts(timeouts)?,
            )
        }
    })
}

fn non_empty(s: String) -> Option<String> {
    let trimmed = s.trim();
    (!trimmed.is_empty()).then(|| trimmed.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_with_tags_and_reject_unknown_providers() {
        let spec: ModelSpec = "ollama:llama3.2:3b".parse().unwrap();
        assert_eq!(spec.provider, Provider::Ollama);
        assert_eq!(spec.model, "llama3.2:3b");
        assert_eq!(spec.to_string(), "ollama:llama3.2:3b");
        let err = "gemini:pro".parse::<ModelSpec>().unwrap_err().to_string();
        assert!(err.contains("openai, anthropic, ollama"), "{err}");
        assert!("gpt-4o".parse::<ModelSpec>().is_err());
        assert!("openai:".parse::<ModelSpec>().is_err());
    }

    #[test]
    fn a_missing_key_is_a_config_error_naming_the_variable() {
        let env = ProviderEnv::default();
        let err = from_spec("openai:gpt-4o-mini", &env).err().unwrap();
        assert!(matches!(&err, ModelError::Config(m) if m.contains("OPENAI_API_KEY")));
        let err = from_spec("anthropic:claude-sonnet-4-5", &env)
            .err()
            .unwrap();
        assert!(matches!(&err, ModelError::Config(m) if m.contains("ANTHROPIC_API_KEY")));
        let ollama = from_spec("ollama:llama3.2", &env).unwrap();
        assert_eq!(ollama.name(), "ollama:llama3.2");
        let local = ProviderEnv {
            openai_base_url: Some("http://localhost:8000/v1".into()),
            ..ProviderEnv::default()
        };
        assert!(from_spec("openai:qwen", &local).is_ok());
    }

    #[test]
    fn keys_never_show_in_debug_output() {
        let env = ProviderEnv {
            openai_api_key: Some("sk-secret-1".into()),
            anthropic_api_key: Some("sk-ant-secret-2".into()),
            ..ProviderEnv::default()
        };
        let shown = format!("{env:?}");
        assert!(!shown.contains("secret"), "{shown}");
        let openai = from_spec("openai:gpt-4o-mini", &env).unwrap();
        let anthropic = from_spec("anthropic:claude-sonnet-4-5", &env).unwrap();
        assert_eq!(openai.name(), "openai:gpt-4o-mini");
        assert_eq!(anthropic.name(), "anthropic:claude-sonnet-4-5");
    }
}
