//! The LLM planner and repairer: both produce a whole plan. The answer is
//! returned as the JSON the model wrote — the engine's validator reports a
//! plan's problems (cycles, unknown tools, bad references) with stable codes
//! and the repairer fixes them, which a schema error could not do as well —
//! so only an answer that is not JSON at all is malformed.

use async_trait::async_trait;
use serde::Serialize;
use serde_json::Value;
use stepwise_core::plan::plan_json_schema;
use stepwise_core::roles::{
    PlanRequest, Planner, RepairRequest, Repairer, Reply, RoleError, RoleName, StepSender,
};
use stepwise_core::{Diagnostic, DraftPlan, ResponseSchema};

use super::view::{self, RanStep, ToolView};
use super::{Ask, Backend, llm_role};
use crate::call::TextSink;
use crate::steps::StepScanner;
use crate::structured::Check;

/// Characters of a refused draft shown to the repairer.
const DRAFT_BUDGET: usize = 12_000;

/// The plan schema, as sent to providers with a JSON mode.
pub(crate) fn plan_schema() -> ResponseSchema {
    ResponseSchema {
        name: "plan".to_owned(),
        schema: plan_json_schema(),
    }
}

/// create_plan with a model.
#[derive(Debug)]
pub struct LlmPlanner {
    backend: Backend,
}
llm_role!(LlmPlanner);

#[derive(Serialize)]
struct PlannerContext {
    goal: String,
    constraints: String,
    tools: Vec<ToolView>,
    max_steps: usize,
}

impl LlmPlanner {
    async fn draft(
        &self,
        request: PlanRequest<'_>,
        sink: Option<&mut (dyn TextSink + '_)>,
    ) -> Result<Reply<DraftPlan>, RoleError> {
        let context = PlannerContext {
            goal: request.goal.goal.clone(),
            constraints: view::constraints(&request.goal.constraints),
            tools: view::tools(request.tools),
            max_steps: request.max_steps,
        };
        let ask = Ask {
            role: RoleName::Planner,
            purpose: "planner",
            template: "planner.jinja",
            context: &context,
            schema: plan_schema(),
            check: Check::ParseOnly,
        };
        let reply: Reply<Value> = self.backend.ask_streaming(ask, sink).await?;
        Ok(as_draft(reply))
    }
}

#[async_trait]
impl Planner for LlmPlanner {
    async fn plan(&self, request: PlanRequest<'_>) -> Result<Reply<DraftPlan>, RoleError> {
        self.draft(request, None).await
    }

    /// A model that streams its answers streams its plans.
    fn streams(&self) -> bool {
        self.backend.streams()
    }

    /// The plan JSON the prompt asks for, each element of its `steps`
    /// handed on as soon as it is complete ([`StepScanner`]).
    async fn plan_streaming(
        &self,
        request: PlanRequest<'_>,
        steps: StepSender,
    ) -> Result<Reply<DraftPlan>, RoleError> {
        let mut scanner = StepScanner::new(steps);
        self.draft(request, Some(&mut scanner)).await
    }
}

/// repair_plan with a model: shown the refused draft and every diagnostic.
#[derive(Debug)]
pub struct LlmRepairer {
    backend: Backend,
}
llm_role!(LlmRepairer);

#[derive(Serialize)]
struct RepairerContext<'a> {
    goal: String,
    constraints: String,
    tools: Vec<ToolView>,
    max_steps: usize,
    draft: String,
    diagnostics: &'a [Diagnostic],
    attempt: u32,
    completed: Vec<RanStep>,
}

#[async_trait]
impl Repairer for LlmRepairer {
    async fn repair(&self, request: RepairRequest<'_>) -> Result<Reply<DraftPlan>, RoleError> {
        let draft = match request.draft {
            // A malformed answer reaches the repairer as its raw text.
            Value::String(raw) => raw.clone(),
            other => serde_json::to_string_pretty(other).unwrap_or_default(),
        };
        let context = RepairerContext {
            goal: request.goal.goal.clone(),
            constraints: view::constraints(&request.goal.constraints),
            tools: view::tools(request.tools),
            max_steps: request.state.max_steps,
            draft: view::truncate(&draft, DRAFT_BUDGET),
            diagnostics: request.diagnostics,
            attempt: request.attempt,
            completed: view::ran_steps(request.state, view::RESULT_BUDGET),
        };
        let reply: Reply<Value> = self
            .backend
            .ask(Ask {
                role: RoleName::Repairer,
                purpose: "repairer",
                template: "repairer.jinja",
                context: &context,
                schema: plan_schema(),
                check: Check::ParseOnly,
            })
            .await?;
        Ok(as_draft(reply))
    }
}

fn as_draft(reply: Reply<Value>) -> Reply<DraftPlan> {
    Reply {
        value: DraftPlan(reply.value),
        usage: reply.usage,
        exchanges: reply.exchanges,
    }
}
