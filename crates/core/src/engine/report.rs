//! The end of a run: synthesize_report writes the brief and vets its
//! evidence; mark_needs_review stops for a person with the partial brief.

use super::evidence::{coverage_gaps, vet_evidence};
use crate::event::EventKind;
use crate::graph::Node;
use crate::state::RunState;

use super::{EngineError, Halt, Next, NodeResult, Review, Run};

impl Run<'_> {
    pub(super) async fn synthesize_report(&mut self) -> NodeResult {
        let outcome = self.engine.roles.synthesizer.synthesize(&self.state).await;
        let reply = self
            .answer(crate::roles::RoleName::Synthesizer, outcome)
            .await?;
        self.write_report(reply.value, reply.usage).await
    }

    /// Records the report: evidence checked against step results, and every
    /// open gap named. A report that cites no evidence (or, with questions
    /// open, only what side effects did) is not an answer: the run stops
    /// for review with it as the partial brief.
    pub(super) async fn write_report(
        &mut self,
        report: crate::roles::Report,
        usage: crate::usage::Usage,
    ) -> NodeResult {
        let brief = self.vet_report(report).await?;
        if let Some(reason) = unanswered(&self.state, &brief) {
            return Ok(Next::Review(Box::new(Review {
                reason,
                partial: Some((brief, usage)),
                ..Review::default()
            })));
        }
        self.record(EventKind::Synthesized {
            report: brief.report,
            evidence: brief.evidence,
            rejected_evidence: brief.rejected_evidence,
            usage,
        })
        .await?;
        Ok(Node::End.into())
    }

    /// Checks a report's evidence against the step results, records the
    /// gaps it names or leaves (required sections, dimensions), and makes
    /// its text name every open gap.
    pub(super) async fn vet_report(
        &mut self,
        mut report: crate::roles::Report,
    ) -> Result<crate::event::Brief, EngineError> {
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
            self.record(EventKind::GapsNoted { gaps: uncovered })
                .await?;
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
        Ok(crate::event::Brief {
            report: report.text,
            evidence,
            rejected_evidence,
        })
    }

    /// The partial brief of a run stopping for review: the synthesizer over
    /// what succeeded so far, vetted like a final report. `None` when no
    /// step succeeded; a synthesizer that fails leaves a note in `reason`.
    pub(super) async fn partial_brief(
        &mut self,
        reason: &mut String,
        usage: &mut crate::usage::Usage,
    ) -> Result<Option<crate::event::Brief>, EngineError> {
        if self.state.step_results.is_empty() {
            return Ok(None);
        }
        let outcome = self.engine.roles.synthesizer.synthesize(&self.state).await;
        match self
            .answer(crate::roles::RoleName::Synthesizer, outcome)
            .await
        {
            Ok(reply) => {
                *usage += reply.usage;
                Ok(Some(self.vet_report(reply.value).await?))
            }
            Err(Halt::Role(e)) => {
                *usage += e.usage();
                reason.push_str(&format!(" (no partial brief: {e})"));
                Ok(None)
            }
            Err(Halt::Engine(e)) => Err(e),
        }
    }

    /// mark_needs_review: stop for a person, with the partial brief (the
    /// report that cited nothing, or one written over what succeeded).
    pub(super) async fn mark_needs_review(&mut self, review: Review) -> NodeResult {
        let Review {
            reason,
            mut usage,
            ask_again,
            partial,
        } = review;
        let mut reason = if reason.is_empty() {
            "the run cannot continue safely".to_owned()
        } else {
            reason
        };
        let brief = match partial {
            Some((brief, cost)) => {
                usage += cost;
                Some(brief)
            }
            None => self.partial_brief(&mut reason, &mut usage).await?,
        };
        self.record(EventKind::NeedsReview {
            reason,
            usage,
            brief: brief.map(Box::new),
            ask_again,
        })
        .await?;
        Ok(Node::End.into())
    }
}

/// Why a vetted report is not an answer, if it is not. Any succeeded
/// step's output is evidence, so a run that only acted is answered by what
/// its steps returned; but what a side effect (a step with an approval on
/// record) did answers no question, so while gaps are open a report citing
/// only that is not an answer either.
fn unanswered(state: &RunState, brief: &crate::event::Brief) -> Option<String> {
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
fn no_evidence_reason(state: &RunState, brief: &crate::event::Brief) -> String {
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
