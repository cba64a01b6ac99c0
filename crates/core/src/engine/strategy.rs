//! The parts of the driver that strategies change: the choice of driver
//! after prepare_input, the token budget, plan-solve's skipping instead of
//! replanning, and the `verified` strategy's verify node.

use crate::decision::Driver;
use crate::decision::{Verification, VerifyPolicy};
use crate::event::EventKind;
use crate::graph::Node;
use crate::ids::StepId;
use crate::roles::{Reply, RoleError, RoleName};
use crate::scheduler::blocked_dependants;
use crate::strategy::Choice;
use crate::usage::Usage;

use super::effect::{Effect, RoleCall};
use super::{Command, EngineError, Halt, Next, NodeResult, Review, Run, decide};

impl Run<'_> {
    /// How this run is driven (the default graph until the strategy chose).
    pub(super) fn driver(&self) -> Driver {
        self.state.driver.unwrap_or(Driver::PLAN_EXECUTE)
    }

    /// The `verified` strategy's stop conditions, if it is that strategy.
    pub(super) fn verify_policy(&self) -> Option<VerifyPolicy> {
        match self.driver() {
            Driver::Graph { verify, .. } => verify,
            Driver::React { .. } => None,
        }
    }

    /// Whether the assessor may ask for a replan after a step (plan-execute);
    /// plan-solve never replans, and verified replans only after verifying.
    pub(super) fn replans_per_step(&self) -> bool {
        matches!(
            self.driver(),
            Driver::Graph {
                replanning: true,
                verify: None,
                ..
            }
        )
    }

    /// Where a finished step goes: to the assessor, or back to the actor.
    pub(super) fn after_execute(&self) -> Node {
        match self.driver() {
            Driver::Graph { .. } => Node::AssessProgress,
            Driver::React { .. } => Node::Act,
        }
    }

    /// How many steps may be in flight: one for a sequential graph (the
    /// router's `plan-execute-sequential`), else the configured limit.
    pub(super) fn concurrency(&self) -> usize {
        match self.driver() {
            Driver::Graph {
                sequential: true, ..
            } => 1,
            _ => self.engine.config.concurrency.max(1),
        }
    }

    /// The router's escalation at ReAct's tool-call cap: notes the hand-over
    /// to the planning graph and sends the run to the planner. The calls made
    /// stay in the plan as steps that ran.
    pub(super) fn escalate(&mut self, detail: String, usage: Usage) -> NodeResult {
        let from = self.driver();
        let to = Driver::PLAN_EXECUTE;
        self.note(EventKind::StrategyEscalated {
            from,
            to,
            reason: detail,
            usage,
        })?;
        Ok(Node::CreatePlan.into())
    }

    /// choose_strategy: asks the strategy how to drive the run.
    pub(super) fn choose_strategy(&mut self) -> NodeResult {
        Ok(Effect::Call(RoleCall::Route))
    }

    /// Notes the strategy's choice and goes where its driver starts.
    pub(super) fn routed(&mut self, outcome: Result<Reply<Choice>, RoleError>) -> NodeResult {
        let reply = self.answer(RoleName::Router, outcome)?;
        let driver = reply.value.driver;
        self.note(EventKind::StrategyChosen {
            strategy: self.engine.strategy.name().to_owned(),
            driver,
            reason: reply.value.reason,
            usage: reply.usage,
            routing: reply.value.routing,
        })?;
        Ok(match driver {
            Driver::Graph { .. } => Node::CreatePlan,
            Driver::React { .. } => Node::Act,
        }
        .into())
    }

    /// Whether the run has spent its token budget (see [`decide::budget`]),
    /// noting the stop the first time it has.
    pub(super) fn budget_spent(&mut self) -> Result<bool, EngineError> {
        match decide::budget(&self.state) {
            decide::Budget::Within => Ok(false),
            decide::Budget::Spent => Ok(true),
            decide::Budget::Stop(stop) => {
                self.note(stop)?;
                Ok(true)
            }
        }
    }

    /// Skips the pending steps a failed step blocks, each with its reason as a gap.
    pub(super) fn skip_blocked(&mut self, failed: &StepId, why: &str) -> Result<(), EngineError> {
        for step in blocked_dependants(&self.state.plan, failed) {
            let reason = format!("Not run: {step} depends on {failed}, which failed ({why})");
            self.note(EventKind::StepSkipped { step, reason })?;
        }
        Ok(())
    }

    /// verify (`verified`): the verifier judges the iteration; a stop
    /// condition sends the run to its report, otherwise the replanner is told
    /// what is weak or missing.
    pub(super) fn verify(&mut self) -> NodeResult {
        if self.verify_policy().is_none() {
            return Err(
                EngineError::Invariant("verify outside the verified strategy".to_owned()).into(),
            );
        }
        if self.state.stop_condition.is_some() || self.budget_spent()? {
            // Stopped (perhaps before an interruption): write the report.
            return Ok(Node::SynthesizeReport.into());
        }
        let iterations = self.state.replan_count as usize + 1;
        if self.state.verification_history.len() >= iterations {
            // This iteration was verified before an interruption: decide
            // from that verdict rather than ask again.
            let command = self.after_verification()?;
            return self.perform(command);
        }
        Ok(Effect::Call(RoleCall::Verify))
    }

    /// Notes the verifier's verdict and decides from it.
    pub(super) fn verified(
        &mut self,
        outcome: Result<Reply<Verification>, RoleError>,
    ) -> NodeResult {
        let reply = match self.answer(RoleName::Verifier, outcome) {
            Ok(reply) => reply,
            Err(Halt::Role(e @ RoleError::Malformed { .. })) => return Ok(stop_for_review(&e)),
            Err(e) => return Err(e),
        };
        let verification = reply.value.clamped();
        let iteration =
            u32::try_from(self.state.verification_history.len() + 1).unwrap_or(u32::MAX);
        self.note(EventKind::Verified {
            iteration,
            verification,
            usage: reply.usage,
        })?;
        let command = self.after_verification()?;
        self.perform(command)
    }

    /// Stops on the first stop condition that holds after the last verdict,
    /// or sends what is weak or missing to the replanner.
    fn after_verification(&self) -> Result<Command, EngineError> {
        let policy = self.verify_policy().ok_or_else(|| {
            EngineError::Invariant("verify outside the verified strategy".to_owned())
        })?;
        decide::after_verification(&self.state, policy).ok_or_else(|| {
            EngineError::Invariant("a decision after verification without one".to_owned())
        })
    }
}

/// A role's answer was unusable even after its repair round-trip: stop
/// for a person (resumable; a resume asks again) rather than fail.
pub(super) fn stop_for_review(error: &RoleError) -> Effect {
    Effect::Go(Next::Review(Box::new(Review {
        reason: error.to_string(),
        usage: error.usage(),
        ask_again: true,
        partial: None,
    })))
}
