//! Dispatch: select_next_step starts every ready step (bounded by the
//! concurrency limit) and execute_step waits for the next one to finish,
//! retrying transient failures with backoff.

use super::approval::{Gate, args_hash};
use crate::event::{EventKind, SinkError};
use crate::failure::{FailureClass, FailureKind, StepFailure};
use crate::graph::Node;
use crate::ids::StepId;
use crate::plan::Step;
use crate::plan::args::resolve_value_in;
use crate::roles::{DependencyOutput, Reply, StepContext, StepOutcome};
use crate::scheduler::check_precondition_in;
use crate::state::StepResult;
use crate::store::IdempotencyRecord;
use crate::tool::ToolContext;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

use super::{EngineError, NodeResult, Review, Run, decide};

/// One step attempt's outcome, or the end of a backoff.
pub(super) struct Completion {
    pub(super) step: StepId,
    pub(super) attempt: u32,
    pub(super) kind: CompletionKind,
}

pub(super) enum CompletionKind {
    Attempt {
        result: Result<Reply<Value>, StepFailure>,
        duration_ms: u64,
    },
    BackoffElapsed,
}

/// A step attempt's call with a panic in the executor or the tool turned
/// into a persistent failure of the attempt: the step fails with an event
/// and the run goes on, and the task always returns the step it ran (so the
/// run needs no map from task to step).
async fn caught(
    call: impl Future<Output = Result<Reply<Value>, StepFailure>>,
) -> Result<Reply<Value>, StepFailure> {
    use futures::FutureExt as _;
    std::panic::AssertUnwindSafe(call)
        .catch_unwind()
        .await
        .unwrap_or_else(|panic| {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "no message".to_owned());
            Err(StepFailure::new(
                FailureClass::Persistent,
                FailureKind::Executor,
                format!("the step's call panicked: {what}"),
            ))
        })
}

/// A step attempt ready to spawn.
pub(super) struct Prepared {
    context: StepContext,
    tool: Arc<dyn crate::tool::DynTool>,
    timeout_ms: Option<u64>,
}

