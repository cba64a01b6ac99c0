//! create_plan: the planner drafts a plan for the goal, whole or streamed
//! step by step (LLMCompiler: steps may start while later ones are written).

use async_trait::async_trait;
use serde_json::Value;
use tokio::sync::mpsc::UnboundedSender;

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

/// Where a streaming planner hands each step of its draft, as it was
/// written (raw JSON, unchecked: the engine validates it on arrival).
/// Sending never blocks; a send after the engine stopped listening is
/// dropped, since the whole draft comes back at the end anyway.
#[derive(Debug, Clone)]
pub struct StepSender(UnboundedSender<Value>);

impl StepSender {
    /// A sender over this channel.
    pub fn new(sender: UnboundedSender<Value>) -> Self {
        Self(sender)
    }

    /// Hands over one step of the draft.
    pub fn send(&self, step: Value) {
        // A closed channel means the engine no longer listens: nothing to do.
        let _ = self.0.send(step);
    }
}

/// create_plan.
#[async_trait]
pub trait Planner: Send + Sync {
    /// Drafts a plan for the goal.
    async fn plan(&self, request: PlanRequest<'_>) -> Result<Reply<DraftPlan>, RoleError>;

    /// Whether [`plan_streaming`](Self::plan_streaming) hands steps over
    /// before the draft is complete (a model that streams its answer).
    /// When false the engine plans whole, as ever.
    fn streams(&self) -> bool {
        false
    }

    /// Drafts a plan, sending each step on `steps` as soon as it is read,
    /// and returns the whole draft at the end (it is what is recorded and
    /// validated). The default sends nothing and returns [`plan`](Self::plan)'s
    /// draft: every planner works unchanged.
    async fn plan_streaming(
        &self,
        request: PlanRequest<'_>,
        steps: StepSender,
    ) -> Result<Reply<DraftPlan>, RoleError> {
        let _ = steps;
        self.plan(request).await
    }
}
