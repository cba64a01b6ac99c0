//! The roles the planning graph calls. Each is a trait with one method; an
//! LLM-backed, an offline and a scripted implementation plug in behind it.
//! Roles see what they need and no more: a step executor gets its step, its
//! resolved arguments and its dependencies' outputs — never the whole history.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::failure::{FailureClass, StepFailure};
use crate::goal::Goal;
use crate::ids::StepId;
use crate::plan::validate::Diagnostic;
use crate::plan::{DraftPlan, Plan, Step};
use crate::state::{RunState, StepResult};
use crate::tool::{DynTool, ToolContext, ToolSpec};
use crate::usage::Usage;

/// A role's answer, what producing it cost, and the model calls it made
/// (recorded in the run's log, for audits and replay).
#[derive(Debug, Clone, PartialEq)]
pub struct Reply<T> {
    /// The answer.
    pub value: T,
    /// Model calls and tokens spent on it.
    pub usage: Usage,
    /// Every model request and response behind it, retries included.
    pub exchanges: Vec<crate::model::ModelExchange>,
}

impl<T> Reply<T> {
    /// An answer that cost nothing (offline and scripted roles).
    pub fn free(value: T) -> Self {
        Self {
            value,
            usage: Usage::default(),
            exchanges: Vec::new(),
        }
    }
}

/// Which role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RoleName {
    /// create_plan
    Planner,
    /// repair_plan
    Repairer,
    /// review_plan
    Reviewer,
    /// execute_step
    StepExecutor,
    /// assess_progress
    Assessor,
    /// replan
    Replanner,
    /// synthesize_report
    Synthesizer,
    /// verify (the `verified` strategy)
    Verifier,
    /// act (the ReAct strategies)
    Actor,
    /// summarize (`react-isolated`)
    Summarizer,
    /// route (the `router` strategy)
    Router,
}

impl fmt::Display for RoleName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Planner => "planner",
            Self::Repairer => "repairer",
            Self::Reviewer => "reviewer",
            Self::StepExecutor => "step executor",
            Self::Assessor => "assessor",
            Self::Replanner => "replanner",
            Self::Synthesizer => "synthesizer",
            Self::Verifier => "verifier",
            Self::Actor => "actor",
            Self::Summarizer => "summarizer",
            Self::Router => "router",
        })
    }
}

/// A role could not answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RoleError {
    /// The answer came but could not be used (unparseable model output).
    /// A plan-producing role's malformed answer goes to validation and repair.
    #[error("{role} returned output that could not be used: {message}")]
    Malformed {
        /// Which role.
        role: RoleName,
        /// What was wrong.
        message: String,
        /// The raw output, if any, for the repairer to see.
        raw: Option<String>,
        /// Model calls behind it (recorded in the log).
        exchanges: Vec<crate::model::ModelExchange>,
        /// What the answers that could not be used cost: counted in the run's
        /// usage like any other answer's.
        usage: Usage,
    },
    /// The role failed (provider down, auth, script exhausted).
    #[error("{role} failed ({class}): {message}")]
    Failed {
        /// Model calls made before it failed (recorded with the failure).
        exchanges: Vec<crate::model::ModelExchange>,
        /// What the answers received before it failed cost.
        usage: Usage,
        /// Which role.
        role: RoleName,
        /// How to treat it.
        class: FailureClass,
        /// What went wrong.
        message: String,
    },
}

impl RoleError {
    /// A failure with no model calls behind it.
    pub fn failed(role: RoleName, class: FailureClass, message: impl Into<String>) -> Self {
        Self::Failed {
            exchanges: Vec::new(),
            usage: Usage::default(),
            role,
            class,
            message: message.into(),
        }
    }

    /// Takes the model calls behind the error, to record them.
    pub fn take_exchanges(&mut self) -> Vec<crate::model::ModelExchange> {
        match self {
            Self::Failed { exchanges, .. } | Self::Malformed { exchanges, .. } => {
                std::mem::take(exchanges)
            }
        }
    }

    /// What the model calls behind the error cost (kept when the exchanges
    /// are taken): the engine counts it in the run's usage.
    pub fn usage(&self) -> Usage {
        match self {
            Self::Failed { usage, .. } | Self::Malformed { usage, .. } => *usage,
        }
    }
}

/// What the planner is given.
#[derive(Debug, Clone, Copy)]
pub struct PlanRequest<'a> {
    /// The normalised goal and constraints.
    pub goal: &'a Goal,
    /// Tools the plan may use.
    pub tools: &'a [ToolSpec],
    /// Most steps the plan may hold.
    pub max_steps: usize,
}

