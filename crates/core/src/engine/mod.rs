//! The engine: walks seed 001's planning graph for one run. It is the
//! single writer of the run's events; every event is applied to the state
//! and handed to the sinks before anything outside the run acts on it.
//! Nodes are plain functions that return an effect; the driver
//! (`driver/`) performs it and is the only code that awaits.
//!
//! Steps run concurrently: `select_next_step` dispatches every ready step (up
//! to `concurrency`), `execute_step` waits for the next outcome (retrying
//! transient failures with backoff), and `assess_progress` judges it. So as
//! soon as one step finishes, its newly ready dependants start — wall time
//! approaches the DAG's critical path.

use std::collections::VecDeque;
use std::sync::Arc;

use chrono::Utc;
use serde_json::Value;
use tokio::task::JoinSet;

use crate::event::{Event, EventKind, EventSink, SinkError};
use crate::goal::{Constraints, Goal};
use crate::graph::Node;
use crate::ids::{RunId, StepId};
use crate::plan::DraftPlan;
use crate::plan::validate::Limits;
use crate::retry::RetryPolicy;
pub use crate::roles::Roles;
use crate::roles::{Reply, RoleError, StepOutcome};
use crate::state::{RunState, StateError};
use crate::store::IdempotencyLog;
use crate::strategy::{DEFAULT_STRATEGY, Driver, Fixed, Strategy};
use crate::tool::{CatalogError, ToolCatalog, ToolRegistry, ToolSpec};

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
    /// Who judges a finished step's acceptance criteria.
    pub assess: AssessMode,
    /// Whether a run's first plan is streamed when the planner can stream
    /// it and the reviewer approves unread (see `engine/stream.rs`): steps
    /// start while the planner still writes later ones.
    pub stream_plans: bool,
    /// Whether the run's history stays in memory, in
    /// [`RunState::execution_history`]. Off, a run keeps only its folded
    /// state and the events its sinks have not taken yet, and returns a
    /// state without its history: for a host whose store holds the log and
    /// that runs many runs at once (a worker, a server). Everything the
    /// engine decides is the same either way.
    pub keep_history: bool,
    /// Whether prepare_input refuses a single-word goal as too ambiguous
    /// to plan (see [`Goal::prepare_request`]): on for goals people type
    /// (the CLI, the server), off for a program's own runs.
    pub refuse_single_words: bool,
}

/// Who judges a finished step: the engine by its typed checks, the
/// assessor role, or (`Auto`) the engine where every criterion of the step
/// is typed and the assessor for the rest.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum AssessMode {
    /// Typed checks only; text criteria are not judged (and said so).
    Rules,
    /// The assessor role for every step.
    Model,
    /// Typed checks where a step's criteria are all typed, else the assessor.
    #[default]
    Auto,
}

impl RunConfig {
    /// The `run_started` event of a run under these bounds (the
    /// constraints' where they set one): what [`Engine::started_event`]
    /// records, and what a host records for a run it could not start.
    pub fn started_event(
        &self,
        run_id: RunId,
        input: &str,
        constraints: Constraints,
        host: Value,
        strategy: &str,
    ) -> EventKind {
        EventKind::RunStarted {
            run_id,
            input: input.to_owned(),
            max_replans: constraints.max_replans.unwrap_or(self.max_replans),
            max_steps: constraints.max_steps.unwrap_or(self.max_steps),
            constraints: Box::new(constraints),
            max_repairs: self.max_repairs,
            host,
            strategy: strategy.to_owned(),
        }
    }
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
            assess: AssessMode::default(),
            stream_plans: false,
            keep_history: true,
            refuse_single_words: false,
        }
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
    pub fn run(
        &self,
        input: &str,
        constraints: Constraints,
    ) -> impl Future<Output = Result<RunState, EngineError>> + Send + '_ {
        self.run_with_id(RunId::generate(), input, constraints)
    }

    /// Runs a goal to the end under a given run id.
    pub fn run_with_id(
        &self,
        run_id: RunId,
        input: &str,
        constraints: Constraints,
    ) -> impl Future<Output = Result<RunState, EngineError>> + Send + '_ {
        self.start(run_id, input, constraints, Value::Null)
    }

    /// Runs a goal to the end, recording `host` settings (what a resume in
    /// another process needs to rebuild the tools) in the first event.
    ///
    /// The first event is folded before the future is made, so the future
    /// holds the run alone, not the arguments too: with thousands of runs in
    /// flight, a run's future is most of its memory.
    pub fn start(
        &self,
        run_id: RunId,
        input: &str,
        constraints: Constraints,
        host: Value,
    ) -> impl Future<Output = Result<RunState, EngineError>> + Send + '_ {
        let mut run = Run::new(self);
        let noted = run.note(self.started_event(run_id, input, constraints, host));
        async move {
            noted?;
            run.flush().await?;
            run.drive(None, Node::PrepareInput).await?;
            Ok(run.state)
        }
    }

    /// The `run_started` event [`start`](Self::start) records first: the
    /// bounds (the constraints' or this engine's), the strategy and `host`.
    /// A program that records a run before it works on it (a server that
    /// queues runs) appends it itself, then calls
    /// [`start_recorded`](Self::start_recorded).
    pub fn started_event(
        &self,
        run_id: RunId,
        input: &str,
        constraints: Constraints,
        host: Value,
    ) -> EventKind {
        self.config
            .started_event(run_id, input, constraints, host, self.strategy.name())
    }

    /// Runs to the end a run whose log holds only its `run_started` event
    /// (see [`started_event`](Self::started_event)), as [`start`](Self::start)
    /// would have from there. Any other state is an [`EngineError::Invariant`]:
    /// a run that got further is [`resume`](Self::resume)d.
    pub async fn start_recorded(&self, state: RunState) -> Result<RunState, EngineError> {
        if !matches!(
            state.execution_history.as_slice(),
            [Event {
                kind: EventKind::RunStarted { .. },
                ..
            }]
        ) {
            return Err(EngineError::Invariant(format!(
                "run {} has {} events; only a run with nothing but run_started starts from its record",
                state.run_id,
                state.execution_history.len()
            )));
        }
        let mut run = Run::new(self);
        run.state = state;
        if !self.config.keep_history {
            run.state.forget_history();
        }
        run.drive(None, Node::PrepareInput).await?;
        Ok(run.state)
    }
}

