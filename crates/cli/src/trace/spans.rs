//! Spans from the event log: a fold of a run's events into finished
//! OpenTelemetry spans, with no I/O (the exporter is in [`super`]). Every
//! span is derived from recorded events and their times, so a run traced by
//! `stepwise run`, `serve` or a worker gives the same tree, and a run resumed
//! in another process continues the same trace: the trace id and every span
//! id are hashes of the run id (and of the event that opened the span).
//!
//! The tree: `run` (the root) → graph nodes (`prepare_input`, `create_plan`,
//! `validate_plan`, …, `synthesize_report`) and `dispatch_wave`s →
//! `execute_step` (one per step attempt) → `execute_tool` and the executor's
//! model calls; the other roles' model calls (`chat …`) are children of the
//! node they decided. A node runs from the event before it to its own event.
//! The root ends at the run's first stop (its end, or a pause for a person);
//! each later resume is a `resume` span under it, so no span is sent twice.

use std::borrow::Cow;
use std::collections::HashMap;
use std::time::{Duration, SystemTime};

use chrono::{DateTime, Utc};
use opentelemetry::trace::{
    Event as SpanEvent, SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceId, TraceState,
};
use opentelemetry::{Array, InstrumentationScope, KeyValue, StringValue, Value};
use opentelemetry_sdk::trace::{SpanData, SpanEvents, SpanLinks};
use serde_json::Value as Json;
use sha2::{Digest, Sha256};
use stepwise_core::event::{Event, EventKind};
use stepwise_core::model::{ExchangeOutcome, ModelExchange};
use stepwise_core::state::STEP_EXECUTOR_ROLE;

use super::keys::*;

/// Most bytes of a prompt, answer, argument or result kept with
/// `--trace-content` (backends refuse or truncate huge attributes anyway).
pub(crate) const CONTENT_CAP: usize = 8 * 1024;

/// The run's trace id: the first 16 bytes of SHA-256(run id).
pub(crate) fn trace_id(run: &str) -> TraceId {
    let digest = Sha256::digest(run.as_bytes());
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    TraceId::from_bytes(bytes)
}

/// A span's id: 8 bytes of SHA-256(run id, what opened the span).
fn span_id(run: &str, key: &str) -> SpanId {
    let digest = Sha256::new()
        .chain_update(run.as_bytes())
        .chain_update([0])
        .chain_update(key.as_bytes())
        .finalize();
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&digest[..8]);
    if bytes == [0; 8] {
        bytes[7] = 1; // the all-zero id is invalid
    }
    SpanId::from_bytes(bytes)
}

