//! Events: one entry of `execution_history` per decision. The event log is the
//! source of truth; [`RunState`](crate::state::RunState) is a fold of it.

use std::fmt;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::decision::{Driver, Evidence, Routed, StepResult, Verdict, Verification};
use crate::failure::StepFailure;
use crate::goal::{Constraints, Goal};
use crate::ids::{RunId, StepId};
use crate::plan::validate::Diagnostic;
use crate::plan::{Plan, Step};
use crate::usage::Usage;

/// One recorded decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Event {
    /// Position in the run's log, from 1, without gaps.
    pub seq: u64,
    /// When it was recorded.
    pub at: DateTime<Utc>,
    /// What happened.
    #[serde(flatten)]
    pub kind: EventKind,
}

/// Why a guard stopped a loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StopCondition {
    /// `max_replans` replans were made and another was needed.
    MaxReplans,
    /// `max_steps` steps have run; there is no room for more.
    MaxSteps,
    /// The plan is still invalid after the allowed repair attempts.
    MaxRepairs,
    /// The run spent its token budget (`constraints.token_budget`).
    TokenBudget,
    /// `verified`: completeness reached its threshold.
    CompletenessThreshold,
    /// `verified`: the verifier is confident enough, with enough completeness.
    ConfidenceThreshold,
    /// `verified`: the last iteration improved completeness too little.
    DiminishingReturns,
    /// `verified`: the iterations allowed are used up.
    MaxIterations,
    /// ReAct: the tool calls allowed are used up.
    ToolCallCap,
    /// `plan-solve`: a step failed and the strategy never replans.
    NoReplanning,
}

impl StopCondition {
    /// Whether the run stops for a person (bounds of the planning loop) rather
    /// than writing its report with what it has.
    pub fn needs_review(self) -> bool {
        matches!(self, Self::MaxReplans | Self::MaxSteps | Self::MaxRepairs)
    }
}

impl fmt::Display for StopCondition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::MaxReplans => "max_replans",
            Self::MaxSteps => "max_steps",
            Self::MaxRepairs => "max_repairs",
            Self::TokenBudget => "token_budget",
            Self::CompletenessThreshold => "completeness_threshold",
            Self::ConfidenceThreshold => "confidence_threshold",
            Self::DiminishingReturns => "diminishing_returns",
            Self::MaxIterations => "max_iterations",
            Self::ToolCallCap => "tool_call_cap",
            Self::NoReplanning => "no_replanning",
        })
    }
}

/// Evidence the runtime refused, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RejectedEvidence {
    /// What the synthesizer offered.
    pub evidence: Evidence,
    /// Why it was refused.
    pub reason: String,
}

/// The report a run that stopped for review still returns: the synthesizer's
/// text over what succeeded, the evidence it cites that the runtime vetted,
/// and the evidence refused.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Brief {
    /// The report (Markdown), naming every open gap.
    pub report: String,
    /// Evidence accepted: cited results that exist.
    #[serde(default)]
    pub evidence: Vec<Evidence>,
    /// Evidence refused.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rejected_evidence: Vec<RejectedEvidence>,
}

