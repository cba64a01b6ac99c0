//! The plan family of nodes: prepare_input, create_plan, validate_plan,
//! repair_plan, review_plan and replan.

use crate::event::EventKind;
use crate::goal::Goal;
use crate::graph::Node;
use crate::plan::validate::validate;
use crate::roles::{PlanRequest, RepairRequest, ReplanRequest};
use serde_json::Value;

use super::{EngineError, NodeResult, Run, decide};

impl Run<'_> {
    pub(super) async fn prepare_input(&mut self) -> NodeResult {
        let input = Goal::prepare(&self.state.input, self.state.constraints.clone());
        self.perform(decide::prepared(input)).await
    }

    pub(super) async fn create_plan(&mut self) -> NodeResult {
        if self.streams_plan() {
            return self.stream_plan().await;
        }
        let goal = self.goal()?;
        let request = PlanRequest {
            goal: &goal,
            tools: &self.engine.specs,
            max_steps: self.state.max_steps,
        };
        let outcome = self.engine.roles.planner.plan(request).await;
        let (draft, usage) = self.draft(crate::roles::RoleName::Planner, outcome).await?;
        self.record(EventKind::PlanCreated { draft, usage }).await?;
        Ok(Node::ValidatePlan.into())
    }

    pub(super) async fn validate_plan(&mut self) -> NodeResult {
        let draft =
            self.state.pending_draft.as_ref().ok_or_else(|| {
                EngineError::Invariant("validate_plan without a draft".to_owned())
            })?;
        let checked = validate(draft, self.limits());
        let command =
            decide::validated(&self.state, checked, self.engine.config.repair_first_draft);
        self.perform(command).await
    }

    pub(super) async fn repair_plan(&mut self) -> NodeResult {
        let attempt = self.state.repair_count + 1;
        let draft = self.state.pending_draft.clone().unwrap_or(Value::Null);
        let goal = self.goal()?;
        let request = RepairRequest {
            goal: &goal,
            draft: &draft,
            diagnostics: &self.state.plan_errors,
            tools: &self.engine.specs,
            state: &self.state,
            attempt,
        };
        let outcome = self.engine.roles.repairer.repair(request).await;
        let (draft, usage) = self
            .draft(crate::roles::RoleName::Repairer, outcome)
            .await?;
        self.record(EventKind::PlanRepaired {
            attempt,
            draft,
            usage,
        })
        .await?;
        Ok(Node::ValidatePlan.into())
    }

    pub(super) async fn review_plan(&mut self) -> NodeResult {
        let goal = self.goal()?;
        let outcome = self
            .engine
            .roles
            .reviewer
            .review(&goal, &self.state.plan)
            .await;
        let reply = self
            .answer(crate::roles::RoleName::Reviewer, outcome)
            .await?;
        let command = decide::reviewed(self.state.plan.version, reply.value, reply.usage);
        self.perform(command).await
    }

    pub(super) async fn replan(&mut self, reason: String) -> NodeResult {
        let request = ReplanRequest {
            state: &self.state,
            reason: &reason,
            tools: &self.engine.specs,
        };
        let outcome = self.engine.roles.replanner.replan(request).await;
        let (draft, usage) = self
            .draft(crate::roles::RoleName::Replanner, outcome)
            .await?;
        let replan_count = self.state.replan_count + 1;
        self.record(EventKind::Replanned {
            replan_count,
            reason,
            draft,
            usage,
        })
        .await?;
        Ok(Node::ValidatePlan.into())
    }
}
