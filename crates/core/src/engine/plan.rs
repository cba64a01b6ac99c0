//! The plan family of nodes: prepare_input, create_plan, validate_plan,
//! repair_plan, review_plan and replan.

use crate::event::{EventKind, StopCondition};
use crate::goal::Goal;
use crate::graph::Node;
use crate::plan::Plan;
use crate::plan::validate::validate;
use crate::roles::{PlanRequest, RepairRequest, ReplanRequest, ReviewDecision};
use serde_json::Value;

use super::{EngineError, NodeResult, Run, decide};

impl Run<'_> {
    pub(super) async fn prepare_input(&mut self) -> NodeResult {
        match Goal::prepare(&self.state.input, self.state.constraints.clone()) {
            Err(e) => {
                self.record(EventKind::InputRejected {
                    reason: e.to_string(),
                })
                .await?;
                Ok(Ok(Node::End))
            }
            Ok(goal) => {
                self.record(EventKind::InputPrepared {
                    goal: Box::new(goal.clone()),
                })
                .await?;
                self.goal = Some(goal);
                self.choose_strategy().await
            }
        }
    }

    pub(super) async fn create_plan(&mut self) -> NodeResult {
        let request = PlanRequest {
            goal: self.goal()?,
            tools: &self.engine.specs,
            max_steps: self.state.max_steps,
        };
        let outcome = self.engine.roles.planner.plan(request).await;
        let (draft, usage) = match self.draft(crate::roles::RoleName::Planner, outcome).await? {
            Ok(d) => d,
            Err(e) => return Ok(Err(e)),
        };
        self.record(EventKind::PlanCreated { draft, usage }).await?;
        Ok(Ok(Node::ValidatePlan))
    }

    pub(super) async fn validate_plan(&mut self) -> NodeResult {
        let draft =
            self.state.pending_draft.as_ref().ok_or_else(|| {
                EngineError::Invariant("validate_plan without a draft".to_owned())
            })?;
        match validate(draft, self.limits()) {
            Ok(validated) => {
                let plan = Plan {
                    version: self.state.plan.version + 1,
                    steps: validated.into_steps(),
                };
                self.record(EventKind::PlanValidated { plan }).await?;
                Ok(Ok(Node::ReviewPlan))
            }
            Err(diagnostics) => {
                let next = decide::invalid_plan(
                    &self.state,
                    &diagnostics,
                    self.engine.config.repair_first_draft,
                );
                self.record(EventKind::PlanInvalid { diagnostics }).await?;
                match next {
                    decide::Invalid::Repair => Ok(Ok(Node::RepairPlan)),
                    decide::Invalid::Review(reason) => {
                        self.review_reason = reason;
                        Ok(Ok(Node::MarkNeedsReview))
                    }
                    decide::Invalid::RepairsSpent { detail, review } => {
                        self.review_reason = review;
                        self.record(EventKind::StopConditionMet {
                            condition: StopCondition::MaxRepairs,
                            detail,
                            gaps: Vec::new(),
                            usage: crate::usage::Usage::default(),
                        })
                        .await?;
                        Ok(Ok(Node::MarkNeedsReview))
                    }
                }
            }
        }
    }

    pub(super) async fn repair_plan(&mut self) -> NodeResult {
        let attempt = self.state.repair_count + 1;
        let draft = self.state.pending_draft.clone().unwrap_or(Value::Null);
        let request = RepairRequest {
            goal: self.goal()?,
            draft: &draft,
            diagnostics: &self.state.plan_errors,
            tools: &self.engine.specs,
            state: &self.state,
            attempt,
        };
        let outcome = self.engine.roles.repairer.repair(request).await;
        let (draft, usage) = match self
            .draft(crate::roles::RoleName::Repairer, outcome)
            .await?
        {
            Ok(d) => d,
            Err(e) => return Ok(Err(e)),
        };
        self.record(EventKind::PlanRepaired {
            attempt,
            draft,
            usage,
        })
        .await?;
        Ok(Ok(Node::ValidatePlan))
    }

    pub(super) async fn review_plan(&mut self) -> NodeResult {
        let outcome = self
            .engine
            .roles
            .reviewer
            .review(self.goal()?, &self.state.plan)
            .await;
        let reply = match self
            .answer(crate::roles::RoleName::Reviewer, outcome)
            .await?
        {
            Ok(r) => r,
            Err(e) => return Ok(Err(e)),
        };
        let version = self.state.plan.version;
        match reply.value {
            ReviewDecision::Approved { by } => {
                self.record(EventKind::PlanApproved {
                    version,
                    by,
                    usage: reply.usage,
                })
                .await?;
                Ok(Ok(Node::SelectNextStep))
            }
            ReviewDecision::Deferred => {
                self.record(EventKind::PlanReviewRequested { version })
                    .await?;
                Ok(Ok(Node::AwaitApproval))
            }
            ReviewDecision::Rejected { reason } => {
                self.review_reason = format!("plan version {version} was rejected: {reason}");
                self.record(EventKind::PlanRejected {
                    version,
                    reason,
                    usage: reply.usage,
                })
                .await?;
                Ok(Ok(Node::MarkNeedsReview))
            }
        }
    }

    pub(super) async fn replan(&mut self) -> NodeResult {
        let reason = std::mem::take(&mut self.replan_reason);
        let request = ReplanRequest {
            state: &self.state,
            reason: &reason,
            tools: &self.engine.specs,
        };
        let outcome = self.engine.roles.replanner.replan(request).await;
        let (draft, usage) = match self
            .draft(crate::roles::RoleName::Replanner, outcome)
            .await?
        {
            Ok(d) => d,
            Err(e) => return Ok(Err(e)),
        };
        let replan_count = self.state.replan_count + 1;
        self.record(EventKind::Replanned {
            replan_count,
            reason,
            draft,
            usage,
        })
        .await?;
        Ok(Ok(Node::ValidatePlan))
    }
}
