//! The LLM assessor: judges one finished step against its acceptance
//! criteria, seeing that step's result and the open gaps — not the whole
//! run — and picks the next move (continue, synthesize, replan, review).

use async_trait::async_trait;
use serde::Serialize;
use stepwise_core::roles::{AssessRequest, Assessor, Reply, RoleError, RoleName, StepOutcome};
use stepwise_core::{Assessment, StepStatus};

use super::{Ask, Backend, llm_role, schema_of, view};
use crate::structured::Check;

/// assess_progress with a model.
#[derive(Debug)]
pub struct LlmAssessor {
    backend: Backend,
}
llm_role!(LlmAssessor);

#[derive(Serialize)]
struct StepView<'a> {
    id: &'a str,
    description: &'a str,
    tool: &'a str,
    args: String,
    acceptance_criteria: &'a [stepwise_core::plan::criteria::Criterion],
}

#[derive(Serialize)]
struct AssessorContext<'a> {
    goal: &'a str,
    step: StepView<'a>,
    outcome: &'static str,
    result: String,
    failure: String,
    gaps: &'a [String],
    pending: Vec<&'a str>,
    replans_left: u32,
}

#[async_trait]
impl Assessor for LlmAssessor {
    async fn assess(&self, request: AssessRequest<'_>) -> Result<Reply<Assessment>, RoleError> {
        let state = request.state;
        let step = request.step;
        let (outcome, result, failure) = match request.outcome {
            StepOutcome::Succeeded(r) => (
                "succeeded",
                view::readable(&r.output, view::RESULT_BUDGET),
                String::new(),
            ),
            StepOutcome::Failed(f) => ("failed", String::new(), f.to_string()),
        };
        let context = AssessorContext {
            goal: &state.goal,
            step: StepView {
                id: step.id.as_str(),
                description: &step.description,
                tool: &step.tool,
                args: serde_json::Value::Object(step.args.clone()).to_string(),
                acceptance_criteria: &step.acceptance_criteria,
            },
            outcome,
            result,
            failure,
            gaps: &state.knowledge_gaps,
            pending: state
                .plan
                .steps
                .iter()
                .filter(|s| s.id != step.id && !s.status.is_final())
                .filter(|s| s.status != StepStatus::Skipped)
                .map(|s| s.id.as_str())
                .collect(),
            replans_left: state.max_replans.saturating_sub(state.replan_count),
        };
        let mut reply: Reply<Assessment> = self
            .backend
            .ask(Ask {
                role: RoleName::Assessor,
                purpose: "assessor",
                template: "assessor.jinja",
                context: &context,
                schema: schema_of::<Assessment>("assessment"),
                check: Check::Schema,
            })
            .await?;
        if matches!(request.outcome, StepOutcome::Failed(_)) {
            // A failed step met nothing, whatever the model says.
            reply.value.acceptance_met = false;
        }
        Ok(reply)
    }
}
