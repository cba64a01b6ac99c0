//! The offline verifier (`verified`, seed 004): scores an iteration by what
//! the brief would show.
//!
//! - completeness: the share of asked dimensions (or, with none, the
//!   sub-questions searched) with at least one relevant sentence to cite —
//!   the judge's rule, the one the synthesizer quotes by;
//! - confidence: the share of answered ones backed by two or more notes
//!   (corroborated), scaled by completeness;
//! - missing: the dimensions without a sentence, named as asked; weak steps:
//!   their latest searches;
//! - contradictions: the conflicting figures `compare_results` found.

use std::sync::Arc;

use async_trait::async_trait;
use stepwise_core::decision::{Completeness, Verification};
use stepwise_core::roles::Verifier;
use stepwise_core::roles::{Reply, RoleError};
use stepwise_core::{RunState, StepStatus};

use super::judge::Lens;
use super::relevance::Lexicon;
use super::search::contradictions;

/// Verifies without a model.
#[derive(Debug)]
pub struct OfflineVerifier {
    lexicon: Arc<Lexicon>,
}

impl OfflineVerifier {
    /// A verifier that judges relevance with `lexicon`.
    pub fn new(lexicon: Arc<Lexicon>) -> Self {
        Self { lexicon }
    }
}

#[async_trait]
impl Verifier for OfflineVerifier {
    async fn verify(&self, state: &RunState) -> Result<Reply<Verification>, RoleError> {
        let lens = Lens::new(&self.lexicon, state);
        let mut questions: Vec<String> = lens.asked.dimensions.clone();
        for s in &state.plan.steps {
            if s.tool == "search_notes"
                && lens.dimensions_of(s).is_empty()
                && !questions.contains(&s.description)
            {
                questions.push(s.description.clone());
            }
        }
        let (mut answered, mut corroborated) = (0usize, 0usize);
        let (mut missing, mut weak_steps) = (Vec::new(), Vec::new());
        for question in &questions {
            let steps: Vec<_> = state
                .plan
                .steps
                .iter()
                .filter(|s| lens.searches(s, question))
                .collect();
            let mut notes: Vec<String> = Vec::new();
            for s in &steps {
                if let Some(result) = state.step_results.get(&s.id) {
                    for id in lens.judge_for(s, question, &result.output).notes() {
                        if !notes.iter().any(|n| n == id) {
                            notes.push(id.to_owned());
                        }
                    }
                }
            }
            if notes.is_empty() {
                missing.push(question.clone());
                if let Some(s) = steps.iter().rev().find(|s| s.status != StepStatus::Skipped) {
                    weak_steps.push(s.id.clone());
                }
            } else {
                answered += 1;
                if notes.len() > 1 {
                    corroborated += 1;
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
