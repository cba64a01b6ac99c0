//! [`RunState`]: everything seed 001's state table lists, plus usage. It
//! changes only by [`RunState::apply`]ing events, so folding a run's log
//! rebuilds it exactly.

use std::collections::{BTreeMap, BTreeSet};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::decision::Evidence;
pub use crate::decision::StepResult;
use crate::event::{Event, EventKind, StopCondition};
use crate::goal::{Constraints, Goal};
use crate::ids::{RunId, StepId};
use crate::plan::validate::Diagnostic;
use crate::plan::{Plan, compose};
use crate::step_status::{IllegalTransition, StepStatus};
use crate::usage::Usage;

/// Where a run ended up.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Still going.
    #[default]
    Running,
    /// Finished with a report (possibly naming gaps).
    Ok,
    /// Stopped safely; a person must look.
    NeedsReview,
    /// Could not run (empty input, a role failed).
    Failed,
    /// Paused until a person approves a plan or a side-effect step.
    AwaitingApproval,
    /// Stopped by a person.
    Cancelled,
}

impl RunStatus {
    /// Every status.
    pub const ALL: [RunStatus; 6] = [
        Self::Running,
        Self::Ok,
        Self::NeedsReview,
        Self::Failed,
        Self::AwaitingApproval,
        Self::Cancelled,
    ];

    /// Whether the run has ended for good (`ok`, `failed`, `cancelled`):
    /// nothing can resume or change it. A paused run (awaiting approval,
    /// needs review) has not.
    pub fn has_ended(self) -> bool {
        matches!(self, Self::Ok | Self::Failed | Self::Cancelled)
    }

    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Ok => "ok",
            Self::NeedsReview => "needs_review",
            Self::Failed => "failed",
            Self::AwaitingApproval => "awaiting_approval",
            Self::Cancelled => "cancelled",
        }
    }
}

/// References resolve against the recorded results, borrowed.
impl crate::plan::args::Outputs for BTreeMap<StepId, StepResult> {
    fn output(&self, step: &StepId) -> Option<&Value> {
        self.get(step).map(|r| &r.output)
    }
}

/// An event that does not fit the state it is applied to: a bug or a corrupt log.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StateError {
    /// Events must come in order, from 1, without gaps.
    #[error("event out of order: expected seq {expected}, got {got}")]
    Sequence {
        /// The next sequence number.
        expected: u64,
        /// The one given.
        got: u64,
    },
    /// The first event of a run must be `run_started`, and only the first.
    #[error("`run_started` must be the first event and only the first")]
    NotStarted,
    /// The event names a step the plan does not have.
    #[error("event for unknown step {0}")]
    UnknownStep(StepId),
    /// The event asks for an illegal status change.
    #[error("step {step}: {source}")]
    Transition {
        /// The step.
        step: StepId,
        /// The illegal change.
        source: IllegalTransition,
    },
    /// A new plan version drops or rewinds a step of the previous one.
    #[error("new plan version rewrites step {step}: {reason}")]
    PlanRewritten {
        /// The step.
        step: StepId,
        /// How.
        reason: String,
    },
    /// A step added to the plan has the id of one already in it.
    #[error("step {0} is already in the plan")]
    DuplicateStep(StepId),
}

