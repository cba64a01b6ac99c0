//! The token budget: whether a run has spent it, and the stop to record the
//! first time it has (naming every step that will not run as a gap).

use super::Command;
use crate::event::{EventKind, StopCondition};
use crate::graph::Node;
use crate::state::RunState;
use crate::step_status::StepStatus;
use crate::usage::Usage;

/// Where a run stands against its token budget.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Budget {
    /// No budget, or some of it left.
    Within,
    /// Spent, and the stop is on record.
    Spent,
    /// Spent just now: record this stop.
    Stop(EventKind),
}

/// Where `state` stands against its token budget.
pub(crate) fn budget(state: &RunState) -> Budget {
    let Some(budget) = state.constraints.token_budget else {
        return Budget::Within;
    };
    let spent = state.usage.input_tokens + state.usage.output_tokens;
    if spent < budget {
        return Budget::Within;
    }
    if state.stop_condition == Some(StopCondition::TokenBudget) {
        return Budget::Spent;
    }
    let gaps = state
        .plan
        .steps
        .iter()
        .filter(|s| s.status == StepStatus::Pending)
        .map(|s| {
            format!(
                "Not run (the token budget was spent): {} — {}",
                s.id, s.description
            )
        })
        .collect();
    Budget::Stop(EventKind::StopConditionMet {
        condition: StopCondition::TokenBudget,
        detail: format!("{spent} tokens spent, the budget is {budget}"),
        gaps,
        usage: Usage::default(),
    })
}

/// A replan once the token budget is spent would only spend more: the run
/// writes its report with what it has instead (the stop recorded the first
/// time). `None`: budget left, the replan may go ahead.
pub(crate) fn report_if_spent(state: &RunState) -> Option<Command> {
    match budget(state) {
        Budget::Within => None,
        Budget::Spent => Some(Command::go(Node::SynthesizeReport)),
        Budget::Stop(stop) => Some(Command {
            record: vec![stop],
            then: Node::SynthesizeReport.into(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::decide::tests::two_steps;

    #[test]
    fn a_spent_budget_is_stopped_once_naming_the_steps_left() {
        let mut state = two_steps();
        assert_eq!(budget(&state), Budget::Within);
        state.constraints.token_budget = Some(100);
        state.usage.input_tokens = 60;
        assert_eq!(budget(&state), Budget::Within);
        state.usage.output_tokens = 40;
        let Budget::Stop(EventKind::StopConditionMet { gaps, detail, .. }) = budget(&state) else {
            panic!("no stop");
        };
        assert_eq!(detail, "100 tokens spent, the budget is 100");
        assert_eq!(gaps.len(), state.plan.steps.len());
        state.stop_condition = Some(StopCondition::TokenBudget);
        assert_eq!(budget(&state), Budget::Spent);
    }

    #[test]
    fn no_replan_once_the_budget_is_spent_from_a_held_decision_or_a_verdict() {
        use crate::decision::{Verdict, VerifyPolicy};
        use crate::engine::decide::{Next, after_verification, on_held};
        let mut s = two_steps();
        s.constraints.token_budget = Some(10);
        s.usage.output_tokens = 10;
        let command = on_held(&s, Verdict::Replan, "gap");
        assert_eq!(command.then, Next::To(Node::SynthesizeReport));
        assert!(matches!(
            command.record.as_slice(),
            [EventKind::StopConditionMet {
                condition: StopCondition::TokenBudget,
                ..
            }]
        ));
        s.verification_history.push(crate::decision::Verification {
            status: crate::decision::Completeness::Partial,
            completeness: 0.3,
            confidence: 0.2,
            missing: vec!["costs".into()],
            contradictions: Vec::new(),
            weak_steps: Vec::new(),
        });
        s.stop_condition = Some(StopCondition::TokenBudget);
        let command = after_verification(&s, VerifyPolicy::default()).unwrap();
        assert_eq!(command, Command::go(Node::SynthesizeReport));
        // With budget left, the replan goes ahead.
        s.usage.output_tokens = 1;
        let command = on_held(&s, Verdict::Replan, "gap");
        assert_eq!(command.then, Next::Replan("gap".into()));
    }
}