/// What happened, with its data. `kind` in JSON.
///
/// Large payloads that occur once or rarely per run (the constraints, the
/// goal, a model exchange, an added step) are boxed: every event of a run in
/// flight is kept in memory, and an enum is as large as its largest variant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EventKind {
    /// The run was recorded, before anything else happens.
    RunStarted {
        /// The run.
        run_id: RunId,
        /// The raw request.
        input: String,
        /// Constraints as given.
        constraints: Box<Constraints>,
        /// Replan bound.
        max_replans: u32,
        /// Step bound.
        max_steps: usize,
        /// Repair bound (per plan).
        max_repairs: u32,
        /// Settings of the program that started the run (e.g. the CLI's
        /// notes folder), so a resume can rebuild the same tools.
        #[serde(default, skip_serializing_if = "Value::is_null")]
        host: Value,
        /// The strategy the run was started with (its name in the registry).
        #[serde(default = "default_strategy")]
        strategy: String,
    },
    /// The strategy decided how to drive the run (after prepare_input).
    StrategyChosen {
        /// The strategy's name.
        strategy: String,
        /// How the run is driven.
        driver: Driver,
        /// Why (a router's classification and reason).
        reason: String,
        /// What deciding cost.
        #[serde(default)]
        usage: Usage,
        /// The router's answers to seed 000's three questions and the route
        /// they lead to (`router` only; absent in logs from before it).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        routing: Option<Routed>,
    },
    /// ReAct reached its tool-call cap and the strategy handed the run to
    /// the planning graph (the router's escalation): the calls made stay in
    /// the plan as steps that ran, and the planner plans the goal.
    StrategyEscalated {
        /// How the run was driven until now.
        from: Driver,
        /// How it is driven from now on.
        to: Driver,
        /// Why, for a person.
        reason: String,
        /// What the actor's refused call cost.
        #[serde(default)]
        usage: Usage,
    },
    /// ReAct: the actor chose a tool call; it joins the plan as a step. Or
    /// (`streamed`) a step of a plan the planner is still writing, checked
    /// on arrival: it joins the plan being received, which becomes version
    /// 1 once the whole draft is validated (`plan_created`, `plan_validated`).
    StepAdded {
        /// The step (its description is the actor's thought).
        step: Box<Step>,
        /// What choosing it cost.
        #[serde(default)]
        usage: Usage,
        /// A step of a streamed plan (absent in logs from before streaming).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        streamed: bool,
    },
    /// A pending step will not run (its dependency failed and the strategy
    /// does not replan); the reason becomes a knowledge gap.
    StepSkipped {
        /// The step.
        step: StepId,
        /// Why.
        reason: String,
    },
    /// Knowledge gaps a role named outside an assessment (the ReAct actor's
    /// answer); they join the run's gaps.
    GapsNoted {
        /// The gaps.
        gaps: Vec<String>,
    },
    /// `react-isolated`: the summary of a step's result the actor will see.
    StepSummarized {
        /// The step.
        step: StepId,
        /// The summary.
        summary: String,
        /// What summarizing cost.
        #[serde(default)]
        usage: Usage,
    },
    /// `verified`: the verifier's judgement of an iteration.
    Verified {
        /// 1 for the first plan, +1 per replan.
        iteration: u32,
        /// The judgement.
        verification: Verification,
        /// What it cost.
        #[serde(default)]
        usage: Usage,
    },
    /// prepare_input refused the input; no model was called.
    InputRejected {
        /// Why.
        reason: String,
    },
    /// prepare_input normalised the input.
    InputPrepared {
        /// The normalised goal.
        goal: Box<Goal>,
    },
    /// create_plan: the planner's draft, as it came.
    PlanCreated {
        /// The draft (any JSON).
        draft: Value,
        /// What the call cost.
        usage: Usage,
    },
    /// validate_plan accepted a plan; it becomes the current plan.
    PlanValidated {
        /// The adopted plan, with its new version.
        plan: Plan,
    },
    /// validate_plan found problems.
    PlanInvalid {
        /// Every problem found.
        diagnostics: Vec<Diagnostic>,
    },
    /// repair_plan: the repairer's new draft.
    PlanRepaired {
        /// Repair attempt for this plan, from 1.
        attempt: u32,
        /// The new draft.
        draft: Value,
        /// What the call cost.
        usage: Usage,
    },
    /// review_plan approved the current plan version.
    PlanApproved {
        /// The approved version.
        version: u32,
        /// Who approved (e.g. "auto", a user name).
        by: String,
        /// What the call cost.
        usage: Usage,
    },
    /// review_plan rejected the current plan version.
    PlanRejected {
        /// The rejected version.
        version: u32,
        /// Why.
        reason: String,
        /// What the call cost.
        usage: Usage,
    },
    /// A step attempt was dispatched (pending/retrying -> running).
    StepStarted {
        /// The step.
        step: StepId,
        /// Attempt number, from 1.
        attempt: u32,
    },
    /// A step attempt succeeded (running -> succeeded).
    StepSucceeded {
        /// The step.
        step: StepId,
        /// Its result.
        result: StepResult,
        /// What the executor's model calls cost, if any.
        usage: Usage,
    },
    /// A step attempt failed (running -> failed). `failure.usage` is what
    /// the executor's model calls cost on the attempt.
    StepFailed {
        /// The step.
        step: StepId,
        /// The failed attempt.
        attempt: u32,
        /// What went wrong, classified.
        failure: StepFailure,
    },
    /// A transient failure will be retried after a delay (failed -> retrying).
    StepRetrying {
        /// The step.
        step: StepId,
        /// The attempt that comes next.
        next_attempt: u32,
        /// Backoff before it, in milliseconds.
        delay_ms: u64,
    },
    /// A failed step will not be tried again (failed -> terminated).
    StepTerminated {
        /// The step.
        step: StepId,
        /// Why not.
        reason: String,
    },
    /// assess_progress judged a finished step and decided what comes next.
    Assessed {
        /// The step judged.
        step: StepId,
        /// Whether its acceptance criteria are met.
        acceptance_met: bool,
        /// The decision.
        verdict: Verdict,
        /// Why.
        reason: String,
        /// New knowledge gaps.
        new_gaps: Vec<String>,
        /// Gaps this result closes.
        resolved_gaps: Vec<String>,
        /// Facts or progress notes.
        observations: Vec<String>,
        /// What the call cost.
        usage: Usage,
    },
    /// A guard stopped a loop.
    StopConditionMet {
        /// Which guard.
        condition: StopCondition,
        /// Details for a person.
        detail: String,
        /// What the stop leaves unanswered; they become knowledge gaps.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        gaps: Vec<String>,
        /// The cost of a decision refused by the stop (a ReAct actor's call
        /// past the cap), so the run's total still counts it.
        #[serde(default, skip_serializing_if = "Usage::is_zero")]
        usage: Usage,
    },
    /// replan: the replanner's draft for the remaining work.
    Replanned {
        /// Replans made so far, this one included.
        replan_count: u32,
        /// What prompted it.
        reason: String,
        /// The draft (remaining steps).
        draft: Value,
        /// What the call cost.
        usage: Usage,
    },
    /// synthesize_report wrote the final report, citing vetted evidence; the
    /// run is `ok`. (A report that cites none ends in `needs_review` instead.)
    Synthesized {
        /// The report (Markdown).
        report: String,
        /// Evidence accepted: cited results that exist.
        evidence: Vec<Evidence>,
        /// Evidence refused.
        rejected_evidence: Vec<RejectedEvidence>,
        /// What the call cost.
        usage: Usage,
    },
    /// mark_needs_review: the run stopped safely for a person.
    NeedsReview {
        /// Why it could not go on.
        reason: String,
        /// The cost of an unusable answer that stopped it (a verifier's or an
        /// actor's, after its repair round-trip) and of writing the partial
        /// brief, so the run's total counts them.
        #[serde(default, skip_serializing_if = "Usage::is_zero")]
        usage: Usage,
        /// The partial brief: what the run found before it stopped, with its
        /// vetted citations and its gaps (absent when nothing succeeded, and
        /// in logs written before partial briefs existed).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        brief: Option<Box<Brief>>,
        /// The stop was an unusable model answer: a resume asks the role
        /// again even with nothing else changed (a new request may succeed).
        /// Any other stop is kept by a resume that changes nothing.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        ask_again: bool,
    },
    /// The run could not go on because of an error (a role failed).
    RunFailed {
        /// The error.
        error: String,
        /// What the failed role's model calls cost (answers that could not
        /// be used are paid for too).
        #[serde(default, skip_serializing_if = "Usage::is_zero")]
        usage: Usage,
    },
    /// review_plan deferred to a person: the plan version waits for `stepwise approve`.
    PlanReviewRequested {
        /// The version to review.
        version: u32,
    },
    /// A side-effect step needs an approval bound to exactly these arguments.
    ApprovalRequested {
        /// The step.
        step: StepId,
        /// Its tool.
        tool: String,
        /// Its resolved arguments.
        args: Value,
        /// Hash of tool and arguments; an approval must name it.
        args_hash: String,
        /// The tool says it may delete or overwrite data (MCP's
        /// `destructiveHint`): recorded so that whoever approves later
        /// (`stepwise show`, `approve`, the API) is told, not only `--approve ask`.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        destructive: bool,
    },
    /// A person (or `--approve auto`) approved a step with these arguments.
    ApprovalGranted {
        /// The step.
        step: StepId,
        /// The approved tool-and-arguments hash; other arguments are not approved.
        args_hash: String,
        /// Who approved.
        by: String,
    },
    /// A person refused a step; the run stops for review.
    ApprovalDenied {
        /// The step.
        step: StepId,
        /// Why.
        reason: String,
        /// Who refused.
        by: String,
    },
    /// The run paused until a person approves (status `awaiting_approval`).
    AwaitingApproval {
        /// Steps waiting for an approval.
        steps: Vec<StepId>,
        /// A plan version waiting for review, if any.
        plan_version: Option<u32>,
    },
    /// A step that was running when its process died; it goes back through
    /// failed -> retrying (read-only or idempotent) or is terminated (outcome unknown).
    StepInterrupted {
        /// The step.
        step: StepId,
        /// The attempt that was cut off.
        attempt: u32,
    },
    /// A person resumed the run, possibly with new bounds.
    RunResumed {
        /// Who.
        by: String,
        /// New replan bound, if raised.
        max_replans: Option<u32>,
        /// New step bound, if raised.
        max_steps: Option<usize>,
        /// What changed outside the log since the run stopped (e.g. its
        /// sources), as the resuming program saw it.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        changed: Vec<String>,
        /// Whether the sources the run read (its notes) changed: what its
        /// read-only steps returned is stale, and its gaps are searched again.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        sources_changed: bool,
        /// New settings of the program (replacing `run_started.host`), e.g. a
        /// new fingerprint of the notes it read; null keeps the old ones.
        #[serde(default, skip_serializing_if = "Value::is_null")]
        host: Value,
    },
    /// A person cancelled the run.
    RunCancelled {
        /// Why.
        reason: String,
    },
    /// A role called a model: the request and what came back (one event per
    /// attempt, so retries are on record; replay reads these).
    ModelCalled {
        /// The role that called (planner, assessor, …).
        role: String,
        /// The exchange.
        exchange: Box<crate::model::ModelExchange>,
    },
}