/// The whole state of one run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunState {
    /// The run.
    pub run_id: RunId,
    /// The raw request.
    pub input: String,
    /// The normalised goal (empty until prepare_input accepts the input).
    pub goal: String,
    /// Audience, length, sections, tools, budgets.
    pub constraints: Constraints,
    /// Source notes supplied to the run (filled by callers that have them).
    pub source_notes: Vec<Value>,
    /// The current (last validated) plan, with every step's status.
    pub plan: Plan,
    /// Diagnostics of the last invalid draft.
    pub plan_errors: Vec<Diagnostic>,
    /// The current plan version is approved to run.
    pub approved_plan: bool,
    /// The plan version the approval is for.
    pub approved_version: Option<u32>,
    /// Steps running right now (seed 001's `current_step_id`, for a parallel scheduler).
    pub current_step_ids: Vec<StepId>,
    /// Results of succeeded steps.
    pub step_results: BTreeMap<StepId, StepResult>,
    /// Facts and progress notes.
    pub observations: Vec<String>,
    /// Missing evidence, open questions, unmet criteria. Never filled by a guess.
    pub knowledge_gaps: Vec<String>,
    /// Read-only steps that succeeded before the sources changed (a resume
    /// said so): what they returned came from sources since replaced.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub stale_steps: BTreeSet<StepId>,
    /// Every decision, in order.
    pub execution_history: Vec<Event>,
    /// Replans made.
    pub replan_count: u32,
    /// Replan bound.
    pub max_replans: u32,
    /// Step bound.
    pub max_steps: usize,
    /// Repairs made on the draft under validation.
    pub repair_count: u32,
    /// Repair bound per draft.
    pub max_repairs: u32,
    /// The plan document waiting for validation, if any.
    pub pending_draft: Option<Value>,
    /// Why the run cannot continue by itself.
    pub blocked_reason: Option<String>,
    /// The report, once synthesized; the partial brief of a run that
    /// stopped for review.
    pub final_report: Option<String>,
    /// Evidence the report cites.
    pub evidence: Vec<Evidence>,
    /// ok, needs_review, failed (or running).
    pub status: RunStatus,
    /// Cost so far.
    pub usage: Usage,
    /// Approvals on record: step -> approved tool-and-arguments hash.
    pub approvals: BTreeMap<StepId, String>,
    /// Who gave each approval on record, so a report can say who let a
    /// side effect happen even when the log is not kept in memory.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub approved_by: BTreeMap<StepId, String>,
    /// Approvals asked for and not yet given: step -> requested hash.
    pub pending_approvals: BTreeMap<StepId, String>,
    /// A plan version waiting for a person's review.
    pub pending_review: Option<u32>,
    /// Settings of the program that started the run (see `run_started`).
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub host: Value,
    /// The strategy the run was started with.
    #[serde(default)]
    pub strategy: String,
    /// How the strategy chose to drive the run (`None` until it chose).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver: Option<crate::decision::Driver>,
    /// `verified`: the verifier's judgement of each iteration, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verification_history: Vec<crate::decision::Verification>,
    /// The stop condition that ended the run's loop, if one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_condition: Option<StopCondition>,
    /// `react-isolated`: the summaries of step results the actor saw.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub step_summaries: BTreeMap<StepId, String>,
    /// The last failure message of each step that failed.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub step_failures: BTreeMap<StepId, String>,
    /// Where the graph stands between events (the decision held until
    /// in-flight steps finish) and what a resume reads of the log. Folded
    /// from the log like the rest, and kept in the JSON so that a snapshot
    /// without the history holds it.
    #[serde(default, skip_serializing_if = "crate::cursor::Cursor::is_empty")]
    #[schemars(skip)]
    pub cursor: crate::cursor::Cursor,
    /// Where the plan's steps sit, for lookups by id: a cache, not state.
    #[serde(skip)]
    pub(crate) index: crate::scheduler::PlanIndex,
    /// The log's last number and first and last times, kept by the fold:
    /// what a run whose history is not kept in memory (see
    /// [`forget_history`](Self::forget_history)) still needs of it.
    #[serde(skip)]
    pub(crate) tally: Tally,
    /// Why each step was terminated (the last reason on record).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub step_terminations: BTreeMap<StepId, String>,
}

/// What the fold remembers of the log itself. Derived from the events, so
/// (like the plan index) it takes no part in equality.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Tally {
    last_seq: u64,
    first_at: Option<chrono::DateTime<chrono::Utc>>,
    last_at: Option<chrono::DateTime<chrono::Utc>>,
}

impl PartialEq for Tally {
    fn eq(&self, _other: &Self) -> bool {
        true
    }
}

fn push_unique(list: &mut Vec<String>, item: &str) {
    if !list.iter().any(|g| g == item) {
        list.push(item.to_owned());
    }
}

impl RunState {
    /// `kinds` as the events that come next in this run's log: numbered
    /// after its last event and stamped now — what a person's change
    /// (approve, reject, cancel) appends from outside the engine.
    pub fn next_events(&self, kinds: impl IntoIterator<Item = EventKind>) -> Vec<Event> {
        let first = self.last_seq() + 1;
        let at = chrono::Utc::now();
        kinds
            .into_iter()
            .zip(first..)
            .map(|(kind, seq)| Event { seq, at, kind })
            .collect()
    }

