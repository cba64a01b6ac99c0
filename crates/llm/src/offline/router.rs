//! The offline router (seed 000): a goal is complex when it names several
//! dimensions of its own or has sections or comparison dimensions;
//! otherwise it is simple.

use async_trait::async_trait;
use stepwise_core::Goal;
use stepwise_core::decision::{Route, Routing};
use stepwise_core::roles::Router;
use stepwise_core::roles::{Reply, RoleError};

use super::planner::sub_questions;

/// Classifies goals without a model.
#[derive(Debug, Clone, Copy, Default)]
pub struct OfflineRouter;

#[async_trait]
impl Router for OfflineRouter {
    async fn route(&self, goal: &Goal) -> Result<Reply<Routing>, RoleError> {
        let c = &goal.constraints;
        let parts = sub_questions(goal, usize::MAX).0.len();
        let routing = if !c.required_sections.is_empty() {
            Routing {
                route: Route::Complex,
                reason: format!(
                    "the report must have {} section(s)",
                    c.required_sections.len()
                ),
            }
        } else if !c.comparison_dimensions.is_empty() {
            Routing {
                route: Route::Complex,
                reason: format!(
                    "the goal compares {} dimension(s)",
                    c.comparison_dimensions.len()
                ),
            }
        } else if parts > 1 {
            Routing {
                route: Route::Complex,
                reason: format!("the goal names {parts} dimensions"),
            }
        } else {
            Routing {
                route: Route::Simple,
                reason: "one question, no sections or comparison dimensions".to_owned(),
            }
        };
        Ok(Reply::free(routing))
    }
}