fn default_strategy() -> String {
    crate::decision::DEFAULT_STRATEGY.to_owned()
}

impl EventKind {
    /// The snake_case name of the kind, as in JSON.
    pub fn name(&self) -> &'static str {
        match self {
            Self::RunStarted { .. } => "run_started",
            Self::InputRejected { .. } => "input_rejected",
            Self::InputPrepared { .. } => "input_prepared",
            Self::PlanCreated { .. } => "plan_created",
            Self::PlanValidated { .. } => "plan_validated",
            Self::PlanInvalid { .. } => "plan_invalid",
            Self::PlanRepaired { .. } => "plan_repaired",
            Self::PlanApproved { .. } => "plan_approved",
            Self::PlanRejected { .. } => "plan_rejected",
            Self::StepStarted { .. } => "step_started",
            Self::StepSucceeded { .. } => "step_succeeded",
            Self::StepFailed { .. } => "step_failed",
            Self::StepRetrying { .. } => "step_retrying",
            Self::StepTerminated { .. } => "step_terminated",
            Self::Assessed { .. } => "assessed",
            Self::StopConditionMet { .. } => "stop_condition_met",
            Self::StrategyChosen { .. } => "strategy_chosen",
            Self::StrategyEscalated { .. } => "strategy_escalated",
            Self::StepAdded { .. } => "step_added",
            Self::StepSkipped { .. } => "step_skipped",
            Self::StepSummarized { .. } => "step_summarized",
            Self::GapsNoted { .. } => "gaps_noted",
            Self::Verified { .. } => "verified",
            Self::Replanned { .. } => "replanned",
            Self::Synthesized { .. } => "synthesized",
            Self::NeedsReview { .. } => "needs_review",
            Self::RunFailed { .. } => "run_failed",
            Self::PlanReviewRequested { .. } => "plan_review_requested",
            Self::ApprovalRequested { .. } => "approval_requested",
            Self::ApprovalGranted { .. } => "approval_granted",
            Self::ApprovalDenied { .. } => "approval_denied",
            Self::AwaitingApproval { .. } => "awaiting_approval",
            Self::StepInterrupted { .. } => "step_interrupted",
            Self::RunResumed { .. } => "run_resumed",
            Self::RunCancelled { .. } => "run_cancelled",
            Self::ModelCalled { .. } => "model_called",
        }
    }
}

