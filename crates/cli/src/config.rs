//! Choosing a model: `--model` (default `offline`), provider settings from
//! the environment, a `.env` file and `stepwise.toml`, and an optional price
//! table that turns tokens into cost. Keys are read from the environment (or
//! `.env`) only — never from `stepwise.toml`, and never printed or stored.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, anyhow};
use serde::Deserialize;
use stepwise_core::{ChatModel, Usage};
use stepwise_llm::providers::{ProviderEnv, from_spec};
use stepwise_llm::script::ScriptModel;

use crate::run_cmd::UsageError;

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
    /// Model spec (e.g. `openai:gpt-4o-mini`) -> price.
    #[serde(default)]
    prices: BTreeMap<String, Price>,
}

/// Model settings for this invocation.
#[derive(Debug, Default)]
pub(crate) struct Config {
    file: FileConfig,
}

impl Config {
    /// Loads `.env` (without overriding the environment) and `stepwise.toml` from `dir`.
    pub(crate) fn load(dir: &Path) -> anyhow::Result<Config> {
        let env_file = dir.join(".env");
        if env_file.is_file() {
            dotenvy::from_path(&env_file).map_err(|e| {
                anyhow::Error::new(UsageError(anyhow!(
                    "cannot read {}: {e}",
                    env_file.display()
                )))
            })?;
        }
        let path = dir.join("stepwise.toml");
        let file = if path.is_file() {
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("cannot read {}", path.display()))?;
            toml::from_str(&text).map_err(|e| {
                anyhow::Error::new(UsageError(anyhow!("{} is not valid: {e}", path.display())))
            })?
        } else {
            FileConfig::default()
        };
        Ok(Config { file })
    }

    /// The model to use: the flag, else `STEPWISE_MODEL`, else `stepwise.toml`, else offline.
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

    /// The price of a model, if the table has it.
    pub(crate) fn price(&self, spec: &str) -> Option<Price> {
        self.file.prices.get(spec).copied()
    }

    /// Builds the chat model for a spec (`offline` has none).
    pub(crate) fn model(
        &self,
        spec: &str,
        base: &Path,
    ) -> anyhow::Result<Option<Arc<dyn ChatModel>>> {
        if spec == "offline" {
            return Ok(None);
        }
        if let Some(file) = spec.strip_prefix("script:") {
            let path = resolve(base, file);
            let model = ScriptModel::from_file(&path)
                .map_err(|e| anyhow::Error::new(UsageError(anyhow!("--model {spec}: {e}"))))?;
            return Ok(Some(Arc::new(model)));
        }
        from_spec(spec, &self.provider_env())
            .map(Some)
            .map_err(|e| anyhow::Error::new(UsageError(anyhow!("--model {spec}: {e}"))))
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