/// What the repairer is given.
#[derive(Debug, Clone, Copy)]
pub struct RepairRequest<'a> {
    /// The goal.
    pub goal: &'a Goal,
    /// The invalid plan document.
    pub draft: &'a Value,
    /// Every problem the validator found.
    pub diagnostics: &'a [Diagnostic],
    /// Tools the plan may use.
    pub tools: &'a [ToolSpec],
    /// The run so far (completed steps must be kept).
    pub state: &'a RunState,
    /// This repair attempt, from 1.
    pub attempt: u32,
}

/// A reviewer's decision on a plan version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum ReviewDecision {
    /// Run it.
    Approved {
        /// Who approved.
        by: String,
    },
    /// Do not run it.
    Rejected {
        /// Why.
        reason: String,
    },
    /// Ask a person: the run pauses at `awaiting_approval` until
    /// `stepwise approve` (or `reject`).
    Deferred,
}

/// What a step executor is given: an isolated context.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepContext {
    /// The step, with its description and acceptance criteria.
    pub step: Step,
    /// Arguments with every reference resolved.
    pub args: Value,
    /// Outputs of the step's direct dependencies.
    pub dependencies: Vec<DependencyOutput>,
    /// Run, step, attempt and idempotency key, for the tool.
    #[serde(skip)]
    pub tool_context: ToolContext,
}

/// One dependency's result, as a step executor sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DependencyOutput {
    /// The dependency.
    pub step: StepId,
    /// What it was for.
    pub description: String,
    /// Its output.
    pub output: Value,
}

/// What happened to a step, as the assessor sees it.
#[derive(Debug, Clone, PartialEq)]
pub enum StepOutcome {
    /// It succeeded with this result.
    Succeeded(StepResult),
    /// It failed for good.
    Failed(StepFailure),
}

/// What the assessor is given.
#[derive(Debug, Clone, Copy)]
pub struct AssessRequest<'a> {
    /// The run so far (the outcome is already recorded in it).
    pub state: &'a RunState,
    /// The step that finished.
    pub step: &'a Step,
    /// How it finished.
    pub outcome: &'a StepOutcome,
}

/// The assessor's decision (seed 001's assess_progress branches).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Fine; carry on with the plan.
    Continue,
    /// Enough evidence: write the report now, even with gaps.
    Synthesize,
    /// A recoverable gap or blocker: change the remaining plan.
    Replan,
    /// Cannot go on safely: stop for a person.
    NeedsReview,
}

/// The assessor's judgement of one finished step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Assessment {
    /// Whether the step's acceptance criteria are met.
    pub acceptance_met: bool,
    /// What to do next.
    pub verdict: Verdict,
    /// Why.
    pub reason: String,
    /// Knowledge gaps this result reveals.
    #[serde(default)]
    pub new_gaps: Vec<String>,
    /// Earlier gaps this result closes (exact text).
    #[serde(default)]
    pub resolved_gaps: Vec<String>,
    /// Facts or progress notes worth keeping.
    #[serde(default)]
    pub observations: Vec<String>,
}

impl Assessment {
    /// Acceptance met, carry on.
    pub fn ok(reason: impl Into<String>) -> Self {
        Self {
            acceptance_met: true,
            verdict: Verdict::Continue,
            reason: reason.into(),
            new_gaps: Vec::new(),
            resolved_gaps: Vec::new(),
            observations: Vec::new(),
        }
    }

    /// Acceptance not met: a gap worth a replan.
    pub fn gap(gap: impl Into<String>) -> Self {
        let gap = gap.into();
        Self {
            acceptance_met: false,
            verdict: Verdict::Replan,
            reason: gap.clone(),
            new_gaps: vec![gap],
            resolved_gaps: Vec::new(),
            observations: Vec::new(),
        }
    }
}

/// What the replanner is given.
#[derive(Debug, Clone, Copy)]
pub struct ReplanRequest<'a> {
    /// The run so far: plan with statuses, results, gaps, history.
    pub state: &'a RunState,
    /// What prompted the replan.
    pub reason: &'a str,
    /// Tools the plan may use.
    pub tools: &'a [ToolSpec],
}

/// A quoted passage from a step's output that backs a claim.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Evidence {
    /// The source (e.g. a note id).
    pub source_id: String,
    /// The step whose result contains the passage.
    pub step: StepId,
    /// The passage, verbatim.
    pub quote: String,
}

