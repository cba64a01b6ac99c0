//! Verification (seed 004, VMAO): after each iteration of the plan, a
//! Verifier scores the results against the goal, and five stop conditions
//! decide whether to synthesize or replan what is weak or missing.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::event::StopCondition;
use crate::ids::StepId;
use crate::roles::{Reply, RoleError};
use crate::state::RunState;

/// How complete the results are (seed 004's verdict).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Completeness {
    /// The results answer the goal.
    Complete,
    /// Some of it.
    Partial,
    /// Little or none of it.
    Incomplete,
}

impl Completeness {
    /// Its name in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Complete => "complete",
            Self::Partial => "partial",
            Self::Incomplete => "incomplete",
        }
    }
}

/// The Verifier's judgement of one iteration's results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Verification {
    /// complete, partial or incomplete.
    pub status: Completeness,
    /// How much of the goal the results answer, 0 to 1.
    pub completeness: f64,
    /// How sure the verifier is of its judgement, 0 to 1.
    #[serde(default = "half")]
    pub confidence: f64,
    /// Elements of the goal the results do not answer.
    #[serde(default)]
    pub missing: Vec<String>,
    /// Results that disagree, citing step ids.
    #[serde(default)]
    pub contradictions: Vec<String>,
    /// Sub-questions whose results are weak and worth retrying.
    #[serde(default)]
    pub weak_steps: Vec<StepId>,
}

fn half() -> f64 {
    0.5
}

impl Verification {
    /// Scores clamped to 0..=1 (a model may answer 80 for 0.8, or NaN).
    #[must_use]
    pub fn clamped(mut self) -> Self {
        let fix = |x: f64| {
            if x.is_nan() {
                0.0
            } else if x > 1.0 && x <= 100.0 {
                x / 100.0
            } else {
                x.clamp(0.0, 1.0)
            }
        };
        self.completeness = fix(self.completeness);
        self.confidence = fix(self.confidence);
        self
    }
}

/// The five stop conditions of the `verified` strategy, all configurable.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct VerifyPolicy {
    /// Stop once completeness reaches this (default 0.8).
    pub completeness: f64,
    /// Stop once confidence reaches this (default 0.75) …
    pub confidence: f64,
    /// … with completeness at least this (default 0.5).
    pub confidence_min_completeness: f64,
    /// Stop when an iteration improves completeness by less than this
    /// (default 0.05).
    pub min_improvement: f64,
    /// Most iterations (plan + replans), default 3.
    pub max_iterations: u32,
}

impl Default for VerifyPolicy {
    fn default() -> Self {
        Self {
            completeness: 0.8,
            confidence: 0.75,
            confidence_min_completeness: 0.5,
            min_improvement: 0.05,
            max_iterations: 3,
        }
    }
}

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

/// verify: scores an iteration's results against the goal.
#[async_trait]
pub trait Verifier: Send + Sync {
    /// Judges the results so far (every succeeded step's output is in `state`).
    async fn verify(&self, state: &RunState) -> Result<Reply<Verification>, RoleError>;
}
