//! assess_progress: the assessor's verdict on a finished step, and the
//! guard that bounds replanning.

use crate::decision::Assessment;
use crate::event::EventKind;
use crate::graph::Node;
use crate::ids::StepId;
use crate::roles::{Reply, RoleError, RoleName, StepOutcome, Verdict};
use crate::usage::Usage;

use super::effect::{Effect, RoleCall};
use super::{Command, EngineError, Halt, NodeResult, Run, decide};

impl Run<'_> {
    pub(super) fn assess_progress(&mut self) -> NodeResult {
        let (id, outcome) = self.last.take().ok_or_else(|| {
            EngineError::Invariant("assess_progress without an outcome".to_owned())
        })?;
        let step = self
            .state
            .index
            .find(&self.state.plan, &id)
            .ok_or_else(|| EngineError::Invariant(format!("assessing unknown step {id}")))?;
        match decide::by_rules(&self.state, step, &outcome, self.engine.config.assess) {
            // Typed checks: the engine judges, no model is asked.
            Some(assessment) => {
                self.note_assessment(&id, &outcome, assessment, Usage::default())?;
            }
            None => self.unjudged.push((id, outcome)),
        }
        // Each step as it finishes, or a wave at once when nothing is left
        // in flight (an assessor that judges waves: one answer for all).
        if !self.unjudged.is_empty() && (!self.engine.roles.assessor.judges_waves() || !self.busy())
        {
            let wave = std::mem::take(&mut self.unjudged);
            return Ok(Effect::Call(RoleCall::Assess { wave }));
        }
        self.assessed()
    }

    /// The assessor's verdicts on a wave, one per step, each noted.
    pub(super) fn judged(
        &mut self,
        wave: Vec<(StepId, StepOutcome)>,
        answer: Result<Reply<Vec<Assessment>>, RoleError>,
    ) -> NodeResult {
        let reply = self.answer(RoleName::Assessor, answer)?;
        if reply.value.len() != wave.len() {
            return Err(Halt::Role(RoleError::Malformed {
                role: RoleName::Assessor,
                message: format!(
                    "{} assessment(s) for {} step(s)",
                    reply.value.len(),
                    wave.len()
                ),
                raw: None,
                exchanges: Vec::new(),
                usage: reply.usage,
            }));
        }
        // The answer's cost is counted once, on the first assessment.
        let mut usage = reply.usage;
        for ((id, outcome), assessment) in wave.iter().zip(reply.value) {
            self.note_assessment(id, outcome, assessment, std::mem::take(&mut usage))?;
        }
        self.assessed()
    }

    /// Where the graph goes once the finished steps are judged: on with
    /// dispatch, or the decision held once nothing is in flight.
    fn assessed(&mut self) -> NodeResult {
        let held = decide::held(&self.state);
        if (held.is_some() || !self.unjudged.is_empty()) && self.busy() {
            // Let in-flight steps finish (and be recorded) before acting.
            return Ok(Node::SelectNextStep.into());
        }
        let command = match held {
            Some((decision, reason)) => decide::on_held(&self.state, decision, reason),
            None => Command::go(Node::SelectNextStep),
        };
        self.perform(command)
    }

    /// Records the verdict on one finished step — the assessment as the
    /// outcome, the strategy and the token budget let it stand. The fold
    /// holds it if it is the strongest so far (see [`Cursor`](crate::cursor::Cursor)).
    fn note_assessment(
        &mut self,
        id: &StepId,
        outcome: &StepOutcome,
        assessment: Assessment,
        usage: Usage,
    ) -> Result<(), EngineError> {
        // plan-solve never replans, and verified replans only after its
        // verifier: they carry on, skipping what a failure blocks.
        let decide::Assessed {
            mut verdict,
            mut reason,
            skip_blocked,
        } = decide::assess(
            &self.state,
            id,
            outcome,
            (assessment.verdict, assessment.reason),
            self.replans_per_step(),
        );
        if let Some(why) = skip_blocked {
            self.skip_blocked(id, &why)?;
        }
        if verdict < Verdict::Replan && self.budget_spent()? {
            verdict = Verdict::Synthesize;
            reason = "the token budget is spent".to_owned();
        }
        // Committed with the next flush: before the next role call, tool
        // start or wait (see the driver).
        self.note(EventKind::Assessed {
            step: id.clone(),
            acceptance_met: assessment.acceptance_met,
            verdict,
            reason,
            new_gaps: assessment.new_gaps,
            resolved_gaps: assessment.resolved_gaps,
            observations: assessment.observations,
            usage,
        })
    }
}
