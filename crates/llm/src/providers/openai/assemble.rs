//! Builds one [`ChatResponse`] from streamed chunks (text and tool-call
//! arguments arrive in pieces) or from a whole completion.

use std::collections::BTreeMap;

use serde_json::Value;
use stepwise_core::{ChatResponse, FinishReason, ModelError, ToolCall, Usage};

use super::wire::{Chunk, Delta, WireUsage};
use crate::providers::errors::{self, ErrorBody, ErrorContext};
use crate::providers::lenient::{parse_arguments, preview, whole_json};
use crate::providers::streaming::Assemble;

/// What has arrived so far (only choice 0 is kept: we never ask for more).
#[derive(Debug, Default)]
pub(super) struct Assembly {
    text: String,
    refusal: String,
    calls: BTreeMap<u64, PartialCall>,
    finish: Option<String>,
    usage: Option<WireUsage>,
    model: Option<String>,
}

#[derive(Debug, Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
    /// Arguments sent whole as a JSON object (some compatible servers).
    whole: Option<Value>,
}

impl Assembly {
    /// Adds one chunk; an error chunk ends the call with its classified error.
    pub(super) fn push(&mut self, chunk: Chunk, ctx: &ErrorContext<'_>) -> Result<(), ModelError> {
        if let Some(error) = &chunk.error {
            let wrapped = serde_json::json!({ "error": error });
            let body = ErrorBody::from_value(&wrapped).unwrap_or_default();
            // OpenRouter puts the upstream HTTP status in `code`.
            let status = body
                .code
                .as_deref()
                .and_then(|c| c.parse::<u16>().ok())
                .filter(|s| (400..=599).contains(s))
                .unwrap_or(500);
            return Err(errors::classify(status, &body, None, ctx));
        }
        if chunk.model.is_some() {
            self.model = chunk.model;
        }
        if chunk.usage.is_some() {
            self.usage = chunk.usage;
        }
        for choice in chunk.choices {
            if choice.index.unwrap_or(0) != 0 {
                continue;
            }
            if let Some(delta) = choice.delta.or(choice.message) {
                self.delta(delta);
            }
            if choice.finish_reason.is_some() {
                self.finish = choice.finish_reason;
            }
        }
        Ok(())
    }

    /// The answer's text so far.
    pub(super) fn text(&self) -> &str {
        &self.text
    }

    fn delta(&mut self, delta: Delta) {
        self.text.push_str(delta.content.as_deref().unwrap_or(""));
        self.refusal
            .push_str(delta.refusal.as_deref().unwrap_or(""));
        for (position, call) in delta.tool_calls.into_iter().enumerate() {
            let slot = self.slot(call.index, call.id.as_deref(), position);
            let partial = self.calls.entry(slot).or_default();
            if let Some(id) = call.id {
                partial.id = id;
            }
            let function = call.function.unwrap_or_default();
            // Names arrive whole; some servers repeat them in every delta.
            if let Some(name) = function.name.filter(|_| partial.name.is_empty()) {
                partial.name = name;
            }
            match function.arguments {
                Some(Value::String(piece)) => partial.arguments.push_str(&piece),
                Some(Value::Null) | None => {}
                Some(whole) => partial.whole = Some(whole),
            }
        }
    }

    /// Which call a delta continues: its `index`, else the call with its
    /// `id`, else a new call if it brings a new id, else the last call.
    fn slot(&self, index: Option<u64>, id: Option<&str>, position: usize) -> u64 {
        if let Some(index) = index {
            return index;
        }
        let next = self
            .calls
            .keys()
            .next_back()
            .map_or(position as u64, |k| k + 1);
        match id {
            Some(id) => self
                .calls
                .iter()
                .find(|(_, c)| c.id == id)
                .map_or(next, |(k, _)| *k),
            None => self.calls.keys().next_back().copied().unwrap_or(0),
        }
    }

