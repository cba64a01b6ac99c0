//! Anthropic Messages wire types: the request we send and the lenient
//! shapes of streamed events and whole messages. Private to the client.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use stepwise_core::{ChatRequest, ChatRole};

use crate::providers::lenient;

/// Anthropic requires `max_tokens`; this is used when the request sets none.
pub(super) const DEFAULT_MAX_TOKENS: u32 = 4096;

#[derive(Debug, Serialize)]
pub(super) struct Request<'a> {
    model: &'a str,
    max_tokens: u32,
    #[serde(skip_serializing_if = "String::is_empty")]
    system: String,
    messages: Vec<WireMessage>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    stream: bool,
}

#[derive(Debug, Serialize)]
struct WireMessage {
    role: &'static str,
    content: Vec<Block>,
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block {
    Text {
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        input: Value,
    },
    ToolResult {
        tool_use_id: String,
        content: String,
    },
}

#[derive(Debug, Serialize)]
struct WireTool<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: &'a Value,
}

/// The request body. System messages become the top-level `system`; tool
/// results become `tool_result` blocks in a user turn; consecutive turns of
/// one role are merged (parallel tool results must share one user turn).
/// Anthropic has no JSON-schema mode, so a response schema becomes an
/// instruction at the end of the system prompt.
pub(super) fn request<'a>(model: &'a str, req: &'a ChatRequest) -> Request<'a> {
    let mut system: Vec<String> = Vec::new();
    let mut messages: Vec<WireMessage> = Vec::new();
    for m in &req.messages {
        let (role, blocks) = match m.role {
            ChatRole::System => {
                system.push(m.content.clone());
                continue;
            }
            ChatRole::User => ("user", text_block(&m.content)),
            ChatRole::Tool => (
                "user",
                vec![Block::ToolResult {
                    tool_use_id: m.tool_call_id.clone().unwrap_or_default(),
                    content: m.content.clone(),
                }],
            ),
            ChatRole::Assistant => {
                let mut blocks = text_block(&m.content);
                blocks.extend(m.tool_calls.iter().map(|c| Block::ToolUse {
                    id: c.id.clone(),
                    name: c.name.clone(),
                    // `input` must be an object; arguments kept as raw text are not.
                    input: if c.arguments.is_object() {
                        c.arguments.clone()
                    } else {
                        Value::Object(serde_json::Map::new())
                    },
                }));
                ("assistant", blocks)
            }
        };
        if blocks.is_empty() {
            continue;
        }
        match messages.last_mut() {
            Some(last) if last.role == role => last.content.extend(blocks),
            _ => messages.push(WireMessage {
                role,
                content: blocks,
            }),
        }
    }
    if let Some(schema) = &req.response_schema {
        system.push(format!(
            "Answer with only a JSON object matching this JSON Schema (no prose, no code \
             fence):\n{}",
            schema.schema
        ));
    }
    Request {
        model,
        max_tokens: req.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
        system: system.join("\n\n"),
        messages,
        tools: req
            .tools
            .iter()
            .map(|t| WireTool {
                name: &t.name,
                description: &t.description,
                input_schema: &t.args_schema,
            })
            .collect(),
        temperature: req.temperature,
        stream: true,
    }
}

/// Anthropic rejects empty text blocks.
fn text_block(text: &str) -> Vec<Block> {
    if text.is_empty() {
        Vec::new()
    } else {
        vec![Block::Text {
            text: text.to_owned(),
        }]
    }
}

/// One streamed event (`message_start`, `content_block_start`,
/// `content_block_delta`, `message_delta`, `error`, …) or a whole message
/// (`type: message`): one loose shape, dispatched on `type`, so new event
/// types are ignored rather than failing the call.
#[derive(Debug, Default, Deserialize)]
pub(super) struct Event {
    #[serde(rename = "type", default, deserialize_with = "lenient::text")]
    pub(super) kind: Option<String>,
    /// `message_start`'s message.
    #[serde(default, deserialize_with = "lenient::object")]
    pub(super) message: Option<Box<Event>>,
    #[serde(default, deserialize_with = "lenient::count")]
    pub(super) index: Option<u64>,
    #[serde(default, deserialize_with = "lenient::object")]
    pub(super) content_block: Option<ContentBlock>,
    #[serde(default, deserialize_with = "lenient::object")]
    pub(super) delta: Option<EventDelta>,
    #[serde(default, deserialize_with = "lenient::object")]
    pub(super) usage: Option<WireUsage>,
    #[serde(default)]
    pub(super) error: Option<Value>,
    /// Whole messages: the blocks and why it stopped.
    #[serde(default, deserialize_with = "lenient::list")]
    pub(super) content: Vec<ContentBlock>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub(super) stop_reason: Option<String>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub(super) model: Option<String>,
}

impl Event {
    /// The text a `content_block_delta` event adds, if it adds any.
    pub(super) fn text_delta(&self) -> Option<&str> {
        if self.kind.as_deref() != Some("content_block_delta") {
            return None;
        }
        let delta = self.delta.as_ref()?;
        if delta.kind.as_deref() != Some("text_delta") {
            return None;
        }
        delta.text.as_deref().filter(|t| !t.is_empty())
    }
}

#[derive(Debug, Default, Clone, Deserialize)]
pub(super) struct ContentBlock {
    #[serde(rename = "type", default, deserialize_with = "lenient::text")]
    pub(super) kind: Option<String>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub(super) text: Option<String>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub(super) id: Option<String>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub(super) name: Option<String>,
    #[serde(default)]
    pub(super) input: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct EventDelta {
    #[serde(rename = "type", default, deserialize_with = "lenient::text")]
    pub(super) kind: Option<String>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub(super) text: Option<String>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub(super) partial_json: Option<String>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub(super) stop_reason: Option<String>,
}

/// Token counts. Cached prompt tokens are reported apart from
/// `input_tokens`; all three are prompt tokens, so they are added up.
#[derive(Debug, Default, Clone, Copy, Deserialize)]
pub(super) struct WireUsage {
    #[serde(default, deserialize_with = "lenient::count")]
    pub(super) input_tokens: Option<u64>,
    #[serde(default, deserialize_with = "lenient::count")]
    pub(super) output_tokens: Option<u64>,
    #[serde(default, deserialize_with = "lenient::count")]
    pub(super) cache_creation_input_tokens: Option<u64>,
    #[serde(default, deserialize_with = "lenient::count")]
    pub(super) cache_read_input_tokens: Option<u64>,
}

impl WireUsage {
    /// All prompt tokens, if the provider reported any.
    pub(super) fn input(&self) -> Option<u64> {
        self.input_tokens.map(|n| {
            n.saturating_add(self.cache_creation_input_tokens.unwrap_or(0))
                .saturating_add(self.cache_read_input_tokens.unwrap_or(0))
        })
    }
}
