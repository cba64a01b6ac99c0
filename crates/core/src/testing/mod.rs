//! Scripted roles and tools for tests — yours and ours. Each scripted role
//! replays a queue of answers in order and counts its calls; an exhausted
//! script is a typed role failure, never a panic.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use futures::future::BoxFuture;
use serde_json::{Value, json};

use crate::goal::Goal;
use crate::plan::{DraftPlan, Plan, Step};
use crate::retry::FailureClass;
use crate::roles::{
    AssessRequest, Assessment, Assessor, Evidence, PlanRequest, Planner, RepairRequest, Repairer,
    ReplanRequest, Replanner, Reply, Report, ReviewDecision, Reviewer, RoleError, RoleName,
    StepOutcome, Synthesizer,
};
use crate::state::RunState;
use crate::tool::{DynTool, ToolContext, ToolError, ToolSpec};

mod strategy;
mod stream;
pub use strategy::{
    Costed, PrefixSummarizer, ScriptedActor, ScriptedRouter, ScriptedVerifier, capped_router,
};
pub use stream::{FirstCall, FirstCallRow, StreamingPlanner, first_call_engine, first_calls};

/// A queue of scripted answers with a call counter.
#[derive(Debug)]
pub struct Script<T> {
    role: RoleName,
    answers: Mutex<VecDeque<Result<T, RoleError>>>,
    calls: AtomicUsize,
}

impl<T> Script<T> {
    /// A script for `role` that answers in this order.
    pub fn new(role: RoleName, answers: impl IntoIterator<Item = Result<T, RoleError>>) -> Self {
        Self {
            role,
            answers: Mutex::new(answers.into_iter().collect()),
            calls: AtomicUsize::new(0),
        }
    }

    /// How many times the role was asked.
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    /// The next answer, or `None` when the script is exhausted.
    fn next_answer(&self) -> Option<Result<T, RoleError>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.answers
            .lock()
            .map(|mut q| q.pop_front())
            .unwrap_or(None)
    }

    fn next(&self) -> Result<Reply<T>, RoleError> {
        match self.next_answer() {
            Some(answer) => answer.map(Reply::free),
            None => Err(exhausted(self.role)),
        }
    }
}

fn exhausted(role: RoleName) -> RoleError {
    RoleError::failed(role, FailureClass::Fatal, "the script has no more answers")
}

/// A planner that replays drafts.
#[derive(Debug)]
pub struct ScriptedPlanner(pub Script<DraftPlan>);

impl ScriptedPlanner {
    /// Answers with these plans, in order.
    pub fn new(plans: impl IntoIterator<Item = DraftPlan>) -> Self {
        Self(Script::new(RoleName::Planner, plans.into_iter().map(Ok)))
    }
}

#[async_trait]
impl Planner for ScriptedPlanner {
    async fn plan(&self, _request: PlanRequest<'_>) -> Result<Reply<DraftPlan>, RoleError> {
        self.0.next()
    }
}

/// A repairer that replays drafts.
#[derive(Debug)]
pub struct ScriptedRepairer(pub Script<DraftPlan>);

impl ScriptedRepairer {
    /// Answers with these plans, in order.
    pub fn new(plans: impl IntoIterator<Item = DraftPlan>) -> Self {
        Self(Script::new(RoleName::Repairer, plans.into_iter().map(Ok)))
    }
}

#[async_trait]
impl Repairer for ScriptedRepairer {
    async fn repair(&self, _request: RepairRequest<'_>) -> Result<Reply<DraftPlan>, RoleError> {
        self.0.next()
    }
}

/// A replanner that replays drafts of the remaining steps.
#[derive(Debug)]
pub struct ScriptedReplanner(pub Script<DraftPlan>);

impl ScriptedReplanner {
    /// Answers with these drafts, in order.
    pub fn new(plans: impl IntoIterator<Item = DraftPlan>) -> Self {
        Self(Script::new(RoleName::Replanner, plans.into_iter().map(Ok)))
    }
}

#[async_trait]
impl Replanner for ScriptedReplanner {
    async fn replan(&self, _request: ReplanRequest<'_>) -> Result<Reply<DraftPlan>, RoleError> {
        self.0.next()
    }
}

/// A reviewer that replays decisions.
#[derive(Debug)]
pub struct ScriptedReviewer(pub Script<ReviewDecision>);