    /// The number of the run's last event (0 before `run_started`), whether
    /// or not its history is kept in memory.
    pub fn last_seq(&self) -> u64 {
        let kept = self.execution_history.last().map_or(0, |e| e.seq);
        kept.max(self.tally.last_seq)
    }

    /// When the run's first event was recorded.
    pub fn started_at(&self) -> Option<chrono::DateTime<chrono::Utc>> {
        self.execution_history
            .first()
            .map(|e| e.at)
            .or(self.tally.first_at)
    }

    /// When the run's last event was recorded.
    pub fn updated_at(&self) -> Option<chrono::DateTime<chrono::Utc>> {
        let kept = self.execution_history.last().map(|e| e.at);
        kept.max(self.tally.last_at)
    }

    /// Drops the history from memory, keeping what the fold needs of it:
    /// for a run whose log a store holds (see
    /// [`RunConfig::keep_history`](crate::engine::RunConfig::keep_history)).
    /// Everything else in the state is the same.
    pub fn forget_history(&mut self) {
        self.tally.last_seq = self.last_seq();
        self.tally.first_at = self.started_at();
        self.tally.last_at = self.updated_at();
        self.execution_history = Vec::new();
    }

    /// Rebuilds a run's state from its log.
    pub fn from_events<'a>(
        events: impl IntoIterator<Item = &'a Event>,
    ) -> Result<Self, StateError> {
        let mut state = Self::default();
        for event in events {
            state.apply(event)?;
        }
        Ok(state)
    }

    /// The goal with its constraints, as roles take it.
    pub fn goal(&self) -> Goal {
        Goal {
            input: self.input.clone(),
            goal: self.goal.clone(),
            constraints: self.constraints.clone(),
        }
    }

    /// Output of a succeeded step, by id — what references resolve against.
    pub fn outputs(&self) -> BTreeMap<StepId, Value> {
        self.step_results
            .iter()
            .map(|(id, r)| (id.clone(), r.output.clone()))
            .collect()
    }

    /// Takes a step off `current_step_ids` (where a step is at most once: it
    /// is added when it starts and removed whenever it stops running).
    fn not_running(&mut self, step: &StepId) {
        if let Some(i) = self.current_step_ids.iter().position(|s| s == step) {
            self.current_step_ids.remove(i);
        }
    }

    fn set_status(
        &mut self,
        id: &StepId,
        to: StepStatus,
    ) -> Result<&mut crate::plan::Step, StateError> {
        let at = self
            .index
            .position(&self.plan, id)
            .ok_or_else(|| StateError::UnknownStep(id.clone()))?;
        let from = self.plan.steps[at].status;
        self.plan.steps[at].status =
            from.transition(to)
                .map_err(|source| StateError::Transition {
                    step: id.clone(),
                    source,
                })?;
        self.index.changed(&self.plan, at, from);
        Ok(&mut self.plan.steps[at])
    }

    fn adopt(&mut self, plan: &Plan) -> Result<(), StateError> {
        for old in &self.plan.steps {
            let Some(new) = plan.step(&old.id) else {
                return Err(StateError::PlanRewritten {
                    step: old.id.clone(),
                    reason: "dropped".to_owned(),
                });
            };
            if old.status != new.status && !old.status.can_transition_to(new.status) {
                return Err(StateError::PlanRewritten {
                    step: old.id.clone(),
                    reason: format!("status {} -> {}", old.status, new.status),
                });
            }
            if old.status != StepStatus::Pending && old != new && new.status == old.status {
                return Err(StateError::PlanRewritten {
                    step: old.id.clone(),
                    reason: "changed after it ran".to_owned(),
                });
            }
        }
        self.plan = plan.clone();
        Ok(())
    }

    /// Applies one event. The only way state changes. An event that does
    /// not fit is refused before anything changes.
    pub fn apply(&mut self, event: &Event) -> Result<(), StateError> {
        self.fold(event)?;
        self.remember(event.clone());
        Ok(())
    }

    /// [`apply`](Self::apply), keeping the event instead of a copy of it.
    pub(crate) fn apply_owned(&mut self, event: Event) -> Result<(), StateError> {
        self.fold(&event)?;
        self.remember(event);
        Ok(())
    }

    /// [`apply`](Self::apply) without keeping the event: for a run whose
    /// history is not kept in memory (see [`forget_history`](Self::forget_history)),
    /// such as the state a store folds beside the log it writes.
    pub fn apply_forgetting(&mut self, event: &Event) -> Result<(), StateError> {
        self.fold(event)
    }

    /// Appends to the history, growing it by half rather than doubling: an
    /// event is a few hundred bytes inline, and a run in flight keeps them all.
    fn remember(&mut self, event: Event) {
        let history = &mut self.execution_history;
        if history.len() == history.capacity() {
            history.reserve_exact((history.capacity() / 2).max(8));
        }
        history.push(event);
    }

    /// Everything `apply` does but recording the event in the history.
    fn fold(&mut self, event: &Event) -> Result<(), StateError> {
        let expected = self.last_seq() + 1;
        if event.seq != expected {
            return Err(StateError::Sequence {
                expected,
                got: event.seq,
            });
        }
        if matches!(event.kind, EventKind::RunStarted { .. }) != (expected == 1) {
            return Err(StateError::NotStarted);
        }
        // What a resume goes on from: how the run stopped.
        let was = matches!(event.kind, EventKind::RunResumed { .. })
            .then(|| (self.status, self.blocked_reason.clone()));
        match &event.kind {
            EventKind::RunStarted {
                run_id,
                input,
                constraints,
                max_replans,
                max_steps,
                max_repairs,
                host,
                strategy,
            } => {
                self.host = host.clone();
                self.strategy = strategy.clone();
                self.run_id = run_id.clone();
                self.input = input.clone();
                self.constraints = (**constraints).clone();
                self.max_replans = *max_replans;
                self.max_steps = *max_steps;
                self.max_repairs = *max_repairs;
            }
            EventKind::InputRejected { reason } => {
                self.status = RunStatus::Failed;
                self.blocked_reason = Some(reason.clone());
            }
            EventKind::InputPrepared { goal } => {
                self.goal = goal.goal.clone();
                self.constraints = goal.constraints.clone();
            }
            EventKind::PlanCreated { draft, usage } => {
                self.pending_draft = Some(compose(&self.plan, draft));
                self.usage += *usage;
            }
            EventKind::PlanValidated { plan } => {
                self.adopt(plan)?;
                self.plan_errors.clear();
                self.pending_draft = None;
                self.repair_count = 0;
                self.approved_plan = false;
            }
            EventKind::PlanInvalid { diagnostics } => self.plan_errors = diagnostics.clone(),
            EventKind::PlanRepaired {
                attempt,
                draft,
                usage,
            } => {
                self.pending_draft = Some(compose(&self.plan, draft));
                self.repair_count = *attempt;
                self.usage += *usage;
            }
            EventKind::PlanApproved { version, usage, .. } => {
                self.pending_review = None;
                self.approved_plan = true;
                self.approved_version = Some(*version);
                self.usage += *usage;
            }
            EventKind::PlanRejected { reason, usage, .. } => {
                self.approved_plan = false;
                self.blocked_reason = Some(format!("plan rejected: {reason}"));
                self.usage += *usage;
            }
            EventKind::StepStarted { step, attempt } => {
                self.set_status(step, StepStatus::Running)?.attempts = *attempt;
                self.current_step_ids.push(step.clone());
                self.usage.tool_calls += 1;
            }
            EventKind::StepSucceeded {
                step,
                result,
                usage,
            } => {
                self.set_status(step, StepStatus::Succeeded)?;
                self.not_running(step);
                self.step_results.insert(step.clone(), result.clone());
                self.usage += *usage;
            }
            EventKind::StepFailed { step, failure, .. } => {
                self.set_status(step, StepStatus::Failed)?;
                self.not_running(step);
                self.usage += failure.usage;
                self.step_failures
                    .insert(step.clone(), failure.message.clone());
            }
            EventKind::StrategyChosen {
                strategy,
                driver,
                usage,
                ..
            } => {
                self.strategy = strategy.clone();
                self.driver = Some(*driver);
                self.usage += *usage;
            }
            EventKind::StrategyEscalated { to, usage, .. } => {
                self.driver = Some(*to);
                self.usage += *usage;
            }
            EventKind::StepAdded {
                step,
                usage,
                streamed,
            } => {
                if self.plan.step(&step.id).is_some() {
                    return Err(StateError::DuplicateStep(step.id.clone()));
                }
                let mut step = (**step).clone();
                step.status = StepStatus::Pending;
                step.attempts = 0;
                if !streamed {
                    // A streamed plan stays version 0 until it is validated whole.
                    self.plan.version = self.plan.version.max(1);
                }
                self.plan.steps.push(step);
                self.usage += *usage;
            }
            EventKind::StepSkipped { step, reason } => {
                self.set_status(step, StepStatus::Skipped)?;
                push_unique(&mut self.knowledge_gaps, reason);
            }
            EventKind::GapsNoted { gaps } => {
                for gap in gaps {
                    push_unique(&mut self.knowledge_gaps, gap);
                }
            }
            EventKind::StepSummarized {
                step,
                summary,
                usage,
            } => {
                self.step_summaries.insert(step.clone(), summary.clone());
                self.usage += *usage;
            }
            EventKind::Verified {
                verification,
                usage,
                ..
            } => {
                self.verification_history.push(verification.clone());
                self.usage += *usage;
            }
            EventKind::StepRetrying { step, .. } => {
                self.set_status(step, StepStatus::Retrying)?;
            }
            EventKind::StepTerminated { step, reason } => {
                self.set_status(step, StepStatus::Terminated)?;
                self.step_terminations.insert(step.clone(), reason.clone());
            }
            EventKind::Assessed {
                new_gaps,
                resolved_gaps,
                observations,
                usage,
                ..
            } => {
                self.knowledge_gaps.retain(|g| !resolved_gaps.contains(g));
                for gap in new_gaps {
                    push_unique(&mut self.knowledge_gaps, gap);
                }
                self.observations.extend(observations.iter().cloned());
                self.usage += *usage;
            }
            EventKind::StopConditionMet {
                condition,
                detail,
                gaps,
                usage,
            } => {
                self.usage += *usage;
                if condition.needs_review() {
                    self.blocked_reason = Some(format!("{condition}: {detail}"));
                }
                self.stop_condition = Some(*condition);
                for gap in gaps {
                    push_unique(&mut self.knowledge_gaps, gap);
                }
            }
            EventKind::Replanned {
                replan_count,
                draft,
                usage,
                ..
            } => {
                self.replan_count = *replan_count;
                self.pending_draft = Some(compose(&self.plan, draft));
                self.usage += *usage;
            }
            EventKind::Synthesized {
                report,
                evidence,
                usage,
                ..
            } => {
                self.final_report = Some(report.clone());
                self.evidence = evidence.clone();
                self.status = RunStatus::Ok;
                self.usage += *usage;
            }
            EventKind::NeedsReview {
                reason,
                usage,
                brief,
                ..
            } => {
                self.usage += *usage;
                self.status = RunStatus::NeedsReview;
                self.blocked_reason = Some(reason.clone());
                if let Some(brief) = brief {
                    self.final_report = Some(brief.report.clone());
                    self.evidence = brief.evidence.clone();
                }
            }
            EventKind::RunFailed { error, usage } => {
                self.status = RunStatus::Failed;
                self.blocked_reason = Some(error.clone());
                self.usage += *usage;
            }
            EventKind::PlanReviewRequested { version } => self.pending_review = Some(*version),
            EventKind::ApprovalRequested {
                step, args_hash, ..
            } => {
                self.pending_approvals
                    .insert(step.clone(), args_hash.clone());
            }
            EventKind::ApprovalGranted {
                step,
                args_hash,
                by,
            } => {
                self.pending_approvals.remove(step);
                self.approvals.insert(step.clone(), args_hash.clone());
                self.approved_by.insert(step.clone(), by.clone());
            }
            EventKind::ApprovalDenied { step, reason, by } => {
                self.pending_approvals.remove(step);
                self.blocked_reason = Some(format!("{by} refused {step}: {reason}"));
            }
            EventKind::AwaitingApproval {
                steps,
                plan_version,
            } => {
                self.status = RunStatus::AwaitingApproval;
                let mut what: Vec<String> = steps.iter().map(|s| format!("step {s}")).collect();
                if let Some(v) = plan_version {
                    what.insert(0, format!("plan version {v}"));
                }
                self.blocked_reason = Some(format!("waiting for approval of {}", what.join(", ")));
            }
            EventKind::StepInterrupted { step, .. } => {
                self.set_status(step, StepStatus::Failed)?;
                self.not_running(step);
            }
            EventKind::RunResumed {
                max_replans,
                max_steps,
                host,
                sources_changed,
                ..
            } => {
                if *sources_changed {
                    // Side effects (approved steps) are not repeated; reads are.
                    let read: Vec<StepId> = self
                        .plan
                        .steps
                        .iter()
                        .filter(|s| {
                            s.status == StepStatus::Succeeded && !self.approvals.contains_key(&s.id)
                        })
                        .map(|s| s.id.clone())
                        .collect();
                    self.stale_steps.extend(read);
                }
                self.status = RunStatus::Running;
                self.blocked_reason = None;
                self.repair_count = 0;
                // A partial brief was of the run as it stopped; it goes on now.
                self.final_report = None;
                self.evidence.clear();
                if !host.is_null() {
                    self.host = host.clone();
                }
                if let Some(n) = max_replans {
                    self.max_replans = *n;
                }
                if let Some(n) = max_steps {
                    self.max_steps = *n;
                }
            }
            // Recorded for audits and replay. Its cost is counted once, on the
            // event of the decision it served (plan_created, assessed,
            // step_succeeded, step_failed's failure, run_failed, …), never here:
            // see "Usage" in docs/models.md.
            EventKind::ModelCalled { .. } => {}
            EventKind::RunCancelled { reason } => {
                self.status = RunStatus::Cancelled;
                self.blocked_reason = Some(format!("cancelled: {reason}"));
            }
        }
        let resumed = was.as_ref().map(|(status, reason)| {
            let was_review = *status == RunStatus::NeedsReview;
            crate::cursor::Resumed {
                review: reason.as_deref().filter(|_| was_review),
                was_review,
                replans: matches!(
                    self.driver.unwrap_or(crate::decision::Driver::PLAN_EXECUTE),
                    crate::decision::Driver::Graph {
                        replanning: true,
                        ..
                    }
                ),
                plan_done: self.plan.steps.iter().all(|s| s.status.is_final()),
            }
        });
        self.cursor.apply(&event.kind, resumed);
        let first = self.started_at().unwrap_or(event.at);
        let elapsed = (event.at - first).num_milliseconds();
        self.usage.wall_time_ms = u64::try_from(elapsed).unwrap_or(0);
        self.tally = Tally {
            last_seq: event.seq,
            first_at: Some(first),
            last_at: Some(event.at),
        };
        Ok(())
    }

    /// Seed 001's `final_output`: what a user gets back.
    pub fn final_output(&self) -> FinalOutput {
        FinalOutput {
            run_id: self.run_id.clone(),
            status: self.status,
            final_report: self.final_report.clone().unwrap_or_default(),
            plan: self
                .plan
                .steps
                .iter()
                .map(|s| PlanSummary {
                    id: s.id.clone(),
                    description: s.description.clone(),
                    tool: s.tool.clone(),
                    depends_on: s.depends_on.clone(),
                    status: s.status,
                    attempts: s.attempts,
                })
                .collect(),
            plan_version: self.plan.version,
            step_results: self.step_results.clone(),
            knowledge_gaps: self.knowledge_gaps.clone(),
            evidence: self.evidence.clone(),
            blocked_reason: self.blocked_reason.clone(),
            plan_errors: self.plan_errors.clone(),
            replan_count: self.replan_count,
            usage: self.usage,
            usage_by_step: usage_by_step(&self.execution_history),
            usage_by_role: usage_by_role(&self.execution_history),
            strategy: self.strategy.clone(),
            stop_condition: self.stop_condition,
            verification: self.verification_history.last().cloned(),
            execution_history: self.execution_history.clone(),
        }
    }
}

