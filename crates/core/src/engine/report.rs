//! The end of a run: synthesize_report writes the brief and vets its
//! evidence; mark_needs_review stops for a person with the partial brief.

use super::effect::{Effect, RoleCall};
use super::evidence::{coverage_gaps, vet_evidence};
use crate::event::{Brief, EventKind};
use crate::graph::Node;
use crate::roles::{Reply, Report, RoleError, RoleName};
use crate::state::RunState;
use crate::usage::Usage;

use super::{EngineError, Halt, Next, NodeResult, Review, Run};

impl Run<'_> {
    pub(super) fn synthesize_report(&mut self) -> NodeResult {
        Ok(Effect::Call(RoleCall::Synthesize))
    }

    /// The synthesizer's report, written (see [`write_report`](Self::write_report)).
    pub(super) fn synthesized(&mut self, outcome: Result<Reply<Report>, RoleError>) -> NodeResult {
        let reply = self.answer(RoleName::Synthesizer, outcome)?;
        self.write_report(reply.value, reply.usage)
    }

    /// Notes the report: evidence checked against step results, and every
    /// open gap named. A report that cites no evidence (or, with questions
    /// open, only what side effects did) is not an answer: the run stops
    /// for review with it as the partial brief.
    pub(super) fn write_report(&mut self, report: Report, usage: Usage) -> NodeResult {
        let brief = self.vet_report(report)?;
        if let Some(reason) = unanswered(&self.state, &brief) {
            return Ok(Next::Review(Box::new(Review {
                reason,
                partial: Some((brief, usage)),
                ..Review::default()
            }))
            .into());
        }
        self.note(EventKind::Synthesized {
            report: brief.report,
            evidence: brief.evidence,
            rejected_evidence: brief.rejected_evidence,
            usage,
        })?;
        Ok(Node::End.into())
    }

    /// Checks a report's evidence against the step results, notes the
    /// gaps it names or leaves (required sections, dimensions), and makes
    /// its text name every open gap.
    fn vet_report(&mut self, mut report: Report) -> Result<Brief, EngineError> {
        let (evidence, rejected_evidence) = vet_evidence(&self.state, report.evidence);
        let mut uncovered: Vec<String> = Vec::new();
        for gap in std::mem::take(&mut report.gaps)
            .into_iter()
            .chain(coverage_gaps(&self.state.constraints, &report.text))
        {
            if !self.state.knowledge_gaps.contains(&gap) && !uncovered.contains(&gap) {
                uncovered.push(gap);
            }
        }
        if !uncovered.is_empty() {
            self.note(EventKind::GapsNoted { gaps: uncovered })?;
        }
        let missing: Vec<&String> = self
            .state
            .knowledge_gaps
            .iter()
            .filter(|g| !report.text.contains(g.as_str()))
            .collect();
        if !missing.is_empty() {
            // The report must name every open gap; it may never paper over one.
            report.text.push_str("\n\n## Unresolved gaps\n\n");
            for gap in missing {
                report.text.push_str(&format!("- {gap}\n"));
            }
        }
        Ok(Brief {
            report: report.text,
            evidence,
            rejected_evidence,
        })
    }

    /// mark_needs_review: stop for a person, with the partial brief (the
    /// report that cited nothing, or one the synthesizer writes over what
    /// succeeded; none when no step succeeded).
    pub(super) fn mark_needs_review(&mut self, review: Review) -> NodeResult {
        if review.partial.is_none() && !self.state.step_results.is_empty() {
            return Ok(Effect::Call(RoleCall::Partial {
                review: Box::new(review),
            }));
        }
        let Review {
            reason,
            mut usage,
            ask_again,
            partial,
        } = review;
        let brief = partial.map(|(brief, cost)| {
            usage += cost;
            brief
        });
        self.stop_for_review(reason, usage, ask_again, brief)
    }

    /// The partial brief the synthesizer wrote, vetted like a final report;
    /// a synthesizer that fails leaves a note in the reason instead.
    pub(super) fn partial_written(
        &mut self,
        review: Review,
        outcome: Result<Reply<Report>, RoleError>,
    ) -> NodeResult {
        let Review {
            mut reason,
            mut usage,
            ask_again,
            ..
        } = review;
        let brief = match self.answer(RoleName::Synthesizer, outcome) {
            Ok(reply) => {
                usage += reply.usage;
                Some(self.vet_report(reply.value)?)
            }
            Err(Halt::Role(e)) => {
                usage += e.usage();
                reason = format!("{} (no partial brief: {e})", said(reason));
                None
            }
            Err(Halt::Engine(e)) => return Err(e.into()),
        };
        self.stop_for_review(reason, usage, ask_again, brief)
    }

    /// Notes the stop for review and ends the run there.
    fn stop_for_review(
        &mut self,
        reason: String,
        usage: Usage,
        ask_again: bool,
        brief: Option<Brief>,
    ) -> NodeResult {
        self.note(EventKind::NeedsReview {
            reason: said(reason),
            usage,
            brief: brief.map(Box::new),
            ask_again,
        })?;
        Ok(Node::End.into())
    }
}

/// A stop's reason, or the default one when none was given.
fn said(reason: String) -> String {
    if reason.is_empty() {
        "the run cannot continue safely".to_owned()
    } else {
        reason
    }
}

/// Why a vetted report is not an answer, if it is not. Any succeeded
/// step's output is evidence, so a run that only acted is answered by what
/// its steps returned; but what a side effect (a step with an approval on
/// record) did answers no question, so while gaps are open a report citing
/// only that is not an answer either.
fn unanswered(state: &RunState, brief: &Brief) -> Option<String> {
    if brief.evidence.is_empty() {
        return Some(no_evidence_reason(state, brief));
    }
    let only_actions = brief
        .evidence
        .iter()
        .all(|e| state.approvals.contains_key(&e.step));
    if !only_actions || state.knowledge_gaps.is_empty() {
        return None;
    }
    let mut steps: Vec<&str> = brief.evidence.iter().map(|e| e.step.as_str()).collect();
    steps.dedup();
    Some(format!(
        "the report cites no evidence for what the run asked: only what its side-effect steps did ({}){} — add sources that cover the goal, or narrow it",
        steps.join(", "),
        open_gaps(state)
    ))
}

/// "; its open gap is listed", or nothing when none is open.
fn open_gaps(state: &RunState) -> String {
    match state.knowledge_gaps.len() {
        0 => String::new(),
        1 => "; its open gap is listed".to_owned(),
        n => format!("; its {n} open gaps are listed"),
    }
}

/// Why a report that cites nothing is not an answer, for the person reviewing it.
fn no_evidence_reason(state: &RunState, brief: &Brief) -> String {
    let why = if state.step_results.is_empty() {
        "no step succeeded, so there is nothing to cite".to_owned()
    } else if let Some(first) = brief.rejected_evidence.first() {
        format!(
            "{} quote(s) offered, none found in a succeeded step's output (e.g. {})",
            brief.rejected_evidence.len(),
            first.reason
        )
    } else {
        "nothing the steps found supports it".to_owned()
    };
    let listed = open_gaps(state);
    format!(
        "the report cites no evidence: {why}{listed} — add sources that cover the goal, or narrow it"
    )
}
