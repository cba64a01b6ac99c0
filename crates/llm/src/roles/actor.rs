//! The LLM actor (`react`, `react-isolated`): picks the next tool call, or
//! answers with a cited report. It sees the goal, the tools and the history
//! of earlier calls — each with its thought, tool, arguments and observation
//! — and how many calls are left; never the run's state.
//!
//! Observations are shown exactly as the engine gives them: under
//! `react-isolated` they are already summaries; under `react` they are the
//! raw JSON results, not cut, because a history that grows with every raw
//! result is what `react` is compared against (seed 002).
//!
//! The answer is a flat JSON object (`{"action": "call", …}` or
//! `{"action": "answer", …}`) rather than a provider's native tool calling:
//! one shape for every provider, checked and repaired like every other role.

use async_trait::async_trait;
use serde::Serialize;
use serde_json::json;
use stepwise_core::ResponseSchema;
use stepwise_core::roles::{ActRequest, Action, Actor};
use stepwise_core::roles::{Reply, RoleError, RoleName};

use super::view::{self, ToolView};
use super::{Ask, Backend, llm_role};
use crate::structured::Check;

/// act with a model.
#[derive(Debug)]
pub struct LlmActor {
    backend: Backend,
}
llm_role!(LlmActor);

/// One earlier call, as the prompt shows it.
#[derive(Serialize)]
struct TurnView<'a> {
    step: &'a str,
    thought: &'a str,
    tool: &'a str,
    /// Compact JSON.
    args: String,
    /// As given: a summary, the raw JSON result, or the error.
    observation: &'a str,
}

#[derive(Serialize)]
struct ActorContext<'a> {
    goal: &'a str,
    constraints: String,
    tools: Vec<ToolView>,
    history: Vec<TurnView<'a>>,
    calls_left: usize,
}

/// The answer's schema: one flat object whatever the action (a root
/// `oneOf` is refused by some providers' JSON modes), with the fields each
/// action needs required through `if`/`then`.
pub(crate) fn action_schema() -> ResponseSchema {
    let evidence = json!({
        "type": "object",
        "required": ["source_id", "step", "quote"],
        "properties": {
            "source_id": {"type": "string", "description": "the note id (or other source id) shown in the observation, or the step id"},
            "step": {"type": "string", "description": "the step id of the call whose result holds the quote"},
            "quote": {"type": "string", "description": "a short passage copied exactly from that result"}
        }
    });
    ResponseSchema {
        name: "action".to_owned(),
        schema: json!({
            "type": "object",
            "required": ["action"],
            "properties": {
                "action": {"type": "string", "enum": ["call", "answer"]},
                "thought": {"type": "string", "description": "call: why this call"},
                "tool": {"type": "string", "minLength": 1, "description": "call: the tool's name"},
                "args": {"type": "object", "description": "call: the tool's arguments"},
                "report": {
                    "type": "object",
                    "description": "answer: the Markdown report and its evidence",
                    "required": ["text", "evidence"],
                    "properties": {
                        "text": {"type": "string"},
                        "evidence": {"type": "array", "items": evidence}
                    }
                },
                "gaps": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "answer: what the calls could not find out"
                }
            },
            "allOf": [
                {
                    "if": {"properties": {"action": {"const": "call"}}},
                    "then": {"required": ["thought", "tool"]}
                },
                {
                    "if": {"properties": {"action": {"const": "answer"}}},
                    "then": {"required": ["report"]}
                }
            ]
        }),
    }
}

#[async_trait]
impl Actor for LlmActor {
    async fn act(&self, request: ActRequest<'_>) -> Result<Reply<Action>, RoleError> {
        // `request.state` is deliberately not read: the actor's context is
        // the goal, the tools and the history.
        let context = ActorContext {
            goal: &request.goal.goal,
            constraints: view::constraints(&request.goal.constraints),
            tools: view::tools(request.tools),
            history: request
                .history
                .iter()
                .map(|t| TurnView {
                    step: t.step.as_str(),
                    thought: &t.thought,
                    tool: &t.tool,
                    args: t.args.to_string(),
                    observation: &t.observation,
                })
                .collect(),
            calls_left: request.calls_left,
        };
        let mut reply: Reply<Action> = self
            .backend
            .ask(Ask {
                role: RoleName::Actor,
                purpose: "actor",
                template: "actor.jinja",
                context: &context,
                schema: action_schema(),
                check: Check::Schema,
            })
            .await?;
        reply.value = tidy(reply.value);
        Ok(reply)
    }
}

/// Trims what the model wrote; drops empty gaps.
fn tidy(action: Action) -> Action {
    match action {
        Action::Call {
            thought,
            tool,
            args,
        } => Action::Call {
            thought: thought.trim().to_owned(),
            tool: tool.trim().to_owned(),
            args,
        },
        Action::Answer { report, gaps } => Action::Answer {
            report,
            gaps: gaps
                .into_iter()
                .map(|g| g.trim().to_owned())
                .filter(|g| !g.is_empty())
                .collect(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn check(answer: &Value) -> Result<Action, String> {
        let schema = action_schema().schema;
        let validator = jsonschema::validator_for(&schema).map_err(|e| e.to_string())?;
        if let Some(e) = validator.iter_errors(answer).next() {
            return Err(e.to_string());
        }
        serde_json::from_value(answer.clone()).map_err(|e| e.to_string())
    }

    #[test]
    fn the_schema_accepts_both_actions_and_refuses_half_ones() {
        let call = check(
            &json!({"action": "call", "thought": "t", "tool": "search_notes",
            "args": {"query": "x"}}),
        )
        .unwrap();
        assert!(matches!(call, Action::Call { ref tool, .. } if tool == "search_notes"));
        let answer = check(&json!({"action": "answer",
            "report": {"text": "r", "evidence": [{"source_id": "n", "step": "call-1", "quote": "q"}]}}))
        .unwrap();
        assert!(matches!(answer, Action::Answer { ref gaps, .. } if gaps.is_empty()));
        for bad in [
            json!({"action": "call", "thought": "t"}),
            json!({"action": "call", "thought": "t", "tool": ""}),
            json!({"action": "call", "thought": "t", "tool": "x", "args": null}),
            json!({"action": "answer", "gaps": []}),
            json!({"action": "answer", "report": {"text": "r"}}),
            json!({"action": "think"}),
            json!({"tool": "x"}),
        ] {
            assert!(check(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn tidy_trims_and_drops_blank_gaps() {
        let action = tidy(Action::Answer {
            report: stepwise_core::Report {
                text: "r".to_owned(),
                evidence: Vec::new(),
                gaps: Vec::new(),
            },
            gaps: vec![" a gap ".to_owned(), "  ".to_owned()],
        });
        assert!(matches!(action, Action::Answer { gaps, .. } if gaps == ["a gap"]));
    }
}
