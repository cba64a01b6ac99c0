//! ReAct (seed 002): the model picks one tool call at a time, sees what came
//! back, and answers when it has enough. `react` shows the model every raw
//! result; `react-isolated` shows summaries only, so a prompt stays bounded
//! however many calls came before (seed 002's context-isolation axis).
//!
//! Each call becomes a step of the run's plan (`step_added`), so the log,
//! `show`, the progress display, retries and evidence checks work as for
//! every other strategy.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::goal::Goal;
use crate::ids::StepId;
use crate::roles::{Reply, Report, RoleError};
use crate::state::RunState;
use crate::step_status::StepStatus;
use crate::tool::ToolSpec;

/// Longest observation a `react-isolated` history holds, in characters:
/// a summary longer than this is cut, whatever the summarizer returned.
pub const MAX_SUMMARY_CHARS: usize = 600;

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

/// summarize: turns a tool result into a short observation (`react-isolated`).
#[async_trait]
pub trait Summarizer: Send + Sync {
    /// A summary of `output`, the result of `tool` called for `thought`.
    async fn summarize(
        &self,
        goal: &Goal,
        thought: &str,
        tool: &str,
        output: &Value,
    ) -> Result<Reply<String>, RoleError>;
}

/// Cuts `text` to at most `max` characters, marking the cut.
pub fn bounded(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// The actor's view of the calls made so far, rebuilt from the run's state:
/// raw results, or (`isolated`) the recorded summaries.
pub fn history(state: &RunState, isolated: bool) -> Vec<Turn> {
    state
        .plan
        .steps
        .iter()
        .filter(|s| s.status.is_final())
        .map(|s| {
            let observation = match (s.status, state.step_results.get(&s.id)) {
                (StepStatus::Succeeded, Some(result)) => {
                    if isolated {
                        state
                            .step_summaries
                            .get(&s.id)
                            .cloned()
                            .unwrap_or_else(|| "(no summary recorded)".to_owned())
                    } else {
                        result.output.to_string()
                    }
                }
                _ => format!(
                    "error: {}",
                    state
                        .step_failures
                        .get(&s.id)
                        .map_or("the call failed", String::as_str)
                ),
            };
            Turn {
                step: s.id.clone(),
                thought: s.description.clone(),
                tool: s.tool.clone(),
                args: Value::Object(s.args.clone()),
                observation,
            }
        })
        .collect()
}
