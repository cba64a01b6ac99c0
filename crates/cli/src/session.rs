//! What `run`, `resume`, `replay` and `bench` share: the settings a run
//! records so another process can rebuild it ([`Host`]), the one
//! [`EngineBuilder`] that wires roles, tools and strategy for all four, and
//! the [`Session`] that holds a run's lease while it is worked on, with live
//! progress.

use std::collections::BTreeMap;
use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, anyhow};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use stepwise_core::ChatModel;
use stepwise_core::engine::{
    ApprovalDecision, ApprovalRequest, ApproveAll, Approver, DeferToPerson,
};
use stepwise_core::event::ChannelSink;
use stepwise_core::roles::{PlanRequest, Planner, Reply, ReviewDecision, Reviewer, RoleError};
use stepwise_core::strategy::{Strategy, StrategyRegistry};
use stepwise_core::{
    DraftPlan, Engine, EngineError, Goal, Lease, Plan, Roles, RunConfig, RunState, StepStatus,
    StoreSink, ToolRegistry,
};
use stepwise_llm::roles::{Prompts, llm_roles};
use stepwise_tools::notes::{Corpus, LoadedCorpus};

use crate::cli::ApproveMode;
use crate::config::{Config, ModelChoice, Price};
use crate::db::{self, Db, LEASE_TTL_MS};
use crate::error::UsageError;
use crate::output;
use crate::progress::{Mode, Progress};
use stepwise_core::roles::RoleName;

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

fn offline() -> String {
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

/// The built-in strategy called `name`; an unknown name is a usage error
/// listing the valid ones.
pub(crate) fn strategy(name: &str) -> anyhow::Result<Arc<dyn Strategy>> {
    let registry = StrategyRegistry::builtin();
    registry.get(name).ok_or_else(|| {
        anyhow::Error::new(UsageError(anyhow!(
            "unknown strategy `{name}`; expected one of: {}",
            registry.names().join(", ")
        )))
    })
}

/// The roles over `corpus`: the offline ones without a model, else the
/// LLM-backed ones with the built-in prompts or those in `prompts`.
pub(crate) fn roles(
    model: Option<&ModelChoice>,
    prompts: Option<&Path>,
    corpus: Arc<Corpus>,
    replay: bool,
) -> anyhow::Result<Roles> {
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
fn load_prompts(dir: Option<&Path>) -> anyhow::Result<Prompts> {
    match dir {
        Some(dir) => Prompts::from_dir(dir).map_err(|e| {
            anyhow::Error::new(UsageError(anyhow!("--prompts {}: {e}", dir.display())))
        }),
        None => Ok(Prompts::embedded()),
    }
}

/// The roles a run puts on models of their own, built from its settings.
pub(crate) fn role_choices(
    config: &Config,
    host: &Host,
    cwd: &Path,
) -> anyhow::Result<Vec<(RoleName, ModelChoice)>> {
    let mut out = Vec::new();
    for (name, spec) in &host.role_models {
        let role = crate::config::role_named(name).ok_or_else(|| {
            anyhow::Error::new(UsageError(anyhow!("[roles.{name}]: no such role")))
        })?;
        if let Some(choice) = config.model(spec, cwd)? {
            out.push((role, choice));
        }
    }
    Ok(out)
}

/// Plans by returning the plan the user gave.
struct GivenPlan(Value);

#[async_trait]
impl Planner for GivenPlan {
    async fn plan(&self, _request: PlanRequest<'_>) -> Result<Reply<DraftPlan>, RoleError> {
        Ok(Reply::free(DraftPlan(self.0.clone())))
    }
}

/// Asks on the terminal; without one, defers to `stepwise approve`.
struct Ask;

fn ask(question: &str) -> Option<bool> {
    if !std::io::stdin().is_terminal() {
        output::note("no terminal to ask on; the run will wait for `stepwise approve`");
        return None;
    }
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "{question} [y/N] ");
    let _ = err.flush();
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line).ok()?;
    Some(matches!(line.trim(), "y" | "Y" | "yes" | "YES" | "Yes"))
}