/// The mutable side of one run.
struct Run<'e> {
    engine: &'e Engine,
    state: RunState,
    in_flight: JoinSet<Completion>,
    immediate: VecDeque<Completion>,
    last: Option<(StepId, StepOutcome)>,
    /// Finished steps waiting for the assessor, which judges a wave at once
    /// (see [`Assessor::judges_waves`](crate::roles::Assessor::judges_waves)).
    unjudged: Vec<(StepId, StepOutcome)>,
    /// Outcomes recorded before a crash but never assessed; assessed first on resume.
    recovered: VecDeque<(StepId, StepOutcome)>,
    /// Side-effect steps this session's approver deferred, so that it is
    /// not asked twice. Not folded: deferring again a request already on
    /// record records nothing, and a resume asks its own approver afresh.
    awaiting: Vec<StepId>,
    /// Events at the end of the history not yet handed to the sinks: the
    /// model calls behind an answer wait for the event that acts on it and
    /// go with it in one append, so a crash never keeps an answer without
    /// its decision — and a resume never asks the model for it again. The
    /// dispatch loop's events wait too, until the loop must flush (see
    /// [`flush`](Self::flush)).
    unsent: usize,
    /// The unsent events themselves, when the history is not kept (see
    /// [`RunConfig::keep_history`]); when it is, they are the history's last
    /// `unsent`.
    held: Vec<Event>,
}

/// Why a node does not lead on: a role failed (the run ends `failed`,
/// with an event) or the engine itself stopped.
pub(super) enum Halt {
    /// A role failed: recorded, and the run ends `failed`.
    Role(RoleError),
    /// The engine stopped (see [`EngineError`]).
    Engine(EngineError),
}

impl From<RoleError> for Halt {
    fn from(e: RoleError) -> Self {
        Self::Role(e)
    }
}

impl From<EngineError> for Halt {
    fn from(e: EngineError) -> Self {
        Self::Engine(e)
    }
}

/// A node's move: the effect the driver performs next (most often a move
/// to the next node, with what the node there needs); or why it stops.
type NodeResult = Result<Effect, Halt>;

