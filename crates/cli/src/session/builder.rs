//! The one [`EngineBuilder`] that wires roles, tools and strategy for
//! `run`, `resume`, `replay` and `bench`.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, anyhow};
use stepwise_core::engine::{ApproveAll, Approver, DeferToPerson};
use stepwise_core::roles::RoleName;
use stepwise_core::strategy::Strategy;
use stepwise_core::{Engine, RunConfig, RunState, ToolRegistry};
use stepwise_tools::notes::Corpus;

use crate::cli::ApproveMode;
use crate::config::{Config, ModelChoice};
use crate::error::{CliError, CliResult};

use super::approvers::{Ask, ReviewBy};
use super::roles::{GivenPlan, load_prompts, role_choices, roles, strategy};
use super::slowed::slowed;
use crate::host::Host;

/// Wires an engine: the roles over a loaded corpus (offline, or on a
/// model), the notes tools (and `write_file` with a workspace), the
/// strategy, approvals and bounds. The one place `run`, `resume`, `replay`
/// and `bench` build their engine, so the four cannot drift apart; the
/// caller adds the sinks (a run's store and progress, or none for a bench).
pub(crate) struct EngineBuilder<'a> {
    corpus: Arc<Corpus>,
    strategy: Arc<dyn Strategy>,
    model: Option<ModelChoice>,
    host: Option<&'a Host>,
    approve: ApproveMode,
    replay_of: Option<&'a RunState>,
    extra_tools: Vec<Arc<dyn stepwise_core::DynTool>>,
    /// Roles on a model of their own, over the default roles.
    role_models: Vec<(RoleName, ModelChoice)>,
    /// `[planner] stream`: stream the first plan where the planner can.
    stream_plans: bool,
    /// Whether a run keeps its history in memory (see
    /// [`RunConfig::keep_history`]).
    keep_history: bool,
    /// The log asked, right before each side-effect call, whether the
    /// run's lease still holds ([`crate::guard`]).
    guard: Option<Arc<dyn stepwise_core::IdempotencyLog>>,
}

impl<'a> EngineBuilder<'a> {
    /// `strategy` over `corpus`: the notes tools, the offline roles, the
    /// default bounds, side-effect steps deferred to a person.
    pub(crate) fn new(corpus: Arc<Corpus>, strategy: Arc<dyn Strategy>) -> Self {
        EngineBuilder {
            corpus,
            strategy,
            model: None,
            host: None,
            approve: ApproveMode::Never,
            replay_of: None,
            extra_tools: Vec::new(),
            role_models: Vec::new(),
            stream_plans: false,
            keep_history: true,
            guard: None,
        }
    }

    /// Each side-effect call asks `log` first whether the run's lease still
    /// holds, and is not made if it does not ([`crate::guard`]).
    pub(crate) fn guard(mut self, log: Arc<dyn stepwise_core::IdempotencyLog>) -> Self {
        self.guard = Some(log);
        self
    }

    /// Runs keep no history in memory: for a host whose store holds the log
    /// (a session, a worker, the server), which reads it back if it needs it.
    #[must_use]
    pub(crate) fn forget_history(mut self) -> Self {
        self.keep_history = false;
        self
    }

    /// Roles on a model of their own (`[roles.NAME]`), replacing the
    /// default model's (or the offline) role.
    pub(crate) fn role_models(mut self, models: Vec<(RoleName, ModelChoice)>) -> Self {
        self.role_models = models;
        self
    }

    /// Tools from elsewhere (the run's MCP servers), next to the built-in ones.
    pub(crate) fn tools(mut self, tools: Vec<Arc<dyn stepwise_core::DynTool>>) -> Self {
        self.extra_tools = tools;
        self
    }

    /// As a run's settings say: its strategy (an unknown one is a usage
    /// error), workspace, given plan, review, prompts and concurrency.
    pub(crate) fn for_host(host: &'a Host, corpus: Arc<Corpus>) -> CliResult<Self> {
        let mut builder = Self::new(corpus, strategy(&host.strategy)?);
        builder.host = Some(host);
        Ok(builder)
    }

