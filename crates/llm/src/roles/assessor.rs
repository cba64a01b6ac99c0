//! The LLM assessor: judges finished steps against their acceptance
//! criteria, seeing their results and the open gaps — not the whole run —
//! and picks the next move (continue, synthesize, replan, review). It judges
//! a wave of steps that finished together in one model call.

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
    acceptance_criteria: Vec<String>,
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
        let (outcome, result, failure) = outcome_view(request.outcome);
        let context = AssessorContext {
            goal: &state.goal,
            step: StepView {
                id: step.id.as_str(),
                description: &step.description,
                tool: &step.tool,
                args: serde_json::Value::Object(step.args.clone()).to_string(),
                acceptance_criteria: super::view::criteria(&step.acceptance_criteria),
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

    fn judges_waves(&self) -> bool {
        true
    }

    /// One model call for every step of the wave.
    async fn assess_wave(
        &self,
        requests: Vec<AssessRequest<'_>>,
    ) -> Result<Reply<Vec<Assessment>>, RoleError> {
        let Some(first) = requests.first() else {
            return Ok(Reply::free(Vec::new()));
        };
        let state = first.state;
        let ids: Vec<&str> = requests.iter().map(|r| r.step.id.as_str()).collect();
        let steps: Vec<WaveStep<'_>> = requests
            .iter()
            .map(|r| {
                let (outcome, result, failure) = outcome_view(r.outcome);
                WaveStep {
                    id: r.step.id.as_str(),
                    description: &r.step.description,
                    tool: &r.step.tool,
                    args: serde_json::Value::Object(r.step.args.clone()).to_string(),
                    acceptance_criteria: super::view::criteria(&r.step.acceptance_criteria),
                    outcome,
                    result,
                    failure,
                }
            })
            .collect();
        let context = WaveContext {
            goal: &state.goal,
            steps,
            gaps: &state.knowledge_gaps,
            pending: state
                .plan
                .steps
                .iter()
                .filter(|s| !ids.contains(&s.id.as_str()) && !s.status.is_final())
                .filter(|s| s.status != StepStatus::Skipped)
                .map(|s| s.id.as_str())
                .collect(),
            replans_left: state.max_replans.saturating_sub(state.replan_count),
        };
        let reply: Reply<WaveAnswer> = self
            .backend
            .ask(Ask {
                role: RoleName::Assessor,
                purpose: "assessor",
                template: "assessor_wave.jinja",
                context: &context,
                schema: schema_of::<WaveAnswer>("wave_assessment"),
                check: Check::Schema,
            })
            .await?;
        // One assessment per step, matched by id, whatever order they came in.
        let mut by_step = reply.value.assessments;
        let mut out = Vec::with_capacity(requests.len());
        for r in &requests {
            let Some(at) = by_step.iter().position(|a| a.step == r.step.id.as_str()) else {
                return Err(RoleError::Malformed {
                    role: RoleName::Assessor,
                    message: format!("the answer has no assessment for step {}", r.step.id),
                    raw: None,
                    exchanges: reply.exchanges,
                    usage: reply.usage,
                });
            };
            let mut a = by_step.swap_remove(at).assessment;
            if matches!(r.outcome, StepOutcome::Failed(_)) {
                a.acceptance_met = false;
            }
            out.push(a);
        }
        Ok(Reply {
            value: out,
            usage: reply.usage,
            exchanges: reply.exchanges,
        })
    }
}

/// One step of a wave, as the model sees it.
#[derive(Serialize)]
struct WaveStep<'a> {
    id: &'a str,
    description: &'a str,
    tool: &'a str,
    args: String,
    acceptance_criteria: Vec<String>,
    outcome: &'static str,
    result: String,
    failure: String,
}

#[derive(Serialize)]
struct WaveContext<'a> {
    goal: &'a str,
    steps: Vec<WaveStep<'a>>,
    gaps: &'a [String],
    pending: Vec<&'a str>,
    replans_left: u32,
}

/// The model's answer for a wave.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct WaveAnswer {
    /// One per step, in the order given.
    assessments: Vec<StepAssessment>,
}

/// One step's assessment, naming the step.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct StepAssessment {
    /// The step's id.
    step: String,
    #[serde(flatten)]
    assessment: Assessment,
}

/// How a step finished, as the prompt says it: outcome, result, failure.
fn outcome_view(outcome: &StepOutcome) -> (&'static str, String, String) {
    match outcome {
        StepOutcome::Succeeded(r) => (
            "succeeded",
            view::readable(&r.output, view::RESULT_BUDGET),
            String::new(),
        ),
        StepOutcome::Failed(f) => ("failed", String::new(), f.to_string()),
    }
}
