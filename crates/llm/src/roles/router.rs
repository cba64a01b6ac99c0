//! The LLM router (`router`, seed 000 §11): answers the decision tree's
//! three questions — steps known up front? three or more? the same tool
//! repeated? — with a reason; the tree ([`Routing::route`]) draws the route
//! and both are recorded. It sees the goal, its constraints and the tools'
//! names and descriptions, so it can run on a small model
//! (`[router] model = …`).

use async_trait::async_trait;
use serde::Serialize;
use stepwise_core::Goal;
use stepwise_core::decision::Routing;
use stepwise_core::roles::Router;
use stepwise_core::roles::{Reply, RoleError, RoleName};
use stepwise_core::tool::ToolSpec;

use super::{Ask, Backend, llm_role, schema_of, view};
use crate::structured::Check;

/// Answers the router's questions with a model.
#[derive(Debug)]
pub struct LlmRouter {
    backend: Backend,
}
llm_role!(LlmRouter);

#[derive(Serialize)]
struct RouterContext<'a> {
    goal: &'a str,
    constraints: String,
    tools: Vec<view::ToolView>,
}

#[async_trait]
impl Router for LlmRouter {
    async fn route(&self, goal: &Goal, tools: &[ToolSpec]) -> Result<Reply<Routing>, RoleError> {
        let context = RouterContext {
            goal: &goal.goal,
            constraints: view::constraints(&goal.constraints),
            tools: view::tools(tools),
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
