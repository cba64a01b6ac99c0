//! The act node (`react`, `react-isolated`): one tool call at a time, each
//! run as a step of the plan through the same approval gate, dispatch,
//! retries and checks as planned steps, until the actor answers, the
//! tool-call cap is reached or the token budget is spent.

use serde_json::Value;

use crate::decision::Driver;
use crate::event::EventKind;
use crate::graph::Node;
use crate::ids::StepId;
use crate::retry::FailureClass;
use crate::roles::ActRequest;
use crate::roles::{RoleError, RoleName};
use crate::strategy::react::{MAX_SUMMARY_CHARS, bounded, history};

use super::approval::Gate;
use super::strategy::stop_for_review;
use super::{EngineError, Halt, NodeResult, Run, decide};

impl Run<'_> {
    pub(super) async fn act(&mut self) -> NodeResult {
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
            // Every result without a summary yet (normally the last one; more
            // after a crash between a result and its summary).
            let unsummarized: Vec<(StepId, Value)> = self
                .state
                .plan
                .steps
                .iter()
                .filter(|s| !self.state.step_summaries.contains_key(&s.id))
                .filter_map(|s| {
                    let result = self.state.step_results.get(&s.id)?;
                    Some((s.id.clone(), result.output.clone()))
                })
                .collect();
            for (step, output) in unsummarized {
                self.summarize(&step, &output).await?;
            }
        }
        if self.budget_spent().await? {
            return Ok(Node::SynthesizeReport.into());
        }
        let made = self.state.plan.steps.len();
        let cap = max_tool_calls.min(self.state.max_steps);
        let Some(actor) = self.engine.roles.actor.clone() else {
            return Err(RoleError::failed(
                RoleName::Actor,
                FailureClass::Persistent,
                "the ReAct strategies need an actor role, and none is configured",
            )
            .into());
        };
        let turns = history(&self.state, isolated);
        let goal = self.goal()?;
        let request = ActRequest {
            goal: &goal,
            tools: &self.engine.specs,
            history: &turns,
            calls_left: cap.saturating_sub(made),
            state: &self.state,
        };
        let outcome = actor.act(request).await;
        let reply = match self.answer(RoleName::Actor, outcome).await {
            Ok(reply) => reply,
            Err(Halt::Role(e @ RoleError::Malformed { .. })) => return Ok(stop_for_review(&e)),
            Err(e) => return Err(e),
        };
        match decide::after_action(&self.state, reply.value, reply.usage, cap, escalate) {
            decide::AfterAction::Go(command) => self.perform(command).await,
            decide::AfterAction::Escalate(detail, usage) => self.escalate(detail, usage).await,
            decide::AfterAction::Call(step, usage) => {
                let id = step.id.clone();
                self.record(EventKind::StepAdded {
                    step,
                    usage,
                    streamed: false,
                })
                .await?;
                // A side-effect call needs an approval of its exact arguments,
                // as a planned step does. Refused, it is dispatched anyway and
                // fails for want of one: the actor sees why.
                if let Gate::Wait = self.approval_gate(&id).await? {
                    return Ok(Node::AwaitApproval.into());
                }
                self.record(EventKind::StepStarted {
                    step: id.clone(),
                    attempt: 1,
                })
                .await?;
                let alone = !self.busy();
                self.start_attempt(&id, 1, alone).await?;
                Ok(Node::ExecuteStep.into())
            }
        }
    }

    /// Records the summary the actor will see instead of the raw result.
    async fn summarize(&mut self, step: &StepId, output: &Value) -> Result<(), Halt> {
        let Some(summarizer) = self.engine.roles.summarizer.clone() else {
            return Err(RoleError::failed(
                RoleName::Summarizer,
                FailureClass::Persistent,
                "react-isolated needs a summarizer role, and none is configured",
            )
            .into());
        };
        let (thought, tool) = match self.state.plan.step(step) {
            Some(s) => (s.description.clone(), s.tool.clone()),
            None => {
                return Err(
                    EngineError::Invariant(format!("summary of unknown step {step}")).into(),
                );
            }
        };
        let goal = self.goal()?;
        let outcome = summarizer.summarize(&goal, &thought, &tool, output).await;
        let reply = self.answer(RoleName::Summarizer, outcome).await?;
        self.record(EventKind::StepSummarized {
            step: step.clone(),
            summary: bounded(&reply.value, MAX_SUMMARY_CHARS),
            usage: reply.usage,
        })
        .await?;
        Ok(())
    }
}