/// One step in the final output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PlanSummary {
    /// The step.
    pub id: StepId,
    /// What it was for.
    pub description: String,
    /// The tool it called.
    pub tool: String,
    /// Its dependencies.
    pub depends_on: Vec<StepId>,
    /// Where it ended.
    pub status: StepStatus,
    /// Attempts made.
    pub attempts: u32,
}

/// What a run returns to its user (seed 001's `final_output`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FinalOutput {
    /// The run.
    pub run_id: RunId,
    /// ok, needs_review or failed.
    pub status: RunStatus,
    /// The report: the final one when ok, the partial brief (what was
    /// found, cited, with its gaps) when needs_review; empty if there is none.
    pub final_report: String,
    /// Every step of the last plan with its status.
    pub plan: Vec<PlanSummary>,
    /// Version of that plan.
    pub plan_version: u32,
    /// Results of succeeded steps.
    pub step_results: BTreeMap<StepId, StepResult>,
    /// Gaps left open.
    pub knowledge_gaps: Vec<String>,
    /// Evidence the report cites.
    pub evidence: Vec<Evidence>,
    /// Why the run stopped, if it did not finish.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blocked_reason: Option<String>,
    /// Diagnostics of the last invalid plan, if any (left out when none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub plan_errors: Vec<Diagnostic>,
    /// Replans made.
    pub replan_count: u32,
    /// What it cost.
    pub usage: Usage,
    /// What each step's model calls cost (steps that made none are left out).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub usage_by_step: BTreeMap<StepId, Usage>,
    /// What each other role's model calls cost (planner, assessor, …).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub usage_by_role: BTreeMap<String, Usage>,
    /// The strategy it ran with.
    pub strategy: String,
    /// The stop condition that ended its loop, if one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_condition: Option<StopCondition>,
    /// `verified`: the last verdict.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verification: Option<crate::decision::Verification>,
    /// Every decision.
    pub execution_history: Vec<Event>,
}

