//! route (the `router` strategy, seed 000): the router classifies a goal.

use async_trait::async_trait;

use super::{Reply, RoleError};
use crate::decision::Routing;
use crate::goal::Goal;
use crate::tool::ToolSpec;

/// route: answers seed 000's three questions about a goal, given the
/// tools a run may call (the tree in [`Routing::route`] decides from them).
#[async_trait]
pub trait Router: Send + Sync {
    /// The three answers, and why.
    async fn route(&self, goal: &Goal, tools: &[ToolSpec]) -> Result<Reply<Routing>, RoleError>;
}
