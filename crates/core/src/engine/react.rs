//! The act node (`react`, `react-isolated`): one tool call at a time, each
//! run as a step of the plan through the same approval gate, dispatch,
//! retries and checks as planned steps, until the actor answers, the
//! tool-call cap is reached or the token budget is spent.

use serde_json::Value;

use crate::decision::Driver;
use crate::event::{EventKind, StopCondition};
use crate::graph::Node;
use crate::ids::StepId;
use crate::plan::Step;
use crate::retry::FailureClass;
use crate::roles::{ActRequest, Action};
use crate::roles::{RoleError, RoleName};
use crate::strategy::react::{MAX_SUMMARY_CHARS, bounded, history};

use super::approval::Gate;
use super::strategy::stop_for_review;
use super::{EngineError, Halt, Next, NodeResult, Run};

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
        match reply.value {
            Action::Answer { report, gaps } => {
                if !gaps.is_empty() {
                    self.record(EventKind::GapsNoted { gaps }).await?;
                }
                // synthesize_report writes the answer as the report.
                Ok(Next::Answer(Box::new((report, reply.usage))))
            }
            // Escalation needs room to plan: at the run's own step bound
            // (`max_steps`) the run stops at the cap as plain react does.
            Action::Call { tool, args, .. }
                if made >= cap && escalate && made < self.state.max_steps =>
            {
                let detail = format!(
                    "{made} tool call(s) made, the cap is {cap}, and the agent still asked for {tool} {}: the router escalates to plan-execute",
                    Value::Object(args)
                );
                self.escalate(detail, reply.usage).await
            }
            Action::Call { tool, args, .. } if made >= cap => {
                // Told it had no calls left, it asked for one more: the
                // synthesizer writes the report from the results so far.
                self.record(EventKind::StopConditionMet {
                    condition: StopCondition::ToolCallCap,
                    detail: format!(
                        "{made} tool call(s) made, the cap is {cap}; the agent still asked for {tool} {}",
                        Value::Object(args)
                    ),
                    gaps: vec![format!(
                        "The tool-call cap ({cap}) was reached before the agent answered; the report uses the results so far"
                    )],
                    usage: reply.usage,
                })
                .await?;
                Ok(Node::SynthesizeReport.into())
            }
            Action::Call {
                thought,
                tool,
                args,
            } => {
                let id = self.fresh_call_id(made + 1);
                let mut step = Step::new(id.as_str(), thought, tool);
                step.args = args;
                self.record(EventKind::StepAdded {
                    step: Box::new(step),
                    usage: reply.usage,
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

    /// `call-N`, or the first free id after it.
    fn fresh_call_id(&self, mut n: usize) -> StepId {
        loop {
            let id = StepId::new(format!("call-{n}"));
            if self.state.plan.step(&id).is_none() {
                return id;
            }
            n += 1;
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
