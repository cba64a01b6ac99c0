//! ReAct (seed 002): the model picks one tool call at a time, sees what came
//! back, and answers when it has enough. `react` shows the model every raw
//! result; `react-isolated` shows summaries only, so a prompt stays bounded
//! however many calls came before (seed 002's context-isolation axis).
//!
//! Each call becomes a step of the run's plan (`step_added`), so the log,
//! `show`, the progress display, retries and evidence checks work as for
//! every other strategy.

use serde_json::Value;

use crate::roles::Turn;
use crate::state::RunState;
use crate::step_status::StepStatus;

/// Longest observation a `react-isolated` history holds, in characters:
/// a summary longer than this is cut, whatever the summarizer returned.
pub const MAX_SUMMARY_CHARS: usize = 600;

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