/// The role name a step executor's model calls are recorded under.
pub const STEP_EXECUTOR_ROLE: &str = "step_executor";

/// What each step's executor spent on models (every attempt, failed ones
/// included), from `step_succeeded` and `step_failed` events: steps that
/// made no model call are left out. Only `llm_calls` and the tokens are set.
pub fn usage_by_step(history: &[Event]) -> BTreeMap<StepId, Usage> {
    let mut steps: BTreeMap<StepId, Usage> = BTreeMap::new();
    for event in history {
        let (step, usage) = match &event.kind {
            EventKind::StepSucceeded { step, usage, .. } => (step, *usage),
            EventKind::StepFailed { step, failure, .. } => (step, failure.usage),
            _ => continue,
        };
        if usage.llm_calls > 0 || usage.input_tokens > 0 || usage.output_tokens > 0 {
            *steps.entry(step.clone()).or_default() += model_part(usage);
        }
    }
    steps
}

/// What each role other than the step executor (planner, repairer,
/// assessor, replanner, synthesizer, …) spent on models, from its
/// `model_called` events (the step executor's calls are in
/// [`usage_by_step`]). Only `llm_calls` and the tokens are set.
pub fn usage_by_role(history: &[Event]) -> BTreeMap<String, Usage> {
    let mut roles: BTreeMap<String, Usage> = BTreeMap::new();
    for event in history {
        if let EventKind::ModelCalled { role, exchange } = &event.kind
            && role != STEP_EXECUTOR_ROLE
        {
            *roles.entry(role.clone()).or_default() += exchange.usage();
        }
    }
    roles
}

