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

    /// Whether this assessor judges a wave of steps at once ([`assess_wave`]
    /// in one answer, e.g. one model call): the engine then waits until
    /// nothing is in flight and asks once for every step that finished.
    /// Otherwise each step is judged as it finishes.
    ///
    /// [`assess_wave`]: Assessor::assess_wave
    fn judges_waves(&self) -> bool {
        false
    }

    /// Whether this assessor answers without waiting on anything slow: no
    /// model, no network, no person. The engine then commits a finished
    /// step's outcome together with its assessment; otherwise it commits the
    /// outcome before asking, so that a crash during a slow assessment never
    /// loses a tool's result (see docs/durability.md, "Group commit").
    fn is_local(&self) -> bool {
        false
    }

    /// Judges steps that finished in the same wave: one assessment per
    /// request, in order. By default, one by one.
    async fn assess_wave(
        &self,
        requests: Vec<AssessRequest<'_>>,
    ) -> Result<Reply<Vec<Assessment>>, RoleError> {
        let mut out = Reply::free(Vec::with_capacity(requests.len()));
        for request in requests {
            let reply = self.assess(request).await?;
            out.usage += reply.usage;
            out.exchanges.extend(reply.exchanges);
            out.value.push(reply.value);
        }
        Ok(out)
    }
}
