//! The plan family of nodes: prepare_input, create_plan, validate_plan,
//! repair_plan, review_plan and replan. Each role's answer comes back to
//! the node that asked (see `engine/effect.rs`).

use crate::event::EventKind;
use crate::goal::Goal;
use crate::graph::Node;
use crate::plan::DraftPlan;
use crate::plan::validate::validate;
use crate::roles::{Reply, ReviewDecision, RoleError, RoleName};

use super::effect::{Effect, RoleCall};
use super::{EngineError, NodeResult, Run, decide};

impl Run<'_> {
    pub(super) fn prepare_input(&mut self) -> NodeResult {
        let (input, constraints) = (&self.state.input, self.state.constraints.clone());
        let input = if self.engine.config.refuse_single_words {
            Goal::prepare_request(input, constraints)
        } else {
            Goal::prepare(input, constraints)
        };
        self.perform(decide::prepared(input))
    }

    pub(super) fn create_plan(&mut self) -> NodeResult {
        Ok(if self.streams_plan() {
            Effect::Stream
        } else {
            Effect::Call(RoleCall::Plan)
        })
    }

    /// The planner's draft, recorded for validation.
    pub(super) fn planned(&mut self, outcome: Result<Reply<DraftPlan>, RoleError>) -> NodeResult {
        let (draft, usage) = self.draft(RoleName::Planner, outcome)?;
        self.note(EventKind::PlanCreated { draft, usage })?;
        Ok(Node::ValidatePlan.into())
    }

    pub(super) fn validate_plan(&mut self) -> NodeResult {
        let draft =
            self.state.pending_draft.as_ref().ok_or_else(|| {
                EngineError::Invariant("validate_plan without a draft".to_owned())
            })?;
        let checked = validate(draft, self.limits());
        let command =
            decide::validated(&self.state, checked, self.engine.config.repair_first_draft);
        self.perform(command)
    }

    pub(super) fn repair_plan(&mut self) -> NodeResult {
        let attempt = self.state.repair_count + 1;
        Ok(Effect::Call(RoleCall::Repair { attempt }))
    }

    /// The repairer's draft, recorded for validation.
    pub(super) fn repaired(
        &mut self,
        attempt: u32,
        outcome: Result<Reply<DraftPlan>, RoleError>,
    ) -> NodeResult {
        let (draft, usage) = self.draft(RoleName::Repairer, outcome)?;
        self.note(EventKind::PlanRepaired {
            attempt,
            draft,
            usage,
        })?;
        Ok(Node::ValidatePlan.into())
    }

    pub(super) fn review_plan(&mut self) -> NodeResult {
        Ok(Effect::Call(RoleCall::Review))
    }

    /// The reviewer's decision on the plan.
    pub(super) fn plan_reviewed(
        &mut self,
        outcome: Result<Reply<ReviewDecision>, RoleError>,
    ) -> NodeResult {
        let reply = self.answer(RoleName::Reviewer, outcome)?;
        let command = decide::reviewed(self.state.plan.version, reply.value, reply.usage);
        self.perform(command)
    }

    /// The replanner's draft, recorded (with why it was asked) for validation.
    pub(super) fn replanned(
        &mut self,
        reason: String,
        outcome: Result<Reply<DraftPlan>, RoleError>,
    ) -> NodeResult {
        let (draft, usage) = self.draft(RoleName::Replanner, outcome)?;
        let replan_count = self.state.replan_count + 1;
        self.note(EventKind::Replanned {
            replan_count,
            reason,
            draft,
            usage,
        })?;
        Ok(Node::ValidatePlan.into())
    }
}
