//! route (the `router` strategy, seed 000): the router classifies a goal.

use async_trait::async_trait;

use super::{Reply, RoleError};
use crate::decision::Routing;
use crate::goal::Goal;

/// route: classifies a goal.
#[async_trait]
pub trait Router: Send + Sync {
    /// Simple or complex, and why.
    async fn route(&self, goal: &Goal) -> Result<Reply<Routing>, RoleError>;
}
