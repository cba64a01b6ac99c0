//! Dispatch: select_next_step starts every ready step (bounded by the
//! concurrency limit) and execute_step takes the next one to finish,
//! retrying transient failures with backoff. The starting and the waiting
//! are the driver's (`engine/driver/tools.rs`); what they lead to is here.

use super::approval::args_hash;
use super::effect::{AfterAsk, Completion, CompletionKind, Effect, Then};
use crate::event::EventKind;
use crate::failure::{FailureClass, FailureKind, StepFailure};
use crate::graph::Node;
use crate::ids::StepId;
use crate::plan::Step;
use crate::plan::args::resolve_value_in;
use crate::roles::{DependencyOutput, Reply, StepContext, StepOutcome};
use crate::scheduler::check_precondition_in;
use crate::state::StepResult;
use crate::tool::ToolContext;
use serde_json::Value;
use std::sync::Arc;

use super::{EngineError, Halt, Review, Run, decide};

/// A step attempt ready to spawn.
pub(super) struct Prepared {
    pub(super) context: StepContext,
    pub(super) tool: Arc<dyn crate::tool::DynTool>,
    pub(super) timeout_ms: Option<u64>,
}

impl Run<'_> {
    pub(super) fn busy(&self) -> bool {
        !self.in_flight.is_empty() || !self.immediate.is_empty() || !self.recovered.is_empty()
    }

    /// select_next_step: notes the start of every ready step the
    /// concurrency limit allows and hands the wave to the driver. A step
    /// that needs an approval first sends the run to the approver (the wave
    /// before it starts first), and dispatch comes back here after.
    pub(super) fn select_next_step(&mut self) -> Result<Effect, Halt> {
        // A decision held (by the fold) stops dispatch, and so does the
        // token budget, noted as a stop the first time it is found spent.
        if self.state.cursor.held().is_none() && !self.budget_spent()? {
            let mut wave = Vec::new();
            for id in self.state.index.ready(&self.state.plan) {
                if self.in_flight.len() + self.immediate.len() + wave.len() >= self.concurrency() {
                    break;
                }
                if self.awaiting.contains(&id) {
                    continue;
                }
                if self.needs_approval(&id).is_some() {
                    if wave.is_empty() {
                        return Ok(Effect::Ask(id, AfterAsk::Select));
                    }
                    return Ok(self.start_wave(wave, Then::Select));
                }
                let attempt = self
                    .state
                    .index
                    .find(&self.state.plan, &id)
                    .map_or(1, |s| s.attempts + 1);
                self.note(EventKind::StepStarted {
                    step: id.clone(),
                    attempt,
                })?;
                wave.push((id, attempt));
            }
            if !wave.is_empty() {
                return Ok(self.start_wave(wave, Then::Dispatched));
            }
        }
        self.dispatched()
    }

    /// The driver's order to start a wave whose starts are noted: committed
    /// together by the first call's start. A lone attempt with nothing in
    /// flight is polled in place first (see the driver's `start_attempt`).
    pub(super) fn start_wave(&self, attempts: Vec<(StepId, u32)>, then: Then) -> Effect {
        let alone = attempts.len() == 1 && !self.busy();
        Effect::Start {
            attempts,
            alone,
            then,
        }
    }

    /// Where the graph goes once select_next_step started what it could.
    pub(super) fn dispatched(&self) -> Result<Effect, Halt> {
        let held = decide::held(&self.state);
        let next = decide::after_dispatch(decide::Dispatched {
            busy: self.busy(),
            held: held.map(|(v, _)| v),
            awaiting: !self.awaiting.is_empty(),
            verifies: self.verify_policy().is_some(),
            state: &self.state,
        })
        .map_err(EngineError::Invariant)?;
        // A held refusal is acted on now.
        Ok(match (next, held) {
            (Node::MarkNeedsReview, Some((_, reason))) => Review::because(reason).into(),
            (next, _) => next.into(),
        })
    }

    /// Where the run goes once the driver started a wave.
    pub(super) fn then(&mut self, then: Then) -> Result<Effect, Halt> {
        match then {
            Then::Wait => Ok(Effect::Wait),
            Then::Select => self.select_next_step(),
            Then::Dispatched => self.dispatched(),
            Then::Execute => Ok(Node::ExecuteStep.into()),
        }
    }

    pub(super) fn prepare_context(&self, step: &Step) -> Result<Prepared, StepFailure> {
        let persistent =
            |kind, message: String| StepFailure::new(FailureClass::Persistent, kind, message);
        // Borrowed, not copied: references read the recorded results.
        let outputs = &self.state.step_results;
        for (i, p) in step.preconditions.iter().enumerate() {
            check_precondition_in(p, outputs).map_err(|why| {
                persistent(
                    FailureKind::PreconditionFailed,
                    format!("precondition {}: {why}", i + 1),
                )
            })?;
        }
        let tool = self.engine.tools.get(&step.tool).cloned().ok_or_else(|| {
            persistent(
                FailureKind::UnknownTool,
                format!("no tool named {:?}", step.tool),
            )
        })?;
        let spec = tool.spec();
        let args = resolve_value_in(&Value::Object(step.args.clone()), outputs)
            .map_err(|e| persistent(FailureKind::ArgResolution, e.to_string()))?;
        // The gate in select_next_step asked for this approval; never run without it.
        if spec.side_effect
            && self.state.approvals.get(&step.id) != Some(&args_hash(&step.tool, &args))
        {
            return Err(StepFailure::new(
                FailureClass::Fatal,
                FailureKind::ApprovalDenied,
                format!(
                    "{} has side effects and no approval on record for these arguments",
                    step.id
                ),
            ));
        }
        let problems = self.engine.catalog.check_args(&step.tool, &args);
        if !problems.is_empty() {
            let text: Vec<String> = problems
                .into_iter()
                .map(|(p, m)| format!("{p}: {m}"))
                .collect();
            return Err(persistent(
                FailureKind::InvalidArgs,
                format!("resolved arguments: {}", text.join("; ")),
            ));
        }
        let dependencies = step
            .depends_on
            .iter()
            .filter_map(|d| {
                let dep = self.state.index.find(&self.state.plan, d)?;
                Some(DependencyOutput {
                    step: d.clone(),
                    description: dep.description.clone(),
                    output: outputs.get(d)?.output.clone(),
                })
            })
            .collect();
        let timeout_ms = spec.timeout_ms;
        Ok(Prepared {
            context: StepContext {
                step: step.clone(),
                args,
                dependencies,
                tool_context: ToolContext::new(&self.state.run_id, &step.id, step.attempts),
            },
            tool,
            timeout_ms,
        })
    }

    /// Notes a successful attempt: the executor's model calls, then
    /// `step_succeeded` (its side effect's outcome is in the idempotency
    /// log already: the driver put it there).
    pub(super) fn succeeded(
        &mut self,
        step: &StepId,
        attempt: u32,
        reply: Reply<Value>,
        duration_ms: u64,
    ) -> Result<StepOutcome, EngineError> {
        self.record_calls(crate::roles::RoleName::StepExecutor, reply.exchanges)?;
        let result = StepResult {
            output: reply.value,
            attempts: attempt,
            duration_ms,
        };
        // Committed with its assessment, or before anything waits (see the driver).
        self.note(EventKind::StepSucceeded {
            step: step.clone(),
            result: result.clone(),
            usage: reply.usage,
        })?;
        Ok(StepOutcome::Succeeded(result))
    }

    /// execute_step: an outcome recovered by a resume first, else the
    /// driver waits for the next completion (see [`executed`](Self::executed)).
    pub(super) fn execute_step(&mut self) -> Result<Effect, Halt> {
        if let Some(outcome) = self.recovered.pop_front() {
            // Recorded before a crash but never assessed.
            self.last = Some(outcome);
            return Ok(self.after_execute().into());
        }
        Ok(Effect::Wait)
    }

    /// Notes what a completion says: a backoff's end starts the next
    /// attempt, a success or a final failure goes on to be judged, a
    /// transient failure sleeps its backoff.
    pub(super) fn executed(&mut self, completion: Completion) -> Result<Effect, Halt> {
        let Completion {
            step,
            attempt,
            kind,
        } = completion;
        match kind {
            CompletionKind::BackoffElapsed => {
                self.note(EventKind::StepStarted {
                    step: step.clone(),
                    attempt,
                })?;
                Ok(self.start_wave(vec![(step, attempt)], Then::Wait))
            }
            CompletionKind::Attempt {
                result: Ok(reply),
                duration_ms,
            } => {
                let outcome = self.succeeded(&step, attempt, reply, duration_ms)?;
                self.last = Some((step, outcome));
                Ok(self.after_execute().into())
            }
            CompletionKind::Attempt {
                result: Err(mut failure),
                ..
            } => {
                // The executor's model calls on this attempt, noted before
                // the failure (its `usage` counts them).
                let calls = std::mem::take(&mut failure.exchanges);
                self.record_calls(crate::roles::RoleName::StepExecutor, calls)?;
                self.note(EventKind::StepFailed {
                    step: step.clone(),
                    attempt,
                    failure: failure.clone(),
                })?;
                let next = decide::after_failure(
                    &self.engine.config.retry,
                    attempt,
                    &failure,
                    fastrand::f64(),
                );
                match next {
                    decide::AfterFailure::Retry { delay_ms } => {
                        self.note(EventKind::StepRetrying {
                            step: step.clone(),
                            next_attempt: attempt + 1,
                            delay_ms,
                        })?;
                        Ok(Effect::Backoff {
                            step,
                            attempt: attempt + 1,
                            delay_ms,
                        })
                    }
                    decide::AfterFailure::Terminate(reason) => {
                        self.note(EventKind::StepTerminated {
                            step: step.clone(),
                            reason,
                        })?;
                        self.last = Some((step, StepOutcome::Failed(failure)));
                        Ok(self.after_execute().into())
                    }
                }
            }
        }
    }
}