/// `text` cut to [`CONTENT_CAP`] bytes, at a character boundary.
fn capped(text: &str) -> String {
    if text.len() <= CONTENT_CAP {
        return text.to_owned();
    }
    let mut end = CONTENT_CAP;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

fn int(n: u64) -> Value {
    Value::I64(i64::try_from(n).unwrap_or(i64::MAX))
}

/// A graph node being extended by consecutive events of the same kind.
struct Node {
    id: SpanId,
    parent: SpanId,
    name: &'static str,
    start: DateTime<Utc>,
    end: DateTime<Utc>,
    events: Vec<&'static str>,
    attrs: Vec<KeyValue>,
}

/// Steps dispatched together, until none is running and a decision comes.
struct Wave {
    id: SpanId,
    parent: SpanId,
    start: DateTime<Utc>,
    end: DateTime<Utc>,
    running: usize,
    marks: Vec<SpanEvent>,
}

/// A step attempt in flight.
struct Attempt {
    id: SpanId,
    parent: SpanId,
    seq: u64,
    attempt: u32,
    start: DateTime<Utc>,
    plan_version: Option<u32>,
}

/// A model call waiting for the span it belongs to.
struct Call {
    seq: u64,
    at: DateTime<Utc>,
    role: String,
    exchange: ModelExchange,
}

/// A resume of a run whose root span was already sent.
struct Segment {
    id: SpanId,
    start: DateTime<Utc>,
    marks: Vec<SpanEvent>,
}

/// How a step attempt ended.
enum Ended<'a> {
    Succeeded { duration_ms: u64, output: &'a Json },
    Failed { kind: String, message: &'a str },
    Interrupted,
}

/// The fold of one run's events into spans.
pub(crate) struct Spans {
    run: String,
    content: bool,
    scope: InstrumentationScope,
    trace: TraceId,
    root: SpanId,
    root_sent: bool,
    segment: Option<Segment>,
    started: Option<DateTime<Utc>>,
    input: String,
    strategy: String,
    plan_version: Option<u32>,
    replans: u32,
    tools: HashMap<String, (String, Json)>,
    last_at: Option<DateTime<Utc>>,
    calls: Vec<Call>,
    executor_calls: Vec<Call>,
    node: Option<Node>,
    wave: Option<Wave>,
    attempts: HashMap<String, Attempt>,
    marks: Vec<SpanEvent>,
    input_tokens: u64,
    output_tokens: u64,
    llm_calls: u64,
    tool_calls: u64,
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

    /// The span new nodes and waves hang under.
    fn parent(&self) -> SpanId {
        self.segment.as_ref().map_or(self.root, |s| s.id)
    }

    /// A point in time on the open wave, or else on the run.
    fn mark(&mut self, event: &Event, attrs: Vec<KeyValue>) {
        let mark = SpanEvent::new(event.kind.name(), event.at.into(), attrs, 0);
        match (&mut self.wave, &mut self.segment) {
            (Some(wave), _) => wave.marks.push(mark),
            (None, Some(segment)) => segment.marks.push(mark),
            (None, None) => self.marks.push(mark),
        }
    }

    /// `event` decided graph node `name`: it extends the open node of the
    /// same name (several assessments of one wave), or opens a new one that
    /// takes the model calls made since the last event.
    fn node(
        &mut self,
        event: &Event,
        name: &'static str,
        attrs: Vec<KeyValue>,
        out: &mut Vec<SpanData>,
    ) {
        self.close_wave_if_idle(out);
        if let Some(node) = &mut self.node
            && node.name == name
            && self.calls.is_empty()
        {
            node.end = event.at;
            node.events.push(event.kind.name());
            return;
        }
        self.close_node(out);
        let id = span_id(&self.run, &format!("node/{}", event.seq));
        let mut start = self.last_at.unwrap_or(event.at);
        for call in std::mem::take(&mut self.calls) {
            start = start.min(call_start(&call));
            out.push(self.model_span(call, id));
        }
        self.node = Some(Node {
            id,
            parent: self.parent(),
            name,
            start,
            end: event.at,
            events: vec![event.kind.name()],
            attrs,
        });
    }

    fn close_node(&mut self, out: &mut Vec<SpanData>) {
        let Some(node) = self.node.take() else {
            return;
        };
        let mut attrs = self.common();
        attrs.push(KeyValue::new(STEPWISE_NODE, node.name));
        attrs.push(KeyValue::new(OPENINFERENCE_SPAN_KIND, "CHAIN"));
        let events: Vec<StringValue> = node.events.iter().map(|e| (*e).into()).collect();
        attrs.push(KeyValue::new(
            STEPWISE_EVENTS,
            Value::Array(Array::String(events)),
        ));
        attrs.extend(node.attrs);
        out.push(self.span(
            node.id,
            node.parent,
            node.name.into(),
            SpanKind::Internal,
            (node.start, node.end),
            attrs,
            Vec::new(),
            None,
        ));
    }

    fn close_wave_if_idle(&mut self, out: &mut Vec<SpanData>) {
        if self.wave.as_ref().is_none_or(|w| w.running > 0) {
            return;
        }
        let Some(wave) = self.wave.take() else {
            return;
        };
        let mut attrs = self.common();
        attrs.push(KeyValue::new(STEPWISE_NODE, "dispatch_wave"));
        attrs.push(KeyValue::new(OPENINFERENCE_SPAN_KIND, "CHAIN"));
        out.push(self.span(
            wave.id,
            wave.parent,
            "dispatch_wave".into(),
            SpanKind::Internal,
            (wave.start, wave.end),
            attrs,
            wave.marks,
            None,
        ));
    }

    /// A step attempt ended: its tool call, the executor's model calls and
    /// the attempt itself.
    fn end_attempt(
        &mut self,
        event: &Event,
        step: &str,
        ended: Ended<'_>,
        out: &mut Vec<SpanData>,
    ) {
        self.tool_calls += 1;
        let Some(attempt) = self.attempts.remove(step) else {
            return; // started before the log began to be traced
        };
        if let Some(wave) = &mut self.wave {
            wave.running = wave.running.saturating_sub(1);
            wave.end = wave.end.max(event.at);
        }
        let (tool, args) = self
            .tools
            .get(step)
            .cloned()
            .unwrap_or_else(|| (String::new(), Json::Null));
        let mut step_attrs = self.common();
        step_attrs.extend([
            KeyValue::new(STEPWISE_STEP_ID, step.to_owned()),
            KeyValue::new(STEPWISE_ATTEMPT, i64::from(attempt.attempt)),
        ]);
        if let Some(version) = attempt.plan_version {
            // The version the attempt was dispatched under (common() has the latest).
            step_attrs.retain(|kv| kv.key.as_str() != STEPWISE_PLAN_VERSION);
            step_attrs.push(KeyValue::new(STEPWISE_PLAN_VERSION, i64::from(version)));
        }
        let mut tool_attrs = step_attrs.clone();
        step_attrs.push(KeyValue::new(OPENINFERENCE_SPAN_KIND, "CHAIN"));
        step_attrs.push(KeyValue::new("stepwise.tool", tool.clone()));
        tool_attrs.extend([
            KeyValue::new(GEN_AI_OPERATION_NAME, "execute_tool"),
            KeyValue::new(GEN_AI_TOOL_NAME, tool.clone()),
            KeyValue::new(GEN_AI_TOOL_CALL_ID, format!("{step}#{}", attempt.attempt)),
            KeyValue::new(OPENINFERENCE_SPAN_KIND, "TOOL"),
            KeyValue::new(TOOL_NAME, tool.clone()),
        ]);
        if self.content {
            let args = capped(&args.to_string());
            tool_attrs.push(KeyValue::new(GEN_AI_TOOL_CALL_ARGUMENTS, args.clone()));
            tool_attrs.push(KeyValue::new(INPUT_VALUE, args));
        }
        let mut tool_start = attempt.start;
        let error = match ended {
            Ended::Succeeded {
                duration_ms,
                output,
            } => {
                let took = chrono::Duration::milliseconds(
                    i64::try_from(duration_ms).unwrap_or(i64::MAX / 2),
                );
                tool_start = tool_start.max(event.at - took);
                if self.content {
                    let result = capped(&output.to_string());
                    tool_attrs.push(KeyValue::new(GEN_AI_TOOL_CALL_RESULT, result.clone()));
                    tool_attrs.push(KeyValue::new(OUTPUT_VALUE, result));
                }
                None
            }
            Ended::Failed { kind, message } => {
                tool_attrs.push(KeyValue::new(ERROR_TYPE, kind.clone()));
                step_attrs.push(KeyValue::new(ERROR_TYPE, kind.clone()));
                Some(if self.content { capped(message) } else { kind })
            }
            Ended::Interrupted => {
                tool_attrs.push(KeyValue::new(ERROR_TYPE, "interrupted"));
                step_attrs.push(KeyValue::new(ERROR_TYPE, "interrupted"));
                Some("interrupted: the process running it stopped".to_owned())
            }
        };
        let tool_name = if tool.is_empty() {
            "execute_tool".to_owned()
        } else {
            format!("execute_tool {tool}")
        };
        out.push(self.span(
            span_id(&self.run, &format!("tool/{}", attempt.seq)),
            attempt.id,
            tool_name.into(),
            SpanKind::Internal,
            (tool_start, event.at),
            tool_attrs,
            Vec::new(),
            error.clone(),
        ));
        for call in std::mem::take(&mut self.executor_calls) {
            out.push(self.model_span(call, attempt.id));
        }
        out.push(self.span(
            attempt.id,
            attempt.parent,
            "execute_step".into(),
            SpanKind::Internal,
            (attempt.start, event.at),
            step_attrs,
            Vec::new(),
            error,
        ));
    }

    /// The process stops driving the run here (it ended, or waits for a
    /// person): everything open is sent, with the root the first time.
    fn stop(
        &mut self,
        event: &Event,
        status: &str,
        error: Option<String>,
        out: &mut Vec<SpanData>,
    ) {
        self.close_node(out);
        self.close_wave_if_idle(out);
        let parent = self.parent();
        for call in std::mem::take(&mut self.calls) {
            out.push(self.model_span(call, parent));
        }
        if let Some(segment) = self.segment.take() {
            out.push(self.segment_span(segment, event.at, status, error));
            return;
        }
        if self.root_sent {
            return;
        }
        self.root_sent = true;
        let mut attrs = self.common();
        attrs.extend(self.totals(status));
        attrs.extend([
            KeyValue::new(GEN_AI_OPERATION_NAME, "invoke_agent"),
            KeyValue::new(GEN_AI_AGENT_NAME, "stepwise"),
            KeyValue::new(GEN_AI_CONVERSATION_ID, self.run.clone()),
            KeyValue::new(OPENINFERENCE_SPAN_KIND, "AGENT"),
        ]);
        if self.content {
            attrs.push(KeyValue::new(STEPWISE_INPUT, capped(&self.input)));
            attrs.push(KeyValue::new(INPUT_VALUE, capped(&self.input)));
        }
        let marks = std::mem::take(&mut self.marks);
        let start = self.started.unwrap_or(event.at);
        out.push(self.span(
            self.root,
            SpanId::INVALID,
            "run".into(),
            SpanKind::Internal,
            (start, event.at),
            attrs,
            marks,
            error,
        ));
    }

    fn segment_span(
        &self,
        segment: Segment,
        end: DateTime<Utc>,
        status: &str,
        error: Option<String>,
    ) -> SpanData {
        let mut attrs = self.common();
        attrs.extend(self.totals(status));
        attrs.push(KeyValue::new(OPENINFERENCE_SPAN_KIND, "AGENT"));
        self.span(
            segment.id,
            self.root,
            "resume".into(),
            SpanKind::Internal,
            (segment.start, end),
            attrs,
            segment.marks,
            error,
        )
    }

    /// The run's totals so far (the whole log, earlier processes included).
    fn totals(&self, status: &str) -> [KeyValue; 7] {
        [
            KeyValue::new(STEPWISE_STATUS, status.to_owned()),
            KeyValue::new(STEPWISE_STRATEGY, self.strategy.clone()),
            KeyValue::new(STEPWISE_REPLAN_COUNT, i64::from(self.replans)),
            KeyValue::new(GEN_AI_USAGE_INPUT_TOKENS, int(self.input_tokens)),
            KeyValue::new(GEN_AI_USAGE_OUTPUT_TOKENS, int(self.output_tokens)),
            KeyValue::new(STEPWISE_LLM_CALLS, int(self.llm_calls)),
            KeyValue::new(STEPWISE_TOOL_CALLS, int(self.tool_calls)),
        ]
    }

    fn model_span(&self, call: Call, parent: SpanId) -> SpanData {
        let exchange = &call.exchange;
        let (provider, model) = exchange
            .model
            .split_once(':')
            .unwrap_or(("", exchange.model.as_str()));
        let mut attrs = self.common();
        attrs.extend([
            KeyValue::new(GEN_AI_OPERATION_NAME, "chat"),
            KeyValue::new(GEN_AI_REQUEST_MODEL, model.to_owned()),
            KeyValue::new(STEPWISE_ROLE, call.role.clone()),
            KeyValue::new(STEPWISE_ATTEMPT, i64::from(exchange.attempt)),
            KeyValue::new(STEPWISE_WAITED_MS, int(exchange.waited_ms)),
            KeyValue::new(OPENINFERENCE_SPAN_KIND, "LLM"),
            KeyValue::new(LLM_MODEL_NAME, model.to_owned()),
        ]);
        if !provider.is_empty() {
            attrs.push(KeyValue::new(GEN_AI_PROVIDER_NAME, provider.to_owned()));
            attrs.push(KeyValue::new(GEN_AI_SYSTEM, provider.to_owned()));
            attrs.push(KeyValue::new(LLM_PROVIDER, provider.to_owned()));
        }
        if let Some(t) = exchange.request.temperature {
            attrs.push(KeyValue::new(GEN_AI_REQUEST_TEMPERATURE, f64::from(t)));
        }
        if let Some(n) = exchange.request.max_tokens {
            attrs.push(KeyValue::new(GEN_AI_REQUEST_MAX_TOKENS, i64::from(n)));
        }
        if self.content {
            let messages = serde_json::to_string(&exchange.request.messages).unwrap_or_default();
            let messages = capped(&messages);
            attrs.push(KeyValue::new(GEN_AI_INPUT_MESSAGES, messages.clone()));
            attrs.push(KeyValue::new(INPUT_VALUE, messages));
        }
        let error = match &exchange.outcome {
            ExchangeOutcome::Response { response } => {
                let usage = response.usage;
                attrs.extend([
                    KeyValue::new(GEN_AI_USAGE_INPUT_TOKENS, int(usage.input_tokens)),
                    KeyValue::new(GEN_AI_USAGE_OUTPUT_TOKENS, int(usage.output_tokens)),
                    KeyValue::new(LLM_TOKEN_COUNT_PROMPT, int(usage.input_tokens)),
                    KeyValue::new(LLM_TOKEN_COUNT_COMPLETION, int(usage.output_tokens)),
                    KeyValue::new(
                        LLM_TOKEN_COUNT_TOTAL,
                        int(usage.input_tokens + usage.output_tokens),
                    ),
                    KeyValue::new(
                        GEN_AI_RESPONSE_FINISH_REASONS,
                        Value::Array(Array::String(vec![
                            response.finish_reason.to_string().into(),
                        ])),
                    ),
                ]);
                if !response.model.is_empty() {
                    attrs.push(KeyValue::new(GEN_AI_RESPONSE_MODEL, response.model.clone()));
                }
                if self.content {
                    let text = capped(&response.text);
                    attrs.push(KeyValue::new(GEN_AI_OUTPUT_MESSAGES, text.clone()));
                    attrs.push(KeyValue::new(OUTPUT_VALUE, text));
                }
                None
            }
            ExchangeOutcome::Error { class, message, .. } => {
                let class = serde_json::to_value(class)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default();
                attrs.push(KeyValue::new(ERROR_TYPE, class.clone()));
                Some(if self.content { capped(message) } else { class })
            }
        };
        let name = format!("chat {model}");
        self.span(
            span_id(&self.run, &format!("model/{}", call.seq)),
            parent,
            name.into(),
            SpanKind::Client,
            (call_start(&call), call.at),
            attrs,
            Vec::new(),
            error,
        )
    }

    /// The attributes of every span.
    fn common(&self) -> Vec<KeyValue> {
        let mut attrs = vec![KeyValue::new(STEPWISE_RUN_ID, self.run.clone())];
        if let Some(version) = self.plan_version {
            attrs.push(KeyValue::new(STEPWISE_PLAN_VERSION, i64::from(version)));
        }
        attrs
    }

    #[allow(clippy::too_many_arguments)]
    fn span(
        &self,
        id: SpanId,
        parent: SpanId,
        name: Cow<'static, str>,
        kind: SpanKind,
        (start, end): (DateTime<Utc>, DateTime<Utc>),
        attributes: Vec<KeyValue>,
        marks: Vec<SpanEvent>,
        error: Option<String>,
    ) -> SpanData {
        let mut events = SpanEvents::default();
        events.events = marks;
        SpanData {
            span_context: SpanContext::new(
                self.trace,
                id,
                TraceFlags::SAMPLED,
                false,
                TraceState::default(),
            ),
            parent_span_id: parent,
            parent_span_is_remote: false,
            span_kind: kind,
            name,
            start_time: SystemTime::from(start.min(end)),
            end_time: SystemTime::from(end),
            attributes,
            dropped_attributes_count: 0,
            events,
            links: SpanLinks::default(),
            status: match error {
                Some(description) => Status::error(description),
                None => Status::Unset,
            },
            instrumentation_scope: self.scope.clone(),
        }
    }
}

/// When a model call began: its event is recorded when it ends.
fn call_start(call: &Call) -> DateTime<Utc> {
    let took = Duration::from_millis(call.exchange.duration_ms);
    chrono::Duration::from_std(took).map_or(call.at, |took| call.at - took)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use std::collections::{HashMap, HashSet};

    use super::*;

    /// A real log: a one-step scripted run aborted after `step_started`,
    /// then resumed (`step_interrupted`, a retry) to `synthesized`.
    fn log() -> Vec<Event> {
        serde_json::from_str(include_str!("testdata/crash-resumed.json")).unwrap()
    }

    const RUN: &str = "run_fixture";

    fn fold(spans: &mut Spans, events: &[Event]) -> Vec<SpanData> {
        let mut out: Vec<SpanData> = events.iter().flat_map(|e| spans.apply(e)).collect();
        out.extend(spans.finish());
        out
    }

    fn id(span: &SpanData) -> SpanId {
        span.span_context.span_id()
    }

    #[test]
    fn a_resumer_sends_what_one_process_would_with_the_same_ids_and_nothing_twice() {
        let log = log();
        let whole = fold(&mut Spans::new(RUN, false, &[]), &log);
        let by_id: HashMap<SpanId, &SpanData> = whole.iter().map(|s| (id(s), s)).collect();
        assert_eq!(by_id.len(), whole.len(), "an id used twice");

        // The process that crashed lost its queue; the resumer continues.
        let crash = log
            .iter()
            .position(|e| e.kind.name() == "run_resumed")
            .unwrap();
        let sent = fold(&mut Spans::new(RUN, false, &log[..crash]), &log[crash..]);
        let mut seen = HashSet::new();
        for span in &sent {
            assert!(seen.insert(id(span)), "{} sent twice", span.name);
            let same = by_id
                .get(&id(span))
                .unwrap_or_else(|| panic!("{} is not in the one-process trace", span.name));
            assert_eq!(same.name, span.name);
            assert_eq!(same.parent_span_id, span.parent_span_id, "{}", span.name);
            assert_eq!(same.start_time, span.start_time, "{}", span.name);
            assert_eq!(same.end_time, span.end_time, "{}", span.name);
            assert_eq!(span.span_context.trace_id(), trace_id(RUN));
            let parent = span.parent_span_id;
            assert!(
                parent == SpanId::INVALID || sent.iter().any(|p| id(p) == parent),
                "{}'s parent is not sent",
                span.name
            );
        }
        let roots: Vec<&SpanData> = sent
            .iter()
            .filter(|s| s.parent_span_id == SpanId::INVALID)
            .collect();
        assert_eq!(roots.len(), 1);
        assert_eq!(roots[0].name, "run");
        let tokens = |span: &SpanData, key: &str| {
            span.attributes
                .iter()
                .find(|kv| kv.key.as_str() == key)
                .map(|kv| kv.value.clone())
        };
        // The whole log's tokens (the planner's call was before the crash).
        assert_eq!(
            tokens(roots[0], GEN_AI_USAGE_INPUT_TOKENS),
            Some(Value::I64(220))
        );
        assert_eq!(
            tokens(roots[0], GEN_AI_USAGE_OUTPUT_TOKENS),
            Some(Value::I64(60))
        );
        let attempts: Vec<&SpanData> = sent.iter().filter(|s| s.name == "execute_step").collect();
        assert_eq!(attempts.len(), 2);
        assert_eq!(
            attempts
                .iter()
                .filter(|s| matches!(s.status, Status::Error { .. }))
                .count(),
            1,
            "the cut attempt is an error, the retry is not"
        );
        assert_eq!(attempts[0].parent_span_id, attempts[1].parent_span_id);
        // What the crashed process had not exported is not sent again.
        assert!(whole.iter().any(|s| s.name == "create_plan"));
        assert!(!sent.iter().any(|s| s.name == "create_plan"));
    }

    #[test]
    fn only_trace_content_puts_the_goal_prompts_and_results_in_spans() {
        for content in [false, true] {
            let spans = fold(&mut Spans::new(RUN, content, &[]), &log());
            let text = format!("{spans:?}");
            for words in [
                "What is our latency budget?",
                "latency budget first token",
                "1.5 seconds",
            ] {
                assert_eq!(
                    text.contains(words),
                    content,
                    "{words:?} with content={content}"
                );
            }
        }
    }
}
