//! The token budget: whether a run has spent it, and the stop to record the
//! first time it has (naming every step that will not run as a gap).

use crate::event::{EventKind, StopCondition};
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
}
