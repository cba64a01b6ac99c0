//! The driver's side of dispatch: starting a step attempt (its idempotency
//! record first, for a side effect), waiting for the next one to finish,
//! and sleeping a backoff. What an outcome means is decided in
//! `engine/dispatch.rs`.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::failure::{FailureClass, FailureKind, StepFailure};
use crate::ids::StepId;
use crate::roles::Reply;
use crate::store::IdempotencyRecord;

use super::super::approval::args_hash;
use super::super::dispatch::Prepared;
use super::super::effect::{Completion, CompletionKind};
use super::super::{EngineError, Run};

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

impl Run<'_> {
    /// Checks preconditions, resolves arguments and spawns one attempt. A
    /// problem found here is a typed failure of the attempt, not a crash.
    /// The attempt's `step_started` is committed before the call is made.
    ///
    /// An attempt started `alone` (nothing else in flight or starting, so
    /// there is nothing for it to run beside) is first polled in the run's
    /// own task, and needs no task if that finishes it: a step whose tool
    /// answers at once costs no spawn and no wake of another worker.
    pub(in crate::engine) async fn start_attempt(
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
        let Prepared {
            context,
            tool,
            timeout_ms,
        } = match self.prepare_context(step) {
            Ok(prepared) => prepared,
            Err(failure) => {
                self.immediate.push_back(Completion {
                    step: id.clone(),
                    attempt,
                    kind: CompletionKind::Attempt {
                        result: Err(failure),
                        duration_ms: 0,
                    },
                });
                return Ok(());
            }
        };
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
            log.begin(&record)
                .await
                .map_err(|e| self.log_error(e.to_string()))?;
        }
        let executor = Arc::clone(&self.engine.roles.executor);
        let step_id = id.clone();
        // Boxed into the task and out again when the call starts: a task
        // keeps its captures for its whole life, and a box is a pointer
        // where the context is a few hundred bytes.
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
                let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
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
            // Polled with a waker that does nothing: if the call is not
            // finished, the task it moves into polls it again at once,
            // with its own waker.
            let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
            if let std::task::Poll::Ready(done) = call.as_mut().poll(&mut cx) {
                self.immediate.push_back(done);
                return Ok(());
            }
        }
        self.in_flight.spawn(call);
        Ok(())
    }

    /// The next finished attempt (or elapsed backoff): one in hand first,
    /// else the next task to finish.
    pub(in crate::engine) async fn next_completion(&mut self) -> Result<Completion, EngineError> {
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

    /// Sleeps a transient failure's backoff in a task of its own; its end
    /// comes back as a completion that starts the next attempt.
    pub(super) fn backoff(&mut self, step: StepId, attempt: u32, delay_ms: u64) {
        self.in_flight.spawn(async move {
            tokio::time::sleep(Duration::from_millis(delay_ms)).await;
            Completion {
                step,
                attempt,
                kind: CompletionKind::BackoffElapsed,
            }
        });
    }
}
