//! The LLM synthesizer: writes the report from succeeded steps' results
//! only, each shown with its step id, and lists the open gaps verbatim. The
//! engine keeps only evidence whose quote appears verbatim in the cited
//! step's output, so the prompt asks for exact quotes and shows results as
//! plain text (no JSON escapes to copy by mistake).

use async_trait::async_trait;
use serde::Serialize;
use stepwise_core::RunState;
use stepwise_core::roles::{Reply, Report, RoleError, RoleName, Synthesizer};

use super::view::{self, ResultView};
use super::{Ask, Backend, llm_role, schema_of};
use crate::structured::Check;

/// synthesize_report with a model.
#[derive(Debug)]
pub struct LlmSynthesizer {
    backend: Backend,
}
llm_role!(LlmSynthesizer);

#[derive(Serialize)]
struct SynthesizerContext<'a> {
    goal: &'a str,
    constraints: String,
    audience: Option<&'a str>,
    length: Option<&'a str>,
    required_sections: &'a [String],
    results: Vec<ResultView>,
    gaps: &'a [String],
    observations: &'a [String],
}

#[async_trait]
impl Synthesizer for LlmSynthesizer {
    async fn synthesize(&self, state: &RunState) -> Result<Reply<Report>, RoleError> {
        let c = &state.constraints;
        let context = SynthesizerContext {
            goal: &state.goal,
            constraints: view::constraints(c),
            audience: c.audience.as_deref(),
            length: c.length.as_deref(),
            required_sections: &c.required_sections,
            results: view::results(state, view::REPORT_BUDGET),
            gaps: &state.knowledge_gaps,
            observations: &state.observations,
        };
        self.backend
            .ask(Ask {
                role: RoleName::Synthesizer,
                purpose: "synthesizer",
                template: "synthesizer.jinja",
                context: &context,
                schema: schema_of::<Report>("report"),
                check: Check::Schema,
            })
            .await
    }
}
