//! Resuming a run from its log: fold the events, then ask again where the
//! graph stands. Nothing that succeeded runs again; a read-only step that
//! was in flight when the process died is dispatched again; a side-effect
//! step in flight is reconciled through its idempotency record — its recorded
//! outcome is used, it is re-run only if the tool is idempotent for its key,
//! and otherwise the run stops for review with the outcome marked unknown.
//!
//! A run that stopped for review resumes only if something changed since
//! (see [`what_changed`]): new bounds, a person's decision, new sources, or
//! an unusable answer to ask for again. Resumed unchanged, it would only
//! repeat itself — or replan its way to a status it did not earn — so the
//! engine records nothing and says what would have to change.

use super::decide::{self, Standing};
use super::effect::{AfterAsk, Completion, CompletionKind, Effect};
use super::{Engine, EngineError, Halt, NodeResult, Run};
use crate::cursor::Unassessed;
use crate::event::EventKind;
use crate::failure::{FailureClass, FailureKind, StepFailure};
use crate::graph::Node;
use crate::ids::StepId;
use crate::roles::StepOutcome;
use crate::state::{RunState, RunStatus, StepResult};
use crate::step_status::StepStatus;
use crate::store::IdempotencyRecord;

/// What the person resuming a run changes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResumeOptions {
    /// Who resumes (recorded).
    pub by: String,
    /// A new replan bound (e.g. to get past `max_replans`).
    pub max_replans: Option<u32>,
    /// A new step bound.
    pub max_steps: Option<usize>,
    /// What changed outside the log since the run stopped, as the resuming
    /// program sees it (e.g. "the notes in DIR changed"); recorded.
    pub changed: Vec<String>,
    /// Whether the sources the run reads (its notes) changed since it
    /// stopped: its gaps are then searched again.
    pub sources_changed: bool,
    /// The program's new settings, replacing `run_started.host` (e.g. with
    /// a new fingerprint of its sources); null keeps the old ones.
    pub host: serde_json::Value,
}

/// What changed since a run stopped for review, each said for a person:
/// what the resuming program reports ([`ResumeOptions::changed`]), a bound
/// raised above the one in force, a person's decision (a refusal since the
/// run last started or resumed — resuming asks again — or an approval since
/// it stopped), and a stop on an unusable answer (a new request may
/// succeed). Empty means a resume would change nothing.
pub fn what_changed(state: &RunState, options: &ResumeOptions) -> Vec<String> {
    let mut changed = options.changed.clone();
    if let Some(n) = options.max_replans.filter(|n| *n > state.max_replans) {
        changed.push(format!(
            "max_replans raised from {} to {n}",
            state.max_replans
        ));
    }
    if let Some(n) = options.max_steps.filter(|n| *n > state.max_steps) {
        changed.push(format!("max_steps raised from {} to {n}", state.max_steps));
    }
    changed.extend(state.cursor.decisions().iter().map(|d| d.describe()));
    if state.cursor.stopped() == Some(true) {
        changed.push("the answer it stopped on was unusable; the role is asked again".to_owned());
    }
    changed
}

impl Engine {
    /// Continues a run from its folded state (loaded from a store): after a
    /// crash, or from a breakpoint (`needs_review`, `awaiting_approval`) once
    /// a person has acted. Finished runs (`ok`, `failed`, `cancelled`) are
    /// not resumable.
    pub async fn resume(
        &self,
        state: RunState,
        options: ResumeOptions,
    ) -> Result<RunState, EngineError> {
        let was = state.status;
        if was.has_ended() {
            return Err(EngineError::NotResumable(was));
        }
        let changed = what_changed(&state, &options);
        if was == RunStatus::NeedsReview && changed.is_empty() {
            return Err(EngineError::Unchanged {
                max_replans: state.max_replans,
                max_steps: state.max_steps,
            });
        }
        let mut run = Run::new(self);
        run.state = state;
        run.record(EventKind::RunResumed {
            by: options.by,
            max_replans: options.max_replans,
            max_steps: options.max_steps,
            changed,
            sources_changed: options.sources_changed,
            host: options.host,
        })
        .await?;
        // The fold of run_resumed set where the graph stands; put what was
        // in flight back on track, then continue.
        let records = run.running_side_effects().await?;
        let first = match run.recover(options.sources_changed, records) {
            Ok(first) => first,
            Err(Halt::Engine(e)) => return Err(e),
            Err(Halt::Role(error)) => {
                run.fail(error)?;
                run.flush().await?;
                return Ok(run.state);
            }
        };
        // What recover read of the log it has read; the rest reads the fold.
        if !self.config.keep_history {
            run.flush().await?;
            run.state.forget_history();
        }
        run.drive(None, first).await?;
        Ok(run.state)
    }
}

