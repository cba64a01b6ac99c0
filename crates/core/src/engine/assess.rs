//! assess_progress: the assessor's verdict on a finished step, and the
//! guard that bounds replanning.

use crate::event::EventKind;
use crate::graph::Node;
use crate::roles::{AssessRequest, Verdict};

use super::{EngineError, NodeResult, Run, decide};

impl Run<'_> {
    pub(super) async fn assess_progress(&mut self) -> NodeResult {
        let (id, outcome) = self.last.take().ok_or_else(|| {
            EngineError::Invariant("assess_progress without an outcome".to_owned())
        })?;
        let step = self
            .state
            .index
            .find(&self.state.plan, &id)
            .ok_or_else(|| EngineError::Invariant(format!("assessing unknown step {id}")))?;
        let reply = match decide::by_rules(step, &outcome, self.engine.config.assess) {
            // Typed checks: the engine judges, no model is asked.
            Some(assessment) => crate::roles::Reply::free(assessment),
            None => {
                let request = AssessRequest {
                    state: &self.state,
                    step,
                    outcome: &outcome,
                };
                let answer = self.engine.roles.assessor.assess(request).await;
                match self
                    .answer(crate::roles::RoleName::Assessor, answer)
                    .await?
                {
                    Ok(r) => r,
                    Err(e) => return Ok(Err(e)),
                }
            }
        };
        let assessment = reply.value;
        // plan-solve never replans, and verified replans only after its
        // verifier: they carry on, skipping what a failure blocks.
        let decide::Assessed {
            mut verdict,
            mut reason,
            skip_blocked,
        } = decide::assess(
            &self.state,
            &id,
            &outcome,
            (assessment.verdict, assessment.reason),
            self.replans_per_step(),
        );
        if let Some(why) = skip_blocked {
            self.skip_blocked(&id, &why).await?;
        }
        if verdict < Verdict::Replan && self.budget_spent().await? {
            verdict = Verdict::Synthesize;
            reason = "the token budget is spent".to_owned();
        }
        self.record(EventKind::Assessed {
            step: id.clone(),
            acceptance_met: assessment.acceptance_met,
            verdict,
            reason: reason.clone(),
            new_gaps: assessment.new_gaps,
            resolved_gaps: assessment.resolved_gaps,
            observations: assessment.observations,
            usage: reply.usage,
        })
        .await?;
        self.held = decide::stronger(self.held.take(), verdict, reason);
        if self.held.is_some() && self.busy() {
            // Let in-flight steps finish (and be recorded) before acting.
            return Ok(Ok(Node::SelectNextStep));
        }
        match self.held.take() {
            Some((decision, reason)) => self.act_on(decision, reason).await,
            None => Ok(Ok(Node::SelectNextStep)),
        }
    }

    /// Takes a decision held until nothing was in flight.
    pub(super) async fn act_on(&mut self, decision: Verdict, reason: String) -> NodeResult {
        match decision {
            Verdict::Continue => Ok(Ok(Node::SelectNextStep)),
            Verdict::Synthesize => Ok(Ok(Node::SynthesizeReport)),
            Verdict::NeedsReview => {
                self.review_reason = reason;
                Ok(Ok(Node::MarkNeedsReview))
            }
            Verdict::Replan => self.guard_replan(reason).await,
        }
    }

    /// `max_replans` and `max_steps` always end the loop.
    pub(super) async fn guard_replan(&mut self, reason: String) -> NodeResult {
        match decide::replan_guard(&self.state, reason) {
            decide::ReplanGuard::Replan(reason) => {
                self.replan_reason = reason;
                Ok(Ok(Node::Replan))
            }
            // Seed 000: past the replan cap, ask the person to simplify.
            decide::ReplanGuard::Stop {
                condition,
                detail,
                review,
            } => {
                self.review_reason = review;
                self.record(EventKind::StopConditionMet {
                    condition,
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