/// A sink could not record an event; the run stops rather than go on unrecorded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("could not record event {seq}: {message}")]
pub struct SinkError {
    /// The event that was not recorded.
    pub seq: u64,
    /// Why.
    pub message: String,
}

/// Receives every event before the engine acts on it: a store (durability),
/// a progress display, an SSE stream.
pub trait EventSink: Send + Sync {
    /// Records one event. The engine waits for it before taking the next step.
    fn record<'a>(
        &'a self,
        run: &'a RunId,
        event: &'a Event,
    ) -> BoxFuture<'a, Result<(), SinkError>>;

    /// Records consecutive events together: a durable sink writes them in
    /// one transaction, all or none (the default records them one by one).
    fn record_all<'a>(
        &'a self,
        run: &'a RunId,
        events: &'a [Event],
    ) -> BoxFuture<'a, Result<(), SinkError>> {
        Box::pin(async move {
            for event in events {
                self.record(run, event).await?;
            }
            Ok(())
        })
    }
}

/// A sink that writes events in batches only: it implements just
/// [`BatchSink::record_batch`], and [`EventSink::record`] writes a batch of
/// one, so each such sink need not spell out that delegation.
pub trait BatchSink: Send + Sync {
    /// Records consecutive events together (see [`EventSink::record_all`]).
    fn record_batch<'a>(
        &'a self,
        run: &'a RunId,
        events: &'a [Event],
    ) -> BoxFuture<'a, Result<(), SinkError>>;
}

