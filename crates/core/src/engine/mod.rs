//! The driver: walks seed 001's planning graph for one run. It is the single
//! writer of the run's events; every event is applied to the state and
//! handed to the sinks before the engine acts on it.
//!
//! Steps run concurrently: `select_next_step` dispatches every ready step (up
//! to `concurrency`), `execute_step` waits for the next outcome (retrying
//! transient failures with backoff), and `assess_progress` judges it. So as
//! soon as one step finishes, its newly ready dependants start — wall time
//! approaches the DAG's critical path.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use serde_json::Value;
use tokio::task::{Id as TaskId, JoinSet};

use crate::event::{Event, EventKind, EventSink, SinkError, StopCondition};
use crate::failure::{FailureClass, FailureKind, StepFailure};
use crate::goal::{Constraints, Goal};
use crate::graph::{Node, is_edge};
use crate::ids::{RunId, StepId};
use crate::plan::args::resolve_value_in;
use crate::plan::validate::{Limits, validate};
use crate::plan::{DraftPlan, Plan, Step};
use crate::retry::RetryPolicy;
use crate::roles::{
    AssessRequest, Assessor, AutoApprove, DependencyOutput, PlanRequest, Planner, RepairRequest,
    Repairer, ReplanRequest, Replanner, Reply, ReviewDecision, Reviewer, RoleError, StepContext,
    StepExecutor, StepOutcome, Synthesizer, ToolCallExecutor, Verdict,
};
use crate::scheduler::{blocked_dependants, check_precondition_in};
use crate::state::{RunState, StateError, StepResult};
use crate::step_status::StepStatus;
use crate::store::{IdempotencyLog, IdempotencyRecord};
use crate::strategy::react::{Actor, Summarizer};
use crate::strategy::router::Router;
use crate::strategy::verify::Verifier;
use crate::strategy::{DEFAULT_STRATEGY, Driver, Fixed, Strategy};
use crate::tool::{CatalogError, ToolCatalog, ToolContext, ToolRegistry, ToolSpec};

/// Steps a plan may hold (and a run dispatch) unless told otherwise.
pub const DEFAULT_MAX_STEPS: usize = 20;

/// Bounds and knobs of a run. Constraints may lower `max_steps` and `max_replans`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunConfig {
    /// Most steps a plan may hold and a run may dispatch.
    pub max_steps: usize,
    /// Most replans.
    pub max_replans: u32,
    /// Most repair attempts per invalid draft.
    pub max_repairs: u32,
    /// Most steps in flight at once.
    pub concurrency: usize,
    /// Retries of transient step failures.
    pub retry: RetryPolicy,
    /// Whether repair_plan may change the planner's first draft. Set it to
    /// false when that draft is a person's own plan (the CLI's `--plan`
    /// without `--repair`): an invalid one then stops for review listing
    /// every problem, instead of being altered without their say. Drafts of
    /// later replans are repaired either way.
    pub repair_first_draft: bool,
}

impl Default for RunConfig {
    fn default() -> Self {
        Self {
            max_steps: DEFAULT_MAX_STEPS,
            max_replans: 3,
            max_repairs: 2,
            concurrency: 4,
            retry: RetryPolicy::default(),
            repair_first_draft: true,
        }
    }
}

/// The roles a run uses.
#[derive(Clone)]
pub struct Roles {
    /// create_plan
    pub planner: Arc<dyn Planner>,
    /// repair_plan
    pub repairer: Arc<dyn Repairer>,
    /// review_plan (default: approve everything)
    pub reviewer: Arc<dyn Reviewer>,
    /// execute_step (default: call the tool)
    pub executor: Arc<dyn StepExecutor>,
    /// assess_progress
    pub assessor: Arc<dyn Assessor>,
    /// replan
    pub replanner: Arc<dyn Replanner>,
    /// synthesize_report
    pub synthesizer: Arc<dyn Synthesizer>,
    /// verify (needed by the `verified` strategy)
    pub verifier: Option<Arc<dyn Verifier>>,
    /// act (needed by the ReAct strategies)
    pub actor: Option<Arc<dyn Actor>>,
    /// summarize (needed by `react-isolated`)
    pub summarizer: Option<Arc<dyn Summarizer>>,
    /// route (needed by the `router` strategy)
    pub router: Option<Arc<dyn Router>>,
}

impl std::fmt::Debug for Roles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Roles { .. }")
    }
}

impl Roles {
    /// Roles with auto-approval and the plain tool-calling executor.
    pub fn new(
        planner: Arc<dyn Planner>,
        repairer: Arc<dyn Repairer>,
        assessor: Arc<dyn Assessor>,
        replanner: Arc<dyn Replanner>,
        synthesizer: Arc<dyn Synthesizer>,
    ) -> Self {
        Self {
            planner,
            repairer,
            reviewer: Arc::new(AutoApprove),
            executor: Arc::new(ToolCallExecutor),
            assessor,
            replanner,
            synthesizer,
            verifier: None,
            actor: None,
            summarizer: None,
            router: None,
        }
    }

    /// Adds the verifier (the `verified` strategy).
    #[must_use]
    pub fn with_verifier(mut self, verifier: Arc<dyn Verifier>) -> Self {
        self.verifier = Some(verifier);
        self
    }

    /// Adds the actor (the ReAct strategies).
    #[must_use]
    pub fn with_actor(mut self, actor: Arc<dyn Actor>) -> Self {
        self.actor = Some(actor);
        self
    }

    /// Adds the summarizer (`react-isolated`).
    #[must_use]
    pub fn with_summarizer(mut self, summarizer: Arc<dyn Summarizer>) -> Self {
        self.summarizer = Some(summarizer);
        self
    }

    /// Adds the router (the `router` strategy).
    #[must_use]
    pub fn with_router(mut self, router: Arc<dyn Router>) -> Self {
        self.router = Some(router);
        self
    }

