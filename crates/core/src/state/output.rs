//! What a run gives back: seed 001's `final_output`, and its cost by step
//! and by role.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::decision::Evidence;
use crate::event::{Event, EventKind, StopCondition};
use crate::ids::{RunId, StepId};
use crate::plan::validate::Diagnostic;
use crate::step_status::StepStatus;
use crate::usage::Usage;

use super::*;

impl RunState {
    /// Seed 001's `final_output`: what a user gets back.
    pub fn final_output(&self) -> FinalOutput {
        FinalOutput {
            run_id: self.run_id.clone(),
            status: self.status,
            final_report: self.final_report.clone().unwrap_or_default(),
            plan: self
                .plan
                .steps
                .iter()
                .map(|s| PlanSummary {
                    id: s.id.clone(),
                    description: s.description.clone(),
                    tool: s.tool.clone(),
                    depends_on: s.depends_on.clone(),
                    status: s.status,
                    attempts: s.attempts,
                })
                .collect(),
            plan_version: self.plan.version,
            step_results: self.step_results.clone(),
            knowledge_gaps: self.knowledge_gaps.clone(),
            evidence: self.evidence.clone(),
            blocked_reason: self.blocked_reason.clone(),
            plan_errors: self.plan_errors.clone(),
            replan_count: self.replan_count,
            usage: self.usage,
            usage_by_step: usage_by_step(&self.execution_history),
            usage_by_role: usage_by_role(&self.execution_history),
            strategy: self.strategy.clone(),
            stop_condition: self.stop_condition,
            verification: self.verification_history.last().cloned(),
            execution_history: self.execution_history.clone(),
        }
    }
}

/// One step in the final output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PlanSummary {
    /// The step.
    pub id: StepId,
    /// What it was for.
    pub description: String,
    /// The tool it called.
    pub tool: String,
    /// Its dependencies.
    pub depends_on: Vec<StepId>,
    /// Where it ended.
    pub status: StepStatus,
    /// Attempts made.
    pub attempts: u32,
}

/// What a run returns to its user (seed 001's `final_output`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FinalOutput {
    /// The run.
    pub run_id: RunId,
    /// ok, needs_review or failed.
    pub status: RunStatus,
    /// The report: the final one when ok, the partial brief (what was
    /// found, cited, with its gaps) when needs_review; empty if there is none.
    pub final_report: String,
    /// Every step of the last plan with its status.
    pub plan: Vec<PlanSummary>,
    /// Version of that plan.
    pub plan_version: u32,
    /// Results of succeeded steps.
    pub step_results: BTreeMap<StepId, StepResult>,
    /// Gaps left open.
    pub knowledge_gaps: Vec<String>,
    /// Evidence the report cites.
    pub evidence: Vec<Evidence>,
    /// Why the run stopped, if it did not finish.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blocked_reason: Option<String>,
    /// Diagnostics of the last invalid plan, if any (left out when none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub plan_errors: Vec<Diagnostic>,
    /// Replans made.
    pub replan_count: u32,
    /// What it cost.
    pub usage: Usage,
    /// What each step's model calls cost (steps that made none are left out).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub usage_by_step: BTreeMap<StepId, Usage>,
    /// What each other role's model calls cost (planner, assessor, …).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub usage_by_role: BTreeMap<String, Usage>,
    /// The strategy it ran with.
    pub strategy: String,
    /// The stop condition that ended its loop, if one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_condition: Option<StopCondition>,
    /// `verified`: the last verdict.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verification: Option<crate::decision::Verification>,
    /// Every decision.
    pub execution_history: Vec<Event>,
}

/// The role name a step executor's model calls are recorded under.
pub const STEP_EXECUTOR_ROLE: &str = "step_executor";

/// What each step's executor spent on models (every attempt, failed ones
/// included), from `step_succeeded` and `step_failed` events: steps that
/// made no model call are left out. Only `llm_calls` and the tokens are set.
pub fn usage_by_step(history: &[Event]) -> BTreeMap<StepId, Usage> {
    let mut steps: BTreeMap<StepId, Usage> = BTreeMap::new();
    for event in history {
        let (step, usage) = match &event.kind {
            EventKind::StepSucceeded { step, usage, .. } => (step, *usage),
            EventKind::StepFailed { step, failure, .. } => (step, failure.usage),
            _ => continue,
        };
        if usage.llm_calls > 0 || usage.input_tokens > 0 || usage.output_tokens > 0 {
            *steps.entry(step.clone()).or_default() += model_part(usage);
        }
    }
    steps
}

/// What each role other than the step executor (planner, repairer,
/// assessor, replanner, synthesizer, …) spent on models, from its
/// `model_called` events (the step executor's calls are in
/// [`usage_by_step`]). Only `llm_calls` and the tokens are set.
pub fn usage_by_role(history: &[Event]) -> BTreeMap<String, Usage> {
    let mut roles: BTreeMap<String, Usage> = BTreeMap::new();
    for event in history {
        if let EventKind::ModelCalled { role, exchange } = &event.kind
            && role != STEP_EXECUTOR_ROLE
        {
            *roles.entry(role.clone()).or_default() += exchange.usage();
        }
    }
    roles
}

/// Calls and tokens only.
fn model_part(usage: Usage) -> Usage {
    Usage {
        llm_calls: usage.llm_calls,
        input_tokens: usage.input_tokens,
        output_tokens: usage.output_tokens,
        ..Usage::default()
    }
}