    /// As a run's settings say, with its models from `config`: the model
    /// behind the roles and the roles on models of their own. How `run`,
    /// `resume` and `serve` build a run's engine.
    pub(crate) fn for_run(
        config: &Config,
        host: &'a Host,
        corpus: Arc<Corpus>,
        approve: ApproveMode,
        cwd: &Path,
    ) -> CliResult<Self> {
        let model = config.model(&host.model, cwd)?;
        let mut builder = Self::for_host(host, corpus)?;
        builder.stream_plans = config.stream_plans();
        Ok(builder
            .model(model)
            .role_models(role_choices(config, host, cwd)?)
            .approve(approve))
    }

    /// The model behind the roles and how its calls are retried (`None`:
    /// the offline roles).
    pub(crate) fn model(mut self, model: Option<ModelChoice>) -> Self {
        self.model = model;
        self
    }

    /// How side-effect steps (and, with review, plans) get approved.
    pub(crate) fn approve(mut self, mode: ApproveMode) -> Self {
        self.approve = mode;
        self
    }

    /// A replay of `original`: side-effect tools answer with its recorded
    /// outputs, and model retries do not wait (the answers are on record).
    pub(crate) fn replay_of(mut self, original: &'a RunState) -> Self {
        self.replay_of = Some(original);
        self
    }

    /// The engine, without sinks.
    pub(crate) fn build(self) -> CliResult<Engine> {
        let host = self.host;
        let mut tools = ToolRegistry::new();
        stepwise_tools::register_notes_tools(&mut tools, Arc::clone(&self.corpus));
        if let Some(dir) = host.and_then(|h| h.workspace.as_ref()) {
            let tool = stepwise_tools::WriteFile::new(dir).map_err(|e| {
                CliError::usage(anyhow!("cannot use workspace {}: {e}", dir.display()))
            })?;
            tools.register(tool);
        }
        for tool in self.extra_tools {
            tools.register_dyn(tool);
        }
        // Guarded inside the test delay, so the check is the last thing
        // before the call, as it is without one.
        if let Some(log) = &self.guard {
            tools = crate::guard::guarded(tools, log);
        }
        let tools = match self.replay_of {
            Some(original) => super::recorded::without_side_effects(slowed(tools), original),
            None => slowed(tools),
        };
        let prompts = host.and_then(|h| h.prompts.as_deref());
        let mut roles = roles(
            self.model.as_ref(),
            prompts,
            self.corpus,
            self.replay_of.is_some(),
        )?;
        for (role, choice) in self.role_models {
            let mut policy = choice.policy;
            if self.replay_of.is_some() {
                policy.retry.max_delay_ms = 0;
            }
            stepwise_llm::roles::use_model_for(
                &mut roles,
                role,
                choice.model,
                policy,
                load_prompts(prompts)?,
            );
        }
        if let Some(plan) = host.and_then(|h| h.plan.as_ref()) {
            roles.planner = Arc::new(GivenPlan(plan.clone()));
        }
        if host.is_some_and(|h| h.review) {
            roles.reviewer = Arc::new(ReviewBy(self.approve));
        }
        let approver: Arc<dyn Approver> = match self.approve {
            ApproveMode::Never => Arc::new(DeferToPerson),
            ApproveMode::Auto => Arc::new(ApproveAll),
            ApproveMode::Ask => Arc::new(Ask),
        };
        let mut config = RunConfig::default();
        if let Some(host) = host {
            config.concurrency = host.concurrency;
            // A person's own plan is never altered without their say.
            config.repair_first_draft = host.plan.is_none() || host.repair;
            config.assess = host.assess.into();
            // A person typed the goal: one word is too ambiguous to plan.
            config.refuse_single_words = true;
        }
        config.stream_plans = self.stream_plans;
        config.keep_history = self.keep_history;
        Ok(Engine::new(roles, tools, config)
            .context("the tools are misconfigured")?
            .with_strategy(self.strategy)
            .with_approver(approver))
    }
}