    fn response(self, reason: String, requested_model: &str) -> ChatResponse {
        let tool_calls: Vec<ToolCall> = self
            .calls
            .into_values()
            .map(|c| ToolCall {
                id: c.id,
                name: c.name,
                arguments: c.whole.unwrap_or_else(|| parse_arguments(&c.arguments)),
            })
            .collect();
        let refused = self.text.is_empty() && !self.refusal.is_empty();
        let finish_reason = match reason.as_str() {
            _ if refused => FinishReason::ContentFilter,
            // Some servers (older Ollama) say `stop` while calling tools.
            "stop" | "eos" if !tool_calls.is_empty() => FinishReason::ToolCalls,
            "stop" | "eos" => FinishReason::Stop,
            "length" => FinishReason::Length,
            "tool_calls" | "function_call" => FinishReason::ToolCalls,
            "content_filter" => FinishReason::ContentFilter,
            _ => FinishReason::Other(reason),
        };
        let usage = self.usage.unwrap_or_default();
        ChatResponse {
            text: if refused { self.refusal } else { self.text },
            tool_calls,
            finish_reason,
            usage: Usage::llm_call(
                usage.prompt_tokens.unwrap_or(0),
                usage.completion_tokens.unwrap_or(0),
            ),
            model: self.model.unwrap_or_else(|| requested_model.to_owned()),
        }
    }
}

impl Assemble for Assembly {
    /// The answer; a stream that never said why it stopped was cut short.
    fn finish(mut self, requested_model: &str) -> Result<ChatResponse, ModelError> {
        let Some(reason) = self.finish.take() else {
            return Err(ModelError::Truncated);
        };
        Ok(self.response(reason, requested_model))
    }

    /// A whole (non-streamed) completion: complete by definition, so a
    /// missing finish reason reads as `stop`; no choice at all is not an answer.
    fn whole(
        body: &str,
        ctx: &ErrorContext<'_>,
        requested_model: &str,
    ) -> Result<ChatResponse, ModelError> {
        let value: Value = whole_json(body)?;
        if !value.get("choices").is_some_and(Value::is_array) && value.get("error").is_none() {
            return Err(ModelError::Malformed(format!(
                "the answer has no `choices`: {}",
                preview(body)
            )));
        }
        let chunk: Chunk = serde_json::from_value(value).map_err(|e| {
            ModelError::Malformed(format!("unexpected completion ({e}): {}", preview(body)))
        })?;
        if chunk.choices.is_empty() && chunk.error.is_none() {
            return Err(ModelError::Malformed(
                "the answer has an empty `choices` list".into(),
            ));
        }
        let mut assembly = Self::default();
        assembly.push(chunk, ctx)?;
        let reason = assembly.finish.take().unwrap_or_else(|| "stop".to_owned());
        Ok(assembly.response(reason, requested_model))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn ctx() -> ErrorContext<'static> {
        ErrorContext {
            model: "m",
            auth_fix: "",
        }
    }

    fn push(assembly: &mut Assembly, chunk: Value) {
        assembly
            .push(serde_json::from_value(chunk).unwrap(), &ctx())
            .unwrap();
    }

    #[test]
    fn calls_without_an_index_are_told_apart_by_id() {
        let mut a = Assembly::default();
        let call = |id: &str, args: Value| {
            json!({"choices": [{"delta": {"tool_calls": [
                {"id": id, "function": {"name": "search", "arguments": args}}
            ]}}]})
        };
        push(&mut a, call("c1", json!("{\"q\": 1}")));
        push(&mut a, call("c2", json!({"q": 2})));
        push(&mut a, call("c2", Value::Null));
        push(
            &mut a,
            json!({"choices": [{"delta": {}, "finish_reason": "stop"}]}),
        );
        let answer = a.finish("m").unwrap();
        assert_eq!(answer.finish_reason, FinishReason::ToolCalls);
        let calls: Vec<_> = answer
            .tool_calls
            .iter()
            .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.clone()))
            .collect();
        assert_eq!(
            calls,
            [
                ("c1", "search", json!({"q": 1})),
                ("c2", "search", json!({"q": 2}))
            ]
        );
    }

    #[test]
    fn arguments_that_are_not_json_are_kept_as_text() {
        let mut a = Assembly::default();
        push(
            &mut a,
            json!({"choices": [{"delta": {"tool_calls": [{"index": 0, "id": "c", "function": {"name": "f", "arguments": "{oops"}}]}, "finish_reason": "tool_calls"}]}),
        );
        assert_eq!(
            a.finish("m").unwrap().tool_calls[0].arguments,
            json!("{oops")
        );
    }

    #[test]
    fn a_refusal_is_the_text_of_a_filtered_answer() {
        let mut a = Assembly::default();
        push(
            &mut a,
            json!({"choices": [{"delta": {"refusal": "I can't help with that."}, "finish_reason": "stop"}]}),
        );
        let answer = a.finish("m").unwrap();
        assert_eq!(answer.finish_reason, FinishReason::ContentFilter);
        assert_eq!(answer.text, "I can't help with that.");
    }
}
