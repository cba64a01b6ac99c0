//! The LLM verifier (`verified`, seed 004): scores an iteration's results
//! against the goal — complete, partial or incomplete, completeness and
//! confidence from 0 to 1, what is missing, contradictions, and the steps
//! worth retrying. It sees the goal, every succeeded step's result
//! (size-capped), the steps that ended without a result and the open gaps —
//! not the run's history.

use async_trait::async_trait;
use serde::Serialize;
use stepwise_core::decision::Verification;
use stepwise_core::roles::Verifier;
use stepwise_core::roles::{Reply, RoleError, RoleName};
use stepwise_core::{RunState, StepStatus};

use super::view::{self, ResultView};
use super::{Ask, Backend, llm_role, schema_of};
use crate::structured::Check;

/// verify with a model.
#[derive(Debug)]
pub struct LlmVerifier {
    backend: Backend,
}
llm_role!(LlmVerifier);

/// A step that ended without a result, as the verifier sees it.
#[derive(Serialize)]
struct UnansweredView {
    step: String,
    description: String,
    status: String,
    failure: String,
}

#[derive(Serialize)]
struct VerifierContext<'a> {
    goal: &'a str,
    constraints: String,
    /// 1 for the first plan, +1 per replan.
    iteration: usize,
    results: Vec<ResultView>,
    unanswered: Vec<UnansweredView>,
    gaps: &'a [String],
}

fn unanswered(state: &RunState) -> Vec<UnansweredView> {
    state
        .plan
        .steps
        .iter()
        .filter(|s| s.status.is_final() && s.status != StepStatus::Succeeded)
        .map(|s| UnansweredView {
            step: s.id.to_string(),
            description: s.description.clone(),
            status: s.status.to_string(),
            failure: state
                .step_failures
                .get(&s.id)
                .cloned()
                .or_else(|| view::failure_of(state, &s.id))
                .unwrap_or_default(),
        })
        .collect()
}

#[async_trait]
impl Verifier for LlmVerifier {
    async fn verify(&self, state: &RunState) -> Result<Reply<Verification>, RoleError> {
        let context = VerifierContext {
            goal: &state.goal,
            constraints: view::constraints(&state.constraints),
            iteration: state.verification_history.len() + 1,
            results: view::results(state, view::RESULT_BUDGET),
            unanswered: unanswered(state),
            gaps: &state.knowledge_gaps,
        };
        let mut reply: Reply<Verification> = self
            .backend
            .ask(Ask {
                role: RoleName::Verifier,
                purpose: "verifier",
                template: "verifier.jinja",
                context: &context,
                schema: schema_of::<Verification>("verification"),
                check: Check::Schema,
            })
            .await?;
        let mut verification = reply.value.clamped();
        // Only steps of this run can be retried; an invented id is dropped.
        verification
            .weak_steps
            .retain(|id| state.plan.step(id).is_some());
        verification.weak_steps.dedup();
        reply.value = verification;
        Ok(reply)
    }
}
