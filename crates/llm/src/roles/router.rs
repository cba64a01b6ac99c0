//! The LLM router (`router`, seed 000): classifies a goal as simple (one
//! lookup, a few tool calls: `react`) or complex (several parts,
//! comparisons, constraints: `plan-execute`), with a reason that is
//! recorded with the decision. It sees the goal and its constraints only.

use async_trait::async_trait;
use serde::Serialize;
use stepwise_core::Goal;
use stepwise_core::decision::Routing;
use stepwise_core::roles::Router;
use stepwise_core::roles::{Reply, RoleError, RoleName};

use super::{Ask, Backend, llm_role, schema_of, view};
use crate::structured::Check;

/// route with a model.
#[derive(Debug)]
pub struct LlmRouter {
    backend: Backend,
}
llm_role!(LlmRouter);

#[derive(Serialize)]
struct RouterContext<'a> {
    goal: &'a str,
    constraints: String,
}

#[async_trait]
impl Router for LlmRouter {
    async fn route(&self, goal: &Goal) -> Result<Reply<Routing>, RoleError> {
        let context = RouterContext {
            goal: &goal.goal,
            constraints: view::constraints(&goal.constraints),
        };
        let mut reply: Reply<Routing> = self
            .backend
            .ask(Ask {
                role: RoleName::Router,
                purpose: "router",
                template: "router.jinja",
                context: &context,
                schema: schema_of::<Routing>("routing"),
                check: Check::Schema,
            })
            .await?;
        let reason = reply.value.reason.split_whitespace().collect::<Vec<_>>();
        reply.value.reason = if reason.is_empty() {
            "the router gave no reason".to_owned()
        } else {
            reason.join(" ")
        };
        Ok(reply)
    }
}
