//! act (the ReAct strategies): the actor picks the next tool call, or answers.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Reply, RoleError};
use crate::decision::Report;
use crate::goal::Goal;
use crate::ids::StepId;
use crate::state::RunState;
use crate::tool::ToolSpec;

/// What the actor decided.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum Action {
    /// Call a tool.
    Call {
        /// Why this call (becomes the step's description).
        thought: String,
        /// The tool.
        tool: String,
        /// Its arguments.
        #[serde(default)]
        args: serde_json::Map<String, Value>,
    },
    /// Answer the goal; the report cites step results by step id.
    Answer {
        /// The report.
        report: Report,
        /// What the calls could not find out (recorded as knowledge gaps;
        /// the report must name them).
        #[serde(default)]
        gaps: Vec<String>,
    },
}

/// One earlier call and what came of it, as the actor sees it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Turn {
    /// The step the call ran as.
    pub step: StepId,
    /// Why it was made.
    pub thought: String,
    /// The tool.
    pub tool: String,
    /// Its arguments.
    pub args: Value,
    /// The result: raw JSON (`react`) or a summary (`react-isolated`), or the error.
    pub observation: String,
}

/// What the actor is given.
#[derive(Debug, Clone, Copy)]
pub struct ActRequest<'a> {
    /// The goal.
    pub goal: &'a Goal,
    /// Tools it may call.
    pub tools: &'a [ToolSpec],
    /// Earlier calls, oldest first.
    pub history: &'a [Turn],
    /// Tool calls it may still make; at 0 it must answer.
    pub calls_left: usize,
    /// The whole run (for roles that need more than the history, e.g. offline
    /// ones reading knowledge gaps). An LLM actor must not show it to the model.
    pub state: &'a RunState,
}

/// act: chooses the next tool call, or answers.
#[async_trait]
pub trait Actor: Send + Sync {
    /// The next action. With `calls_left == 0` it must answer: a `Call` is
    /// refused (`tool_call_cap`) and the synthesizer writes the report from
    /// the results so far.
    async fn act(&self, request: ActRequest<'_>) -> Result<Reply<Action>, RoleError>;
}
