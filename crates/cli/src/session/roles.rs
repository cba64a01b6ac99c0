//! The strategy and the roles an engine is built with: offline, on a
//! model, or a plan the user gave.

use std::path::Path;
use std::sync::Arc;

use anyhow::anyhow;
use async_trait::async_trait;
use serde_json::Value;
use stepwise_core::roles::{PlanRequest, Planner, Reply, RoleError, RoleName};
use stepwise_core::strategy::{Strategy, StrategyRegistry};
use stepwise_core::{DraftPlan, Roles};
use stepwise_llm::roles::{Prompts, llm_roles};
use stepwise_tools::notes::Corpus;

use crate::config::{Config, ModelChoice};
use crate::error::{CliError, CliResult};

use crate::host::Host;

/// The built-in strategy called `name`; an unknown name is a usage error
/// listing the valid ones.
pub(crate) fn strategy(name: &str) -> CliResult<Arc<dyn Strategy>> {
    let registry = StrategyRegistry::builtin();
    registry.get(name).ok_or_else(|| {
        CliError::usage(anyhow!(
            "unknown strategy `{name}`; expected one of: {}",
            registry.names().join(", ")
        ))
    })
}

/// The roles over `corpus`: the offline ones without a model, else the
/// LLM-backed ones with the built-in prompts or those in `prompts`.
pub(crate) fn roles(
    model: Option<&ModelChoice>,
    prompts: Option<&Path>,
    corpus: Arc<Corpus>,
    replay: bool,
) -> CliResult<Roles> {
    let Some(ModelChoice { model, policy }) = model else {
        return Ok(stepwise_llm::offline::roles(corpus));
    };
    let prompts = load_prompts(prompts)?;
    let mut policy = *policy;
    if replay {
        policy.retry.max_delay_ms = 0; // nothing to wait for: the answers are on record
    }
    Ok(llm_roles(Arc::clone(model), policy, prompts))
}

/// The prompt templates: a folder's, or the built-in ones.
pub(super) fn load_prompts(dir: Option<&Path>) -> CliResult<Prompts> {
    match dir {
        Some(dir) => Prompts::from_dir(dir)
            .map_err(|e| CliError::usage(anyhow!("--prompts {}: {e}", dir.display()))),
        None => Ok(Prompts::embedded()),
    }
}

/// The roles a run puts on models of their own, built from its settings.
pub(crate) fn role_choices(
    config: &Config,
    host: &Host,
    cwd: &Path,
) -> CliResult<Vec<(RoleName, ModelChoice)>> {
    let mut out = Vec::new();
    for (name, spec) in &host.role_models {
        let role = crate::config::role_named(name)
            .ok_or_else(|| CliError::usage(anyhow!("[roles.{name}]: no such role")))?;
        if let Some(choice) = config.model(spec, cwd)? {
            out.push((role, choice));
        }
    }
    Ok(out)
}

/// Plans by returning the plan the user gave.
pub(super) struct GivenPlan(pub(super) Value);

#[async_trait]
impl Planner for GivenPlan {
    async fn plan(&self, _request: PlanRequest<'_>) -> Result<Reply<DraftPlan>, RoleError> {
        Ok(Reply::free(DraftPlan(self.0.clone())))
    }
}
