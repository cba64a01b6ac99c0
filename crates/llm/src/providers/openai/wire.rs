//! OpenAI chat-completions wire types: what we send, and the lenient shapes
//! we read back (streamed chunks and whole completions). Private to the
//! OpenAI client; only `stepwise_core` types leave this module.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use stepwise_core::{ChatRequest, ChatRole, Message};

use crate::providers::lenient;

/// Which field carries `max_tokens`: OpenAI's own API wants
/// `max_completion_tokens` (its reasoning models reject `max_tokens`), while
/// Ollama, vLLM, llama.cpp and older servers know only `max_tokens`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum MaxTokensField {
    MaxTokens,
    MaxCompletionTokens,
}

#[derive(Debug, Serialize)]
pub(super) struct Request<'a> {
    model: &'a str,
    messages: Vec<WireMessage<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<ResponseFormat<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u32>,
    stream: bool,
    /// Without it, streamed answers carry no token counts.
    stream_options: StreamOptions,
}

#[derive(Debug, Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Debug, Serialize)]
struct WireMessage<'a> {
    role: &'static str,
    /// Null for an assistant turn that only calls tools.
    content: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<WireToolCall<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<&'a str>,
}

#[derive(Debug, Serialize)]
struct WireToolCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunctionCall<'a>,
}

#[derive(Debug, Serialize)]
struct WireFunctionCall<'a> {
    name: &'a str,
    /// A JSON document as a string, as the API wants it.
    arguments: String,
}

#[derive(Debug, Serialize)]
struct WireTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunction<'a>,
}

#[derive(Debug, Serialize)]
struct WireFunction<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

#[derive(Debug, Serialize)]
struct ResponseFormat<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    json_schema: JsonSchemaFormat<'a>,
}

/// `strict: false`: strict mode demands `additionalProperties: false` and
/// every property required, which our schemas and MCP tools' do not promise.
#[derive(Debug, Serialize)]
struct JsonSchemaFormat<'a> {
    name: String,
    schema: &'a Value,
    strict: bool,
}

/// The request body for `model`, always streamed.
pub(super) fn request<'a>(
    model: &'a str,
    req: &'a ChatRequest,
    field: MaxTokensField,
) -> Request<'a> {
    Request {
        model,
        messages: req.messages.iter().map(message).collect(),
        tools: req
            .tools
            .iter()
            .map(|t| WireTool {
                kind: "function",
                function: WireFunction {
                    name: &t.name,
                    description: &t.description,
                    parameters: &t.args_schema,
                },
            })
            .collect(),
        response_format: req.response_schema.as_ref().map(|s| ResponseFormat {
            kind: "json_schema",
            json_schema: JsonSchemaFormat {
                name: schema_name(&s.name),
                schema: &s.schema,
                strict: false,
            },
        }),
        temperature: req.temperature,
        max_tokens: req
            .max_tokens
            .filter(|_| field == MaxTokensField::MaxTokens),
        max_completion_tokens: req
            .max_tokens
            .filter(|_| field == MaxTokensField::MaxCompletionTokens),
        stream: true,
        stream_options: StreamOptions {
            include_usage: true,
        },
    }
}

fn message(m: &Message) -> WireMessage<'_> {
    let role = match m.role {
        ChatRole::System => "system",
        ChatRole::User => "user",
        ChatRole::Assistant => "assistant",
        ChatRole::Tool => "tool",
    };
    let calls_only =
        m.role == ChatRole::Assistant && !m.tool_calls.is_empty() && m.content.is_empty();
    WireMessage {
        role,
        content: (!calls_only).then_some(m.content.as_str()),
        tool_calls: m
            .tool_calls
            .iter()
            .map(|c| WireToolCall {
                id: &c.id,
                kind: "function",
                function: WireFunctionCall {
                    name: &c.name,
                    arguments: match &c.arguments {
                        // Arguments that were not JSON go back as written.
                        Value::String(raw) => raw.clone(),
                        other => other.to_string(),
                    },
                },
            })
            .collect(),
        tool_call_id: m.tool_call_id.as_deref(),
    }
}

/// OpenAI accepts `[A-Za-z0-9_-]{1,64}` as a schema name.
fn schema_name(name: &str) -> String {
    let clean: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if clean.is_empty() {
        "answer".to_owned()
    } else {
        clean
    }
}

/// One streamed `chat.completion.chunk`, or a whole `chat.completion`
/// (whose choices carry `message` instead of `delta`).
#[derive(Debug, Default, Deserialize)]
pub(super) struct Chunk {
    #[serde(default, deserialize_with = "lenient::text")]
    pub(super) model: Option<String>,
    #[serde(default, deserialize_with = "lenient::list")]
    pub(super) choices: Vec<Choice>,
    #[serde(default, deserialize_with = "lenient::object")]
    pub(super) usage: Option<WireUsage>,
    /// OpenRouter and some proxies report failures inside a 200 stream.
    #[serde(default)]
    pub(super) error: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct Choice {
    #[serde(default, deserialize_with = "lenient::count")]
    pub(super) index: Option<u64>,
    #[serde(default, deserialize_with = "lenient::object")]
    pub(super) delta: Option<Delta>,
    #[serde(default, deserialize_with = "lenient::object")]
    pub(super) message: Option<Delta>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub(super) finish_reason: Option<String>,
}

/// A delta, or a whole message: the same fields.
#[derive(Debug, Default, Deserialize)]
pub(super) struct Delta {
    #[serde(default, deserialize_with = "lenient::text")]
    pub(super) content: Option<String>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub(super) refusal: Option<String>,
    #[serde(default, deserialize_with = "lenient::list")]
    pub(super) tool_calls: Vec<ToolCallDelta>,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct ToolCallDelta {
    #[serde(default, deserialize_with = "lenient::count")]
    pub(super) index: Option<u64>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub(super) id: Option<String>,
    #[serde(default, deserialize_with = "lenient::object")]
    pub(super) function: Option<FunctionDelta>,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct FunctionDelta {
    #[serde(default, deserialize_with = "lenient::text")]
    pub(super) name: Option<String>,
    /// A string fragment; some servers send the whole arguments as an object.
    #[serde(default)]
    pub(super) arguments: Option<Value>,
}

#[derive(Debug, Default, Clone, Copy, Deserialize)]
pub(super) struct WireUsage {
    #[serde(default, deserialize_with = "lenient::count")]
    pub(super) prompt_tokens: Option<u64>,
    #[serde(default, deserialize_with = "lenient::count")]
    pub(super) completion_tokens: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn odd_but_harmless_fields_read_as_absent() {
        let chunk: Chunk = serde_json::from_str(
            r#"{"id":"x","service_tier":"on_demand","model":"m","usage":null,"choices":[
                {"index":0,"delta":{"content":null,"role":"assistant","tool_calls":null},"finish_reason":""},
                {"index":1,"delta":{"tool_calls":[{"index":"zero"}]},"finish_reason":7}]}"#,
        )
        .unwrap();
        assert_eq!(chunk.choices.len(), 2);
        assert!(chunk.choices[0].finish_reason.is_none());
        assert!(chunk.choices[1].finish_reason.is_none());
        assert!(chunk.usage.is_none());
        let nulls: Chunk = serde_json::from_str(r#"{"choices":null}"#).unwrap();
        assert!(nulls.choices.is_empty());
    }

    #[test]
    fn schema_names_are_cleaned() {
        assert_eq!(schema_name("step plan.v2"), "step_plan_v2");
        assert_eq!(schema_name(""), "answer");
    }
}
