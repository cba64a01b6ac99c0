//! Decisions on the way to an approved plan: a prepared goal, a validated
//! or invalid draft, a person's review.

use crate::decision::ReviewDecision;
use crate::goal::{Goal, InputError};
use crate::plan::Plan;
use crate::plan::validate::ValidatedPlan;

use super::*;
use crate::event::{EventKind, StopCondition};
use crate::graph::Node;
use crate::plan::validate::Diagnostic;
use crate::state::RunState;
use crate::usage::Usage;

/// prepare_input: a goal that can be read is recorded and the strategy
/// chosen next; one that cannot ends the run, saying why.
pub(crate) fn prepared(input: Result<Goal, InputError>) -> Command {
    match input {
        Ok(goal) => Command {
            record: vec![EventKind::InputPrepared {
                goal: Box::new(goal),
            }],
            then: Node::ChooseStrategy.into(),
        },
        Err(e) => Command {
            record: vec![EventKind::InputRejected {
                reason: e.to_string(),
            }],
            then: Node::End.into(),
        },
    }
}

/// validate_plan: a valid draft becomes the next plan version, to review;
/// an invalid one is recorded with its diagnostics (see [`invalid_plan`]).
pub(crate) fn validated(
    state: &RunState,
    checked: Result<ValidatedPlan, Vec<Diagnostic>>,
    repair_first_draft: bool,
) -> Command {
    match checked {
        Ok(validated) => Command {
            record: vec![EventKind::PlanValidated {
                plan: Plan {
                    version: state.plan.version + 1,
                    steps: validated.into_steps(),
                },
            }],
            then: Node::ReviewPlan.into(),
        },
        Err(diagnostics) => invalid_plan(state, diagnostics, repair_first_draft),
    }
}

