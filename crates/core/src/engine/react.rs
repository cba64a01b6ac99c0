//! The act node (`react`, `react-isolated`): one tool call at a time, each
//! run as a step of the plan through the same approval gate, dispatch,
//! retries and checks as planned steps, until the actor answers, the
//! tool-call cap is reached or the token budget is spent.

use crate::decision::Driver;
use crate::event::EventKind;
use crate::graph::Node;
use crate::ids::StepId;
use crate::roles::{Action, Reply, RoleError, RoleName};
use crate::strategy::react::{MAX_SUMMARY_CHARS, bounded};

use super::effect::{AfterAsk, Effect, RoleCall, Then};
use super::strategy::stop_for_review;
use super::{EngineError, Halt, NodeResult, Run, decide};

impl Run<'_> {
    /// act: summaries first (react-isolated: every result the actor has
    /// not seen summarized), then the budget, then the actor's next action.
    pub(super) fn act(&mut self) -> NodeResult {
        let Driver::React {
            isolated,
            max_tool_calls,
            escalate,
        } = self.driver()
        else {
            return Err(EngineError::Invariant("act outside a ReAct strategy".to_owned()).into());
        };
        // The actor sees every call's outcome itself, not an assessment.
        self.last = None;
        if isolated {
            // A result without a summary yet (normally the last one; more
            // after a crash between a result and its summary): each comes
            // back here once summarized.
            let unsummarized = self.state.plan.steps.iter().find(|s| {
                !self.state.step_summaries.contains_key(&s.id)
                    && self.state.step_results.contains_key(&s.id)
            });
            if let Some(step) = unsummarized {
                let step = step.id.clone();
                return Ok(Effect::Call(RoleCall::Summarize { step }));
            }
        }
        if self.budget_spent()? {
            return Ok(Node::SynthesizeReport.into());
        }
        let cap = decide::react_cap(max_tool_calls, self.state.max_steps, escalate);
        Ok(Effect::Call(RoleCall::Act { cap, escalate }))
    }

    /// Whether the ReAct actor sees summaries instead of raw results.
    pub(super) fn isolated(&self) -> bool {
        matches!(self.driver(), Driver::React { isolated: true, .. })
    }

    /// The actor's action: an answer, the cap, an escalation, or a call
    /// added as a step and started once its approval allows.
    pub(super) fn acted(
        &mut self,
        outcome: Result<Reply<Action>, RoleError>,
        cap: usize,
        escalate: bool,
    ) -> NodeResult {
        let reply = match self.answer(RoleName::Actor, outcome) {
            Ok(reply) => reply,
            Err(Halt::Role(e @ RoleError::Malformed { .. })) => return Ok(stop_for_review(&e)),
            Err(e) => return Err(e),
        };
        match decide::after_action(&self.state, reply.value, reply.usage, cap, escalate) {
            decide::AfterAction::Go(command) => self.perform(command),
            decide::AfterAction::Escalate(detail, usage) => self.escalate(detail, usage),
            decide::AfterAction::Call(step, usage) => {
                let id = step.id.clone();
                self.note(EventKind::StepAdded {
                    step,
                    usage,
                    streamed: false,
                })?;
                // A side-effect call needs an approval of its exact arguments,
                // as a planned step does.
                if self.needs_approval(&id).is_some() {
                    return Ok(Effect::Ask(id, AfterAsk::Act));
                }
                self.start_call(id)
            }
        }
    }

    /// Starts the actor's call: its first attempt, then execute_step.
    pub(super) fn start_call(&mut self, id: StepId) -> NodeResult {
        self.note(EventKind::StepStarted {
            step: id.clone(),
            attempt: 1,
        })?;
        Ok(self.start_wave(vec![(id, 1)], Then::Execute))
    }

    /// Notes the summary the actor will see instead of the raw result,
    /// then acts on.
    pub(super) fn summarized(
        &mut self,
        step: StepId,
        outcome: Result<Reply<String>, RoleError>,
    ) -> NodeResult {
        let reply = self.answer(RoleName::Summarizer, outcome)?;
        self.note(EventKind::StepSummarized {
            step,
            summary: bounded(&reply.value, MAX_SUMMARY_CHARS),
            usage: reply.usage,
        })?;
        self.act()
    }
}
