//! repair_plan: the repairer drafts a corrected plan from the validator's diagnostics.

use async_trait::async_trait;
use serde_json::Value;

use super::{Reply, RoleError};
use crate::goal::Goal;
use crate::plan::DraftPlan;
use crate::plan::validate::Diagnostic;
use crate::state::RunState;
use crate::tool::ToolSpec;

/// What the repairer is given.
#[derive(Debug, Clone, Copy)]
pub struct RepairRequest<'a> {
    /// The goal.
    pub goal: &'a Goal,
    /// The invalid plan document.
    pub draft: &'a Value,
    /// Every problem the validator found.
    pub diagnostics: &'a [Diagnostic],
    /// Tools the plan may use.
    pub tools: &'a [ToolSpec],
    /// The run so far (completed steps must be kept).
    pub state: &'a RunState,
    /// This repair attempt, from 1.
    pub attempt: u32,
}

/// repair_plan.
#[async_trait]
pub trait Repairer: Send + Sync {
    /// Drafts a corrected plan, shown the validator's diagnostics.
    async fn repair(&self, request: RepairRequest<'_>) -> Result<Reply<DraftPlan>, RoleError>;
}
