//! The offline verifier (`verified`, seed 004): scores an iteration from the
//! judged evidence of each sub-question.
//!
//! - completeness: the share of sub-questions (distinct descriptions of
//!   `search_notes` steps) whose latest search meets its criteria;
//! - confidence: the share of answered sub-questions backed by two or more
//!   notes (corroborated), scaled by completeness;
//! - missing: the unanswered sub-questions; weak steps: their latest searches;
//! - contradictions: the conflicting figures `compare_results` found.

use async_trait::async_trait;
use stepwise_core::roles::{Reply, RoleError};
use stepwise_core::strategy::verify::{Completeness, Verification, Verifier};
use stepwise_core::{RunState, StepStatus};

use super::judge::judge;
use super::search::contradictions;

/// Verifies without a model.
#[derive(Debug, Clone, Copy, Default)]
pub struct OfflineVerifier;

#[async_trait]
impl Verifier for OfflineVerifier {
    async fn verify(&self, state: &RunState) -> Result<Reply<Verification>, RoleError> {
        let mut questions: Vec<&str> = Vec::new();
        for s in &state.plan.steps {
            if s.tool == "search_notes" && !questions.contains(&s.description.as_str()) {
                questions.push(&s.description);
            }
        }
        let (mut answered, mut corroborated) = (0usize, 0usize);
        let (mut missing, mut weak_steps) = (Vec::new(), Vec::new());
        for question in &questions {
            let latest = state
                .plan
                .steps
                .iter()
                .rev()
                .find(|s| s.tool == "search_notes" && s.description == *question);
            let judged = latest.and_then(|s| {
                let result = state.step_results.get(&s.id)?;
                Some(judge(&state.constraints, s, &result.output))
            });
            match judged {
                Some(j) if j.met() => {
                    answered += 1;
                    let mut notes: Vec<&str> = j.good.iter().map(|h| h.note_id.as_str()).collect();
                    notes.dedup();
                    if notes.len() > 1 {
                        corroborated += 1;
                    }
                }
                _ => {
                    missing.push((*question).to_owned());
                    if let Some(s) = latest.filter(|s| s.status != StepStatus::Skipped) {
                        weak_steps.push(s.id.clone());
                    }
                }
            }
        }
        let share = |n: usize, of: usize| if of == 0 { 0.0 } else { n as f64 / of as f64 };
        let completeness = share(answered, questions.len());
        let confidence = share(corroborated, answered) * completeness;
        let contradictions = contradictions(state)
            .into_iter()
            .map(|(step, c)| {
                let notes: Vec<&str> = c.claims.iter().map(|cl| cl.note_id.as_str()).collect();
                format!("{} ({}; step {step})", c.term, notes.join(" vs "))
            })
            .collect();
        let status = if questions.is_empty() || answered == 0 {
            Completeness::Incomplete
        } else if answered == questions.len() {
            Completeness::Complete
        } else {
            Completeness::Partial
        };
        Ok(Reply::free(Verification {
            status,
            completeness,
            confidence,
            missing,
            contradictions,
            weak_steps,
        }))
    }
}
