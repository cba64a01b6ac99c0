//! create_plan: the planner drafts a plan for the goal.

use async_trait::async_trait;

use super::{Reply, RoleError};
use crate::goal::Goal;
use crate::plan::DraftPlan;
use crate::tool::ToolSpec;

/// What the planner is given.
#[derive(Debug, Clone, Copy)]
pub struct PlanRequest<'a> {
    /// The normalised goal and constraints.
    pub goal: &'a Goal,
    /// Tools the plan may use.
    pub tools: &'a [ToolSpec],
    /// Most steps the plan may hold.
    pub max_steps: usize,
}

/// create_plan.
#[async_trait]
pub trait Planner: Send + Sync {
    /// Drafts a plan for the goal.
    async fn plan(&self, request: PlanRequest<'_>) -> Result<Reply<DraftPlan>, RoleError>;
}