impl<S: BatchSink> EventSink for S {
    fn record<'a>(
        &'a self,
        run: &'a RunId,
        event: &'a Event,
    ) -> BoxFuture<'a, Result<(), SinkError>> {
        self.record_batch(run, std::slice::from_ref(event))
    }

    fn record_all<'a>(
        &'a self,
        run: &'a RunId,
        events: &'a [Event],
    ) -> BoxFuture<'a, Result<(), SinkError>> {
        self.record_batch(run, events)
    }
}

impl<S: EventSink + ?Sized> EventSink for Arc<S> {
    fn record<'a>(
        &'a self,
        run: &'a RunId,
        event: &'a Event,
    ) -> BoxFuture<'a, Result<(), SinkError>> {
        (**self).record(run, event)
    }

    fn record_all<'a>(
        &'a self,
        run: &'a RunId,
        events: &'a [Event],
    ) -> BoxFuture<'a, Result<(), SinkError>> {
        (**self).record_all(run, events)
    }
}

/// Forwards events to a channel (for live progress). A closed channel is not an error.
#[derive(Debug, Clone)]
pub struct ChannelSink(pub tokio::sync::mpsc::UnboundedSender<Event>);

impl EventSink for ChannelSink {
    fn record<'a>(
        &'a self,
        _run: &'a RunId,
        event: &'a Event,
    ) -> BoxFuture<'a, Result<(), SinkError>> {
        let _ = self.0.send(event.clone());
        Box::pin(async { Ok(()) })
    }
}