/// review_plan: what the reviewer's decision on plan `version` records and
/// where it goes — dispatch, a person's approval, or review with the reason.
/// (A deferral records no usage: the reviewer's cost on it is not kept, as
/// before this was a function of its own.)
pub(crate) fn reviewed(version: u32, decision: ReviewDecision, usage: Usage) -> Command {
    match decision {
        ReviewDecision::Approved { by } => Command {
            record: vec![EventKind::PlanApproved { version, by, usage }],
            then: Node::SelectNextStep.into(),
        },
        ReviewDecision::Deferred => Command {
            record: vec![EventKind::PlanReviewRequested { version }],
            then: Node::AwaitApproval.into(),
        },
        ReviewDecision::Rejected { reason } => {
            let review = format!("plan version {version} was rejected: {reason}");
            Command {
                record: vec![EventKind::PlanRejected {
                    version,
                    reason,
                    usage,
                }],
                then: Review::because(review),
            }
        }
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

/// validate_plan on an invalid draft: record its diagnostics, then repair
/// it or stop for review (see [`invalid`]).
pub(crate) fn invalid_plan(
    state: &RunState,
    diagnostics: Vec<Diagnostic>,
    repair_first_draft: bool,
) -> Command {
    let next = invalid(state, &diagnostics, repair_first_draft);
    let invalid = EventKind::PlanInvalid { diagnostics };
    match next {
        Invalid::Repair => Command {
            record: vec![invalid],
            then: Node::RepairPlan.into(),
        },
        Invalid::Review(reason) => Command {
            record: vec![invalid],
            then: Review::because(reason),
        },
        Invalid::RepairsSpent { detail, review } => {
            let mut command = Command::stop(StopCondition::MaxRepairs, detail, review);
            command.record.insert(0, invalid);
            command
        }
    }
}

/// A person's own plan (the first version, without `repair_first_draft`)
/// is never altered without their say; an unsafe plan is never repaired;
/// repairs stop at `max_repairs`.
fn invalid(state: &RunState, diagnostics: &[Diagnostic], repair_first_draft: bool) -> Invalid {
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    use super::super::tests::*;

    #[test]
    fn a_review_records_its_decision_and_goes_where_it_says() {
        let approved = reviewed(
            2,
            ReviewDecision::Approved { by: "ana".into() },
            Usage::default(),
        );
        assert_eq!(approved.then, Next::To(Node::SelectNextStep));
        assert!(matches!(
            approved.record.as_slice(),
            [EventKind::PlanApproved { version: 2, by, .. }] if by == "ana"
        ));
        let deferred = reviewed(2, ReviewDecision::Deferred, Usage::default());
        assert_eq!(deferred.then, Next::To(Node::AwaitApproval));
        let rejected = reviewed(
            3,
            ReviewDecision::Rejected {
                reason: "too broad".into(),
            },
            Usage::default(),
        );
        assert!(matches!(
            rejected.record.as_slice(),
            [EventKind::PlanRejected { version: 3, .. }]
        ));
        match rejected.then {
            Next::Review(review) => {
                assert_eq!(review.reason, "plan version 3 was rejected: too broad");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_valid_draft_is_the_next_version_and_an_unreadable_goal_ends_the_run() {
        let mut tools = crate::tool::ToolRegistry::new();
        tools.register_dyn(std::sync::Arc::new(crate::testing::FnTool::echo(
            "search",
            std::time::Duration::ZERO,
        )));
        let catalog = tools.catalog().unwrap();
        let constraints = crate::goal::Constraints::default();
        let limits = crate::plan::validate::Limits {
            tools: &catalog,
            max_steps: None,
            constraints: &constraints,
        };
        let check = |tool: &str| {
            let draft = serde_json::json!({"steps": [
                {"id": "x", "description": "find", "tool": tool, "acceptance_criteria": ["non_empty"]}
            ]});
            crate::plan::validate::validate(&draft, limits)
        };
        let s = two_steps();
        let command = validated(&s, check("search"), true);
        assert_eq!(command.then, Next::To(Node::ReviewPlan));
        assert!(matches!(
            command.record.as_slice(),
            [EventKind::PlanValidated { plan }] if plan.version == 2 && plan.steps.len() == 1
        ));
        let command = validated(&s, check("nosuch"), true);
        assert_eq!(command.then, Next::To(Node::RepairPlan));
        assert!(
            matches!(command.record.as_slice(), [EventKind::PlanInvalid { diagnostics }] if !diagnostics.is_empty())
        );
        let ended = prepared(Goal::prepare("   ", constraints.clone()));
        assert_eq!(ended.then, Next::To(Node::End));
        assert!(matches!(
            ended.record.as_slice(),
            [EventKind::InputRejected { .. }]
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
            invalid(&s, &[diag(true)], false),
            Invalid::Review(r) if r.contains("not repaired unless repair is asked for")
        ));
        assert_eq!(invalid(&s, &[diag(true)], true), Invalid::Repair);
        assert!(matches!(
            invalid(&s, &[diag(false)], true),
            Invalid::Review(r) if r.contains("unsafe")
        ));
        s.repair_count = 1;
        assert!(matches!(
            invalid(&s, &[diag(true)], true),
            Invalid::RepairsSpent { .. }
        ));
    }

    #[test]
    fn an_invalid_plan_is_recorded_before_it_is_repaired_or_reviewed() {
        let diag = Diagnostic {
            code: crate::plan::validate::DiagnosticCode::UnknownTool,
            step: None,
            index: Some(0),
            path: "/steps/0/tool".into(),
            message: "no tool".into(),
            repairable: true,
        };
        let mut s = two_steps();
        let repair = invalid_plan(&s, vec![diag.clone()], true);
        assert!(matches!(
            repair.record.as_slice(),
            [EventKind::PlanInvalid { .. }]
        ));
        assert_eq!(repair.then, Next::To(Node::RepairPlan));
        s.repair_count = 1;
        let spent = invalid_plan(&s, vec![diag], true);
        assert!(
            matches!(
                spent.record.as_slice(),
                [
                    EventKind::PlanInvalid { .. },
                    EventKind::StopConditionMet {
                        condition: StopCondition::MaxRepairs,
                        ..
                    }
                ]
            ),
            "{spent:?}"
        );
        assert_eq!(spent.then.node(), Node::MarkNeedsReview);
    }
}
