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

use super::effect::{Completion, CompletionKind};
use super::{EngineError, Halt, NodeResult, Run};
use crate::event::EventKind;
use crate::graph::Node;
use crate::ids::StepId;
use crate::plan::DraftPlan;
use crate::plan::stream::{Arrival, PrefixCheck};
use crate::roles::{Reply, RoleError, RoleName};

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

    /// One step written by the planner: checked on top of those accepted,
    /// noted if valid (committed before it is dispatched), then every step
    /// that can start is returned, its start noted.
    pub(super) fn arrived(
        &mut self,
        check: &mut PrefixCheck,
        step: Value,
    ) -> Result<Vec<StepId>, Halt> {
        match check.check(step, self.limits()) {
            Arrival::Accepted(step) if self.state.plan.step(&step.id).is_none() => {
                self.note(EventKind::StepAdded {
                    step,
                    usage: crate::usage::Usage::default(),
                    streamed: true,
                })?;
                Ok(self.dispatch_streamed()?)
            }
            // A refused step, and the steps that need it, do not run; the
            // whole draft's validation names it once the stream ends.
            Arrival::Accepted(_) | Arrival::Repeated | Arrival::Refused(_) => Ok(Vec::new()),
        }
    }

    /// A step finished while the plan streams: a success is noted now (its
    /// dependants may start: returned, their starts noted) and assessed once
    /// the plan is validated; anything else is handed back for
    /// execute_step, which retries.
    pub(super) fn finished_while_streaming(
        &mut self,
        completion: Completion,
    ) -> Result<(Vec<StepId>, Option<Completion>), Halt> {
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
            return Ok((Vec::new(), Some(completion)));
        };
        let outcome = self.succeeded(&step, attempt, reply, duration_ms)?;
        self.recovered.push_back((step, outcome));
        Ok((self.dispatch_streamed()?, None))
    }

    /// The streamed steps that may start now, their starts noted: ready,
    /// read-only (a side effect waits for the approval gate, after the
    /// plan's review) and within the concurrency limit and the token budget.
    fn dispatch_streamed(&mut self) -> Result<Vec<StepId>, EngineError> {
        if self.state.cursor.held().is_some() || self.budget_spent()? {
            return Ok(Vec::new());
        }
        let mut starts = Vec::new();
        for id in self.state.index.ready(&self.state.plan) {
            if self.in_flight.len() + self.immediate.len() + starts.len() >= self.concurrency() {
                break;
            }
            if !self.state.plan.step(&id).is_some_and(|s| {
                self.engine
                    .tools
                    .get(&s.tool)
                    .is_some_and(|tool| !tool.spec().side_effect)
            }) {
                continue;
            }
            self.note(EventKind::StepStarted {
                step: id.clone(),
                attempt: 1,
            })?;
            starts.push(id);
        }
        Ok(starts)
    }

    /// The streamed plan's whole draft, noted once the stream ended, with
    /// the failed attempts handed to execute_step.
    pub(super) fn streamed(
        &mut self,
        outcome: Result<Reply<DraftPlan>, RoleError>,
        failed: Vec<Completion>,
    ) -> NodeResult {
        self.immediate.extend(failed);
        let (draft, usage) = self.draft(RoleName::Planner, outcome)?;
        self.note(EventKind::PlanCreated { draft, usage })?;
        Ok(Node::ValidatePlan.into())
    }
}