impl Run<'_> {
    pub(super) fn busy(&self) -> bool {
        !self.in_flight.is_empty() || !self.immediate.is_empty() || !self.recovered.is_empty()
    }

    pub(super) async fn select_next_step(&mut self) -> NodeResult {
        // A decision held (by the fold) stops dispatch, and so does the
        // token budget, recorded as a stop the first time it is found spent.
        if self.state.cursor.held().is_none() && !self.budget_spent().await? {
            // The ready wave's starts are noted in one pass and committed
            // together by the first spawn, then every call is spawned.
            let mut wave = Vec::new();
            for id in self.state.index.ready(&self.state.plan) {
                if self.in_flight.len() + self.immediate.len() + wave.len() >= self.concurrency() {
                    break;
                }
                if self.awaiting.contains(&id) {
                    continue;
                }
                match self.approval_gate(&id).await? {
                    Gate::Open => {}
                    Gate::Wait => continue,
                    // The refusal, recorded, is the decision held.
                    Gate::Denied => break,
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
            let alone = wave.len() == 1 && !self.busy();
            for (id, attempt) in wave {
                self.start_attempt(&id, attempt, alone).await?;
            }
        }
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
            (Node::MarkNeedsReview, Some((_, reason))) => Review::because(reason),
            (next, _) => next.into(),
        })
    }

    /// Checks preconditions, resolves arguments and spawns one attempt. A
    /// problem found here is a typed failure of the attempt, not a crash.
    /// The attempt's `step_started` is committed before the call is made.
    ///
    /// An attempt started `alone` (nothing else in flight or starting, so
    /// there is nothing for it to run beside) is first polled in the run's
    /// own task, and needs no task if that finishes it: a step whose tool
    /// answers at once costs no spawn and no wake of another worker.
    pub(super) async fn start_attempt(
        &mut self,
        id: &StepId,
        attempt: u32,
        alone: bool,
    ) -> Result<(), EngineError> {
        let step = self
            .state
            .index
            .find(&self.state.plan, id)
            .ok_or_else(|| EngineError::Invariant(format!("dispatch of unknown step {id}")))?;
        match self.prepare_context(step) {
            Err(failure) => {
                self.immediate.push_back(Completion {
                    step: id.clone(),
                    attempt,
                    kind: CompletionKind::Attempt {
                        result: Err(failure),
                        duration_ms: 0,
                    },
                });
            }
            Ok(Prepared {
                context,
                tool,
                timeout_ms,
            }) => {
                self.flush().await?;
                if tool.spec().side_effect
                    && let Some(log) = &self.engine.idempotency
                {
                    // Durable before the call: a crash from here on leaves a
                    // record that says the call may have happened.
                    let record = IdempotencyRecord {
                        key: context.tool_context.idempotency_key.clone(),
                        run: self.state.run_id.clone(),
                        step: id.clone(),
                        args_hash: args_hash(&context.step.tool, &context.args),
                        outcome: None,
                    };
                    log.begin(&record).await.map_err(|e| {
                        EngineError::Sink(SinkError {
                            seq: self.state.last_seq(),
                            message: e.to_string(),
                        })
                    })?;
                }
                let executor = Arc::clone(&self.engine.roles.executor);
                let step_id = id.clone();
                // Boxed into the task and out again when the call starts: a
                // task keeps its captures for its whole life, and a box is a
                // pointer where the context is a few hundred bytes.
                let context = Box::new(context);
                let mut call: std::pin::Pin<Box<dyn Future<Output = Completion> + Send>> =
                    Box::pin(async move {
                        let started = tokio::time::Instant::now();
                        // The call made inside `caught` too: a panic while the
                        // executor sets the call up is the attempt's failure.
                        let call = caught(async move { executor.execute(*context, tool).await });
                        let result = match timeout_ms {
                            Some(ms) => tokio::time::timeout(Duration::from_millis(ms), call)
                                .await
                                .unwrap_or_else(|_| {
                                    Err(StepFailure::new(
                                        FailureClass::Transient,
                                        FailureKind::Timeout,
                                        format!("no answer within {ms} ms"),
                                    ))
                                }),
                            None => call.await,
                        };
                        let duration_ms =
                            u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
                        Completion {
                            step: step_id,
                            attempt,
                            kind: CompletionKind::Attempt {
                                result,
                                duration_ms,
                            },
                        }
                    });
                if alone {
                    // Polled with a waker that does nothing: if the call is
                    // not finished, the task it moves into polls it again
                    // at once, with its own waker.
                    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
                    if let std::task::Poll::Ready(done) = call.as_mut().poll(&mut cx) {
                        self.immediate.push_back(done);
                        return Ok(());
                    }
                }
                self.in_flight.spawn(call);
            }
        }
        Ok(())
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

    pub(super) async fn next_completion(&mut self) -> Result<Completion, EngineError> {
        if let Some(c) = self.immediate.pop_front() {
            return Ok(c);
        }
        // Completions already in hand are handled in this pass; only before
        // waiting for the next one is what they noted committed. (So this is
        // not cancel-safe while events are unsent: a caller that selects on
        // it flushes first, as stream_plan does.)
        let joined = match self.in_flight.try_join_next() {
            Some(joined) => Some(joined),
            None => {
                self.flush().await?;
                self.in_flight.join_next().await
            }
        };
        match joined {
            None => Err(EngineError::Invariant(
                "execute_step with nothing in flight".to_owned(),
            )),
            Some(Ok(completion)) => Ok(completion),
            // A step's panic is caught in its task (see `caught`), and the
            // engine aborts tasks only when the run has ended.
            Some(Err(join_error)) => Err(EngineError::Invariant(format!(
                "a step's task ended without its outcome: {join_error}"
            ))),
        }
    }

    /// Records a successful attempt: the executor's model calls, the side
    /// effect's outcome, then `step_succeeded`.
    pub(super) async fn succeeded(
        &mut self,
        step: &StepId,
        attempt: u32,
        reply: Reply<Value>,
        duration_ms: u64,
    ) -> Result<StepOutcome, EngineError> {
        self.record_calls(crate::roles::RoleName::StepExecutor, reply.exchanges)
            .await?;
        let result = StepResult {
            output: reply.value,
            attempts: attempt,
            duration_ms,
        };
        self.complete_side_effect(step, &result.output).await?;
        // Committed with its assessment, or before anything waits (see `Run::flush`).
        self.note(EventKind::StepSucceeded {
            step: step.clone(),
            result: result.clone(),
            usage: reply.usage,
        })?;
        Ok(StepOutcome::Succeeded(result))
    }

    /// Waits for the next completion and records it. The rarer branches'
    /// futures are boxed, so what a run holds while it waits for a tool is
    /// the wait alone (see [`Run::step`]).
    pub(super) async fn execute_step(&mut self) -> NodeResult {
        if let Some(outcome) = self.recovered.pop_front() {
            // Recorded before a crash but never assessed.
            self.last = Some(outcome);
            return Ok(self.after_execute().into());
        }
        loop {
            let Completion {
                step,
                attempt,
                kind,
            } = self.next_completion().await?;
            match kind {
                CompletionKind::BackoffElapsed => {
                    self.note(EventKind::StepStarted {
                        step: step.clone(),
                        attempt,
                    })?;
                    let alone = !self.busy();
                    Box::pin(self.start_attempt(&step, attempt, alone)).await?;
                }
                CompletionKind::Attempt {
                    result: Ok(reply),
                    duration_ms,
                } => {
                    let outcome =
                        Box::pin(self.succeeded(&step, attempt, reply, duration_ms)).await?;
                    self.last = Some((step, outcome));
                    return Ok(self.after_execute().into());
                }
                CompletionKind::Attempt {
                    result: Err(mut failure),
                    ..
                } => {
                    // The executor's model calls on this attempt, recorded
                    // before the failure (its `usage` counts them).
                    let calls = std::mem::take(&mut failure.exchanges);
                    Box::pin(self.record_calls(crate::roles::RoleName::StepExecutor, calls))
                        .await?;
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
                    if let decide::AfterFailure::Retry { delay_ms } = next {
                        self.note(EventKind::StepRetrying {
                            step: step.clone(),
                            next_attempt: attempt + 1,
                            delay_ms,
                        })?;
                        self.in_flight.spawn(async move {
                            tokio::time::sleep(Duration::from_millis(delay_ms)).await;
                            Completion {
                                step,
                                attempt: attempt + 1,
                                kind: CompletionKind::BackoffElapsed,
                            }
                        });
                        continue;
                    }
                    let decide::AfterFailure::Terminate(reason) = next else {
                        return Err(EngineError::Invariant("a retry not taken".to_owned()).into());
                    };
                    self.note(EventKind::StepTerminated {
                        step: step.clone(),
                        reason,
                    })?;
                    self.last = Some((step, StepOutcome::Failed(failure)));
                    return Ok(self.after_execute().into());
                }
            }
        }
    }
}
