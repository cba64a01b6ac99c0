//! Decisions after a step is assessed or an iteration verified: what a
//! verdict means for the run, and whether a replan may go ahead.

use crate::decision::{Assessment, Verdict, VerifyPolicy};
use crate::plan::Step;
use crate::plan::criteria::{Check, Criterion, all_typed};

use super::AssessMode;
use super::*;
use crate::event::{EventKind, StopCondition};
use crate::graph::Node;
use crate::ids::StepId;
use crate::retry::FailureClass;
use crate::roles::StepOutcome;
use crate::scheduler::blocked_dependants;
use crate::state::RunState;
use crate::usage::Usage;

/// What an assessed step means for the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Assessed {
    /// The verdict in force, which may overrule the assessor's.
    pub(crate) verdict: Verdict,
    /// Why, for a person.
    pub(crate) reason: String,
    /// The step failed and replanning is not per step (`plan-solve`,
    /// `verified`): skip what it blocks, naming this failure.
    pub(crate) skip_blocked: Option<String>,
}

/// The verdict on a finished step: the assessor's, unless the outcome
/// overrules it — a fatal failure always stops for review; a failure that
/// blocks other steps is a replan even when the assessor says carry on;
/// without per-step replanning (`replans_per_step` false) a replan becomes
/// "carry on, skipping what the failure blocks".
pub(crate) fn assess(
    state: &RunState,
    step: &StepId,
    outcome: &StepOutcome,
    assessor: (Verdict, String),
    replans_per_step: bool,
) -> Assessed {
    let (mut verdict, mut reason) = assessor;
    let mut skip_blocked = None;
    if let StepOutcome::Failed(failure) = outcome {
        let blocked = blocked_dependants(&state.plan, step);
        if failure.class == FailureClass::Fatal {
            verdict = Verdict::NeedsReview;
            reason = format!("step {step} failed fatally: {}", failure.message);
        } else if verdict == Verdict::Continue && !blocked.is_empty() {
            let names: Vec<&str> = blocked.iter().map(StepId::as_str).collect();
            verdict = Verdict::Replan;
            reason = format!(
                "step {step} failed and blocks {}: {}",
                names.join(", "),
                failure.message
            );
        }
    }
    if verdict == Verdict::Replan && !replans_per_step {
        verdict = Verdict::Continue;
        if let StepOutcome::Failed(failure) = outcome {
            skip_blocked = Some(failure.message.clone());
        }
    }
    Assessed {
        verdict,
        reason,
        skip_blocked,
    }
}

/// The engine's own judgement of a finished step, when `mode` lets it judge
/// one: by the step's typed checks ([`Check`](crate::plan::criteria::Check)),
/// with no model call. `None`: the assessor judges it. A failed step's
/// criteria cannot hold: a gap, as the assessor would name it. Under
/// `Rules`, text criteria are not judged, and the observation says so.
/// Checks that hold resolve the gaps the same checks named on an earlier
/// step of the same tool (the step a replan retried): that gap is closed.
pub(crate) fn by_rules(
    state: &RunState,
    step: &Step,
    outcome: &StepOutcome,
    mode: AssessMode,
) -> Option<Assessment> {
    let typed = all_typed(&step.acceptance_criteria);
    let checks: Vec<&Check> = match (mode, typed) {
        (AssessMode::Model, _) | (AssessMode::Auto, None) => return None,
        (_, Some(all)) => all,
        (AssessMode::Rules, None) => step
            .acceptance_criteria
            .iter()
            .filter_map(|c| match c {
                Criterion::Check(check) => Some(check),
                Criterion::Text(_) => None,
            })
            .collect(),
    };
    let output = match outcome {
        StepOutcome::Failed(failure) => {
            return Some(Assessment::gap(format!(
                "{}: failed ({}), so its criteria cannot hold",
                step.id, failure.message
            )));
        }
        StepOutcome::Succeeded(result) => &result.output,
    };
    let failed: Vec<String> = checks
        .iter()
        .filter_map(|c| c.evaluate(output).err())
        .collect();
    if !failed.is_empty() {
        return Some(Assessment::gap(format!(
            "{}: {}",
            step.id,
            failed.join("; ")
        )));
    }
    let unjudged = step.acceptance_criteria.len() - checks.len();
    let mut assessment = Assessment::ok(if checks.is_empty() {
        "no typed criteria to check".to_owned()
    } else {
        let listed: Vec<String> = checks.iter().map(ToString::to_string).collect();
        format!("checked by the engine: {}", listed.join("; "))
    });
    if !checks.is_empty() {
        assessment.resolved_gaps = retried_gaps(state, step);
    }
    if unjudged > 0 {
        // Not judged is not met: say so rather than claim it.
        assessment.acceptance_met = false;
        assessment.observations.push(format!(
            "{unjudged} text criterion(s) of {} not judged: the run assesses by typed checks only",
            step.id
        ));
    }
    Some(assessment)
}

