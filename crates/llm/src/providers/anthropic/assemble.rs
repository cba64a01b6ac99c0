//! Builds one [`ChatResponse`] from Anthropic's streamed events (content
//! blocks started, extended by deltas, usage from `message_start` and
//! `message_delta`) or from a whole message. Compatible proxies that leave
//! out `message_start` or `content_block_start` still give their text.

use std::collections::BTreeMap;

use serde_json::Value;
use stepwise_core::{ChatResponse, FinishReason, ModelError, ToolCall, Usage};

use super::wire::{ContentBlock, Event, WireUsage};
use crate::providers::errors::{self, ErrorBody, ErrorContext};
use crate::providers::lenient::{parse_arguments, preview, whole_json};
use crate::providers::sse::Flow;
use crate::providers::streaming::Assemble;

/// What has arrived so far.
#[derive(Debug, Default)]
pub(super) struct Assembly {
    blocks: BTreeMap<u64, Partial>,
    stop_reason: Option<String>,
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    model: Option<String>,
    /// `message_stop` arrived: the message is complete, stop reason or not.
    stopped: bool,
}

/// A content block being streamed. Thinking and other block types are
/// not kept: only text and tool calls reach the caller.
#[derive(Debug)]
enum Partial {
    Text(String),
    ToolUse {
        id: String,
        name: String,
        /// `input_json_delta` pieces.
        json: String,
        /// The input given at the block's start (whole messages, or `{}`).
        initial: Option<Value>,
    },
    Ignored,
}

impl Assembly {
    /// Adds one event; `message_stop` ends the stream, `error` the call.
    pub(super) fn push(
        &mut self,
        event: Event,
        ctx: &ErrorContext<'_>,
    ) -> Result<Flow, ModelError> {
        match event.kind.as_deref().unwrap_or("") {
            "message_start" => {
                if let Some(message) = event.message {
                    self.model = message.model.or(self.model.take());
                    self.usage(message.usage);
                }
            }
            "content_block_start" => {
                if let Some(block) = event.content_block {
                    let index = event.index.unwrap_or(0);
                    let mut started = start(block);
                    // Text that came before its block's start stays, after the start's own.
                    if let (Partial::Text(text), Some(Partial::Text(early))) =
                        (&mut started, self.blocks.remove(&index))
                    {
                        text.push_str(&early);
                    }
                    self.blocks.insert(index, started);
                }
            }
            "content_block_delta" => {
                let delta = event.delta.unwrap_or_default();
                let index = event.index.unwrap_or(0);
                let slot = self.blocks.get_mut(&index);
                match (slot, delta.kind.as_deref()) {
                    (Some(Partial::Text(text)), Some("text_delta")) => {
                        text.push_str(delta.text.as_deref().unwrap_or(""));
                    }
                    (Some(Partial::ToolUse { json, .. }), Some("input_json_delta")) => {
                        json.push_str(delta.partial_json.as_deref().unwrap_or(""));
                    }
                    // Some proxies send no `content_block_start` (nor
                    // `message_start`): a text delta starts its block.
                    (None, Some("text_delta")) => {
                        let text = delta.text.unwrap_or_default();
                        self.blocks.insert(index, Partial::Text(text));
                    }
                    // A tool call's id and name are only in its start: the
                    // input cannot be attributed, and is not dropped silently.
                    (None, Some("input_json_delta")) => {
                        return Err(ModelError::Malformed(format!(
                            "malformed stream: tool input for content block {index} came \
                             before the block was started (no content_block_start)"
                        )));
                    }
                    // Thinking, signatures, citations: not passed on.
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(reason) = event.delta.and_then(|d| d.stop_reason) {
                    self.stop_reason = Some(reason);
                }
                self.usage(event.usage);
            }
            "message_stop" => {
                self.stopped = true;
                return Ok(Flow::Done);
            }
            "error" => return Err(stream_error(event.error.as_ref(), ctx)),
            // `ping`, `content_block_stop` and event types added later.
            _ => {}
        }
        Ok(Flow::Continue)
    }

    /// `output_tokens` is cumulative, so the last report wins.
    fn usage(&mut self, usage: Option<WireUsage>) {
        let Some(usage) = usage else { return };
        if let Some(input) = usage.input() {
            self.input_tokens = Some(input);
        }
        if let Some(output) = usage.output_tokens {
            self.output_tokens = Some(output);
        }
    }

    fn response(self, reason: String, requested_model: &str) -> ChatResponse {
        let mut text = String::new();
        let mut tool_calls = Vec::new();
        for block in self.blocks.into_values() {
            match block {
                Partial::Text(t) => text.push_str(&t),
                Partial::ToolUse {
                    id,
                    name,
                    json,
                    initial,
                } => tool_calls.push(ToolCall {
                    id,
                    name,
                    arguments: if json.trim().is_empty() {
                        initial.unwrap_or_else(|| parse_arguments(""))
                    } else {
                        parse_arguments(&json)
                    },
                }),
                Partial::Ignored => {}
            }
        }
        let finish_reason = match reason.as_str() {
            "end_turn" | "stop_sequence" => FinishReason::Stop,
            "max_tokens" | "model_context_window_exceeded" => FinishReason::Length,
            "tool_use" => FinishReason::ToolCalls,
            "refusal" => FinishReason::ContentFilter,
            _ => FinishReason::Other(reason),
        };
        ChatResponse {
            text,
            tool_calls,
            finish_reason,
            usage: Usage::llm_call(
                self.input_tokens.unwrap_or(0),
                self.output_tokens.unwrap_or(0),
            ),
            model: self.model.unwrap_or_else(|| requested_model.to_owned()),
        }
    }
}

impl Assemble for Assembly {
    /// A whole (non-streamed) message, or an error body sent with a 200.
    fn whole(
        body: &str,
        ctx: &ErrorContext<'_>,
        requested_model: &str,
    ) -> Result<ChatResponse, ModelError> {
        let event: Event = whole_json(body)?;
        match event.kind.as_deref() {
            Some("error") => return Err(stream_error(event.error.as_ref(), ctx)),
            Some("message") => {}
            _ => {
                return Err(ModelError::Malformed(format!(
                    "the answer is not an Anthropic message: {}",
                    preview(body)
                )));
            }
        }
        let mut assembly = Self {
            model: event.model,
            ..Self::default()
        };
        assembly.usage(event.usage);
        for (index, block) in (0u64..).zip(event.content) {
            assembly.blocks.insert(index, start(block));
        }
        // A whole message is complete by definition.
        let reason = event.stop_reason.unwrap_or_else(|| "end_turn".to_owned());
        Ok(assembly.response(reason, requested_model))
    }

