//! The engine's decisions, as pure functions of the folded state and what
//! just happened: no role is called, nothing is recorded, no task is
//! spawned. The node methods gather an outcome (a role's answer, a step's
//! result, the validator's diagnostics), ask here what it means, and then
//! perform the answer — record its events, go to its node. So every branch
//! of the planning graph can be tested with a state and an outcome alone.

use crate::decision::{Assessment, Verdict};
use crate::plan::Step;
use crate::plan::criteria::{Check, Criterion, all_typed};

use super::AssessMode;
use crate::event::StopCondition;
use crate::failure::StepFailure;
use crate::graph::Node;
use crate::ids::StepId;
use crate::plan::validate::Diagnostic;
use crate::retry::{FailureClass, RetryPolicy};
use crate::roles::StepOutcome;
use crate::scheduler::blocked_dependants;
use crate::state::RunState;

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
pub(crate) fn by_rules(step: &Step, outcome: &StepOutcome, mode: AssessMode) -> Option<Assessment> {
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

/// The decision to hold until nothing is in flight: the stronger of the one
/// held and a new verdict (carrying on holds nothing).
pub(crate) fn stronger(
    held: Option<(Verdict, String)>,
    verdict: Verdict,
    reason: String,
) -> Option<(Verdict, String)> {
    if verdict != Verdict::Continue && held.as_ref().is_none_or(|(h, _)| verdict > *h) {
        Some((verdict, reason))
    } else {
        held
    }
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

/// Where a plan that failed validation goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Invalid {
    /// To the repairer.
    Repair,
    /// To a person, for this reason.
    Review(String),
    /// To a person, once `max_repairs` is recorded as reached.
    RepairsSpent {
        /// What was reached (recorded with the stop).
        detail: String,
        /// What the person is told.
        review: String,
    },
}

/// A person's own plan (the first version, without `repair_first_draft`)
/// is never altered without their say; an unsafe plan is never repaired;
/// repairs stop at `max_repairs`.
pub(crate) fn invalid_plan(
    state: &RunState,
    diagnostics: &[Diagnostic],
    repair_first_draft: bool,
) -> Invalid {
    let count = diagnostics.len();
    if state.plan.version == 0 && !repair_first_draft {
        let listed: Vec<String> = diagnostics.iter().map(ToString::to_string).collect();
        return Invalid::Review(format!(
            "the given plan has {count} problem(s) and is not repaired unless repair is asked for: {}",
            listed.join("; ")
        ));
    }
    let unsafe_ones: Vec<String> = diagnostics
        .iter()
        .filter(|d| !d.repairable)
        .map(ToString::to_string)
        .collect();
    if !unsafe_ones.is_empty() {
        return Invalid::Review(format!("the plan is unsafe: {}", unsafe_ones.join("; ")));
    }
    if state.repair_count >= state.max_repairs {
        let detail = format!(
            "the plan still has {count} problem(s) after {} repair attempt(s)",
            state.repair_count
        );
        let review = format!("{}: {detail}", StopCondition::MaxRepairs);
        return Invalid::RepairsSpent { detail, review };
    }
    Invalid::Repair
}

/// What follows a failed attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AfterFailure {
    /// Try again after this backoff.
    Retry {
        /// Milliseconds to wait.
        delay_ms: u64,
    },
    /// Give up on the step, for this reason.
    Terminate(String),
}

/// Transient failures are retried with backoff while the policy allows
/// (`jitter` is a draw in 0..1, so the caller owns the randomness); any
/// other failure ends the step.
pub(crate) fn after_failure(
    policy: &RetryPolicy,
    attempt: u32,
    failure: &StepFailure,
    jitter: f64,
) -> AfterFailure {
    if failure.class == FailureClass::Transient && policy.allows_retry_after(attempt) {
        return AfterFailure::Retry {
            delay_ms: policy.delay_ms(attempt, failure.retry_after_ms, jitter),
        };
    }
    AfterFailure::Terminate(match failure.class {
        FailureClass::Transient => format!(
            "still failing after {attempt} attempt(s): {}",
            failure.message
        ),
        FailureClass::Persistent => {
            format!("persistent failure, not retried: {}", failure.message)
        }
        FailureClass::Fatal => format!("fatal failure: {}", failure.message),
    })
}

/// What dispatch found once it started what it could.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Dispatched<'a> {
    /// Steps are in flight (or outcomes wait to be assessed).
    pub(crate) busy: bool,
    /// A decision held until nothing is in flight.
    pub(crate) held: Option<Verdict>,
    /// Side-effect steps wait for a person's approval.
    pub(crate) awaiting: bool,
    /// The run verifies each iteration (`verified`).
    pub(crate) verifies: bool,
    /// The run's state.
    pub(crate) state: &'a RunState,
}

