//! The LLM replanner, with seed 002's schema: one call returns either a
//! final answer or the remaining steps, so deciding "are we done?" and
//! "what is left?" costs one model call, not two. A final answer becomes a
//! draft with no new steps: the runtime keeps completed steps, supersedes the
//! pending ones, and the run goes on to synthesis.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use stepwise_core::roles::{ReplanRequest, Replanner, Reply, RoleError, RoleName};
use stepwise_core::{DraftPlan, ResponseSchema, StepStatus};

use super::view::{self, RanStep, ToolView};
use super::{Ask, Backend, llm_role};
use crate::structured::Check;

/// The replanner's answer schema. Steps are only required to be objects:
/// the engine's validator checks them, with better diagnostics.
pub fn replan_schema() -> ResponseSchema {
    ResponseSchema {
        name: "replan".to_owned(),
        schema: json!({
            "type": "object",
            "properties": {
                "final_answer": {
                    "type": ["string", "null"],
                    "description": "Why the results so far answer the goal, if they do; else null."
                },
                "steps": {
                    "type": "array",
                    "items": {"type": "object"},
                    "description": "The remaining steps; empty when there is a final answer."
                }
            },
            "anyOf": [
                {
                    "required": ["final_answer"],
                    "properties": {"final_answer": {"type": "string", "minLength": 1}}
                },
                {
                    "required": ["steps"],
                    "properties": {"steps": {"type": "array", "minItems": 1}}
                }
            ]
        }),
    }
}

#[derive(Debug, Deserialize)]
struct Replan {
    #[serde(default)]
    final_answer: Option<String>,
    #[serde(default)]
    steps: Vec<Value>,
}

/// replan with a model.
#[derive(Debug)]
pub struct LlmReplanner {
    backend: Backend,
}
llm_role!(LlmReplanner);

#[derive(Serialize)]
struct PendingView {
    id: String,
    json: String,
}

#[derive(Serialize)]
struct ReplannerContext<'a> {
    goal: &'a str,
    constraints: String,
    tools: Vec<ToolView>,
    reason: &'a str,
    completed: Vec<RanStep>,
    pending: Vec<PendingView>,
    gaps: &'a [String],
    observations: &'a [String],
    replan_count: u32,
    max_replans: u32,
    steps_left: usize,
}

#[async_trait]
impl Replanner for LlmReplanner {
    async fn replan(&self, request: ReplanRequest<'_>) -> Result<Reply<DraftPlan>, RoleError> {
        let state = request.state;
        let used = state.plan.active_steps();
        let context = ReplannerContext {
            goal: &state.goal,
            constraints: view::constraints(&state.constraints),
            tools: view::tools(request.tools),
            reason: request.reason,
            completed: view::ran_steps(state, view::RESULT_BUDGET),
            pending: state
                .plan
                .steps
                .iter()
                .filter(|s| s.status == StepStatus::Pending)
                .map(|s| PendingView {
                    id: s.id.to_string(),
                    json: view::step_json(s),
                })
                .collect(),
            gaps: &state.knowledge_gaps,
            observations: &state.observations,
            replan_count: state.replan_count,
            max_replans: state.max_replans,
            steps_left: state.max_steps.saturating_sub(used).max(1),
        };
        let reply: Reply<Replan> = self
            .backend
            .ask(Ask {
                role: RoleName::Replanner,
                purpose: "replanner",
                template: "replanner.jinja",
                context: &context,
                schema: replan_schema(),
                check: Check::Schema,
            })
            .await?;
        Ok(Reply {
            value: draft_of(reply.value),
            usage: reply.usage,
            exchanges: reply.exchanges,
        })
    }
}

/// Steps win over a final answer given alongside them: the model still saw
/// work to do. The final answer stays in the draft, so the log shows it.
fn draft_of(replan: Replan) -> DraftPlan {
    let mut draft = json!({ "steps": replan.steps });
    if let (Some(answer), Value::Object(obj)) = (replan.final_answer, &mut draft) {
        obj.insert("final_answer".to_owned(), Value::String(answer));
    }
    DraftPlan(draft)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn final_answer_means_no_new_steps() {
        let d = draft_of(Replan {
            final_answer: Some("enough".into()),
            steps: Vec::new(),
        });
        assert_eq!(d.0, json!({"final_answer": "enough", "steps": []}));
        let d = draft_of(Replan {
            final_answer: None,
            steps: vec![json!({"id": "x"})],
        });
        assert_eq!(d.0, json!({"steps": [{"id": "x"}]}));
    }

    #[test]
    fn schema_refuses_an_empty_answer() {
        let v = jsonschema::validator_for(&replan_schema().schema).unwrap();
        assert!(v.is_valid(&json!({"final_answer": "done", "steps": []})));
        assert!(v.is_valid(&json!({"final_answer": null, "steps": [{"id": "a"}]})));
        assert!(!v.is_valid(&json!({"final_answer": null, "steps": []})));
        assert!(!v.is_valid(&json!({"steps": ["search more"]})));
    }
}