#[async_trait]
impl Approver for Ask {
    async fn decide(&self, r: ApprovalRequest<'_>) -> ApprovalDecision {
        let question = format!("\n{}", r.question());
        match tokio::task::spawn_blocking(move || ask(&question))
            .await
            .ok()
            .flatten()
        {
            Some(true) => ApprovalDecision::Approve { by: db::person() },
            Some(false) => ApprovalDecision::Deny {
                by: db::person(),
                reason: "refused at the prompt".to_owned(),
            },
            None => ApprovalDecision::Defer,
        }
    }
}

/// review_plan for --review: approved, deferred or asked, like side-effect steps.
struct ReviewBy(ApproveMode);

#[async_trait]
impl Reviewer for ReviewBy {
    async fn review(&self, _goal: &Goal, plan: &Plan) -> Result<Reply<ReviewDecision>, RoleError> {
        let decision = match self.0 {
            ApproveMode::Auto => ReviewDecision::Approved {
                by: "auto".to_owned(),
            },
            ApproveMode::Never => ReviewDecision::Deferred,
            ApproveMode::Ask => {
                let steps: Vec<String> = plan
                    .steps
                    .iter()
                    .filter(|s| s.status == StepStatus::Pending)
                    .map(|s| format!("  {} ({}): {}", s.id, s.tool, s.description))
                    .collect();
                let question = format!(
                    "\nplan version {}:\n{}\napprove this plan?",
                    plan.version,
                    steps.join("\n")
                );
                match tokio::task::spawn_blocking(move || ask(&question))
                    .await
                    .ok()
                    .flatten()
                {
                    Some(true) => ReviewDecision::Approved { by: db::person() },
                    Some(false) => ReviewDecision::Rejected {
                        reason: "refused at the prompt".to_owned(),
                    },
                    None => ReviewDecision::Deferred,
                }
            }
        };
        Ok(Reply::free(decision))
    }
}

/// A tool slowed down by `STEPWISE_TOOL_DELAY_MS` — a testing aid, so crash
/// tests can kill a run while a step is in flight.
struct Slowed {
    tool: Arc<dyn stepwise_core::DynTool>,
    delay: std::time::Duration,
}

impl stepwise_core::DynTool for Slowed {
    fn spec(&self) -> &stepwise_core::ToolSpec {
        self.tool.spec()
    }

    fn call_json(
        &self,
        ctx: stepwise_core::ToolContext,
        args: Value,
    ) -> futures::future::BoxFuture<'_, Result<Value, stepwise_core::ToolError>> {
        Box::pin(async move {
            tokio::time::sleep(self.delay).await;
            self.tool.call_json(ctx, args).await
        })
    }
}

/// Wraps every tool in [`Slowed`] when `STEPWISE_TOOL_DELAY_MS` is set.
fn slowed(tools: ToolRegistry) -> ToolRegistry {
    let Some(ms) = std::env::var("STEPWISE_TOOL_DELAY_MS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    else {
        return tools;
    };
    tools.map(|tool| {
        Arc::new(Slowed {
            tool,
            delay: std::time::Duration::from_millis(ms),
        })
    })
}

/// Loads the corpus, reporting skipped files on stderr.
pub(crate) fn load_corpus(dir: &Path, quiet: bool) -> anyhow::Result<Corpus> {
    load_notes(dir, quiet).map(|loaded| loaded.corpus)
}

/// Loads the corpus with what was skipped, reporting skipped files on stderr.
pub(crate) fn load_notes(dir: &Path, quiet: bool) -> anyhow::Result<LoadedCorpus> {
    let loaded =
        crate::loading::load(dir, quiet).map_err(|e| anyhow::Error::new(UsageError(anyhow!(e))))?;
    if !quiet {
        note_skipped(&loaded);
    }
    Ok(loaded)
}

