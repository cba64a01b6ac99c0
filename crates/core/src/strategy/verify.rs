//! Verification (seed 004, VMAO): after each iteration of the plan, a
//! [`Verifier`](crate::roles::Verifier) scores the results against the goal
//! ([`Verification`](crate::decision::Verification)), and the five stop
//! conditions here decide whether to synthesize or replan what is weak or
//! missing.

use crate::decision::VerifyPolicy;
use crate::event::StopCondition;
use crate::state::RunState;

impl VerifyPolicy {
    /// The first stop condition that holds after the last verification in
    /// `state` (the token budget is checked by the engine for every strategy),
    /// with a detail for a person; `None`: replan what is weak.
    pub fn stop(&self, state: &RunState) -> Option<(StopCondition, String)> {
        let history = &state.verification_history;
        let last = history.last()?;
        let iteration = history.len();
        if last.completeness >= self.completeness {
            return Some((
                StopCondition::CompletenessThreshold,
                format!(
                    "completeness {:.2} ≥ {:.2} after iteration {iteration}",
                    last.completeness, self.completeness
                ),
            ));
        }
        if last.confidence >= self.confidence
            && last.completeness >= self.confidence_min_completeness
        {
            return Some((
                StopCondition::ConfidenceThreshold,
                format!(
                    "confidence {:.2} ≥ {:.2} with completeness {:.2} ≥ {:.2}",
                    last.confidence,
                    self.confidence,
                    last.completeness,
                    self.confidence_min_completeness
                ),
            ));
        }
        if let Some(previous) = iteration.checked_sub(2).and_then(|i| history.get(i)) {
            let gain = last.completeness - previous.completeness;
            if gain < self.min_improvement {
                return Some((
                    StopCondition::DiminishingReturns,
                    format!(
                        "completeness moved {:.2} → {:.2} ({:+.0} %), under {:.0} %",
                        previous.completeness,
                        last.completeness,
                        gain * 100.0,
                        self.min_improvement * 100.0
                    ),
                ));
            }
        }
        if iteration >= self.max_iterations as usize {
            return Some((
                StopCondition::MaxIterations,
                format!(
                    "{iteration} iteration(s) made, max_iterations is {}",
                    self.max_iterations
                ),
            ));
        }
        None
    }
}
