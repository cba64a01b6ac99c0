//! What `run` and `resume` share: the settings a run records so another
//! process can rebuild it ([`Host`]), the engine built from them, the lease
//! held while the run is worked on, live progress, and the output.

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
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
    DraftPlan, Engine, EngineError, Goal, Lease, Plan, Roles, RunConfig, RunLease, RunState,
    RunStatus, StepStatus, StoreSink, ToolRegistry,
};
use stepwise_llm::roles::{Prompts, llm_roles};
use stepwise_store::SqliteStore;
use stepwise_tools::notes::{Corpus, LoadedCorpus};

use crate::cli::{ApproveMode, OutputArgs};
use crate::config::{Config, ModelChoice, Price};
use crate::db::{self, LEASE_TTL_MS};
use crate::output;
use crate::progress::{Mode, Progress};
use crate::run_cmd::UsageError;

/// Exit status of a run that stopped for review.
pub(crate) const NEEDS_REVIEW: u8 = 3;
/// Exit status of a run paused for an approval.
pub(crate) const AWAITING_APPROVAL: u8 = 4;
/// Exit status of a cancelled run.
pub(crate) const CANCELLED: u8 = 5;

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
    let prompts = match prompts {
        Some(dir) => Prompts::from_dir(dir).map_err(|e| {
            anyhow::Error::new(UsageError(anyhow!("--prompts {}: {e}", dir.display())))
        })?,
        None => Prompts::embedded(),
    };
    let mut policy = *policy;
    if replay {
        policy.retry.max_delay_ms = 0; // nothing to wait for: the answers are on record
    }
    Ok(llm_roles(Arc::clone(model), policy, prompts))
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
        let question = format!(
            "\napprove step {} ({}) with arguments {}?",
            r.step, r.tool.name, r.args
        );
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
    let mut out = ToolRegistry::new();
    for spec in tools.specs() {
        if let Some(tool) = tools.get(&spec.name) {
            out.register_dyn(Arc::new(Slowed {
                tool: Arc::clone(tool),
                delay: std::time::Duration::from_millis(ms),
            }));
        }
    }
    out
}

/// Loads the corpus, reporting skipped files on stderr.
pub(crate) fn load_corpus(dir: &Path, quiet: bool) -> anyhow::Result<Corpus> {
    load_notes(dir, quiet).map(|loaded| loaded.corpus)
}

/// Loads the corpus with what was skipped, reporting skipped files on stderr.
pub(crate) fn load_notes(dir: &Path, quiet: bool) -> anyhow::Result<LoadedCorpus> {
    let loaded = Corpus::load(dir).map_err(|e| anyhow::Error::new(UsageError(anyhow!(e))))?;
    if !quiet {
        for skipped in &loaded.skipped {
            output::note(&format!(
                "skipped {}: {}",
                skipped.path.display(),
                skipped.reason
            ));
        }
    }
    Ok(loaded)
}

