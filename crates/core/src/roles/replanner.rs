//! replan: the replanner drafts the remaining steps.

use async_trait::async_trait;

use super::{Reply, RoleError};
use crate::plan::DraftPlan;
use crate::state::RunState;
use crate::tool::ToolSpec;

/// What the replanner is given.
#[derive(Debug, Clone, Copy)]
pub struct ReplanRequest<'a> {
    /// The run so far: plan with statuses, results, gaps, history.
    pub state: &'a RunState,
    /// What prompted the replan.
    pub reason: &'a str,
    /// Tools the plan may use.
    pub tools: &'a [ToolSpec],
}

/// replan.
#[async_trait]
pub trait Replanner: Send + Sync {
    /// Drafts the remaining steps. Completed steps are kept by the runtime
    /// whatever the draft says.
    async fn replan(&self, request: ReplanRequest<'_>) -> Result<Reply<DraftPlan>, RoleError>;
}
