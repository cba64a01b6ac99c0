//! How the fold turns what it has gathered into finished spans: nodes,
//! waves, step attempts, model calls, the root and its resumes.

use std::borrow::Cow;
use std::time::SystemTime;

use chrono::{DateTime, Utc};
use opentelemetry::trace::{
    Event as SpanEvent, SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceState,
};
use opentelemetry::{Array, KeyValue, StringValue, Value};
use opentelemetry_sdk::trace::{SpanData, SpanEvents, SpanLinks};
use serde_json::Value as Json;
use stepwise_core::event::Event;
use stepwise_core::model::ExchangeOutcome;

use crate::trace::keys::*;

use super::fold::Spans;
use super::ids::span_id;
use super::parts::{Call, Ended, Node, Segment, call_start};
use super::values::{capped, int};

impl Spans {
    /// The span new nodes and waves hang under.
    pub(super) fn parent(&self) -> SpanId {
        self.segment.as_ref().map_or(self.root, |s| s.id)
    }

    /// A point in time on the open wave, or else on the run.
    pub(super) fn mark(&mut self, event: &Event, attrs: Vec<KeyValue>) {
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
    pub(super) fn node(
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

    pub(super) fn close_node(&mut self, out: &mut Vec<SpanData>) {
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

    pub(super) fn close_wave_if_idle(&mut self, out: &mut Vec<SpanData>) {
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
    pub(super) fn end_attempt(
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
    pub(super) fn stop(
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

    pub(super) fn segment_span(
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

    pub(super) fn model_span(&self, call: Call, parent: SpanId) -> SpanData {
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
    pub(super) fn span(
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
