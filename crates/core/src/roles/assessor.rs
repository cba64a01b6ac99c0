//! assess_progress: the assessor judges a finished step and decides what comes next.

use async_trait::async_trait;

use super::{Reply, RoleError};
use crate::decision::{Assessment, StepResult};
use crate::failure::StepFailure;
use crate::plan::Step;
use crate::state::RunState;

/// What happened to a step, as the assessor sees it.
#[derive(Debug, Clone, PartialEq)]
pub enum StepOutcome {
    /// It succeeded with this result.
    Succeeded(StepResult),
    /// It failed for good.
    Failed(StepFailure),
}

/// What the assessor is given.
#[derive(Debug, Clone, Copy)]
pub struct AssessRequest<'a> {
    /// The run so far (the outcome is already recorded in it).
    pub state: &'a RunState,
    /// The step that finished.
    pub step: &'a Step,
    /// How it finished.
    pub outcome: &'a StepOutcome,
}

/// assess_progress.
#[async_trait]
pub trait Assessor: Send + Sync {
    /// Judges a finished step and decides what comes next.
    async fn assess(&self, request: AssessRequest<'_>) -> Result<Reply<Assessment>, RoleError>;
}
