//! The offline assessor: checks a search step's evidence against its
//! acceptance criteria and decides between carrying on, replanning and
//! stopping for review.

use async_trait::async_trait;
use serde_json::Value;
use stepwise_core::roles::{AssessRequest, Assessor, Reply, RoleError, StepOutcome};
use stepwise_core::{Assessment, RunState, StepStatus, Verdict};

use super::search::{Hit, hits, key_terms};
use super::{MIN_COVERAGE, MIN_SCORE, gap_for};

/// Results that count as evidence for `query`, and the share of its key terms they cover.
pub(crate) fn evidence(output: &Value, query: &str) -> (Vec<Hit>, f64) {
    let good: Vec<Hit> = hits(output)
        .into_iter()
        .filter(|h| h.score >= MIN_SCORE)
        .collect();
    let terms = key_terms(query);
    if terms.is_empty() {
        return (good, 0.0);
    }
    let mut text = String::new();
    for h in &good {
        text.push_str(&h.title);
        text.push('\n');
        for p in &h.passages {
            text.push_str(p);
            text.push('\n');
        }
    }
    let found = key_terms(&text);
    let covered = terms.iter().filter(|t| found.contains(t)).count();
    (good, covered as f64 / terms.len() as f64)
}

/// Whether a search step's output meets its acceptance criteria.
pub(crate) fn meets(output: &Value, query: &str) -> bool {
    let (good, coverage) = evidence(output, query);
    !good.is_empty() && coverage >= MIN_COVERAGE
}

/// The query a step searched for.
pub(crate) fn query_of(step: &stepwise_core::Step) -> String {
    step.args
        .get("query")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// Whether any finished search step met its criteria.
fn any_evidence(state: &RunState) -> bool {
    state.plan.steps.iter().any(|s| {
        s.tool == "search_notes"
            && s.status == StepStatus::Succeeded
            && state
                .step_results
                .get(&s.id)
                .is_some_and(|r| meets(&r.output, &query_of(s)))
    })
}

/// What to do about a gap: replan while replans and steps are left; then go
/// on with the evidence there is; with no evidence at all, stop for review.
fn decide(state: &RunState, gap: String, reason: String) -> Assessment {
    let used = state
        .plan
        .steps
        .iter()
        .filter(|s| s.status != StepStatus::Skipped)
        .count();
    let verdict = if state.replan_count < state.max_replans && used < state.max_steps {
        Verdict::Replan
    } else if any_evidence(state) {
        Verdict::Continue
    } else {
        Verdict::NeedsReview
    };
    let reason = match verdict {
        Verdict::NeedsReview => {
            format!("{reason}; no sub-question found evidence and no replans are left")
        }
        Verdict::Continue => format!("{reason}; no replans left, going on with the evidence found"),
        _ => reason,
    };
    Assessment {
        acceptance_met: false,
        verdict,
        reason,
        new_gaps: vec![gap],
        resolved_gaps: Vec::new(),
        observations: Vec::new(),
    }
}

/// Judges search results by score and key-term coverage; everything else by success.
#[derive(Debug, Clone, Copy, Default)]
pub struct OfflineAssessor;

#[async_trait]
impl Assessor for OfflineAssessor {
    async fn assess(&self, request: AssessRequest<'_>) -> Result<Reply<Assessment>, RoleError> {
        let step = request.step;
        let gap = gap_for(&step.description);
        let assessment = match request.outcome {
            StepOutcome::Failed(f) => decide(
                request.state,
                gap,
                format!("{} failed: {}", step.id, f.message),
            ),
            StepOutcome::Succeeded(result) if step.tool == "search_notes" => {
                let query = query_of(step);
                let (good, coverage) = evidence(&result.output, &query);
                if !good.is_empty() && coverage >= MIN_COVERAGE {
                    let ids: Vec<&str> = good.iter().map(|h| h.note_id.as_str()).collect();
                    Assessment {
                        resolved_gaps: vec![gap],
                        observations: vec![format!(
                            "{}: {} relevant note(s): {}",
                            step.id,
                            ids.len(),
                            ids.join(", ")
                        )],
                        ..Assessment::ok(format!(
                            "{} relevant note(s), {:.0}% of key terms covered",
                            ids.len(),
                            coverage * 100.0
                        ))
                    }
                } else {
                    let why = if good.is_empty() {
                        format!(
                            "{}: no passage scored >= {MIN_SCORE} for {query:?}",
                            step.id
                        )
                    } else {
                        format!(
                            "{}: evidence covers only {:.0}% of the key terms of {query:?}",
                            step.id,
                            coverage * 100.0
                        )
                    };
                    decide(request.state, gap, why)
                }
            }
            StepOutcome::Succeeded(_) => Assessment::ok(format!("{} done", step.id)),
        };
        Ok(Reply::free(assessment))
    }
}