/// Calls and tokens only.
fn model_part(usage: Usage) -> Usage {
    Usage {
        llm_calls: usage.llm_calls,
        input_tokens: usage.input_tokens,
        output_tokens: usage.output_tokens,
        ..Usage::default()
    }
}

#[cfg(test)]
mod tests {
    use chrono::Utc;

    use super::*;

    fn ev(seq: u64, kind: EventKind) -> Event {
        Event {
            seq,
            at: Utc::now(),
            kind,
        }
    }

    fn started() -> Event {
        ev(
            1,
            EventKind::RunStarted {
                run_id: RunId("r".into()),
                input: "x".into(),
                constraints: Box::default(),
                max_replans: 1,
                max_steps: 5,
                max_repairs: 1,
                host: serde_json::Value::Null,
                strategy: "plan-execute".into(),
            },
        )
    }

    #[test]
    fn events_must_come_in_order_and_start_with_run_started() {
        let mut s = RunState::default();
        assert_eq!(
            s.apply(&ev(
                1,
                EventKind::NeedsReview {
                    reason: "x".into(),
                    usage: Usage::default(),
                    brief: None,
                    ask_again: false,
                }
            )),
            Err(StateError::NotStarted)
        );
        s.apply(&started()).unwrap();
        assert_eq!(
            s.apply(&ev(
                3,
                EventKind::NeedsReview {
                    reason: "x".into(),
                    usage: Usage::default(),
                    brief: None,
                    ask_again: false,
                }
            )),
            Err(StateError::Sequence {
                expected: 2,
                got: 3
            })
        );
    }

