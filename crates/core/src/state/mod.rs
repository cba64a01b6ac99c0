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
use crate::plan::Plan;
use crate::plan::validate::Diagnostic;
use crate::step_status::IllegalTransition;
use crate::usage::Usage;

mod fold;
mod output;

pub use output::{FinalOutput, PlanSummary, STEP_EXECUTOR_ROLE, usage_by_role, usage_by_step};

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
}