/// Reports on stderr the files a load left out, and why.
pub(crate) fn note_skipped(loaded: &LoadedCorpus) {
    for skipped in &loaded.skipped {
        output::note(&format!(
            "skipped {}: {}",
            skipped.path.display(),
            skipped.reason
        ));
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
    crate::cmd::tools::builtin_specs()
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
    /// and that reads only the status back (a worker, the server).
    #[cfg(feature = "serve")]
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
    pub(crate) fn for_host(host: &'a Host, corpus: Arc<Corpus>) -> anyhow::Result<Self> {
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
    ) -> anyhow::Result<Self> {
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
    pub(crate) fn build(self) -> anyhow::Result<Engine> {
        let host = self.host;
        let mut tools = ToolRegistry::new();
        stepwise_tools::register_notes_tools(&mut tools, Arc::clone(&self.corpus));
        if let Some(dir) = host.and_then(|h| h.workspace.as_ref()) {
            let tool = stepwise_tools::WriteFile::new(dir).map_err(|e| {
                anyhow::Error::new(UsageError(anyhow!(
                    "cannot use workspace {}: {e}",
                    dir.display()
                )))
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
            Some(original) => crate::cmd::replay::without_side_effects(slowed(tools), original),
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
        }
        config.stream_plans = self.stream_plans;
        config.keep_history = self.keep_history;
        Ok(Engine::new(roles, tools, config)
            .context("the tools are misconfigured")?
            .with_strategy(self.strategy)
            .with_approver(approver))
    }
}

/// A run being worked on: the engine, what it writes to, and the MCP
/// servers its tools call (stopped when the work ends).
pub(crate) struct Session {
    pub(crate) engine: Engine,
    pub(crate) store: Db,
    pub(crate) lease: Lease,
    events: tokio::sync::mpsc::UnboundedReceiver<stepwise_core::Event>,
    mcp: crate::mcp::McpServers,
    /// Time spent before the run (loading the notes), counted in its reported time.
    before: std::time::Duration,
}

impl Session {
    /// Builds the engine for a run over its loaded `corpus` (the model from
    /// the run's settings, `stepwise.toml` and the environment) and takes
    /// its lease.
    pub(crate) async fn open(
        store: Db,
        run: &stepwise_core::RunId,
        host: &Host,
        corpus: Arc<Corpus>,
        approve: ApproveMode,
    ) -> anyhow::Result<Session> {
        let cwd = std::env::current_dir().context("cannot read the current directory")?;
        let config = Config::load(&cwd)?;
        let engine = EngineBuilder::for_run(&config, host, corpus, approve, &cwd)?;
        Self::build(store, run, engine, host).await
    }

    /// Builds the engine for a replay: the recorded model, recorded side effects.
    pub(crate) async fn open_replay(
        store: Db,
        run: &stepwise_core::RunId,
        host: &Host,
        corpus: Arc<Corpus>,
        model: Arc<stepwise_llm::replay::ReplayModel>,
        original: &RunState,
    ) -> anyhow::Result<Session> {
        // Retried as a run here would be, so the recorded attempts line up.
        let cwd = std::env::current_dir().context("cannot read the current directory")?;
        let policy = Config::load(&cwd)?.call_policy(&host.model);
        let replayed = |policy| ModelChoice {
            model: Arc::clone(&model) as Arc<dyn ChatModel>,
            policy,
        };
        // Every role answers from the record, its own model's or not.
        let role_models = host
            .role_models
            .keys()
            .filter_map(|name| crate::config::role_named(name))
            .map(|role| (role, replayed(policy)))
            .collect();
        let model = (host.model != "offline").then(|| replayed(policy));
        let engine = EngineBuilder::for_host(host, corpus)?
            .model(model)
            .role_models(role_models)
            .approve(ApproveMode::Auto)
            .replay_of(original);
        Self::build(store, run, engine, host).await
    }

    /// Starts the run's MCP servers (one that cannot start fails here,
    /// before anything is planned), takes the run's lease, then builds the
    /// engine writing to the store (fenced by the lease) and to the progress
    /// display.
    async fn build(
        store: Db,
        run: &stepwise_core::RunId,
        engine: EngineBuilder<'_>,
        host: &Host,
    ) -> anyhow::Result<Session> {
        let log = crate::mcp::log_path(store.file(), run.as_str());
        let mcp = crate::mcp::start(&host.mcp, log.as_deref()).await?;
        let lease = match db::take_lease(store.as_ref(), run).await {
            Ok(lease) => lease,
            Err(e) => {
                mcp.shutdown().await;
                return Err(e);
            }
        };
        let (tx, events) = tokio::sync::mpsc::unbounded_channel();
        let fenced: Arc<dyn stepwise_core::IdempotencyLog> =
            Arc::clone(&store).fenced_log(run, lease.fence);
        let engine = match engine.tools(mcp.tools()).guard(Arc::clone(&fenced)).build() {
            Ok(engine) => engine,
            Err(e) => {
                mcp.shutdown().await;
                let _ = store.release(&lease).await;
                return Err(e);
            }
        };
        let engine = engine
            .with_idempotency_log(fenced)
            .with_sink(Arc::new(StoreSink::new(
                Arc::clone(&store) as _,
                Some(lease.fence),
            )))
            .with_sink(Arc::new(ChannelSink(tx)));
        let engine = crate::trace::traced_from(engine, run, store.as_ref()).await;
        Ok(Session {
            engine,
            store,
            lease,
            events,
            mcp,
            before: std::time::Duration::ZERO,
        })
    }

    /// Counts `took` (loading the notes) in the time the progress reports.
    pub(crate) fn loading_took(mut self, took: std::time::Duration) -> Self {
        self.before = took;
        self
    }

    /// Drives `work` (a run or a resume) with live progress and the lease
    /// renewed, then releases the lease.
    pub(crate) async fn drive<F>(
        self,
        quiet: bool,
        so_far: Option<RunState>,
        work: impl FnOnce(Engine) -> F,
    ) -> anyhow::Result<RunState>
    where
        F: std::future::Future<Output = Result<RunState, EngineError>>,
    {
        let Session {
            engine,
            store,
            lease,
            mut events,
            mcp,
            before,
        } = self;
        let mode = Mode::detect(quiet);
        let display = tokio::spawn(async move {
            let mut progress = Progress::new(mode, std::io::stderr()).after(before);
            if let Some(state) = so_far {
                progress = progress.resuming(state);
            }
            while let Some(event) = events.recv().await {
                progress.on_event(&event);
            }
            progress.finish();
        });
        let renew_store = Arc::clone(&store);
        let renew_lease = lease.clone();
        let renewal = tokio::spawn(async move {
            loop {
                tokio::time::sleep(std::time::Duration::from_millis(LEASE_TTL_MS / 3)).await;
                if renew_store.renew(&renew_lease, LEASE_TTL_MS).await.is_err() {
                    break; // taken over: the next append fails with `Fenced`
                }
            }
        });
        let run = lease.run.clone();
        // The engine (and its channel) is dropped when the work ends. With
        // MCP servers running, Ctrl-C stops them before the process exits
        // (the run's log is durable: `stepwise resume` continues it).
        let result = if mcp.is_empty() {
            Some(work(engine).await)
        } else {
            tokio::select! {
                result = work(engine) => Some(result),
                () = crate::mcp::interrupt() => None,
            }
        };
        mcp.shutdown().await;
        renewal.abort();
        let _ = display.await;
        let _ = store.release(&lease).await;
        match result {
            Some(result) => result.map_err(|e| anyhow!(e)),
            None => Err(anyhow::Error::new(crate::mcp::Interrupted(format!(
                "interrupted; the MCP servers were stopped. `stepwise resume {run}` continues the run"
            )))),
        }
    }
}

/// The run's model and its price, if `stepwise.toml` has one for it — and
/// only if every role ran on that model: one price for calls to several
/// models would be a wrong cost, so none is shown.
pub(crate) fn price(state: &RunState) -> Option<(String, Price)> {
    let host = Host::of(state).ok()?;
    if host.role_models.values().any(|m| *m != host.model) {
        return None;
    }
    let cwd = std::env::current_dir().ok()?;
    let price = Config::load(&cwd).ok()?.price(&host.model)?;
    Some((host.model, price))
}