/// The synthesizer's report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Report {
    /// Markdown.
    pub text: String,
    /// The evidence the report cites.
    pub evidence: Vec<Evidence>,
    /// Knowledge gaps the report itself names (a section that found
    /// nothing, a dimension the plan had no room for), recorded with the
    /// run's other gaps so the gap list and the sections agree.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gaps: Vec<String>,
}

/// create_plan.
#[async_trait]
pub trait Planner: Send + Sync {
    /// Drafts a plan for the goal.
    async fn plan(&self, request: PlanRequest<'_>) -> Result<Reply<DraftPlan>, RoleError>;
}

/// repair_plan.
#[async_trait]
pub trait Repairer: Send + Sync {
    /// Drafts a corrected plan, shown the validator's diagnostics.
    async fn repair(&self, request: RepairRequest<'_>) -> Result<Reply<DraftPlan>, RoleError>;
}

/// review_plan.
#[async_trait]
pub trait Reviewer: Send + Sync {
    /// Approves or rejects a plan version before it runs.
    async fn review(&self, goal: &Goal, plan: &Plan) -> Result<Reply<ReviewDecision>, RoleError>;
}

/// execute_step.
#[async_trait]
pub trait StepExecutor: Send + Sync {
    /// Runs one step attempt. Errors are classified so the scheduler knows
    /// whether to retry.
    async fn execute(
        &self,
        context: StepContext,
        tool: Arc<dyn DynTool>,
    ) -> Result<Reply<Value>, StepFailure>;
}

/// assess_progress.
#[async_trait]
pub trait Assessor: Send + Sync {
    /// Judges a finished step and decides what comes next.
    async fn assess(&self, request: AssessRequest<'_>) -> Result<Reply<Assessment>, RoleError>;
}

/// replan.
#[async_trait]
pub trait Replanner: Send + Sync {
    /// Drafts the remaining steps. Completed steps are kept by the runtime
    /// whatever the draft says.
    async fn replan(&self, request: ReplanRequest<'_>) -> Result<Reply<DraftPlan>, RoleError>;
}

/// synthesize_report.
#[async_trait]
pub trait Synthesizer: Send + Sync {
    /// Writes the final report from completed results; gaps stay gaps.
    async fn synthesize(&self, state: &RunState) -> Result<Reply<Report>, RoleError>;
}

/// Calls the step's tool with its resolved arguments: the executor for every
/// step whose arguments the plan fully specifies. A step with an open
/// argument (`{"$open": …}`) fails persistently: filling it in takes a model.
#[derive(Debug, Clone, Copy, Default)]
pub struct ToolCallExecutor;

#[async_trait]
impl StepExecutor for ToolCallExecutor {
    async fn execute(
        &self,
        context: StepContext,
        tool: Arc<dyn DynTool>,
    ) -> Result<Reply<Value>, StepFailure> {
        let open = crate::plan::args::open_args(&context.args);
        if !open.is_empty() {
            let names: Vec<String> = open.iter().map(|(k, _)| format!("`{k}`")).collect();
            let (noun, verb) = if names.len() == 1 {
                ("argument", "is")
            } else {
                ("arguments", "are")
            };
            return Err(StepFailure::new(
                FailureClass::Persistent,
                crate::failure::FailureKind::InvalidArgs,
                format!(
                    "{noun} {} of {} {verb} open and no model executor is configured to fill \
                     {} in (run with a model, or give the value in the plan)",
                    names.join(", "),
                    context.step.tool,
                    if names.len() == 1 { "it" } else { "them" },
                ),
            ));
        }
        tool.call_json(context.tool_context, context.args)
            .await
            .map(Reply::free)
            .map_err(|e| {
                let mut failure =
                    StepFailure::new(e.class, crate::failure::FailureKind::Tool, e.message);
                failure.retry_after_ms = e.retry_after_ms;
                failure
            })
    }
}

/// Approves every plan: the default when no review is asked for (seed 001).
#[derive(Debug, Clone, Copy, Default)]
pub struct AutoApprove;

#[async_trait]
impl Reviewer for AutoApprove {
    async fn review(&self, _goal: &Goal, _plan: &Plan) -> Result<Reply<ReviewDecision>, RoleError> {
        Ok(Reply::free(ReviewDecision::Approved {
            by: "auto".to_owned(),
        }))
    }
}