/// Outcomes recorded without an assessment after them, in log order (the
/// fold keeps them: see [`Cursor`](crate::cursor::Cursor)).
fn unassessed(state: &RunState) -> Vec<(StepId, StepOutcome)> {
    let cursor = &state.cursor;
    cursor
        .unassessed()
        .iter()
        .filter_map(|(step, outcome)| {
            let outcome = match outcome {
                Unassessed::Succeeded => {
                    StepOutcome::Succeeded(state.step_results.get(step)?.clone())
                }
                Unassessed::Terminated(reason) => {
                    StepOutcome::Failed(cursor.failures_of(step).unwrap_or_else(|| {
                        StepFailure::new(
                            FailureClass::Persistent,
                            FailureKind::Executor,
                            reason.clone(),
                        )
                    }))
                }
            };
            Some((step.clone(), outcome))
        })
        .collect()
}

/// The idempotency records of the side-effect steps that were running,
/// read by the driver before a resume reconciles them.
type Records = Vec<(StepId, Option<IdempotencyRecord>)>;

impl Run<'_> {
    /// Puts steps that were in flight back on track and returns where the
    /// graph goes on, as the folded state says (see [`decide::standing`]).
    fn recover(&mut self, sources_changed: bool, records: Records) -> NodeResult {
        match decide::standing(&self.state) {
            Standing::At(node) => Ok(node.into()),
            Standing::React => {
                self.reconcile_in_flight(records)?;
                self.recover_react()
            }
            Standing::Streamed => {
                self.recovered = unassessed(&self.state).into();
                self.reconcile_in_flight(records)?;
                Ok(if self.state.pending_draft.is_some() {
                    Node::ValidatePlan
                } else {
                    Node::CreatePlan
                }
                .into())
            }
            Standing::Plan => {
                self.recovered = unassessed(&self.state).into();
                self.reconcile_in_flight(records)?;
                let command = decide::after_resume(&self.state, self.busy(), sources_changed);
                self.perform(command)
            }
        }
    }

    /// A resumed ReAct run: a call the actor chose that never started goes
    /// through the approval gate again (approved since, or by this
    /// engine's approver, it runs; otherwise it waits on), then the run
    /// waits for its calls, or acts.
    pub(super) fn recover_react(&mut self) -> NodeResult {
        let queued = |id: &StepId| self.immediate.iter().any(|c| &c.step == id);
        let unstarted = self
            .state
            .plan
            .steps
            .iter()
            .find(|s| s.status == StepStatus::Pending && !queued(&s.id))
            .map(|s| s.id.clone());
        if let Some(id) = unstarted {
            return Ok(Effect::Ask(id, AfterAsk::Recover));
        }
        Ok(if self.busy() {
            Node::ExecuteStep
        } else {
            Node::Act
        }
        .into())
    }

    /// Puts every step that was in flight back on track.
    fn reconcile_in_flight(&mut self, records: Records) -> Result<(), EngineError> {
        let in_flight: Vec<StepId> = self
            .state
            .plan
            .steps
            .iter()
            .filter(|s| s.status.is_in_flight())
            .map(|s| s.id.clone())
            .collect();
        for id in in_flight {
            let record = records
                .iter()
                .find(|(step, _)| *step == id)
                .and_then(|(_, r)| r.clone());
            self.reconcile(&id, record)?;
        }
        Ok(())
    }

    /// Puts one step that was in flight back on track (`record`: its
    /// idempotency record, for a side-effect step that was running).
    fn reconcile(
        &mut self,
        id: &StepId,
        record: Option<IdempotencyRecord>,
    ) -> Result<(), EngineError> {
        let Some(step) = self.state.plan.step(id).cloned() else {
            return Ok(());
        };
        let next_attempt = step.attempts + 1;
        match step.status {
            StepStatus::Retrying => self.retry_now(id, next_attempt),
            StepStatus::Failed => {
                let failure = self.state.cursor.last_failure(id);
                if failure.class == FailureClass::Transient
                    && self.engine.config.retry.allows_retry_after(step.attempts)
                {
                    self.note(EventKind::StepRetrying {
                        step: id.clone(),
                        next_attempt,
                        delay_ms: 0,
                    })?;
                    self.retry_now(id, next_attempt);
                } else {
                    let reason = format!("failed before the interruption: {}", failure.message);
                    self.note(EventKind::StepTerminated {
                        step: id.clone(),
                        reason,
                    })?;
                    self.recovered
                        .push_back((id.clone(), StepOutcome::Failed(failure)));
                }
            }
            StepStatus::Running => {
                let spec = self.engine.tools.get(&step.tool).map(|t| t.spec().clone());
                let side_effect = spec.as_ref().is_some_and(|s| s.side_effect);
                if !side_effect {
                    return self.interrupt_and_retry(id, step.attempts);
                }
                match record {
                    Some(r) if r.outcome.is_some() => {
                        // The call finished before the crash: use its recorded outcome.
                        let result = StepResult {
                            output: r.outcome.unwrap_or_default(),
                            attempts: step.attempts,
                            duration_ms: 0,
                        };
                        self.note(EventKind::StepSucceeded {
                            step: id.clone(),
                            result: result.clone(),
                            usage: Default::default(),
                        })?;
                        self.recovered
                            .push_back((id.clone(), StepOutcome::Succeeded(result)));
                    }
                    // Never started (no record) or safe to repeat for this key.
                    None if self.engine.idempotency.is_some() => {
                        self.interrupt_and_retry(id, step.attempts)?
                    }
                    _ if spec.as_ref().is_some_and(|s| s.idempotent) => {
                        self.interrupt_and_retry(id, step.attempts)?
                    }
                    _ => {
                        let message = format!(
                            "outcome unknown: the process stopped while {id} ({}) was running, and the tool is not idempotent; check its effect by hand",
                            step.tool
                        );
                        self.note(EventKind::StepInterrupted {
                            step: id.clone(),
                            attempt: step.attempts,
                        })?;
                        self.note(EventKind::StepTerminated {
                            step: id.clone(),
                            reason: message.clone(),
                        })?;
                        let failure = StepFailure::new(
                            FailureClass::Fatal,
                            FailureKind::Interrupted,
                            message,
                        );
                        self.recovered
                            .push_back((id.clone(), StepOutcome::Failed(failure)));
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn interrupt_and_retry(&mut self, id: &StepId, attempt: u32) -> Result<(), EngineError> {
        self.note(EventKind::StepInterrupted {
            step: id.clone(),
            attempt,
        })?;
        self.note(EventKind::StepRetrying {
            step: id.clone(),
            next_attempt: attempt + 1,
            delay_ms: 0,
        })?;
        self.retry_now(id, attempt + 1);
        Ok(())
    }

    /// Dispatches the next attempt at once (the backoff, if any, died with the process).
    pub(super) fn retry_now(&mut self, id: &StepId, attempt: u32) {
        self.immediate.push_back(Completion {
            step: id.clone(),
            attempt,
            kind: CompletionKind::BackoffElapsed,
        });
    }
}