/// The open gaps the engine named for earlier steps that ran `step`'s tool
/// under the same criteria ("a: results has fewer than 1 item(s)").
fn retried_gaps(state: &RunState, step: &Step) -> Vec<String> {
    state
        .knowledge_gaps
        .iter()
        .filter(|gap| {
            state.plan.steps.iter().any(|earlier| {
                earlier.id != step.id
                    && earlier.tool == step.tool
                    && earlier.acceptance_criteria == step.acceptance_criteria
                    && gap
                        .strip_prefix(earlier.id.as_str())
                        .is_some_and(|rest| rest.starts_with(": "))
            })
        })
        .cloned()
        .collect()
}

/// Whether a replan may go ahead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ReplanGuard {
    /// Replan, for this reason.
    Replan(String),
    /// A bound is reached: record the stop and ask the person.
    Stop {
        /// `max_replans` or `max_steps`.
        condition: StopCondition,
        /// What was reached (recorded).
        detail: String,
        /// What the person is told (seed 000: please simplify).
        review: String,
    },
}

/// `max_replans` and `max_steps` always end the loop: a replan goes ahead
/// only with replans left and fewer steps run than `max_steps`.
pub(crate) fn replan_guard(state: &RunState, reason: String) -> ReplanGuard {
    let ran = state
        .plan
        .steps
        .iter()
        .filter(|s| s.status.is_final() && s.status != crate::step_status::StepStatus::Skipped)
        .count();
    let (condition, detail, more) = if state.replan_count >= state.max_replans {
        (
            StopCondition::MaxReplans,
            format!("{} replan(s) made, none left; {reason}", state.replan_count),
            "allow more replans",
        )
    } else if ran >= state.max_steps {
        (
            StopCondition::MaxSteps,
            format!(
                "{ran} step(s) ran, max_steps is {}; {reason}",
                state.max_steps
            ),
            "allow more steps",
        )
    } else {
        return ReplanGuard::Replan(reason);
    };
    let review = format!(
        "{condition}: {detail} — the goal is too complex to finish within these bounds: please simplify it or narrow it, or {more}"
    );
    ReplanGuard::Stop {
        condition,
        detail,
        review,
    }
}