    /// Replaces the reviewer.
    #[must_use]
    pub fn with_reviewer(mut self, reviewer: Arc<dyn Reviewer>) -> Self {
        self.reviewer = reviewer;
        self
    }

    /// Replaces the step executor.
    #[must_use]
    pub fn with_executor(mut self, executor: Arc<dyn StepExecutor>) -> Self {
        self.executor = executor;
        self
    }
}

/// Why the engine itself stopped. Role and tool failures are not engine
/// errors: they end the run with a status and an event.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// An event could not be recorded, so the run stopped rather than go on unrecorded.
    #[error(transparent)]
    Sink(#[from] SinkError),
    /// The engine produced an event its own state refused: a bug.
    #[error("internal error: {0}")]
    State(#[from] StateError),
    /// The engine took an edge the graph does not have, or reached a state it
    /// should not: a bug.
    #[error("internal error: {0}")]
    Invariant(String),
    /// The run has finished; there is nothing to resume.
    #[error("the run is {} and cannot be resumed", .0.as_str())]
    NotResumable(crate::state::RunStatus),
    /// The run stopped for review and nothing has changed since (no new
    /// bounds, no decision by a person, no new sources): resuming would only
    /// repeat what it did, so nothing is recorded and it stays `needs_review`.
    #[error(
        "nothing changed since the run stopped for review: raise max_replans (now {max_replans}) or max_steps (now {max_steps}), change the sources it reads, or decide what it waits for"
    )]
    Unchanged {
        /// The replan bound in force.
        max_replans: u32,
        /// The step bound in force.
        max_steps: usize,
    },
}

/// Runs goals through the planning graph.
pub struct Engine {
    approver: Arc<dyn Approver>,
    idempotency: Option<Arc<dyn IdempotencyLog>>,
    roles: Roles,
    tools: ToolRegistry,
    catalog: Arc<ToolCatalog>,
    specs: Vec<ToolSpec>,
    config: RunConfig,
    sinks: Vec<Arc<dyn EventSink>>,
    strategy: Arc<dyn Strategy>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("tools", &self.tools)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Engine {
    /// An engine over these roles and tools. Fails if a tool's schema does not compile.
    pub fn new(roles: Roles, tools: ToolRegistry, config: RunConfig) -> Result<Self, CatalogError> {
        let catalog = Arc::new(tools.catalog()?);
        let specs = tools.specs();
        Ok(Self {
            approver: Arc::new(DeferToPerson),
            idempotency: None,
            roles,
            tools,
            catalog,
            specs,
            config,
            sinks: Vec::new(),
            strategy: Arc::new(Fixed::new(
                DEFAULT_STRATEGY,
                "the planning graph",
                Driver::PLAN_EXECUTE,
            )),
        })
    }

    /// Runs goals with this strategy (default: `plan-execute`).
    #[must_use]
    pub fn with_strategy(mut self, strategy: Arc<dyn Strategy>) -> Self {
        self.strategy = strategy;
        self
    }

    /// The strategy new runs use.
    pub fn strategy(&self) -> &dyn Strategy {
        self.strategy.as_ref()
    }

    /// Decides approvals of side-effect steps (default: defer to a person,
    /// which pauses the run at `awaiting_approval`).
    #[must_use]
    pub fn with_approver(mut self, approver: Arc<dyn Approver>) -> Self {
        self.approver = approver;
        self
    }

    /// Records side-effect calls before and after, so a resume after a crash
    /// can tell a finished call from one whose outcome is unknown.
    #[must_use]
    pub fn with_idempotency_log(mut self, log: Arc<dyn IdempotencyLog>) -> Self {
        self.idempotency = Some(log);
        self
    }

    /// Adds a sink that sees every event before the engine acts on it.
    #[must_use]
    pub fn with_sink(mut self, sink: Arc<dyn EventSink>) -> Self {
        self.sinks.push(sink);
        self
    }

    /// Runs a goal to the end (ok, needs_review or failed) with a fresh run id.
    pub async fn run(
        &self,
        input: &str,
        constraints: Constraints,
    ) -> Result<RunState, EngineError> {
        self.run_with_id(RunId::generate(), input, constraints)
            .await
    }

    /// Runs a goal to the end under a given run id.
    pub async fn run_with_id(
        &self,
        run_id: RunId,
        input: &str,
        constraints: Constraints,
    ) -> Result<RunState, EngineError> {
        self.start(run_id, input, constraints, Value::Null).await
    }

    /// Runs a goal to the end, recording `host` settings (what a resume in
    /// another process needs to rebuild the tools) in the first event.
    pub async fn start(
        &self,
        run_id: RunId,
        input: &str,
        constraints: Constraints,
        host: Value,
    ) -> Result<RunState, EngineError> {
        let max_steps = constraints.max_steps.unwrap_or(self.config.max_steps);
        let max_replans = constraints.max_replans.unwrap_or(self.config.max_replans);
        let mut run = Run::new(self);
        run.record(EventKind::RunStarted {
            run_id,
            input: input.to_owned(),
            constraints: Box::new(constraints),
            max_replans,
            max_steps,
            max_repairs: self.config.max_repairs,
            host,
            strategy: self.strategy.name().to_owned(),
        })
        .await?;
        run.drive(Node::PrepareInput).await?;
        Ok(run.state)
    }
}

/// One step attempt's outcome, or the end of a backoff.
struct Completion {
    step: StepId,
    attempt: u32,
    kind: CompletionKind,
}

enum CompletionKind {
    Attempt {
        result: Result<Reply<Value>, StepFailure>,
        duration_ms: u64,
    },
    BackoffElapsed,
}

/// A step attempt ready to spawn.
struct Prepared {
    context: StepContext,
    tool: Arc<dyn crate::tool::DynTool>,
    timeout_ms: Option<u64>,
}

/// The mutable side of one run.
struct Run<'e> {
    engine: &'e Engine,
    state: RunState,
    goal: Option<Goal>,
    in_flight: JoinSet<Completion>,
    tasks: HashMap<TaskId, (StepId, u32)>,
    immediate: VecDeque<Completion>,
    /// A decision waiting for in-flight steps to finish.
    held: Option<(Verdict, String)>,
    last: Option<(StepId, StepOutcome)>,
    /// Outcomes recorded before a crash but never assessed; assessed first on resume.
    recovered: VecDeque<(StepId, StepOutcome)>,
    /// Side-effect steps that asked for an approval this session.
    awaiting: Vec<StepId>,
    replan_reason: String,
    review_reason: String,
    /// The ReAct actor's answer, written as the report by synthesize_report.
    answered: Option<(crate::roles::Report, crate::usage::Usage)>,
    /// What the answer that sent the run to review cost (recorded with it).
    review_usage: crate::usage::Usage,
    /// The stop for review was an unusable answer: a resume asks again.
    review_ask_again: bool,
    /// A report written but citing no evidence: the partial brief of the
    /// review it leads to, with what writing it cost.
    partial: Option<(crate::event::Brief, crate::usage::Usage)>,
}

