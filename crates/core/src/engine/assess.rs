//! assess_progress: the assessor's verdict on a finished step, and the
//! guard that bounds replanning.

use crate::event::{EventKind, StopCondition};
use crate::failure::FailureClass;
use crate::graph::Node;
use crate::ids::StepId;
use crate::roles::{AssessRequest, StepOutcome, Verdict};
use crate::scheduler::blocked_dependants;
use crate::step_status::StepStatus;

use super::{EngineError, NodeResult, Run};

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
        let request = AssessRequest {
            state: &self.state,
            step,
            outcome: &outcome,
        };
        let answer = self.engine.roles.assessor.assess(request).await;
        let reply = match self
            .answer(crate::roles::RoleName::Assessor, answer)
            .await?
        {
            Ok(r) => r,
            Err(e) => return Ok(Err(e)),
        };
        let assessment = reply.value;
        let (mut verdict, mut reason) = (assessment.verdict, assessment.reason);
        if let StepOutcome::Failed(failure) = &outcome {
            let blocked = blocked_dependants(&self.state.plan, &id);
            if failure.class == FailureClass::Fatal {
                verdict = Verdict::NeedsReview;
                reason = format!("step {id} failed fatally: {}", failure.message);
            } else if verdict == Verdict::Continue && !blocked.is_empty() {
                let names: Vec<&str> = blocked.iter().map(StepId::as_str).collect();
                verdict = Verdict::Replan;
                reason = format!(
                    "step {id} failed and blocks {}: {}",
                    names.join(", "),
                    failure.message
                );
            }
        }
        if verdict == Verdict::Replan && !self.replans_per_step() {
            // plan-solve never replans, and verified replans only after its
            // verifier: carry on, skipping what the failure blocks.
            verdict = Verdict::Continue;
            if let StepOutcome::Failed(failure) = &outcome {
                self.skip_blocked(&id, &failure.message).await?;
            }
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
        if verdict != Verdict::Continue
            && self.held.as_ref().is_none_or(|(held, _)| verdict > *held)
        {
            self.held = Some((verdict, reason));
        }
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
        let ran = self
            .state
            .plan
            .steps
            .iter()
            .filter(|s| s.status.is_final() && s.status != StepStatus::Skipped)
            .count();
        let stop = if self.state.replan_count >= self.state.max_replans {
            Some((
                StopCondition::MaxReplans,
                format!(
                    "{} replan(s) made, none left; {reason}",
                    self.state.replan_count
                ),
            ))
        } else if ran >= self.state.max_steps {
            Some((
                StopCondition::MaxSteps,
                format!(
                    "{ran} step(s) ran, max_steps is {}; {reason}",
                    self.state.max_steps
                ),
            ))
        } else {
            None
        };
        if let Some((condition, detail)) = stop {
            // Seed 000: past the replan cap, ask the person to simplify.
            let more = match condition {
                StopCondition::MaxReplans => "allow more replans",
                _ => "allow more steps",
            };
            self.review_reason = format!(
                "{condition}: {detail} — the goal is too complex to finish within these bounds: please simplify it or narrow it, or {more}"
            );
            self.record(EventKind::StopConditionMet {
                condition,
                detail,
                gaps: Vec::new(),
                usage: crate::usage::Usage::default(),
            })
            .await?;
            return Ok(Ok(Node::MarkNeedsReview));
        }
        self.replan_reason = reason;
        Ok(Ok(Node::Replan))
    }
}