/// `verified`, after the iteration's verdict: the first stop condition
/// that holds (or no replans left) sends the run to its report, naming what
/// is still missing as gaps; otherwise the replanner is told what is weak or
/// missing. `None`: no verdict to decide from.
pub(crate) fn after_verification(state: &RunState, policy: VerifyPolicy) -> Option<Command> {
    let verification = state.verification_history.last()?;
    let iteration = state.verification_history.len();
    let stop = policy.stop(state).or_else(|| {
        (state.replan_count >= state.max_replans).then(|| {
            (
                StopCondition::MaxIterations,
                format!(
                    "{iteration} iteration(s) made and no replans left (max_replans is {})",
                    state.max_replans
                ),
            )
        })
    });
    if let Some((condition, detail)) = stop {
        // Missing elements not already named by an open gap.
        let gaps = verification
            .missing
            .iter()
            .filter(|m| !state.knowledge_gaps.iter().any(|g| g.contains(m.as_str())))
            .map(|m| format!("Missing after verification: {m}"))
            .collect();
        return Some(Command {
            record: vec![EventKind::StopConditionMet {
                condition,
                detail,
                gaps,
                usage: Usage::default(),
            }],
            then: Node::SynthesizeReport.into(),
        });
    }
    let mut reason = format!(
        "verification {iteration}: {}, completeness {:.2}",
        verification.status.as_str(),
        verification.completeness
    );
    if !verification.missing.is_empty() {
        reason.push_str(&format!("; missing: {}", verification.missing.join("; ")));
    }
    if !verification.weak_steps.is_empty() {
        let weak: Vec<&str> = verification.weak_steps.iter().map(StepId::as_str).collect();
        reason.push_str(&format!("; weak: {}", weak.join(", ")));
    }
    if !verification.contradictions.is_empty() {
        reason.push_str(&format!(
            "; contradictions: {}",
            verification.contradictions.join("; ")
        ));
    }
    Some(report_if_spent(state).unwrap_or_else(|| Command::go(Next::Replan(reason))))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    use crate::step_status::StepStatus;

    use super::super::tests::*;

    #[test]
    fn the_outcome_can_overrule_the_assessor() {
        let s = two_steps();
        let a = StepId::from("a");
        let go_on = || (Verdict::Continue, "fine".to_owned());
        // A fatal failure stops for review whatever the assessor said.
        let fatal = assess(&s, &a, &failed(FailureClass::Fatal), go_on(), true);
        assert_eq!(fatal.verdict, Verdict::NeedsReview);
        // A failure that blocks b is a replan …
        let blocks = assess(&s, &a, &failed(FailureClass::Persistent), go_on(), true);
        assert_eq!(blocks.verdict, Verdict::Replan);
        assert!(blocks.reason.contains("blocks b"), "{}", blocks.reason);
        assert_eq!(blocks.skip_blocked, None);
        // … or, without per-step replanning, carry on skipping b.
        let solve = assess(&s, &a, &failed(FailureClass::Persistent), go_on(), false);
        assert_eq!(solve.verdict, Verdict::Continue);
        assert_eq!(solve.skip_blocked.as_deref(), Some("boom"));
        // A failed leaf blocks nothing: the assessor's word stands.
        let leaf = assess(
            &s,
            &StepId::from("b"),
            &failed(FailureClass::Persistent),
            go_on(),
            true,
        );
        assert_eq!(leaf.verdict, Verdict::Continue);
    }

    #[test]
    fn bounds_end_the_replanning_loop() {
        let mut s = two_steps();
        assert_eq!(
            replan_guard(&s, "gap".into()),
            ReplanGuard::Replan("gap".into())
        );
        s.replan_count = 2;
        let ReplanGuard::Stop {
            condition, review, ..
        } = replan_guard(&s, "gap".into())
        else {
            panic!("expected a stop");
        };
        assert_eq!(condition, StopCondition::MaxReplans);
        assert!(review.contains("please simplify"), "{review}");
        s.replan_count = 0;
        s.max_steps = 1;
        s.plan.steps[0].status = StepStatus::Succeeded;
        assert!(matches!(
            replan_guard(&s, "gap".into()),
            ReplanGuard::Stop {
                condition: StopCondition::MaxSteps,
                ..
            }
        ));
    }

    #[test]
    fn a_finished_iteration_goes_to_its_verifier_or_its_report() {
        let mut s = two_steps();
        let d = |state: &RunState, held, awaiting, verifies| {
            after_dispatch(Dispatched {
                busy: false,
                held,
                awaiting,
                verifies,
                state,
            })
        };
        // Steps left that nothing can start: a bug, named.
        assert!(
            d(&s, None, false, false)
                .unwrap_err()
                .contains("a (pending)")
        );
        for step in &mut s.plan.steps {
            step.status = StepStatus::Succeeded;
        }
        assert_eq!(d(&s, None, false, false), Ok(Node::SynthesizeReport));
        assert_eq!(d(&s, None, false, true), Ok(Node::Verify));
        assert_eq!(d(&s, None, true, false), Ok(Node::AwaitApproval));
        assert_eq!(
            d(&s, Some(Verdict::NeedsReview), true, false),
            Ok(Node::MarkNeedsReview)
        );
        assert!(d(&s, Some(Verdict::Replan), false, false).is_err());
    }

    #[test]
    fn a_verdict_stops_the_verified_loop_or_tells_the_replanner_what_is_missing() {
        let mut s = two_steps();
        let policy = VerifyPolicy::default();
        assert_eq!(after_verification(&s, policy), None);
        let verdict = |completeness| crate::decision::Verification {
            status: crate::decision::Completeness::Partial,
            completeness,
            confidence: 0.2,
            missing: vec!["costs".into()],
            contradictions: Vec::new(),
            weak_steps: vec!["b".into()],
        };
        s.verification_history.push(verdict(0.3));
        let Some(command) = after_verification(&s, policy) else {
            panic!("a verdict to decide from");
        };
        assert!(command.record.is_empty());
        assert!(
            matches!(&command.then, Next::Replan(r) if r.contains("missing: costs") && r.contains("weak: b")),
            "{command:?}"
        );
        // Complete enough: stop, naming what is still missing as a gap.
        s.verification_history.push(verdict(0.9));
        let Some(command) = after_verification(&s, policy) else {
            panic!("a verdict to decide from");
        };
        assert_eq!(command.then, Next::To(Node::SynthesizeReport));
        assert!(
            matches!(
                command.record.as_slice(),
                [EventKind::StopConditionMet { gaps, .. }] if gaps == &["Missing after verification: costs".to_owned()]
            ),
            "{command:?}"
        );
    }
}