type NodeResult = Result<Result<Node, RoleError>, EngineError>;

impl Run<'_> {
    /// Walks the graph from `node` to END. Every move must be an edge of
    /// the graph; a role error ends the run as `failed` with an event.
    ///
    /// It borrows the run rather than taking it, so that the caller's future
    /// holds the run once, not once more inside this one's.
    async fn drive(&mut self, mut node: Node) -> Result<(), EngineError> {
        while node != Node::End {
            let next = match self.step(node).await? {
                Ok(next) => next,
                Err(error) => {
                    self.in_flight.abort_all();
                    // The failed role's model calls are on record; their cost counts.
                    self.record(EventKind::RunFailed {
                        error: error.to_string(),
                        usage: error.usage(),
                    })
                    .await?;
                    break;
                }
            };
            if !is_edge(node, next) {
                return Err(EngineError::Invariant(format!(
                    "the graph has no edge {node} -> {next}"
                )));
            }
            node = next;
        }
        Ok(())
    }
}

impl Run<'_> {
    /// Records the model calls behind a role's answer before acting on it.
    async fn record_calls(
        &mut self,
        role: crate::roles::RoleName,
        exchanges: Vec<crate::model::ModelExchange>,
    ) -> Result<(), EngineError> {
        // The role's snake_case name (`step_executor`), as in JSON.
        let role = serde_json::to_value(role)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_else(|| role.to_string());
        for exchange in exchanges {
            self.record(EventKind::ModelCalled {
                role: role.clone(),
                exchange: Box::new(exchange),
            })
            .await?;
        }
        Ok(())
    }

    /// Unwraps a role's answer, recording its model calls either way.
    async fn answer<T>(
        &mut self,
        role: crate::roles::RoleName,
        outcome: Result<Reply<T>, RoleError>,
    ) -> Result<Result<Reply<T>, RoleError>, EngineError> {
        match outcome {
            Ok(mut reply) => {
                let calls = std::mem::take(&mut reply.exchanges);
                self.record_calls(role, calls).await?;
                Ok(Ok(reply))
            }
            Err(mut e) => {
                let calls = e.take_exchanges();
                self.record_calls(role, calls).await?;
                Ok(Err(e))
            }
        }
    }

    /// A plan-producing role's draft. Malformed output is a plan problem:
    /// validation reports it and repair gets a chance.
    async fn draft(
        &mut self,
        role: crate::roles::RoleName,
        outcome: Result<Reply<DraftPlan>, RoleError>,
    ) -> Result<Result<(Value, crate::usage::Usage), RoleError>, EngineError> {
        Ok(match self.answer(role, outcome).await? {
            Ok(reply) => Ok((reply.value.0, reply.usage)),
            // The unusable answers were paid for: their cost stays with the draft.
            Err(RoleError::Malformed {
                raw,
                message,
                usage,
                ..
            }) => Ok((Value::String(raw.unwrap_or(message)), usage)),
            Err(e) => Err(e),
        })
    }
}

impl<'e> Run<'e> {
    fn new(engine: &'e Engine) -> Self {
        Self {
            engine,
            state: RunState::default(),
            goal: None,
            in_flight: JoinSet::new(),
            tasks: HashMap::new(),
            immediate: VecDeque::new(),
            held: None,
            last: None,
            recovered: VecDeque::new(),
            awaiting: Vec::new(),
            replan_reason: String::new(),
            review_reason: String::new(),
            answered: None,
            review_usage: crate::usage::Usage::default(),
            review_ask_again: false,
            partial: None,
        }
    }

