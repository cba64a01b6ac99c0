//! assess_progress: the assessor's verdict on a finished step, and the
//! guard that bounds replanning.

use crate::decision::Assessment;
use crate::event::EventKind;
use crate::graph::Node;
use crate::ids::StepId;
use crate::roles::{AssessRequest, Reply, RoleError, RoleName, StepOutcome, Verdict};
use crate::usage::Usage;

use super::{Command, EngineError, Halt, NodeResult, Run, decide};

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
        match decide::by_rules(&self.state, step, &outcome, self.engine.config.assess) {
            // Typed checks: the engine judges, no model is asked.
            Some(assessment) => {
                self.record_assessment(&id, &outcome, assessment, Usage::default())
                    .await?;
            }
            None => self.unjudged.push((id, outcome)),
        }
        // Each step as it finishes, or a wave at once when nothing is left
        // in flight (an assessor that judges waves: one answer for all).
        if !self.unjudged.is_empty() && (!self.engine.roles.assessor.judges_waves() || !self.busy())
        {
            let wave = std::mem::take(&mut self.unjudged);
            // A slow assessor is not asked while the outcomes it judges are
            // unsent: a crash during its call must not lose a tool's result.
            if !self.engine.roles.assessor.is_local() {
                self.flush().await?;
            }
            let requests = wave
                .iter()
                .map(|(id, outcome)| {
                    let step = self.state.index.find(&self.state.plan, id).ok_or_else(|| {
                        EngineError::Invariant(format!("assessing unknown step {id}"))
                    })?;
                    Ok(AssessRequest {
                        state: &self.state,
                        step,
                        outcome,
                    })
                })
                .collect::<Result<Vec<_>, EngineError>>()?;
            let answer = if requests.len() == 1 {
                let request = requests[0];
                self.engine
                    .roles
                    .assessor
                    .assess(request)
                    .await
                    .map(|r| Reply {
                        value: vec![r.value],
                        usage: r.usage,
                        exchanges: r.exchanges,
                    })
            } else {
                self.engine.roles.assessor.assess_wave(requests).await
            };
            let reply = self.answer(RoleName::Assessor, answer).await?;
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
                self.record_assessment(id, outcome, assessment, std::mem::take(&mut usage))
                    .await?;
            }
        }
        let held = decide::held(&self.state);
        if (held.is_some() || !self.unjudged.is_empty()) && self.busy() {
            // Let in-flight steps finish (and be recorded) before acting.
            return Ok(Node::SelectNextStep.into());
        }
        let command = match held {
            Some((decision, reason)) => decide::on_held(&self.state, decision, reason),
            None => Command::go(Node::SelectNextStep),
        };
        self.perform(command).await
    }

    /// Records the verdict on one finished step — the assessment as the
    /// outcome, the strategy and the token budget let it stand. The fold
    /// holds it if it is the strongest so far (see [`Cursor`](crate::cursor::Cursor)).
    async fn record_assessment(
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
            self.skip_blocked(id, &why).await?;
        }
        if verdict < Verdict::Replan && self.budget_spent().await? {
            verdict = Verdict::Synthesize;
            reason = "the token budget is spent".to_owned();
        }
        // Committed with the next flush: the outcome's, when the assessor
        // is local, else the next dispatch's (see `Run::flush`).
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
