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

    /// Whether it approves every plan without reading it. Only then may the
    /// steps of a streamed plan start before the whole plan is reviewed.
    fn approves_unread(&self) -> bool {
        false
    }
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

    fn approves_unread(&self) -> bool {
        true
    }
}