/// Where the graph goes after select_next_step. Every step final and
/// nothing held: the iteration is done (verify, else report). A step that
/// is neither final nor runnable, or a held replan with nothing in flight,
/// is a bug, named.
pub(crate) fn after_dispatch(d: Dispatched<'_>) -> Result<Node, String> {
    if d.busy {
        return Ok(Node::ExecuteStep);
    }
    match d.held {
        // A refused approval, with nothing left in flight.
        Some(Verdict::NeedsReview) => return Ok(Node::MarkNeedsReview),
        _ if d.awaiting => return Ok(Node::AwaitApproval),
        // The token budget stopped dispatch.
        Some(Verdict::Synthesize) => return Ok(Node::SynthesizeReport),
        Some(other) => {
            return Err(format!(
                "a held decision ({other:?}) with nothing in flight"
            ));
        }
        None => {}
    }
    let stuck: Vec<String> = d
        .state
        .plan
        .steps
        .iter()
        .filter(|s| !s.status.is_final())
        .map(|s| format!("{} ({})", s.id, s.status))
        .collect();
    if !stuck.is_empty() {
        return Err(format!(
            "nothing runnable but steps remain: {}",
            stuck.join(", ")
        ));
    }
    Ok(if d.verifies {
        Node::Verify
    } else {
        Node::SynthesizeReport
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::failure::FailureKind;
    use crate::plan::{Plan, Step};
    use crate::step_status::StepStatus;

    fn state(steps: Vec<Step>) -> RunState {
        RunState {
            plan: Plan { version: 1, steps },
            max_replans: 2,
            max_steps: 10,
            max_repairs: 1,
            ..RunState::default()
        }
    }

    fn failed(class: FailureClass) -> StepOutcome {
        StepOutcome::Failed(StepFailure::new(class, FailureKind::Tool, "boom"))
    }

    fn two_steps() -> RunState {
        state(vec![
            Step::new("a", "find", "search"),
            Step::new("b", "use it", "search").after(["a"]),
        ])
    }

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
    fn the_strongest_decision_is_held() {
        let held = stronger(None, Verdict::Continue, "ok".into());
        assert_eq!(held, None);
        let held = stronger(held, Verdict::Replan, "gap".into());
        let held = stronger(held, Verdict::Synthesize, "enough".into());
        assert_eq!(held, Some((Verdict::Replan, "gap".into())));
        let held = stronger(held, Verdict::NeedsReview, "stop".into());
        assert_eq!(held, Some((Verdict::NeedsReview, "stop".into())));
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
    fn a_persons_plan_is_never_repaired_unasked() {
        let diag = |repairable| Diagnostic {
            code: crate::plan::validate::DiagnosticCode::UnknownTool,
            step: None,
            index: Some(0),
            path: "/steps/0/tool".into(),
            message: "no tool".into(),
            repairable,
        };
        let mut s = RunState {
            max_repairs: 1,
            ..RunState::default()
        };
        assert!(matches!(
            invalid_plan(&s, &[diag(true)], false),
            Invalid::Review(r) if r.contains("not repaired unless repair is asked for")
        ));
        assert_eq!(invalid_plan(&s, &[diag(true)], true), Invalid::Repair);
        assert!(matches!(
            invalid_plan(&s, &[diag(false)], true),
            Invalid::Review(r) if r.contains("unsafe")
        ));
        s.repair_count = 1;
        assert!(matches!(
            invalid_plan(&s, &[diag(true)], true),
            Invalid::RepairsSpent { .. }
        ));
    }

    #[test]
    fn only_transient_failures_are_retried_within_the_policy() {
        let policy = RetryPolicy::default();
        let failure = |class| StepFailure::new(class, FailureKind::Tool, "boom");
        assert!(matches!(
            after_failure(&policy, 1, &failure(FailureClass::Transient), 0.5),
            AfterFailure::Retry { .. }
        ));
        let last = policy.max_attempts;
        assert!(matches!(
            after_failure(&policy, last, &failure(FailureClass::Transient), 0.5),
            AfterFailure::Terminate(r) if r.contains("still failing")
        ));
        assert!(matches!(
            after_failure(&policy, 1, &failure(FailureClass::Persistent), 0.5),
            AfterFailure::Terminate(r) if r.contains("not retried")
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
}
