//! The driver's side of a streamed plan (see `engine/stream.rs`): the loop
//! that reads the planner's steps, starts the ones that may run and takes
//! the ones that finish, until the planner's whole answer is in.

use serde_json::Value;

use crate::plan::DraftPlan;
use crate::plan::stream::PrefixCheck;
use crate::roles::{PlanRequest, Reply, RoleError, StepSender};

use super::super::effect::{Completion, Effect};
use super::super::{Halt, Run};

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
    /// create_plan with a streaming planner: each step written is checked,
    /// noted and, if it may, started before the planner writes the next.
    pub(super) async fn stream_plan(&mut self) -> Result<Effect, Halt> {
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
            let starts = match woken {
                Woken::Step(step) => self.arrived(&mut check, step)?,
                Woken::Finished(completion) => {
                    let (starts, failure) = self.finished_while_streaming(completion)?;
                    failed.extend(failure);
                    starts
                }
                Woken::Planned(outcome) => break outcome,
            };
            // Never alone: the planner's stream is read beside it.
            for id in starts {
                self.start_attempt(&id, 1, false).await?;
            }
        };
        // Steps sent just before the planner returned.
        while let Ok(step) = steps.try_recv() {
            for id in self.arrived(&mut check, step)? {
                self.start_attempt(&id, 1, false).await?;
            }
        }
        self.streamed(outcome, failed)
    }
}
