//! The fold itself: [`Spans`] takes a run's events one by one and gives
//! back the spans each one finished.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use opentelemetry::trace::{Event as SpanEvent, SpanId, TraceId};
use opentelemetry::{InstrumentationScope, KeyValue};
use opentelemetry_sdk::trace::SpanData;
use serde_json::Value as Json;
use stepwise_core::event::{Event, EventKind};
use stepwise_core::state::STEP_EXECUTOR_ROLE;

use crate::trace::keys::*;

use super::ids::{span_id, trace_id};
use super::parts::{Attempt, Call, Ended, Node, Segment, Wave};
use super::values::{capped, int};

/// The fold of one run's events into spans.
pub(crate) struct Spans {
    pub(super) run: String,
    pub(super) content: bool,
    pub(super) scope: InstrumentationScope,
    pub(super) trace: TraceId,
    pub(super) root: SpanId,
    pub(super) root_sent: bool,
    pub(super) segment: Option<Segment>,
    pub(super) started: Option<DateTime<Utc>>,
    pub(super) input: String,
    pub(super) strategy: String,
    pub(super) plan_version: Option<u32>,
    pub(super) replans: u32,
    pub(super) tools: HashMap<String, (String, Json)>,
    pub(super) last_at: Option<DateTime<Utc>>,
    pub(super) calls: Vec<Call>,
    pub(super) executor_calls: Vec<Call>,
    pub(super) node: Option<Node>,
    pub(super) wave: Option<Wave>,
    pub(super) attempts: HashMap<String, Attempt>,
    pub(super) marks: Vec<SpanEvent>,
    pub(super) input_tokens: u64,
    pub(super) output_tokens: u64,
    pub(super) llm_calls: u64,
    pub(super) tool_calls: u64,
}

impl Spans {
    /// The fold for run `run`, continuing after `prior` (the events a
    /// previous process recorded, whose spans it sent).
    pub(crate) fn new(run: &str, content: bool, prior: &[Event]) -> Self {
        let mut spans = Self {
            run: run.to_owned(),
            content,
            scope: InstrumentationScope::builder("stepwise")
                .with_version(env!("CARGO_PKG_VERSION"))
                .build(),
            trace: trace_id(run),
            root: span_id(run, "run"),
            root_sent: false,
            segment: None,
            started: None,
            input: String::new(),
            strategy: String::new(),
            plan_version: None,
            replans: 0,
            tools: HashMap::new(),
            last_at: None,
            calls: Vec::new(),
            executor_calls: Vec::new(),
            node: None,
            wave: None,
            attempts: HashMap::new(),
            marks: Vec::new(),
            input_tokens: 0,
            output_tokens: 0,
            llm_calls: 0,
            tool_calls: 0,
        };
        for event in prior {
            let _sent_before = spans.apply(event);
        }
        // The previous process sent what was open when it stopped (or lost
        // it in a crash); steps still running go on and end here.
        let _sent_before = spans.finish();
        spans.segment = None;
        spans
    }

