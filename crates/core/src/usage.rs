//! Usage counters: what a run cost, so a person can see it and budgets can stop it.

use std::collections::BTreeMap;
use std::ops::AddAssign;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::event::{Event, EventKind};
use crate::ids::StepId;

/// Model calls, tokens, tool calls and wall time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Usage {
    /// Calls to a model (offline roles make none).
    pub llm_calls: u64,
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Tool calls, one per step attempt.
    pub tool_calls: u64,
    /// Milliseconds from the first event to the last.
    pub wall_time_ms: u64,
}

impl Usage {
    /// The usage of one model call.
    pub fn llm_call(input_tokens: u64, output_tokens: u64) -> Self {
        Self {
            llm_calls: 1,
            input_tokens,
            output_tokens,
            ..Self::default()
        }
    }

    /// Nothing was spent.
    pub fn is_zero(&self) -> bool {
        *self == Self::default()
    }
}

impl AddAssign for Usage {
    fn add_assign(&mut self, rhs: Self) {
        self.llm_calls += rhs.llm_calls;
        self.input_tokens += rhs.input_tokens;
        self.output_tokens += rhs.output_tokens;
        self.tool_calls += rhs.tool_calls;
        self.wall_time_ms += rhs.wall_time_ms;
    }
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