impl ScriptedReviewer {
    /// Answers with these decisions, in order.
    pub fn new(decisions: impl IntoIterator<Item = ReviewDecision>) -> Self {
        Self(Script::new(
            RoleName::Reviewer,
            decisions.into_iter().map(Ok),
        ))
    }
}

#[async_trait]
impl Reviewer for ScriptedReviewer {
    async fn review(&self, _goal: &Goal, _plan: &Plan) -> Result<Reply<ReviewDecision>, RoleError> {
        self.0.next()
    }
}

type AssessFn = dyn Fn(&AssessRequest<'_>) -> Assessment + Send + Sync;

/// An assessor that replays assessments; when the script runs out it falls
/// back to a rule (by default: a success meets its criteria and the run
/// continues, a failure is a gap worth a replan).
pub struct ScriptedAssessor {
    script: Script<Assessment>,
    fallback: Box<AssessFn>,
}

impl std::fmt::Debug for ScriptedAssessor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptedAssessor")
            .field("calls", &self.script.calls())
            .finish()
    }
}

impl ScriptedAssessor {
    /// Replays `answers`, then applies the default rule.
    pub fn new(answers: impl IntoIterator<Item = Assessment>) -> Self {
        Self::with_rule(answers, |request| match request.outcome {
            StepOutcome::Succeeded(_) => Assessment::ok(format!("{} done", request.step.id)),
            StepOutcome::Failed(f) => {
                Assessment::gap(format!("{} failed: {}", request.step.id, f.message))
            }
        })
    }

    /// Replays `answers`, then applies `rule`.
    pub fn with_rule(
        answers: impl IntoIterator<Item = Assessment>,
        rule: impl Fn(&AssessRequest<'_>) -> Assessment + Send + Sync + 'static,
    ) -> Self {
        Self {
            script: Script::new(RoleName::Assessor, answers.into_iter().map(Ok)),
            fallback: Box::new(rule),
        }
    }

    /// How many times it was asked.
    pub fn calls(&self) -> usize {
        self.script.calls()
    }
}

#[async_trait]
impl Assessor for ScriptedAssessor {
    async fn assess(&self, request: AssessRequest<'_>) -> Result<Reply<Assessment>, RoleError> {
        match self.script.next_answer() {
            Some(answer) => answer.map(Reply::free),
            None => Ok(Reply::free((self.fallback)(&request))),
        }
    }

    /// Scripted answers and rules, in memory.
    fn is_local(&self) -> bool {
        true
    }
}

/// The first non-empty string in a value (depth first, in key order).
fn first_text(value: &Value) -> Option<&str> {
    match value {
        Value::String(s) if !s.trim().is_empty() => Some(s),
        Value::Array(items) => items.iter().find_map(first_text),
        Value::Object(map) => map.values().find_map(first_text),
        _ => None,
    }
}

/// A synthesizer that writes one line per succeeded step and cites each
/// step's output (or the first text in it) as evidence, or replays
/// scripted reports.
#[derive(Debug)]
pub struct ScriptedSynthesizer(pub Script<Report>);

impl ScriptedSynthesizer {
    /// Replays these reports; when none are left, summarises the results.
    pub fn new(reports: impl IntoIterator<Item = Report>) -> Self {
        Self(Script::new(
            RoleName::Synthesizer,
            reports.into_iter().map(Ok),
        ))
    }

    /// Always summarises the results.
    pub fn summarising() -> Self {
        Self::new([])
    }
}

#[async_trait]
impl Synthesizer for ScriptedSynthesizer {
    async fn synthesize(&self, state: &RunState) -> Result<Reply<Report>, RoleError> {
        if let Some(answer) = self.0.next_answer() {
            return answer.map(Reply::free);
        }
        let mut text = format!("# {}\n\n", crate::goal::title(&state.goal));
        let mut evidence = Vec::new();
        for (id, result) in &state.step_results {
            let quote = match &result.output {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            text.push_str(&format!("- {id}: {quote} [{id}]\n"));
            // The output itself, or the first text in it: a report that
            // cites nothing would not be `ok`.
            if let Some(s) = first_text(&result.output) {
                evidence.push(Evidence {
                    source_id: id.to_string(),
                    step: id.clone(),
                    quote: s.to_owned(),
                });
            }
        }
        Ok(Reply::free(Report {
            text,
            evidence,
            gaps: Vec::new(),
        }))
    }
}

type ToolFn =
    dyn Fn(ToolContext, Value) -> BoxFuture<'static, Result<Value, ToolError>> + Send + Sync;

/// A tool built from a closure, with a call log.
pub struct FnTool {
    spec: ToolSpec,
    call: Box<ToolFn>,
    log: Arc<Mutex<Vec<Value>>>,
}

impl std::fmt::Debug for FnTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FnTool")
            .field("name", &self.spec.name)
            .finish()
    }
}