    /// The spans `event` ends.
    pub(crate) fn apply(&mut self, event: &Event) -> Vec<SpanData> {
        let mut out = Vec::new();
        let at = event.at;
        match &event.kind {
            EventKind::ModelCalled { role, exchange } => {
                let usage = exchange.usage();
                self.input_tokens += usage.input_tokens;
                self.output_tokens += usage.output_tokens;
                self.llm_calls += usage.llm_calls;
                let call = Call {
                    seq: event.seq,
                    at,
                    role: role.clone(),
                    exchange: (**exchange).clone(),
                };
                if role == STEP_EXECUTOR_ROLE {
                    self.executor_calls.push(call);
                } else {
                    self.calls.push(call);
                }
                return out; // a call happens inside the node it serves
            }
            EventKind::RunStarted {
                input, strategy, ..
            } => {
                self.started = Some(at);
                self.input.clone_from(input);
                self.strategy.clone_from(strategy);
            }
            EventKind::RunResumed { by, .. } => {
                if self.root_sent {
                    self.segment = Some(Segment {
                        id: span_id(&self.run, &format!("resume/{}", event.seq)),
                        start: at,
                        marks: Vec::new(),
                    });
                }
                self.mark(event, vec![KeyValue::new("stepwise.by", by.clone())]);
            }
            EventKind::InputPrepared { .. } => self.node(event, "prepare_input", vec![], &mut out),
            EventKind::InputRejected { .. } => {
                self.node(event, "prepare_input", vec![], &mut out);
                self.stop(event, "failed", Some("input_rejected".to_owned()), &mut out);
            }
            EventKind::StrategyChosen { strategy, .. } => {
                self.strategy.clone_from(strategy);
                let attrs = vec![KeyValue::new(STEPWISE_STRATEGY, strategy.clone())];
                self.node(event, "choose_strategy", attrs, &mut out);
            }
            EventKind::StrategyEscalated { .. } => {
                self.node(event, "escalate_strategy", vec![], &mut out);
            }
            EventKind::PlanCreated { .. } => self.node(event, "create_plan", vec![], &mut out),
            EventKind::PlanValidated { plan } => {
                self.plan_version = Some(plan.version);
                for step in &plan.steps {
                    self.tools.insert(
                        step.id.as_str().to_owned(),
                        (step.tool.clone(), Json::Object(step.args.clone())),
                    );
                }
                let attrs = vec![KeyValue::new(
                    "stepwise.steps",
                    int(plan.steps.len() as u64),
                )];
                self.node(event, "validate_plan", attrs, &mut out);
            }
            EventKind::PlanInvalid { diagnostics } => {
                let attrs = vec![KeyValue::new(
                    "stepwise.diagnostics",
                    int(diagnostics.len() as u64),
                )];
                self.node(event, "validate_plan", attrs, &mut out);
            }
            EventKind::PlanRepaired { .. } => self.node(event, "repair_plan", vec![], &mut out),
            EventKind::PlanApproved { .. }
            | EventKind::PlanRejected { .. }
            | EventKind::PlanReviewRequested { .. } => {
                self.node(event, "review_plan", vec![], &mut out);
            }
            EventKind::StepAdded { step, streamed, .. } => {
                self.tools.insert(
                    step.id.as_str().to_owned(),
                    (step.tool.clone(), Json::Object(step.args.clone())),
                );
                // A streamed plan's step is part of create_plan, not an actor's turn.
                if !streamed {
                    self.node(event, "choose_action", vec![], &mut out);
                }
            }
            EventKind::StepSummarized { .. } => {
                self.node(event, "summarize_step", vec![], &mut out);
            }
            EventKind::Assessed { verdict, .. } => {
                let verdict = serde_json::to_value(verdict)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default();
                let attrs = vec![KeyValue::new("stepwise.verdict", verdict)];
                self.node(event, "assess_progress", attrs, &mut out);
            }
            EventKind::Verified { iteration, .. } => {
                let attrs = vec![KeyValue::new("stepwise.iteration", i64::from(*iteration))];
                self.node(event, "verify", attrs, &mut out);
            }
            EventKind::Replanned { replan_count, .. } => {
                self.replans = *replan_count;
                let attrs = vec![KeyValue::new(
                    STEPWISE_REPLAN_COUNT,
                    i64::from(*replan_count),
                )];
                self.node(event, "replan", attrs, &mut out);
            }
            EventKind::Synthesized { .. } => {
                self.node(event, "synthesize_report", vec![], &mut out);
                self.stop(event, "ok", None, &mut out);
            }
            EventKind::NeedsReview { .. } => {
                self.node(event, "mark_needs_review", vec![], &mut out);
                self.stop(event, "needs_review", None, &mut out);
            }
            EventKind::RunFailed { error, .. } => {
                let why = if self.content {
                    capped(error)
                } else {
                    "run_failed".to_owned()
                };
                self.stop(event, "failed", Some(why), &mut out);
            }
            EventKind::RunCancelled { .. } => self.stop(event, "cancelled", None, &mut out),
            EventKind::AwaitingApproval { .. } => {
                self.mark(event, vec![]);
                self.stop(event, "awaiting_approval", None, &mut out);
            }
            EventKind::StepStarted { step, attempt } => {
                self.close_node(&mut out);
                let parent = self.parent();
                let wave = self.wave.get_or_insert_with(|| Wave {
                    id: span_id(&self.run, &format!("wave/{}", event.seq)),
                    parent,
                    start: at,
                    end: at,
                    running: 0,
                    marks: Vec::new(),
                });
                wave.running += 1;
                let attempt = Attempt {
                    id: span_id(&self.run, &format!("step/{}", event.seq)),
                    parent: wave.id,
                    seq: event.seq,
                    attempt: *attempt,
                    start: at,
                    plan_version: self.plan_version,
                };
                self.attempts.insert(step.as_str().to_owned(), attempt);
            }
            EventKind::StepSucceeded { step, result, .. } => {
                let ended = Ended::Succeeded {
                    duration_ms: result.duration_ms,
                    output: &result.output,
                };
                self.end_attempt(event, step.as_str(), ended, &mut out);
            }
            EventKind::StepFailed { step, failure, .. } => {
                let kind = serde_json::to_value(failure.kind)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_else(|| "tool".to_owned());
                let ended = Ended::Failed {
                    kind,
                    message: &failure.message,
                };
                self.end_attempt(event, step.as_str(), ended, &mut out);
            }
            EventKind::StepInterrupted { step, .. } => {
                self.end_attempt(event, step.as_str(), Ended::Interrupted, &mut out);
            }
            EventKind::StepRetrying { step, .. }
            | EventKind::StepTerminated { step, .. }
            | EventKind::StepSkipped { step, .. }
            | EventKind::ApprovalRequested { step, .. }
            | EventKind::ApprovalGranted { step, .. }
            | EventKind::ApprovalDenied { step, .. } => {
                self.mark(
                    event,
                    vec![KeyValue::new(STEPWISE_STEP_ID, step.as_str().to_owned())],
                );
            }
            EventKind::StopConditionMet { condition, .. } => {
                self.mark(
                    event,
                    vec![KeyValue::new("stepwise.condition", condition.to_string())],
                );
            }
            EventKind::GapsNoted { gaps } => {
                self.mark(
                    event,
                    vec![KeyValue::new("stepwise.gaps", int(gaps.len() as u64))],
                );
            }
        }
        self.last_at = Some(at);
        out
    }

    /// What is still open when the process stops driving the run: the node
    /// being extended, a wave with nothing running, model calls not yet
    /// placed, a resume. The root waits for the run's first stop.
    pub(crate) fn finish(&mut self) -> Vec<SpanData> {
        let mut out = Vec::new();
        self.close_node(&mut out);
        self.close_wave_if_idle(&mut out);
        let parent = self.parent();
        for call in std::mem::take(&mut self.calls) {
            out.push(self.model_span(call, parent));
        }
        if let Some(segment) = self.segment.take() {
            let end = self.last_at.unwrap_or(segment.start);
            out.push(self.segment_span(segment, end, "running", None));
        }
        out
    }
}
