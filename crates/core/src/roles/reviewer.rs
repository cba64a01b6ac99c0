//! review_plan: the reviewer approves or rejects a plan version before it runs.

use async_trait::async_trait;

use super::{Reply, RoleError};
use crate::decision::ReviewDecision;
use crate::goal::Goal;
use crate::plan::Plan;

/// review_plan.
#[async_trait]
pub trait Reviewer: Send + Sync {
    /// Approves or rejects a plan version before it runs.
    async fn review(&self, goal: &Goal, plan: &Plan) -> Result<Reply<ReviewDecision>, RoleError>;
}

/// Approves every plan: the default when no review is asked for (seed 001).
#[derive(Debug, Clone, Copy, Default)]
pub struct AutoApprove;

#[async_trait]
impl Reviewer for AutoApprove {
    async fn review(&self, _goal: &Goal, _plan: &Plan) -> Result<Reply<ReviewDecision>, RoleError> {
        Ok(Reply::free(ReviewDecision::Approved {
            by: "auto".to_owned(),
        }))
    }
}