impl FnTool {
    /// A read-only tool taking any object.
    pub fn new(
        name: &str,
        call: impl Fn(Value) -> BoxFuture<'static, Result<Value, ToolError>> + Send + Sync + 'static,
    ) -> Self {
        Self::with_context(name, move |_ctx, args| call(args))
    }

    /// A read-only tool that also sees its [`ToolContext`] (run, step, idempotency key).
    pub fn with_context(
        name: &str,
        call: impl Fn(ToolContext, Value) -> BoxFuture<'static, Result<Value, ToolError>>
        + Send
        + Sync
        + 'static,
    ) -> Self {
        let spec = ToolSpec {
            name: name.to_owned(),
            description: format!("scripted tool {name}"),
            args_schema: json!({"type": "object"}),
            side_effect: false,
            idempotent: true,
            timeout_ms: None,
            destructive: false,
            output_schema: None,
        };
        Self {
            spec,
            call: Box::new(call),
            log: Arc::new(Mutex::new(Vec::new())),
        }
    }

    /// Echoes `{"echo": args}` after `latency` (on tokio's clock, so a paused clock skips it).
    pub fn echo(name: &str, latency: Duration) -> Self {
        Self::new(name, move |args| {
            Box::pin(async move {
                tokio::time::sleep(latency).await;
                Ok(json!({ "echo": args }))
            })
        })
    }

    /// Replaces the argument schema.
    #[must_use]
    pub fn with_schema(mut self, schema: Value) -> Self {
        self.spec.args_schema = schema;
        self
    }

    /// Marks it as having side effects.
    #[must_use]
    pub fn with_side_effect(mut self) -> Self {
        self.spec.side_effect = true;
        self.spec.idempotent = false;
        self
    }

    /// Marks it as safe to repeat for the same idempotency key.
    #[must_use]
    pub fn with_idempotent(mut self) -> Self {
        self.spec.idempotent = true;
        self
    }

    /// Sets a timeout per call.
    #[must_use]
    pub fn with_timeout_ms(mut self, ms: u64) -> Self {
        self.spec.timeout_ms = Some(ms);
        self
    }

    /// A handle on the arguments of every call so far.
    pub fn log(&self) -> Arc<Mutex<Vec<Value>>> {
        Arc::clone(&self.log)
    }
}

impl DynTool for FnTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call_json(&self, ctx: ToolContext, args: Value) -> BoxFuture<'_, Result<Value, ToolError>> {
        if let Ok(mut log) = self.log.lock() {
            log.push(args.clone());
        }
        (self.call)(ctx, args)
    }
}

/// Shorthand: a draft plan from steps.
pub fn draft(steps: Vec<Step>) -> DraftPlan {
    DraftPlan::from_steps(steps)
}

pub mod store_conformance;

/// A sink that hands events on to `inner` and fails from the `limit + 1`-th
/// on: the engine stops there as if the process had died, leaving exactly
/// `limit` events recorded — for crash-and-resume tests at every event.
pub struct CrashAfter {
    inner: Arc<dyn crate::event::EventSink>,
    limit: usize,
    seen: AtomicUsize,
}

impl CrashAfter {
    /// Records `limit` events in `inner`, then fails.
    pub fn new(inner: Arc<dyn crate::event::EventSink>, limit: usize) -> Self {
        Self {
            inner,
            limit,
            seen: AtomicUsize::new(0),
        }
    }
}

impl std::fmt::Debug for CrashAfter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CrashAfter")
            .field("limit", &self.limit)
            .finish_non_exhaustive()
    }
}

impl crate::event::EventSink for CrashAfter {
    fn record<'a>(
        &'a self,
        run: &'a crate::ids::RunId,
        event: &'a crate::event::Event,
    ) -> BoxFuture<'a, Result<(), crate::event::SinkError>> {
        Box::pin(async move {
            if self.seen.fetch_add(1, Ordering::SeqCst) >= self.limit {
                return Err(crate::event::SinkError {
                    seq: event.seq,
                    message: "crash".into(),
                });
            }
            self.inner.record(run, event).await
        })
    }
}