impl Run<'_> {
    /// Ends the run `failed` on a role's error. The failed role's model
    /// calls are on record; their cost counts.
    fn fail(&mut self, error: RoleError) -> Result<(), EngineError> {
        self.in_flight.abort_all();
        self.note(EventKind::RunFailed {
            error: error.to_string(),
            usage: error.usage(),
        })
    }

    /// Notes a pure decision's events, in order, and goes where it says.
    fn perform(&mut self, command: Command) -> NodeResult {
        for kind in command.record {
            self.note(kind)?;
        }
        Ok(command.then.into())
    }

    /// Notes the model calls behind a role's answer before acting on it:
    /// they go to the sinks with the event that acts on it.
    fn record_calls(
        &mut self,
        role: crate::roles::RoleName,
        exchanges: Vec<crate::model::ModelExchange>,
    ) -> Result<(), EngineError> {
        if exchanges.is_empty() {
            return Ok(());
        }
        // The role's snake_case name (`step_executor`), as in JSON.
        let role = serde_json::to_value(role)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_else(|| role.to_string());
        for exchange in exchanges {
            self.note(EventKind::ModelCalled {
                role: role.clone(),
                exchange: Box::new(exchange),
            })?;
        }
        Ok(())
    }

    /// Unwraps a role's answer, recording its model calls either way.
    fn answer<T>(
        &mut self,
        role: crate::roles::RoleName,
        outcome: Result<Reply<T>, RoleError>,
    ) -> Result<Reply<T>, Halt> {
        match outcome {
            Ok(mut reply) => {
                let calls = std::mem::take(&mut reply.exchanges);
                self.record_calls(role, calls)?;
                Ok(reply)
            }
            Err(mut e) => {
                let calls = e.take_exchanges();
                self.record_calls(role, calls)?;
                Err(Halt::Role(e))
            }
        }
    }

    /// A plan-producing role's draft. Malformed output is a plan problem:
    /// validation reports it and repair gets a chance.
    fn draft(
        &mut self,
        role: crate::roles::RoleName,
        outcome: Result<Reply<DraftPlan>, RoleError>,
    ) -> Result<(Value, crate::usage::Usage), Halt> {
        match self.answer(role, outcome) {
            Ok(reply) => Ok((reply.value.0, reply.usage)),
            // The unusable answers were paid for: their cost stays with the draft.
            Err(Halt::Role(RoleError::Malformed {
                raw,
                message,
                usage,
                ..
            })) => Ok((Value::String(raw.unwrap_or(message)), usage)),
            Err(e) => Err(e),
        }
    }
}

impl<'e> Run<'e> {
    fn new(engine: &'e Engine) -> Self {
        Self {
            engine,
            state: RunState::default(),
            in_flight: JoinSet::new(),
            immediate: VecDeque::new(),
            last: None,
            unjudged: Vec::new(),
            recovered: VecDeque::new(),
            awaiting: Vec::new(),
            unsent: 0,
            held: Vec::new(),
        }
    }

    /// Applies an event to the state and leaves it for the driver's next
    /// flush (see `driver/`'s commit rule).
    fn note(&mut self, kind: EventKind) -> Result<(), EngineError> {
        let event = Event {
            seq: self.state.last_seq() + 1,
            at: Utc::now(),
            kind,
        };
        if self.engine.config.keep_history {
            self.state.apply_owned(event)?;
        } else {
            self.state.apply_forgetting(&event)?;
            self.held.push(event);
        }
        self.unsent += 1;
        Ok(())
    }

    /// The goal as roles take it, made from the state when a role needs it
    /// (a run keeps no second copy of it while in flight).
    fn goal(&self) -> Result<Goal, EngineError> {
        if self.state.goal.is_empty() {
            return Err(EngineError::Invariant(
                "no goal after prepare_input".to_owned(),
            ));
        }
        Ok(self.state.goal())
    }

    fn limits(&self) -> Limits<'_> {
        Limits {
            tools: &self.engine.catalog,
            max_steps: Some(self.state.max_steps),
            constraints: &self.state.constraints,
        }
    }

    /// The node `next` goes to, performed up to its first effect.
    fn enter(&mut self, next: Next) -> NodeResult {
        let node = match next {
            Next::To(node) => node,
            Next::Replan(reason) => return Ok(Effect::Call(RoleCall::Replan { reason })),
            Next::Review(review) => return self.mark_needs_review(*review),
            Next::Answer(answer) => {
                let (report, usage) = *answer;
                return self.write_report(report, usage);
            }
        };
        match node {
            Node::PrepareInput => self.prepare_input(),
            Node::ChooseStrategy => self.choose_strategy(),
            Node::CreatePlan => self.create_plan(),
            Node::ValidatePlan => self.validate_plan(),
            Node::RepairPlan => self.repair_plan(),
            Node::ReviewPlan => self.review_plan(),
            Node::SelectNextStep => self.select_next_step(),
            Node::ExecuteStep => self.execute_step(),
            Node::AssessProgress => self.assess_progress(),
            Node::SynthesizeReport => self.synthesize_report(),
            Node::MarkNeedsReview => self.mark_needs_review(Review::default()),
            Node::AwaitApproval => self.await_approval(),
            Node::Verify => self.verify(),
            Node::Act => self.act(),
            Node::Replan => {
                Err(EngineError::Invariant("replan without a reason".to_owned()).into())
            }
            Node::End => Err(EngineError::Invariant("END has no successor".to_owned()).into()),
        }
    }
}

mod approval;
mod assess;
mod decide;
mod dispatch;
mod driver;
mod effect;
mod evidence;
mod plan;
mod react;
mod report;
mod resume;
mod strategy;
mod stream;

use decide::{Command, Next, Review};
use effect::{Completion, Effect, RoleCall};

pub use approval::{
    ApprovalDecision, ApprovalRequest, ApproveAll, Approver, DeferToPerson, args_hash,
};
pub use resume::{ResumeOptions, what_changed};