    /// The answer; a stream that ended with neither a stop reason nor
    /// `message_stop` was cut short.
    fn finish(mut self, requested_model: &str) -> Result<ChatResponse, ModelError> {
        let reason = match self.stop_reason.take() {
            Some(reason) => reason,
            None if self.stopped => "end_turn".to_owned(),
            None => return Err(ModelError::Truncated),
        };
        Ok(self.response(reason, requested_model))
    }
}

fn start(block: ContentBlock) -> Partial {
    match block.kind.as_deref() {
        Some("text") => Partial::Text(block.text.unwrap_or_default()),
        Some("tool_use") => Partial::ToolUse {
            id: block.id.unwrap_or_default(),
            name: block.name.unwrap_or_default(),
            json: String::new(),
            initial: block.input,
        },
        _ => Partial::Ignored,
    }
}

/// An `error` event (or error body): `{"type": "overloaded_error", "message"}`,
/// mapped to the HTTP status Anthropic uses for that type.
pub(super) fn stream_error(error: Option<&Value>, ctx: &ErrorContext<'_>) -> ModelError {
    let wrapped = serde_json::json!({ "error": error.cloned().unwrap_or(Value::Null) });
    let body = ErrorBody::from_value(&wrapped).unwrap_or_default();
    let status = match body.kind.as_deref().unwrap_or("") {
        "invalid_request_error" => 400,
        "authentication_error" => 401,
        "billing_error" => 402,
        "permission_error" => 403,
        "not_found_error" => 404,
        "request_too_large" => 413,
        "rate_limit_error" => 429,
        "timeout_error" => 504,
        "overloaded_error" => 529,
        _ => 500,
    };
    errors::classify(status, &body, None, ctx)
}