    #[test]
    fn logs_written_before_partial_briefs_and_resume_changes_still_load() {
        let old = [
            r#"{"seq":2,"at":"2025-01-01T00:00:00Z","kind":"run_resumed","by":"a","max_replans":null,"max_steps":null}"#,
            r#"{"seq":3,"at":"2025-01-01T00:00:01Z","kind":"needs_review","reason":"stuck"}"#,
        ];
        let mut s = RunState::default();
        s.apply(&started()).unwrap();
        for line in old {
            let event: Event = serde_json::from_str(line).unwrap();
            s.apply(&event).unwrap();
        }
        assert_eq!(s.status, RunStatus::NeedsReview);
        assert_eq!(s.final_report, None);
        assert_eq!(s.blocked_reason.as_deref(), Some("stuck"));
        // And the new fields stay out of the JSON when unused.
        let text = serde_json::to_string(&s.execution_history[2]).unwrap();
        assert!(
            !text.contains("brief") && !text.contains("ask_again"),
            "{text}"
        );
    }

    #[test]
    fn a_partial_brief_becomes_the_report_of_a_run_that_needs_review() {
        let mut s = RunState::default();
        s.apply(&started()).unwrap();
        let brief = crate::event::Brief {
            report: "## Found\n\n- a fact [n]".into(),
            evidence: vec![Evidence {
                source_id: "n".into(),
                step: "a".into(),
                quote: "a fact".into(),
            }],
            rejected_evidence: Vec::new(),
        };
        s.apply(&ev(
            2,
            EventKind::NeedsReview {
                reason: "bounds".into(),
                usage: Usage::default(),
                brief: Some(Box::new(brief)),
                ask_again: false,
            },
        ))
        .unwrap();
        assert_eq!(s.status, RunStatus::NeedsReview);
        assert_eq!(s.final_report.as_deref(), Some("## Found\n\n- a fact [n]"));
        assert_eq!(s.evidence.len(), 1);
        // Resumed, the run goes on: the brief was of the stop.
        s.apply(&ev(
            3,
            EventKind::RunResumed {
                by: "a".into(),
                max_replans: Some(2),
                max_steps: None,
                changed: vec!["max_replans raised from 1 to 2".into()],
                sources_changed: false,
                host: serde_json::json!({"notes": "/n"}),
            },
        ))
        .unwrap();
        assert_eq!(s.final_report, None);
        assert!(s.evidence.is_empty());
        assert_eq!(s.host, serde_json::json!({"notes": "/n"}));
    }

    #[test]
    fn illegal_step_transitions_in_the_log_are_refused() {
        let mut s = RunState::default();
        s.apply(&started()).unwrap();
        let plan = Plan {
            version: 1,
            steps: vec![crate::plan::Step::new("a", "d", "t")],
        };
        s.apply(&ev(2, EventKind::PlanValidated { plan })).unwrap();
        let result = StepResult {
            output: Value::Null,
            attempts: 1,
            duration_ms: 0,
        };
        let err = s
            .apply(&ev(
                3,
                EventKind::StepSucceeded {
                    step: "a".into(),
                    result,
                    usage: Usage::default(),
                },
            ))
            .unwrap_err();
        assert!(matches!(err, StateError::Transition { .. }), "{err}");
        assert_eq!(s.plan.steps[0].status, StepStatus::Pending);
    }
}
