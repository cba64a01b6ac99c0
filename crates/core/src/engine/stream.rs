//! create_plan with a streaming planner (LLMCompiler; DESIGN.md's
//! scheduler): each step the planner writes is checked as it arrives
//! ([`PrefixCheck`]), recorded (`step_added`, `streamed`) and — if it is
//! read-only, its dependencies have succeeded and there is room within the
//! concurrency and the token budget — dispatched before the planner writes
//! the next one. Steps that finish meanwhile are recorded at once, so their
//! dependants can start too, and are assessed once the plan is validated;
//! failures wait for execute_step's retries.
//!
//! When the stream ends the whole draft is recorded (`plan_created`) and
//! validated as any draft is, composed with the steps that ran: from there
//! on the run is a plan-execute run like any other (review, replay, `show`,
//! the report). A refused step never ran; the validator names it again in
//! `plan_invalid`, and repair fixes it as it would an invalid plan.
//!
//! A run stopped mid-stream (its plan is still version 0 but has steps)
//! resumes by reconciling the steps that were in flight and asking the
//! planner again for the whole plan (a stream cut short was never recorded
//! as an answer): steps that succeeded keep their results and never run again.

use serde_json::Value;

use super::dispatch::{Completion, CompletionKind};
use super::{Halt, NodeResult, Run};
use crate::event::EventKind;
use crate::graph::Node;
use crate::plan::DraftPlan;
use crate::plan::stream::{Arrival, PrefixCheck};
use crate::roles::{PlanRequest, Reply, RoleError, RoleName, StepSender};

/// What woke the streaming loop.
enum Woken {
    /// The planner wrote a step.
    Step(Value),
    /// The planner finished (or failed).
    Planned(Result<Reply<DraftPlan>, RoleError>),
    /// A dispatched step finished.
    Finished(Completion),
}

impl Run<'_> {
    /// Whether create_plan streams: asked for, the first plan of the run
    /// (a replan or an escalated ReAct run plans whole), a planner that
    /// streams, and a reviewer that approves unread — a plan a person
    /// reviews must be whole before any of it runs.
    pub(super) fn streams_plan(&self) -> bool {
        let roles = &self.engine.roles;
        self.engine.config.stream_plans
            && self.state.plan.steps.is_empty()
            && roles.planner.streams()
            && roles.reviewer.approves_unread()
    }

    pub(super) async fn stream_plan(&mut self) -> NodeResult {
        let engine = self.engine;
        let goal = self.goal()?;
        let request = PlanRequest {
            goal: &goal,
            tools: &engine.specs,
            max_steps: self.state.max_steps,
        };
        let (sender, mut steps) = tokio::sync::mpsc::unbounded_channel();
        let planning = engine
            .roles
            .planner
            .plan_streaming(request, StepSender::new(sender));
        tokio::pin!(planning);
        let mut check = PrefixCheck::new();
        // Failed attempts, handed to execute_step once the plan is validated.
        let mut failed: Vec<Completion> = Vec::new();
        let outcome = loop {
            // Nothing unsent while the select below may drop a branch: a
            // flush cut short would leave its events half handed over.
            self.flush().await?;
            let in_flight = !self.in_flight.is_empty() || !self.immediate.is_empty();
            let woken = tokio::select! {
                // Steps first: a step written is dispatched before anything else.
                biased;
                Some(step) = steps.recv() => Woken::Step(step),
                completion = self.next_completion(), if in_flight => Woken::Finished(completion?),
                outcome = &mut planning => Woken::Planned(outcome),
            };
            match woken {
                Woken::Step(step) => self.arrived(&mut check, step).await?,
                Woken::Finished(completion) => {
                    if let Some(failure) = self.finished_while_streaming(completion).await? {
                        failed.push(failure);
                    }
                }
                Woken::Planned(outcome) => break outcome,
            }
        };
        // Steps sent just before the planner returned.
        while let Ok(step) = steps.try_recv() {
            self.arrived(&mut check, step).await?;
        }
        self.immediate.extend(failed);
        let (draft, usage) = self.draft(RoleName::Planner, outcome).await?;
        self.record(EventKind::PlanCreated { draft, usage }).await?;
        Ok(Node::ValidatePlan.into())
    }

    /// One step written by the planner: checked on top of those accepted,
    /// recorded if valid (durable before it is dispatched), then every
    /// step that can start does.
    async fn arrived(&mut self, check: &mut PrefixCheck, step: Value) -> Result<(), Halt> {
        match check.check(step, self.limits()) {
            Arrival::Accepted(step) if self.state.plan.step(&step.id).is_none() => {
                self.record(EventKind::StepAdded {
                    step,
                    usage: crate::usage::Usage::default(),
                    streamed: true,
                })
                .await?;
                self.dispatch_streamed().await
            }
            // A refused step, and the steps that need it, do not run; the
            // whole draft's validation names it once the stream ends.
            Arrival::Accepted(_) | Arrival::Repeated | Arrival::Refused(_) => Ok(()),
        }
    }

    /// A step finished while the plan streams: a success is recorded now
    /// (its dependants may start) and assessed once the plan is validated;
    /// anything else is handed back for execute_step, which retries.
    async fn finished_while_streaming(
        &mut self,
        completion: Completion,
    ) -> Result<Option<Completion>, Halt> {
        let Completion {
            step,
            attempt,
            kind:
                CompletionKind::Attempt {
                    result: Ok(reply),
                    duration_ms,
                },
        } = completion
        else {
            return Ok(Some(completion));
        };
        let outcome = self.succeeded(&step, attempt, reply, duration_ms).await?;
        self.recovered.push_back((step, outcome));
        self.dispatch_streamed().await?;
        Ok(None)
    }

    /// Starts every streamed step that is ready, read-only (a side effect
    /// waits for the approval gate, after the plan's review) and within the
    /// concurrency limit and the token budget.
    async fn dispatch_streamed(&mut self) -> Result<(), Halt> {
        if self.state.cursor.held().is_some() || self.budget_spent().await? {
            return Ok(());
        }
        for id in self.state.index.ready(&self.state.plan) {
            if self.in_flight.len() + self.immediate.len() >= self.concurrency() {
                break;
            }
            let side_effect = self
                .state
                .plan
                .step(&id)
                .and_then(|s| self.engine.tools.get(&s.tool))
                .is_none_or(|tool| tool.spec().side_effect);
            if side_effect {
                continue;
            }
            self.record(EventKind::StepStarted {
                step: id.clone(),
                attempt: 1,
            })
            .await?;
            // Never alone: the planner's stream is read beside it.
            self.start_attempt(&id, 1, false).await?;
        }
        Ok(())
    }
}
