//! The driver: the only code of a run that awaits. It walks seed 001's
//! planning graph by performing the [`Effect`]s the nodes return — commit
//! what is noted, call a role, ask the approver, start attempts, wait for
//! one, stream a plan — and hands each result back to the node that asked.
//! Every node is a plain function of the run (see `engine/effect.rs`).
//!
//! The commit rule: an event is sent to the sinks before anything outside
//! the run acts on it or the run waits on something slow while it is
//! unsent. So the driver flushes on entering every node but the three of
//! the dispatch loop, before every role call (but a local assessor's),
//! before every approval, before every tool call starts, before it waits
//! for a tool (once the completions in hand are handled) and before the run
//! returns or pauses. A tool's result waits uncommitted only while the
//! engine computes, never across a model call, an approval or another
//! tool's latency.

mod stream;
mod tools;

use crate::event::{EventKind, SinkError};
use crate::graph::{Node, is_edge};
use crate::retry::FailureClass;
use crate::roles::{
    ActRequest, AssessRequest, PlanRequest, RepairRequest, ReplanRequest, Reply, RoleError,
    RoleName,
};
use crate::store::IdempotencyRecord;
use crate::strategy::react::history;

use super::approval::ApprovalRequest;
use super::effect::{CompletionKind, Effect, RoleCall};
use super::{EngineError, Halt, Next, Run};

