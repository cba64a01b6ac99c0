//! Decisions of the act node (`react`, `react-isolated`): what the actor's
//! next action means for the run, given the calls made and the cap.

use serde_json::Value;

use super::{Command, Next};
use crate::event::{EventKind, StopCondition};
use crate::graph::Node;
use crate::ids::StepId;
use crate::plan::Step;
use crate::roles::Action;
use crate::state::RunState;
use crate::usage::Usage;

/// What the actor's action leads to.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum AfterAction {
    /// Record these events and go on (an answer, or the cap reached).
    Go(Command),
    /// The router escalates to plan-execute, saying why.
    Escalate(String, Usage),
    /// Add this step (a call), then gate and dispatch it.
    Call(Box<Step>, Usage),
}

/// Tool calls a ReAct run may make: its strategy's cap within the step
/// bound. A run that may escalate keeps half the step bound for the plan it
/// escalates to, so that escalation has room whatever `max_steps` is (the
/// calls made stay in the plan as steps that ran).
pub(crate) fn react_cap(max_tool_calls: usize, max_steps: usize, escalate: bool) -> usize {
    let bound = if escalate { max_steps / 2 } else { max_steps };
    max_tool_calls.min(bound)
}

/// What `action` leads to, with `cap` calls allowed (the strategy's cap,
/// bounded by `max_steps`) and `escalate` whether the router may escalate.
/// Escalation needs room to plan: at the run's own step bound the run stops
/// at the cap as plain react does.
pub(crate) fn after_action(
    state: &RunState,
    action: Action,
    usage: Usage,
    cap: usize,
    escalate: bool,
) -> AfterAction {
    let made = state.plan.steps.len();
    match action {
        Action::Answer { report, gaps } => {
            let record = if gaps.is_empty() {
                Vec::new()
            } else {
                vec![EventKind::GapsNoted { gaps }]
            };
            // synthesize_report writes the answer as the report.
            AfterAction::Go(Command {
                record,
                then: Next::Answer(Box::new((report, usage))),
            })
        }
        Action::Call { tool, args, .. } if made >= cap && escalate && made < state.max_steps => {
            AfterAction::Escalate(
                format!(
                    "{made} tool call(s) made, the cap is {cap}, and the agent still asked for {tool} {}: the router escalates to plan-execute",
                    Value::Object(args)
                ),
                usage,
            )
        }
        // Told it had no calls left, it asked for one more: the synthesizer
        // writes the report from the results so far.
        Action::Call { tool, args, .. } if made >= cap => AfterAction::Go(Command {
            record: vec![EventKind::StopConditionMet {
                condition: StopCondition::ToolCallCap,
                detail: format!(
                    "{made} tool call(s) made, the cap is {cap}; the agent still asked for {tool} {}",
                    Value::Object(args)
                ),
                gaps: vec![format!(
                    "The tool-call cap ({cap}) was reached before the agent answered; the report uses the results so far"
                )],
                usage,
            }],
            then: Node::SynthesizeReport.into(),
        }),
        Action::Call {
            thought,
            tool,
            args,
        } => {
            let id = call_id(state, made + 1);
            let mut step = Step::new(id.as_str(), thought, tool);
            step.args = args;
            AfterAction::Call(Box::new(step), usage)
        }
    }
}

/// `call-N`, or the first free id after it.
fn call_id(state: &RunState, mut n: usize) -> StepId {
    loop {
        let id = StepId::new(format!("call-{n}"));
        if state.plan.step(&id).is_none() {
            return id;
        }
        n += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::decide::tests::two_steps;

    fn call(tool: &str) -> Action {
        Action::Call {
            thought: "look".into(),
            tool: tool.into(),
            args: serde_json::Map::new(),
        }
    }

    #[test]
    fn a_react_run_that_may_escalate_keeps_half_the_step_bound_for_its_plan() {
        assert_eq!(react_cap(8, 20, true), 8);
        assert_eq!(react_cap(8, 8, true), 4);
        assert_eq!(react_cap(8, 8, false), 8);
        assert_eq!(react_cap(8, 3, true), 1);
        assert_eq!(react_cap(2, 20, false), 2);
    }

    #[test]
    fn a_call_past_the_cap_stops_or_escalates_and_one_within_it_is_a_new_step() {
        let state = two_steps();
        let usage = Usage::default();
        let AfterAction::Call(step, _) = after_action(&state, call("search"), usage, 5, false)
        else {
            panic!("not a call");
        };
        assert_eq!(step.id, StepId::new("call-3"));
        let AfterAction::Go(command) = after_action(&state, call("search"), usage, 2, false) else {
            panic!("not a stop");
        };
        assert_eq!(command.then, Next::To(Node::SynthesizeReport));
        assert!(matches!(
            command.record.as_slice(),
            [EventKind::StopConditionMet {
                condition: StopCondition::ToolCallCap,
                ..
            }]
        ));
        assert!(matches!(
            after_action(&state, call("search"), usage, 2, true),
            AfterAction::Escalate(..)
        ));
        // No room left to plan: the cap stops the run even with escalation on.
        let full = RunState {
            max_steps: 2,
            ..two_steps()
        };
        assert!(matches!(
            after_action(&full, call("search"), usage, 2, true),
            AfterAction::Go(_)
        ));
    }
}