/// The tools a run with these settings can call, by name.
pub(crate) fn available_tools(host: &Host) -> Vec<String> {
    crate::tools_cmd::builtin_specs()
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

/// A run being worked on: the engine and what it writes to.
pub(crate) struct Session {
    pub(crate) engine: Engine,
    pub(crate) store: Arc<SqliteStore>,
    pub(crate) lease: Lease,
    events: tokio::sync::mpsc::UnboundedReceiver<stepwise_core::Event>,
}

impl Session {
    /// Builds the engine for a run and takes its lease.
    pub(crate) async fn open(
        store: Arc<SqliteStore>,
        run: &stepwise_core::RunId,
        host: &Host,
        approve: ApproveMode,
        quiet: bool,
    ) -> anyhow::Result<Session> {
        let cwd = std::env::current_dir().context("cannot read the current directory")?;
        let model = Config::load(&cwd)?.model(&host.model, &cwd)?;
        Self::build(store, run, host, approve, quiet, model, None).await
    }

    /// Builds the engine for a replay: the recorded model, recorded side effects.
    pub(crate) async fn open_replay(
        store: Arc<SqliteStore>,
        run: &stepwise_core::RunId,
        host: &Host,
        model: Arc<stepwise_llm::replay::ReplayModel>,
        original: &RunState,
        quiet: bool,
    ) -> anyhow::Result<Session> {
        // Retried as a run here would be, so the recorded attempts line up.
        let cwd = std::env::current_dir().context("cannot read the current directory")?;
        let policy = Config::load(&cwd)?.call_policy(&host.model);
        let model = (host.model != "offline").then_some(ModelChoice {
            model: model as Arc<dyn ChatModel>,
            policy,
        });
        Self::build(
            store,
            run,
            host,
            ApproveMode::Auto,
            quiet,
            model,
            Some(original),
        )
        .await
    }

    async fn build(
        store: Arc<SqliteStore>,
        run: &stepwise_core::RunId,
        host: &Host,
        approve: ApproveMode,
        quiet: bool,
        model: Option<ModelChoice>,
        replay_of: Option<&RunState>,
    ) -> anyhow::Result<Session> {
        let strategy = strategy(&host.strategy)?;
        let lease = db::take_lease(store.as_ref(), run).await?;
        let corpus = Arc::new(load_corpus(&host.notes, quiet)?);
        let mut tools = ToolRegistry::new();
        stepwise_tools::register_notes_tools(&mut tools, Arc::clone(&corpus));
        if let Some(dir) = &host.workspace {
            let tool = stepwise_tools::WriteFile::new(dir).map_err(|e| {
                anyhow::Error::new(UsageError(anyhow!(
                    "cannot use workspace {}: {e}",
                    dir.display()
                )))
            })?;
            tools.register(tool);
        }
        let tools = match replay_of {
            Some(original) => crate::replay_cmd::without_side_effects(slowed(tools), original),
            None => slowed(tools),
        };
        let mut roles = roles(
            model.as_ref(),
            host.prompts.as_deref(),
            corpus,
            replay_of.is_some(),
        )?;
        if let Some(plan) = &host.plan {
            roles.planner = Arc::new(GivenPlan(plan.clone()));
        }
        if host.review {
            roles.reviewer = Arc::new(ReviewBy(approve));
        }
        let approver: Arc<dyn Approver> = match approve {
            ApproveMode::Never => Arc::new(DeferToPerson),
            ApproveMode::Auto => Arc::new(ApproveAll),
            ApproveMode::Ask => Arc::new(Ask),
        };
        let (tx, events) = tokio::sync::mpsc::unbounded_channel();
        let config = RunConfig {
            concurrency: host.concurrency,
            // A person's own plan is never altered without their say.
            repair_first_draft: host.plan.is_none() || host.repair,
            ..RunConfig::default()
        };
        let engine = Engine::new(roles, tools, config)
            .context("the built-in tools are misconfigured")?
            .with_strategy(strategy)
            .with_approver(approver)
            .with_idempotency_log(Arc::clone(&store) as _)
            .with_sink(Arc::new(StoreSink::new(
                Arc::clone(&store) as _,
                Some(lease.fence),
            )))
            .with_sink(Arc::new(ChannelSink(tx)));
        Ok(Session {
            engine,
            store,
            lease,
            events,
        })
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
        } = self;
        let mode = Mode::detect(quiet);
        let display = tokio::spawn(async move {
            let mut progress = Progress::new(mode, std::io::stderr());
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
        let result = work(engine).await; // the engine (and its channel) is dropped here
        renewal.abort();
        let _ = display.await;
        let _ = store.release(&lease).await;
        result.map_err(|e| anyhow!(e))
    }
}

/// The run's model and its price, if `stepwise.toml` has one for it.
pub(crate) fn price(state: &RunState) -> Option<(String, Price)> {
    let host = Host::of(state).ok()?;
    let cwd = std::env::current_dir().ok()?;
    let price = Config::load(&cwd).ok()?.price(&host.model)?;
    Some((host.model, price))
}

/// What the run's model calls cost, if `stepwise.toml` has a price for the model.
fn cost(state: &RunState) -> Option<(String, f64)> {
    price(state).map(|(model, price)| (model, price.cost(&state.usage)))
}

/// Prints the run's output and maps its status to the exit code.
pub(crate) fn finish(state: &RunState, out: &OutputArgs) -> anyhow::Result<ExitCode> {
    finish_with(state, out, None)
}

/// [`finish`], with `hint` instead of the usual note on what to do next.
pub(crate) fn finish_with(
    state: &RunState,
    out: &OutputArgs,
    hint: Option<&str>,
) -> anyhow::Result<ExitCode> {
    let cost = cost(state);
    let text = if out.json {
        let mut value =
            serde_json::to_value(state.final_output()).context("cannot encode the output")?;
        if let (Some((model, usd)), Value::Object(map)) = (&cost, &mut value) {
            map.insert(
                "cost".to_owned(),
                serde_json::json!({"model": model, "usd": usd}),
            );
        }
        crate::runs_cmd::price_usage_breakdown(&mut value, price(state).map(|(_, p)| p));
        let mut json = serde_json::to_string_pretty(&value).context("cannot encode the output")?;
        json.push('\n');
        json
    } else {
        markdown(state)
    };
    if let (Some((model, usd)), false) = (&cost, out.quiet) {
        let u = &state.usage;
        output::note(&format!(
            "{model}: {} calls, {} in / {} out tokens, ${usd:.4}",
            u.llm_calls, u.input_tokens, u.output_tokens
        ));
    }
    if !out.quiet {
        let host = Host::of(state).ok();
        let repaired = crate::review::repairs(state, host.as_ref());
        if !repaired.is_empty() {
            output::note(&format!(
                "--repair changed your plan: {}",
                repaired.join("; ")
            ));
        }
    }
    match &out.out {
        Some(path) => {
            std::fs::write(path, &text)
                .with_context(|| format!("cannot write {}", path.display()))?;
            if !out.quiet {
                output::note(&format!("wrote {}", path.display()));
            }
        }
        None => output::stdout(&text)?,
    }
    let run = &state.run_id;
    Ok(match state.status {
        RunStatus::Ok => ExitCode::SUCCESS,
        RunStatus::NeedsReview => {
            if !out.quiet {
                output::note(&hint.map_or_else(
                    || {
                        format!(
                            "run {run} needs review; see `stepwise show {run}`, then, once something changed (--max-replans, --max-steps, the notes), `stepwise resume {run}`"
                        )
                    },
                    str::to_owned,
                ));
            }
            ExitCode::from(NEEDS_REVIEW)
        }
        RunStatus::AwaitingApproval => {
            if !out.quiet {
                output::note(&format!(
                    "run {run} waits for approval: `stepwise approve {run}`, then `stepwise resume {run}`"
                ));
            }
            ExitCode::from(AWAITING_APPROVAL)
        }
        RunStatus::Cancelled => ExitCode::from(CANCELLED),
        RunStatus::Failed | RunStatus::Running => {
            if let Some(reason) = &state.blocked_reason {
                output::error(&anyhow!("{reason}"));
            }
            ExitCode::FAILURE
        }
    })
}

/// The Markdown for stdout: the report when the run is `ok`; when it needs
/// review, why, then its partial brief (what it found, cited, with its
/// gaps) and its plan problems with their fixes; otherwise a summary of why
/// it stopped, what ran and which gaps are open — never a report it did not
/// earn. A plan the user gave and `--repair` changed says how.
pub(crate) fn markdown(state: &RunState) -> String {
    let host = Host::of(state).ok();
    let mut text = body(state, host.as_ref());
    let repaired = crate::review::repairs(state, host.as_ref());
    if !repaired.is_empty() {
        text.push_str("\n## Your plan, as repaired (--repair)\n\n");
        for change in repaired {
            text.push_str(&format!("- {change}\n"));
        }
    }
    text
}

fn body(state: &RunState, host: Option<&Host>) -> String {
    if let (RunStatus::Ok, Some(report)) = (state.status, &state.final_report) {
        let mut text = report.clone();
        if !text.ends_with('\n') {
            text.push('\n');
        }
        return text;
    }
    let title = match state.status {
        RunStatus::NeedsReview => "Needs review",
        RunStatus::AwaitingApproval => "Awaiting approval",
        RunStatus::Cancelled => "Cancelled",
        _ => "Run failed",
    };
    let goal = if state.goal.is_empty() {
        state.input.trim()
    } else {
        state.goal.as_str()
    };
    let mut text = format!("# {title}: {goal}\n\n");
    if let Some(reason) = &state.blocked_reason {
        text.push_str(&format!("**Why:** {reason}\n"));
    }
    let brief = state
        .final_report
        .as_deref()
        .filter(|_| state.status == RunStatus::NeedsReview);
    if let Some(brief) = brief {
        // The brief's own title is the goal, already in the heading.
        let mut lines = brief.lines().peekable();
        while lines.peek().is_some_and(|l| l.trim().is_empty()) {
            lines.next();
        }
        if lines.peek().is_some_and(|l| l.starts_with("# ")) {
            lines.next();
        }
        let rest: Vec<&str> = lines.collect();
        text.push_str("\n_Partial brief: what the run found before it stopped._\n\n");
        text.push_str(rest.join("\n").trim());
        text.push('\n');
    }
    if !state.pending_approvals.is_empty() || state.pending_review.is_some() {
        text.push_str("\n## Waiting for approval\n\n");
        if let Some(v) = state.pending_review {
            text.push_str(&format!("- plan version {v}\n"));
        }
        for step in state.pending_approvals.keys() {
            let tool = state.plan.step(step).map_or("?", |s| s.tool.as_str());
            text.push_str(&format!("- step {step} ({tool})\n"));
        }
        text.push_str(&format!(
            "\nApprove with `stepwise approve {0}`, then continue with `stepwise resume {0}`.\n",
            state.run_id
        ));
    }
    if brief.is_none() && !state.plan.steps.is_empty() {
        text.push_str(&format!("\n## Plan (version {})\n\n", state.plan.version));
        for s in &state.plan.steps {
            let mark = if s.status == StepStatus::Succeeded {
                "x"
            } else {
                " "
            };
            text.push_str(&format!(
                "- [{mark}] {} ({}, {}): {}\n",
                s.id, s.tool, s.status, s.description
            ));
        }
    }
    if !state.plan_errors.is_empty() {
        text.push_str("\n## Plan problems\n\n");
        for d in &state.plan_errors {
            let fix = crate::review::fix(d, state, host);
            text.push_str(&format!("- {d}\n  fix: {fix}\n"));
        }
        if host.is_some_and(|h| h.plan.is_some() && !h.repair) {
            text.push_str(
                "\nYour plan (--plan) was not changed. Fix it and run again, or add --repair to let stepwise repair it (the output then says what it changed).\n",
            );
        }
    }
    if brief.is_none() {
        text.push_str("\n## Unresolved gaps\n\n");
        if state.knowledge_gaps.is_empty() {
            text.push_str("None recorded.\n");
        } else {
            for gap in &state.knowledge_gaps {
                text.push_str(&format!("- {gap}\n"));
            }
        }
    }
    text
}