    /// Applies an event to the state, then hands it to every sink.
    ///
    /// The event is applied when this is called (every caller awaits the
    /// result at once), so the future keeps no copy of it: every node's
    /// future awaits this one, and a run's future is as large as its largest.
    fn record(&mut self, kind: EventKind) -> impl Future<Output = Result<(), EngineError>> + '_ {
        let event = Event {
            seq: self.state.execution_history.len() as u64 + 1,
            at: Utc::now(),
            kind,
        };
        let applied = self.state.apply_owned(event);
        async move {
            applied?;
            if let Some(event) = self.state.execution_history.last() {
                for sink in &self.engine.sinks {
                    sink.record(&self.state.run_id, event).await?;
                }
            }
            Ok(())
        }
    }

    fn goal(&self) -> Result<&Goal, EngineError> {
        self.goal
            .as_ref()
            .ok_or_else(|| EngineError::Invariant("no goal after prepare_input".to_owned()))
    }

    fn limits(&self) -> Limits<'_> {
        Limits {
            tools: &self.engine.catalog,
            max_steps: Some(self.state.max_steps),
            constraints: &self.state.constraints,
        }
    }

    async fn step(&mut self, node: Node) -> NodeResult {
        match node {
            Node::PrepareInput => self.prepare_input().await,
            Node::CreatePlan => self.create_plan().await,
            Node::ValidatePlan => self.validate_plan().await,
            Node::RepairPlan => self.repair_plan().await,
            Node::ReviewPlan => self.review_plan().await,
            Node::SelectNextStep => self.select_next_step().await,
            Node::ExecuteStep => self.execute_step().await,
            Node::AssessProgress => self.assess_progress().await,
            Node::Replan => self.replan().await,
            Node::SynthesizeReport => self.synthesize_report().await,
            Node::MarkNeedsReview => self.mark_needs_review().await,
            Node::AwaitApproval => self.await_approval().await,
            Node::Verify => self.verify().await,
            Node::Act => self.act().await,
            Node::End => Err(EngineError::Invariant("END has no successor".to_owned())),
        }
    }

    async fn prepare_input(&mut self) -> NodeResult {
        match Goal::prepare(&self.state.input, self.state.constraints.clone()) {
            Err(e) => {
                self.record(EventKind::InputRejected {
                    reason: e.to_string(),
                })
                .await?;
                Ok(Ok(Node::End))
            }
            Ok(goal) => {
                self.record(EventKind::InputPrepared {
                    goal: Box::new(goal.clone()),
                })
                .await?;
                self.goal = Some(goal);
                self.choose_strategy().await
            }
        }
    }

    async fn create_plan(&mut self) -> NodeResult {
        let request = PlanRequest {
            goal: self.goal()?,
            tools: &self.engine.specs,
            max_steps: self.state.max_steps,
        };
        let outcome = self.engine.roles.planner.plan(request).await;
        let (draft, usage) = match self.draft(crate::roles::RoleName::Planner, outcome).await? {
            Ok(d) => d,
            Err(e) => return Ok(Err(e)),
        };
        self.record(EventKind::PlanCreated { draft, usage }).await?;
        Ok(Ok(Node::ValidatePlan))
    }

    async fn validate_plan(&mut self) -> NodeResult {
        let draft =
            self.state.pending_draft.as_ref().ok_or_else(|| {
                EngineError::Invariant("validate_plan without a draft".to_owned())
            })?;
        match validate(draft, self.limits()) {
            Ok(steps) => {
                let plan = Plan {
                    version: self.state.plan.version + 1,
                    steps,
                };
                self.record(EventKind::PlanValidated { plan }).await?;
                Ok(Ok(Node::ReviewPlan))
            }
            Err(diagnostics) => {
                let unsafe_ones: Vec<String> = diagnostics
                    .iter()
                    .filter(|d| !d.repairable)
                    .map(ToString::to_string)
                    .collect();
                let count = diagnostics.len();
                let listed: Vec<String> = diagnostics.iter().map(ToString::to_string).collect();
                self.record(EventKind::PlanInvalid { diagnostics }).await?;
                if self.state.plan.version == 0 && !self.engine.config.repair_first_draft {
                    // A person's own plan: never altered without their say.
                    self.review_reason = format!(
                        "the given plan has {count} problem(s) and is not repaired unless repair is asked for: {}",
                        listed.join("; ")
                    );
                    return Ok(Ok(Node::MarkNeedsReview));
                }
                if !unsafe_ones.is_empty() {
                    self.review_reason = format!("the plan is unsafe: {}", unsafe_ones.join("; "));
                    return Ok(Ok(Node::MarkNeedsReview));
                }
                if self.state.repair_count >= self.state.max_repairs {
                    let detail = format!(
                        "the plan still has {count} problem(s) after {} repair attempt(s)",
                        self.state.repair_count
                    );
                    self.review_reason = format!("{}: {detail}", StopCondition::MaxRepairs);
                    self.record(EventKind::StopConditionMet {
                        condition: StopCondition::MaxRepairs,
                        detail,
                        gaps: Vec::new(),
                        usage: crate::usage::Usage::default(),
                    })
                    .await?;
                    return Ok(Ok(Node::MarkNeedsReview));
                }
                Ok(Ok(Node::RepairPlan))
            }
        }
    }

    async fn repair_plan(&mut self) -> NodeResult {
        let attempt = self.state.repair_count + 1;
        let draft = self.state.pending_draft.clone().unwrap_or(Value::Null);
        let request = RepairRequest {
            goal: self.goal()?,
            draft: &draft,
            diagnostics: &self.state.plan_errors,
            tools: &self.engine.specs,
            state: &self.state,
            attempt,
        };
        let outcome = self.engine.roles.repairer.repair(request).await;
        let (draft, usage) = match self
            .draft(crate::roles::RoleName::Repairer, outcome)
            .await?
        {
            Ok(d) => d,
            Err(e) => return Ok(Err(e)),
        };
        self.record(EventKind::PlanRepaired {
            attempt,
            draft,
            usage,
        })
        .await?;
        Ok(Ok(Node::ValidatePlan))
    }

    async fn review_plan(&mut self) -> NodeResult {
        let outcome = self
            .engine
            .roles
            .reviewer
            .review(self.goal()?, &self.state.plan)
            .await;
        let reply = match self
            .answer(crate::roles::RoleName::Reviewer, outcome)
            .await?
        {
            Ok(r) => r,
            Err(e) => return Ok(Err(e)),
        };
        let version = self.state.plan.version;
        match reply.value {
            ReviewDecision::Approved { by } => {
                self.record(EventKind::PlanApproved {
                    version,
                    by,
                    usage: reply.usage,
                })
                .await?;
                Ok(Ok(Node::SelectNextStep))
            }
            ReviewDecision::Deferred => {
                self.record(EventKind::PlanReviewRequested { version })
                    .await?;
                Ok(Ok(Node::AwaitApproval))
            }
            ReviewDecision::Rejected { reason } => {
                self.review_reason = format!("plan version {version} was rejected: {reason}");
                self.record(EventKind::PlanRejected {
                    version,
                    reason,
                    usage: reply.usage,
                })
                .await?;
                Ok(Ok(Node::MarkNeedsReview))
            }
        }
    }

    fn busy(&self) -> bool {
        !self.in_flight.is_empty() || !self.immediate.is_empty() || !self.recovered.is_empty()
    }

    async fn select_next_step(&mut self) -> NodeResult {
        if self.held.is_none() && self.budget_spent().await? {
            self.held = Some((Verdict::Synthesize, "the token budget is spent".to_owned()));
        }
        if self.held.is_none() {
            for id in self.state.index.ready(&self.state.plan) {
                if self.in_flight.len() + self.immediate.len()
                    >= self.engine.config.concurrency.max(1)
                {
                    break;
                }
                if self.awaiting.contains(&id) {
                    continue;
                }
                match self.approval_gate(&id).await? {
                    Gate::Open => {}
                    Gate::Wait => continue,
                    Gate::Denied(reason) => {
                        self.held = Some((Verdict::NeedsReview, reason));
                        break;
                    }
                }
                let attempt = self
                    .state
                    .index
                    .find(&self.state.plan, &id)
                    .map_or(1, |s| s.attempts + 1);
                self.record(EventKind::StepStarted {
                    step: id.clone(),
                    attempt,
                })
                .await?;
                self.start_attempt(&id, attempt).await?;
            }
        }
        if self.busy() {
            return Ok(Ok(Node::ExecuteStep));
        }
        if let Some((Verdict::NeedsReview, reason)) = &self.held {
            // A refused approval, with nothing left in flight.
            self.review_reason = reason.clone();
            self.held = None;
            return Ok(Ok(Node::MarkNeedsReview));
        }
        if !self.awaiting.is_empty() {
            return Ok(Ok(Node::AwaitApproval));
        }
        if let Some((Verdict::Synthesize, _)) = &self.held {
            // The token budget stopped dispatch.
            self.held = None;
            return Ok(Ok(Node::SynthesizeReport));
        }
        if self.held.is_some() {
            return Err(EngineError::Invariant(
                "a held decision with nothing in flight".to_owned(),
            ));
        }
        let stuck: Vec<String> = self
            .state
            .plan
            .steps
            .iter()
            .filter(|s| !s.status.is_final())
            .map(|s| format!("{} ({})", s.id, s.status))
            .collect();
        if !stuck.is_empty() {
            return Err(EngineError::Invariant(format!(
                "nothing runnable but steps remain: {}",
                stuck.join(", ")
            )));
        }
        if self.verify_policy().is_some() {
            return Ok(Ok(Node::Verify));
        }
        Ok(Ok(Node::SynthesizeReport))
    }

    /// Checks preconditions, resolves arguments and spawns one attempt. A
    /// problem found here is a typed failure of the attempt, not a crash.
    async fn start_attempt(&mut self, id: &StepId, attempt: u32) -> Result<(), EngineError> {
        let step = self
            .state
            .index
            .find(&self.state.plan, id)
            .ok_or_else(|| EngineError::Invariant(format!("dispatch of unknown step {id}")))?;
        match self.prepare_context(step) {
            Err(failure) => {
                self.immediate.push_back(Completion {
                    step: id.clone(),
                    attempt,
                    kind: CompletionKind::Attempt {
                        result: Err(failure),
                        duration_ms: 0,
                    },
                });
            }
            Ok(Prepared {
                context,
                tool,
                timeout_ms,
            }) => {
                if tool.spec().side_effect
                    && let Some(log) = &self.engine.idempotency
                {
                    // Durable before the call: a crash from here on leaves a
                    // record that says the call may have happened.
                    let record = IdempotencyRecord {
                        key: context.tool_context.idempotency_key.clone(),
                        run: self.state.run_id.clone(),
                        step: id.clone(),
                        args_hash: args_hash(&context.step.tool, &context.args),
                        outcome: None,
                    };
                    log.begin(&record).await.map_err(|e| {
                        EngineError::Sink(SinkError {
                            seq: self.state.execution_history.len() as u64,
                            message: e.to_string(),
                        })
                    })?;
                }
                let executor = Arc::clone(&self.engine.roles.executor);
                let step_id = id.clone();
                let handle = self.in_flight.spawn(async move {
                    let started = tokio::time::Instant::now();
                    let call = executor.execute(context, tool);
                    let result = match timeout_ms {
                        Some(ms) => tokio::time::timeout(Duration::from_millis(ms), call)
                            .await
                            .unwrap_or_else(|_| {
                                Err(StepFailure::new(
                                    FailureClass::Transient,
                                    FailureKind::Timeout,
                                    format!("no answer within {ms} ms"),
                                ))
                            }),
                        None => call.await,
                    };
                    let duration_ms =
                        u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
                    Completion {
                        step: step_id,
                        attempt,
                        kind: CompletionKind::Attempt {
                            result,
                            duration_ms,
                        },
                    }
                });
                self.tasks.insert(handle.id(), (id.clone(), attempt));
            }
        }
        Ok(())
    }

    fn prepare_context(&self, step: &Step) -> Result<Prepared, StepFailure> {
        let persistent =
            |kind, message: String| StepFailure::new(FailureClass::Persistent, kind, message);
        // Borrowed, not copied: references read the recorded results.
        let outputs = &self.state.step_results;
        for (i, p) in step.preconditions.iter().enumerate() {
            check_precondition_in(p, outputs).map_err(|why| {
                persistent(
                    FailureKind::PreconditionFailed,
                    format!("precondition {}: {why}", i + 1),
                )
            })?;
        }
        let tool = self.engine.tools.get(&step.tool).cloned().ok_or_else(|| {
            persistent(
                FailureKind::UnknownTool,
                format!("no tool named {:?}", step.tool),
            )
        })?;
        let spec = tool.spec();
        let args = resolve_value_in(&Value::Object(step.args.clone()), outputs)
            .map_err(|e| persistent(FailureKind::ArgResolution, e.to_string()))?;
        // The gate in select_next_step asked for this approval; never run without it.
        if spec.side_effect
            && self.state.approvals.get(&step.id) != Some(&args_hash(&step.tool, &args))
        {
            return Err(StepFailure::new(
                FailureClass::Fatal,
                FailureKind::ApprovalDenied,
                format!(
                    "{} has side effects and no approval on record for these arguments",
                    step.id
                ),
            ));
        }
        let problems = self.engine.catalog.check_args(&step.tool, &args);
        if !problems.is_empty() {
            let text: Vec<String> = problems
                .into_iter()
                .map(|(p, m)| format!("{p}: {m}"))
                .collect();
            return Err(persistent(
                FailureKind::InvalidArgs,
                format!("resolved arguments: {}", text.join("; ")),
            ));
        }
        let dependencies = step
            .depends_on
            .iter()
            .filter_map(|d| {
                let dep = self.state.index.find(&self.state.plan, d)?;
                Some(DependencyOutput {
                    step: d.clone(),
                    description: dep.description.clone(),
                    output: outputs.get(d)?.output.clone(),
                })
            })
            .collect();
        let timeout_ms = spec.timeout_ms;
        Ok(Prepared {
            context: StepContext {
                step: step.clone(),
                args,
                dependencies,
                tool_context: ToolContext::new(&self.state.run_id, &step.id, step.attempts),
            },
            tool,
            timeout_ms,
        })
    }

    async fn next_completion(&mut self) -> Result<Completion, EngineError> {
        if let Some(c) = self.immediate.pop_front() {
            return Ok(c);
        }
        match self.in_flight.join_next_with_id().await {
            None => Err(EngineError::Invariant(
                "execute_step with nothing in flight".to_owned(),
            )),
            Some(Ok((task, completion))) => {
                self.tasks.remove(&task);
                Ok(completion)
            }
            Some(Err(join_error)) => {
                let (step, attempt) = self.tasks.remove(&join_error.id()).ok_or_else(|| {
                    EngineError::Invariant("a task finished that was never started".to_owned())
                })?;
                let failure = StepFailure::new(
                    FailureClass::Persistent,
                    FailureKind::Executor,
                    format!("the step's task panicked or was cancelled: {join_error}"),
                );
                Ok(Completion {
                    step,
                    attempt,
                    kind: CompletionKind::Attempt {
                        result: Err(failure),
                        duration_ms: 0,
                    },
                })
            }
        }
    }

    async fn execute_step(&mut self) -> NodeResult {
        if let Some(outcome) = self.recovered.pop_front() {
            // Recorded before a crash but never assessed.
            self.last = Some(outcome);
            return Ok(Ok(self.after_execute()));
        }
        loop {
            let Completion {
                step,
                attempt,
                kind,
            } = self.next_completion().await?;
            match kind {
                CompletionKind::BackoffElapsed => {
                    self.record(EventKind::StepStarted {
                        step: step.clone(),
                        attempt,
                    })
                    .await?;
                    self.start_attempt(&step, attempt).await?;
                }
                CompletionKind::Attempt {
                    result: Ok(reply),
                    duration_ms,
                } => {
                    self.record_calls(crate::roles::RoleName::StepExecutor, reply.exchanges)
                        .await?;
                    let result = StepResult {
                        output: reply.value,
                        attempts: attempt,
                        duration_ms,
                    };
                    self.complete_side_effect(&step, &result.output).await?;
                    self.record(EventKind::StepSucceeded {
                        step: step.clone(),
                        result: result.clone(),
                        usage: reply.usage,
                    })
                    .await?;
                    self.last = Some((step, StepOutcome::Succeeded(result)));
                    return Ok(Ok(self.after_execute()));
                }
                CompletionKind::Attempt {
                    result: Err(mut failure),
                    ..
                } => {
                    // The executor's model calls on this attempt, recorded
                    // before the failure (its `usage` counts them).
                    let calls = std::mem::take(&mut failure.exchanges);
                    self.record_calls(crate::roles::RoleName::StepExecutor, calls)
                        .await?;
                    self.record(EventKind::StepFailed {
                        step: step.clone(),
                        attempt,
                        failure: failure.clone(),
                    })
                    .await?;
                    let policy = self.engine.config.retry;
                    if failure.class == FailureClass::Transient
                        && policy.allows_retry_after(attempt)
                    {
                        let delay_ms =
                            policy.delay_ms(attempt, failure.retry_after_ms, fastrand::f64());
                        self.record(EventKind::StepRetrying {
                            step: step.clone(),
                            next_attempt: attempt + 1,
                            delay_ms,
                        })
                        .await?;
                        let id = step.clone();
                        let handle = self.in_flight.spawn(async move {
                            tokio::time::sleep(Duration::from_millis(delay_ms)).await;
                            Completion {
                                step: id,
                                attempt: attempt + 1,
                                kind: CompletionKind::BackoffElapsed,
                            }
                        });
                        self.tasks.insert(handle.id(), (step, attempt + 1));
                        continue;
                    }
                    let reason = match failure.class {
                        FailureClass::Transient => format!(
                            "still failing after {attempt} attempt(s): {}",
                            failure.message
                        ),
                        FailureClass::Persistent => {
                            format!("persistent failure, not retried: {}", failure.message)
                        }
                        FailureClass::Fatal => format!("fatal failure: {}", failure.message),
                    };
                    self.record(EventKind::StepTerminated {
                        step: step.clone(),
                        reason,
                    })
                    .await?;
                    self.last = Some((step, StepOutcome::Failed(failure)));
                    return Ok(Ok(self.after_execute()));
                }
            }
        }
    }

    async fn assess_progress(&mut self) -> NodeResult {
        let (id, outcome) = self.last.take().ok_or_else(|| {
            EngineError::Invariant("assess_progress without an outcome".to_owned())
        })?;
        let step = self
            .state
            .index
            .find(&self.state.plan, &id)
            .ok_or_else(|| EngineError::Invariant(format!("assessing unknown step {id}")))?;
        let request = AssessRequest {
            state: &self.state,
            step,
            outcome: &outcome,
        };
        let answer = self.engine.roles.assessor.assess(request).await;
        let reply = match self
            .answer(crate::roles::RoleName::Assessor, answer)
            .await?
        {
            Ok(r) => r,
            Err(e) => return Ok(Err(e)),
        };
        let assessment = reply.value;
        let (mut verdict, mut reason) = (assessment.verdict, assessment.reason);
        if let StepOutcome::Failed(failure) = &outcome {
            let blocked = blocked_dependants(&self.state.plan, &id);
            if failure.class == FailureClass::Fatal {
                verdict = Verdict::NeedsReview;
                reason = format!("step {id} failed fatally: {}", failure.message);
            } else if verdict == Verdict::Continue && !blocked.is_empty() {
                let names: Vec<&str> = blocked.iter().map(StepId::as_str).collect();
                verdict = Verdict::Replan;
                reason = format!(
                    "step {id} failed and blocks {}: {}",
                    names.join(", "),
                    failure.message
                );
            }
        }
        if verdict == Verdict::Replan && !self.replans_per_step() {
            // plan-solve never replans, and verified replans only after its
            // verifier: carry on, skipping what the failure blocks.
            verdict = Verdict::Continue;
            if let StepOutcome::Failed(failure) = &outcome {
                self.skip_blocked(&id, &failure.message).await?;
            }
        }
        if verdict < Verdict::Replan && self.budget_spent().await? {
            verdict = Verdict::Synthesize;
            reason = "the token budget is spent".to_owned();
        }
        self.record(EventKind::Assessed {
            step: id.clone(),
            acceptance_met: assessment.acceptance_met,
            verdict,
            reason: reason.clone(),
            new_gaps: assessment.new_gaps,
            resolved_gaps: assessment.resolved_gaps,
            observations: assessment.observations,
            usage: reply.usage,
        })
        .await?;
        if verdict != Verdict::Continue
            && self.held.as_ref().is_none_or(|(held, _)| verdict > *held)
        {
            self.held = Some((verdict, reason));
        }
        if self.held.is_some() && self.busy() {
            // Let in-flight steps finish (and be recorded) before acting.
            return Ok(Ok(Node::SelectNextStep));
        }
        match self.held.take() {
            Some((decision, reason)) => self.act_on(decision, reason).await,
            None => Ok(Ok(Node::SelectNextStep)),
        }
    }

    /// Takes a decision held until nothing was in flight.
    async fn act_on(&mut self, decision: Verdict, reason: String) -> NodeResult {
        match decision {
            Verdict::Continue => Ok(Ok(Node::SelectNextStep)),
            Verdict::Synthesize => Ok(Ok(Node::SynthesizeReport)),
            Verdict::NeedsReview => {
                self.review_reason = reason;
                Ok(Ok(Node::MarkNeedsReview))
            }
            Verdict::Replan => self.guard_replan(reason).await,
        }
    }

    /// `max_replans` and `max_steps` always end the loop.
    async fn guard_replan(&mut self, reason: String) -> NodeResult {
        let ran = self
            .state
            .plan
            .steps
            .iter()
            .filter(|s| s.status.is_final() && s.status != StepStatus::Skipped)
            .count();
        let stop = if self.state.replan_count >= self.state.max_replans {
            Some((
                StopCondition::MaxReplans,
                format!(
                    "{} replan(s) made, none left; {reason}",
                    self.state.replan_count
                ),
            ))
        } else if ran >= self.state.max_steps {
            Some((
                StopCondition::MaxSteps,
                format!(
                    "{ran} step(s) ran, max_steps is {}; {reason}",
                    self.state.max_steps
                ),
            ))
        } else {
            None
        };
        if let Some((condition, detail)) = stop {
            // Seed 000: past the replan cap, ask the person to simplify.
            let more = match condition {
                StopCondition::MaxReplans => "allow more replans",
                _ => "allow more steps",
            };
            self.review_reason = format!(
                "{condition}: {detail} — the goal is too complex to finish within these bounds: please simplify it or narrow it, or {more}"
            );
            self.record(EventKind::StopConditionMet {
                condition,
                detail,
                gaps: Vec::new(),
                usage: crate::usage::Usage::default(),
            })
            .await?;
            return Ok(Ok(Node::MarkNeedsReview));
        }
        self.replan_reason = reason;
        Ok(Ok(Node::Replan))
    }

    async fn replan(&mut self) -> NodeResult {
        let reason = std::mem::take(&mut self.replan_reason);
        let request = ReplanRequest {
            state: &self.state,
            reason: &reason,
            tools: &self.engine.specs,
        };
        let outcome = self.engine.roles.replanner.replan(request).await;
        let (draft, usage) = match self
            .draft(crate::roles::RoleName::Replanner, outcome)
            .await?
        {
            Ok(d) => d,
            Err(e) => return Ok(Err(e)),
        };
        let replan_count = self.state.replan_count + 1;
        self.record(EventKind::Replanned {
            replan_count,
            reason,
            draft,
            usage,
        })
        .await?;
        Ok(Ok(Node::ValidatePlan))
    }

    async fn synthesize_report(&mut self) -> NodeResult {
        if let Some((report, usage)) = self.answered.take() {
            return self.write_report(report, usage).await;
        }
        let outcome = self.engine.roles.synthesizer.synthesize(&self.state).await;
        let reply = match self
            .answer(crate::roles::RoleName::Synthesizer, outcome)
            .await?
        {
            Ok(r) => r,
            Err(e) => return Ok(Err(e)),
        };
        self.write_report(reply.value, reply.usage).await
    }

    /// Records the report: evidence checked against step results, and every
    /// open gap named. A report that cites no evidence is not an answer: the
    /// run stops for review with it as the partial brief.
    async fn write_report(
        &mut self,
        report: crate::roles::Report,
        usage: crate::usage::Usage,
    ) -> NodeResult {
        let brief = self.vet_report(report).await?;
        if brief.evidence.is_empty() {
            self.review_reason = no_evidence_reason(&self.state, &brief);
            self.partial = Some((brief, usage));
            return Ok(Ok(Node::MarkNeedsReview));
        }
        self.record(EventKind::Synthesized {
            report: brief.report,
            evidence: brief.evidence,
            rejected_evidence: brief.rejected_evidence,
            usage,
        })
        .await?;
        Ok(Ok(Node::End))
    }

    /// Checks a report's evidence against the step results, records the
    /// gaps it names or leaves (required sections, dimensions), and makes
    /// its text name every open gap.
    async fn vet_report(
        &mut self,
        mut report: crate::roles::Report,
    ) -> Result<crate::event::Brief, EngineError> {
        let (evidence, rejected_evidence) = vet_evidence(&self.state, report.evidence);
        let mut uncovered: Vec<String> = Vec::new();
        for gap in std::mem::take(&mut report.gaps)
            .into_iter()
            .chain(coverage_gaps(&self.state.constraints, &report.text))
        {
            if !self.state.knowledge_gaps.contains(&gap) && !uncovered.contains(&gap) {
                uncovered.push(gap);
            }
        }
        if !uncovered.is_empty() {
            self.record(EventKind::GapsNoted { gaps: uncovered })
                .await?;
        }
        let missing: Vec<&String> = self
            .state
            .knowledge_gaps
            .iter()
            .filter(|g| !report.text.contains(g.as_str()))
            .collect();
        if !missing.is_empty() {
            // The report must name every open gap; it may never paper over one.
            report.text.push_str("\n\n## Unresolved gaps\n\n");
            for gap in missing {
                report.text.push_str(&format!("- {gap}\n"));
            }
        }
        Ok(crate::event::Brief {
            report: report.text,
            evidence,
            rejected_evidence,
        })
    }

    /// The partial brief of a run stopping for review: the synthesizer over
    /// what succeeded so far, vetted like a final report. `None` when no
    /// step succeeded; a synthesizer that fails leaves a note in `reason`.
    async fn partial_brief(
        &mut self,
        reason: &mut String,
        usage: &mut crate::usage::Usage,
    ) -> Result<Option<crate::event::Brief>, EngineError> {
        if let Some((brief, cost)) = self.partial.take() {
            *usage += cost;
            return Ok(Some(brief));
        }
        if self.state.step_results.is_empty() {
            return Ok(None);
        }
        let outcome = self.engine.roles.synthesizer.synthesize(&self.state).await;
        match self
            .answer(crate::roles::RoleName::Synthesizer, outcome)
            .await?
        {
            Ok(reply) => {
                *usage += reply.usage;
                Ok(Some(self.vet_report(reply.value).await?))
            }
            Err(e) => {
                *usage += e.usage();
                reason.push_str(&format!(" (no partial brief: {e})"));
                Ok(None)
            }
        }
    }

    async fn mark_needs_review(&mut self) -> NodeResult {
        let reason = std::mem::take(&mut self.review_reason);
        let mut reason = if reason.is_empty() {
            "the run cannot continue safely".to_owned()
        } else {
            reason
        };
        let mut usage = std::mem::take(&mut self.review_usage);
        let brief = self.partial_brief(&mut reason, &mut usage).await?;
        let ask_again = std::mem::take(&mut self.review_ask_again);
        self.record(EventKind::NeedsReview {
            reason,
            usage,
            brief: brief.map(Box::new),
            ask_again,
        })
        .await?;
        Ok(Ok(Node::End))
    }
}

/// Why a report that cites nothing is not an answer, for the person reviewing it.
fn no_evidence_reason(state: &RunState, brief: &crate::event::Brief) -> String {
    let why = if state.step_results.is_empty() {
        "no step succeeded, so there is nothing to cite".to_owned()
    } else if let Some(first) = brief.rejected_evidence.first() {
        format!(
            "{} quote(s) offered, none found in a succeeded step's output (e.g. {})",
            brief.rejected_evidence.len(),
            first.reason
        )
    } else {
        "nothing the steps found supports it".to_owned()
    };
    let listed = match state.knowledge_gaps.len() {
        0 => String::new(),
        1 => "; its open gap is listed".to_owned(),
        n => format!("; its {n} open gaps are listed"),
    };
    format!(
        "the report cites no evidence: {why}{listed} — add sources that cover the goal, or narrow it"
    )
}

mod approval;
mod evidence;
mod react;
mod resume;
mod strategy;

use approval::Gate;
pub use approval::{
    ApprovalDecision, ApprovalRequest, ApproveAll, Approver, DeferToPerson, args_hash,
};
use evidence::{coverage_gaps, vet_evidence};
pub use resume::{ResumeOptions, what_changed};