impl Run<'_> {
    /// Performs effects from `first` until the graph reaches END. Every
    /// move must be an edge of the graph (`from` is where the run stands,
    /// if known); a role error ends the run `failed` with an event.
    ///
    /// It borrows the run rather than taking it, so that the caller's future
    /// holds the run once, not once more inside this one's.
    pub(super) async fn drive(
        &mut self,
        mut at: Option<Node>,
        first: impl Into<Effect>,
    ) -> Result<(), EngineError> {
        let mut effect = first.into();
        loop {
            let done = match effect {
                Effect::Go(next) => {
                    let node = next.node();
                    if let Some(from) = at
                        && !is_edge(from, node)
                    {
                        return Err(EngineError::Invariant(format!(
                            "the graph has no edge {from} -> {node}"
                        )));
                    }
                    at = Some(node);
                    if node == Node::End {
                        break;
                    }
                    if !matches!(
                        next,
                        Next::To(Node::SelectNextStep | Node::ExecuteStep | Node::AssessProgress)
                    ) {
                        self.flush().await?;
                    }
                    self.enter(next)
                }
                // Boxed: what a run holds while it waits is the wait alone,
                // not room for the largest effect's future.
                io => Box::pin(self.perform_io(io)).await,
            };
            effect = match done {
                Ok(effect) => effect,
                Err(Halt::Engine(e)) => return Err(e),
                Err(Halt::Role(error)) => {
                    self.fail(error)?;
                    break;
                }
            };
        }
        // Model calls whose answer nothing acted on (a run paused or ended
        // right after them) are still on record.
        self.flush().await
    }

    /// Performs one effect other than a move, and returns what its node
    /// does with the result.
    async fn perform_io(&mut self, effect: Effect) -> Result<Effect, Halt> {
        match effect {
            Effect::Go(next) => Ok(Effect::Go(next)),
            Effect::Call(call) => self.call(call).await,
            Effect::Ask(step, after) => {
                let gate = self.ask(&step).await?;
                self.after_ask(step, gate, after)
            }
            Effect::Start {
                attempts,
                alone,
                then,
            } => {
                for (step, attempt) in attempts {
                    self.start_attempt(&step, attempt, alone).await?;
                }
                self.then(then)
            }
            Effect::Backoff {
                step,
                attempt,
                delay_ms,
            } => {
                self.backoff(step, attempt, delay_ms);
                Ok(Effect::Wait)
            }
            Effect::Wait => {
                let completion = self.next_completion().await?;
                if let CompletionKind::Attempt {
                    result: Ok(reply), ..
                } = &completion.kind
                {
                    self.complete_side_effect(&completion.step, &reply.value)
                        .await?;
                }
                self.executed(completion)
            }
            Effect::Stream => self.stream_plan().await,
        }
    }

    /// Calls a role with a request made from the state, and hands the
    /// answer to the node that asked.
    async fn call(&mut self, call: RoleCall) -> Result<Effect, Halt> {
        let roles = &self.engine.roles;
        // A slow role is not asked while events are unsent: a crash during
        // its call must not lose a tool's result. (A local assessor is
        // quick: its steps' outcomes go with its verdicts.)
        if !matches!(call, RoleCall::Assess { .. }) || !roles.assessor.is_local() {
            self.flush().await?;
        }
        let tools = &self.engine.specs;
        match call {
            RoleCall::Route => {
                let goal = self.goal()?;
                let outcome = self.engine.strategy.choose(&goal, tools, roles).await;
                self.routed(outcome)
            }
            RoleCall::Plan => {
                let goal = self.goal()?;
                let request = PlanRequest {
                    goal: &goal,
                    tools,
                    max_steps: self.state.max_steps,
                };
                let outcome = roles.planner.plan(request).await;
                self.planned(outcome)
            }
            RoleCall::Repair { attempt } => {
                let goal = self.goal()?;
                let draft = self.state.pending_draft.clone().unwrap_or_default();
                let request = RepairRequest {
                    goal: &goal,
                    draft: &draft,
                    diagnostics: &self.state.plan_errors,
                    tools,
                    state: &self.state,
                    attempt,
                };
                let outcome = roles.repairer.repair(request).await;
                self.repaired(attempt, outcome)
            }
            RoleCall::Review => {
                let goal = self.goal()?;
                let outcome = roles.reviewer.review(&goal, &self.state.plan).await;
                self.plan_reviewed(outcome)
            }
            RoleCall::Replan { reason } => {
                let request = ReplanRequest {
                    state: &self.state,
                    reason: &reason,
                    tools,
                };
                let outcome = roles.replanner.replan(request).await;
                self.replanned(reason, outcome)
            }
            RoleCall::Verify => {
                let verifier = configured(roles.verifier.as_ref(), RoleName::Verifier)?;
                let outcome = verifier.verify(&self.state).await;
                self.verified(outcome)
            }
            RoleCall::Act { cap, escalate } => {
                let actor = configured(roles.actor.as_ref(), RoleName::Actor)?;
                let turns = history(&self.state, self.isolated());
                let goal = self.goal()?;
                let request = ActRequest {
                    goal: &goal,
                    tools,
                    history: &turns,
                    calls_left: cap.saturating_sub(self.state.plan.steps.len()),
                    state: &self.state,
                };
                let outcome = actor.act(request).await;
                self.acted(outcome, cap, escalate)
            }
            RoleCall::Summarize { step } => {
                let summarizer = configured(roles.summarizer.as_ref(), RoleName::Summarizer)?;
                let (Some(planned), Some(result)) = (
                    self.state.plan.step(&step),
                    self.state.step_results.get(&step),
                ) else {
                    return Err(
                        EngineError::Invariant(format!("summary of unknown step {step}")).into(),
                    );
                };
                let goal = self.goal()?;
                let outcome = summarizer
                    .summarize(&goal, &planned.description, &planned.tool, &result.output)
                    .await;
                self.summarized(step, outcome)
            }
            RoleCall::Assess { wave } => {
                let requests = wave
                    .iter()
                    .map(|(id, outcome)| {
                        let step =
                            self.state.index.find(&self.state.plan, id).ok_or_else(|| {
                                EngineError::Invariant(format!("assessing unknown step {id}"))
                            })?;
                        Ok(AssessRequest {
                            state: &self.state,
                            step,
                            outcome,
                        })
                    })
                    .collect::<Result<Vec<_>, EngineError>>()?;
                let answer = match requests.as_slice() {
                    [request] => roles.assessor.assess(*request).await.map(|r| Reply {
                        value: vec![r.value],
                        usage: r.usage,
                        exchanges: r.exchanges,
                    }),
                    _ => roles.assessor.assess_wave(requests).await,
                };
                self.judged(wave, answer)
            }
            RoleCall::Synthesize => {
                let outcome = roles.synthesizer.synthesize(&self.state).await;
                self.synthesized(outcome)
            }
            RoleCall::Partial { review } => {
                let outcome = roles.synthesizer.synthesize(&self.state).await;
                self.partial_written(*review, outcome)
            }
        }
    }

    /// Asks the approver about a side-effect step that needs an approval
    /// of its arguments, and notes the answer (see `engine/approval.rs`).
    async fn ask(&mut self, id: &crate::ids::StepId) -> Result<super::approval::Gate, Halt> {
        let Some(asked) = self.needs_approval(id) else {
            return Ok(super::approval::Gate::Open);
        };
        // Whoever decides may be slow (a person): nothing noted waits on them.
        self.flush().await?;
        let request = ApprovalRequest {
            run_id: &self.state.run_id,
            step: id,
            description: &asked.description,
            tool: &asked.spec,
            args: &asked.args,
            args_hash: &asked.hash,
        };
        let decision = self.engine.approver.decide(request).await;
        Ok(self.approval_answered(id, &asked, decision)?)
    }

    /// Hands the events not yet sent to every sink, together: one
    /// transaction in a durable sink (group commit). See the module's
    /// commit rule for when.
    pub(super) async fn flush(&mut self) -> Result<(), EngineError> {
        let unsent: &[crate::event::Event] = if self.engine.config.keep_history {
            let history = &self.state.execution_history;
            let Some(from) = history.len().checked_sub(self.unsent) else {
                return Err(EngineError::Invariant(
                    "more unsent events than events".to_owned(),
                ));
            };
            &history[from..]
        } else {
            &self.held
        };
        if !unsent.is_empty() {
            for sink in &self.engine.sinks {
                sink.record_all(&self.state.run_id, unsent).await?;
            }
        }
        self.unsent = 0;
        // Freed, not kept for the next batch: a run in flight keeps no events.
        self.held = Vec::new();
        Ok(())
    }

    /// Notes an event and sends it with everything noted before it.
    pub(super) async fn record(&mut self, kind: EventKind) -> Result<(), EngineError> {
        self.note(kind)?;
        self.flush().await
    }

    /// Records a side-effect call's outcome against its idempotency key.
    async fn complete_side_effect(
        &mut self,
        id: &crate::ids::StepId,
        output: &serde_json::Value,
    ) -> Result<(), EngineError> {
        let Some(log) = &self.engine.idempotency else {
            return Ok(());
        };
        if !self.has_side_effect(id) {
            return Ok(());
        }
        let key = crate::tool::idempotency_key(&self.state.run_id, id);
        log.complete(&key, output)
            .await
            .map_err(|e| self.log_error(e.to_string()))
    }

    /// The idempotency records of side-effect steps that were running when
    /// the run stopped: what resume reconciles them with.
    pub(super) async fn running_side_effects(
        &self,
    ) -> Result<Vec<(crate::ids::StepId, Option<IdempotencyRecord>)>, EngineError> {
        let mut records = Vec::new();
        for step in &self.state.plan.steps {
            if step.status != crate::step_status::StepStatus::Running
                || !self.has_side_effect(&step.id)
            {
                continue;
            }
            let record = match &self.engine.idempotency {
                Some(log) => {
                    let key = crate::tool::idempotency_key(&self.state.run_id, &step.id);
                    log.get(&key).await.map_err(|e| {
                        EngineError::Invariant(format!(
                            "cannot read the idempotency record of {}: {e}",
                            step.id
                        ))
                    })?
                }
                None => None,
            };
            records.push((step.id.clone(), record));
        }
        Ok(records)
    }

    /// A failure of the idempotency log, as the sink failure it is.
    fn log_error(&self, message: String) -> EngineError {
        EngineError::Sink(SinkError {
            seq: self.state.last_seq(),
            message,
        })
    }
}

/// A role the strategy needs, or the failure that says none is configured.
fn configured<T: ?Sized>(
    role: Option<&std::sync::Arc<T>>,
    name: RoleName,
) -> Result<std::sync::Arc<T>, RoleError> {
    role.cloned().ok_or_else(|| {
        let article = if matches!(name, RoleName::Actor | RoleName::Assessor) {
            "an"
        } else {
            "a"
        };
        RoleError::failed(
            name,
            FailureClass::Persistent,
            format!("this strategy needs {article} {name} role, and none is configured"),
        )
    })
}
