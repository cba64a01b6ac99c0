//! The offline assessor: checks a search step's evidence against its
//! acceptance criteria and decides between carrying on, replanning and
//! stopping for review.

use std::sync::Arc;

use async_trait::async_trait;
use stepwise_core::roles::{AssessRequest, Assessor, Reply, RoleError, StepOutcome};
use stepwise_core::{Assessment, RunState, Step, StepStatus, Verdict};

use super::gap_for;
use super::judge::{Judgement, Lens, query_of};
use super::reformulate::Reformulator;

/// Whether any finished search step met its criteria.
fn any_evidence(lens: &Lens<'_>, state: &RunState) -> bool {
    state.plan.steps.iter().any(|s| {
        s.tool == "search_notes"
            && s.status == StepStatus::Succeeded
            && state.step_results.get(&s.id).is_some_and(|r| {
                lens.questions_of(s)
                    .iter()
                    .any(|q| lens.judge_for(s, q, &r.output).met())
            })
    })
}

/// Whether a search other than `step` has yet to finish.
fn searches_outstanding(state: &RunState, step: &Step) -> bool {
    state
        .plan
        .steps
        .iter()
        .any(|s| s.tool == "search_notes" && s.id != step.id && !s.status.is_final())
}

/// What to do about a gap. It is recoverable — worth a replan — while
/// replans and steps are left and the corpus offers a query not tried yet.
/// Otherwise the run goes on with the evidence there is (or may still come);
/// with no evidence at all and none to come, it stops for review.
fn decide(
    reformulator: &Reformulator,
    state: &RunState,
    step: &Step,
    gap: String,
    reason: String,
) -> Assessment {
    let budget =
        state.replan_count < state.max_replans && state.plan.active_steps() < state.max_steps;
    let verdict = if budget && reformulator.next_query(state, step).is_some() {
        Verdict::Replan
    } else if any_evidence(&Lens::new(reformulator.lexicon(), state), state)
        || searches_outstanding(state, step)
    {
        Verdict::Continue
    } else {
        Verdict::NeedsReview
    };
    let why_not = if step.tool != "search_notes" {
        "the offline replanner only rewords searches"
    } else if budget {
        "the notes offer no other wording to try"
    } else {
        "no replans or steps are left"
    };
    let reason = match verdict {
        Verdict::NeedsReview => format!("{reason}; {why_not}, and no sub-question found evidence"),
        Verdict::Continue => format!("{reason}; {why_not}, going on with the evidence there is"),
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
#[derive(Debug)]
pub struct OfflineAssessor {
    reformulator: Arc<Reformulator>,
}

impl OfflineAssessor {
    /// An assessor that asks `reformulator` whether a gap is recoverable.
    pub fn new(reformulator: Arc<Reformulator>) -> Self {
        Self { reformulator }
    }
}

#[async_trait]
impl Assessor for OfflineAssessor {
    async fn assess(&self, request: AssessRequest<'_>) -> Result<Reply<Assessment>, RoleError> {
        let step = request.step;
        let gap = gap_for(&step.description);
        let assessment = match request.outcome {
            StepOutcome::Failed(f) if step.tool != "search_notes" => {
                // Not a question the notes answer: name what did not happen.
                let gap = format!(
                    "Step {} ({}) did not complete: {}",
                    step.id, step.tool, f.message
                );
                decide(&self.reformulator, request.state, step, gap.clone(), gap)
            }
            StepOutcome::Failed(f) => decide(
                &self.reformulator,
                request.state,
                step,
                gap,
                format!("{} failed: {}", step.id, f.message),
            ),
            StepOutcome::Succeeded(result) if step.tool == "search_notes" => {
                let query = query_of(step);
                let lens = Lens::new(self.reformulator.lexicon(), request.state);
                // A step another planner worded its own way is judged as the
                // dimensions it names are, and its gap named by them, as the
                // report's sections are.
                let questions = lens.questions_of(step);
                let mut judged: Vec<Judgement> = questions
                    .iter()
                    .map(|q| lens.judge_for(step, q, &result.output))
                    .collect();
                // The question met, else the first: its gap is resolved or named.
                let at = judged.iter().position(Judgement::met).unwrap_or(0);
                let gap = match questions.get(at) {
                    Some(q) if *q != step.description => gap_for(q),
                    _ => gap,
                };
                let judgement = if at < judged.len() {
                    judged.swap_remove(at)
                } else {
                    lens.judge(step, &result.output)
                };
                if judgement.met() {
                    let ids = judgement.notes();
                    Assessment {
                        resolved_gaps: vec![gap],
                        observations: vec![format!(
                            "{}: {} relevant note(s): {}",
                            step.id,
                            ids.len(),
                            ids.join(", ")
                        )],
                        ..Assessment::ok(format!(
                            "{} relevant note(s), {} sentence(s) about {}",
                            ids.len(),
                            judgement.quotes.len(),
                            judgement.question
                        ))
                    }
                } else {
                    let why = format!("{}: {}", step.id, judgement.shortfall(&query));
                    decide(&self.reformulator, request.state, step, gap, why)
                }
            }
            StepOutcome::Succeeded(_) => Assessment::ok(format!("{} done", step.id)),
        };
        Ok(Reply::free(assessment))
    }

    /// Rules over the step's output and the reformulator's word lists: no model.
    fn is_local(&self) -> bool {
        true
    }
}
