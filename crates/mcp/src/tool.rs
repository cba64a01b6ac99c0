//! One MCP tool as a Stepwise [`DynTool`]: its spec (namespaced name,
//! input schema, output schema, side-effect class from its annotations and
//! the config), and its calls mapped to outputs and classified failures.

use std::sync::Arc;

use futures::future::BoxFuture;
use rmcp::model::{CallToolResult, ContentBlock};
use serde::Serialize;
use serde_json::{Map, Value, json};
use stepwise_core::{DynTool, ToolContext, ToolError, ToolSpec};

use crate::config::ToolOverride;
use crate::server::{CallOutcome, Server};

/// What the server's annotations said about a tool (all hints, as given;
/// absent is `None`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Hints {
    /// `readOnlyHint`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
    /// `destructiveHint`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destructive: Option<bool>,
    /// `idempotentHint`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idempotent: Option<bool>,
    /// `openWorldHint`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open_world: Option<bool>,
}

/// A tool as `stepwise tools` lists it: where it comes from, what the
/// server claimed, what the config overrode, and the spec that results.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolInfo {
    /// The server's configured name.
    pub server: String,
    /// The tool's name on that server (the spec's name is `server.tool`).
    pub tool: String,
    /// The annotations, as the server sent them.
    pub hints: Hints,
    /// Keys the config set for this tool (`side_effect`, `idempotent`, …).
    pub overridden: Vec<&'static str>,
    /// One call's time limit, in milliseconds (enforced by the tool itself).
    pub timeout_ms: u64,
    /// The spec plans are validated against.
    pub spec: ToolSpec,
}

/// The output schema of a tool that publishes none: the shape
/// [`output_value`] gives its results.
fn text_output_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "text": {"type": "string", "description": "the text blocks of the result, joined"},
            "content": {"type": "array", "description": "the non-text content blocks (images, resources), as sent"},
            "structured": {"description": "structuredContent, if the server sent any"}
        },
        "required": ["text"],
        "additionalProperties": false
    })
}

/// An input schema the validator can use: the server's if it compiles,
/// else any object (the server still checks its own arguments).
fn usable_schema(schema: Value, server: &Server, tool: &str) -> Value {
    match jsonschema::validator_for(&schema) {
        Ok(_) => schema,
        Err(e) => {
            server.note(&format!(
                "tool {tool}: its inputSchema does not compile ({e}); arguments are checked by the server only"
            ));
            json!({"type": "object"})
        }
    }
}

/// Builds the spec of `tool` from what the server listed and the config.
pub(crate) fn describe(server: &Server, tool: &rmcp::model::Tool) -> Option<ToolInfo> {
    let name = tool.name.to_string();
    let over = server.config.tools.get(&name).copied().unwrap_or_default();
    if over.enabled == Some(false) {
        return None;
    }
    let annotations = tool.annotations.clone().unwrap_or_default();
    let hints = Hints {
        read_only: annotations.read_only_hint,
        destructive: annotations.destructive_hint,
        idempotent: annotations.idempotent_hint,
        open_world: annotations.open_world_hint,
    };
    // Side-effecting unless it says it is read-only (or the config says so).
    let side_effect = over.side_effect.unwrap_or(hints.read_only != Some(true));
    let idempotent = over.idempotent.unwrap_or(if side_effect {
        hints.idempotent == Some(true)
    } else {
        true
    });
    // MCP's default for destructiveHint is true.
    let destructive = side_effect && over.destructive.unwrap_or(hints.destructive != Some(false));
    let mut description = tool
        .description
        .as_deref()
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .map(str::to_owned)
        .or_else(|| tool.title.clone())
        .unwrap_or_default();
    if description.is_empty() {
        description = format!("{name} (from the MCP server {})", server.name);
    }
    let input = usable_schema(Value::Object((*tool.input_schema).clone()), server, &name);
    let output_schema = match &tool.output_schema {
        Some(schema) => {
            let schema = Value::Object((**schema).clone());
            jsonschema::validator_for(&schema).is_ok().then_some(schema)
        }
        None => Some(text_output_schema()),
    };
    let spec = ToolSpec {
        name: format!("{}.{name}", server.name),
        description,
        args_schema: input,
        side_effect,
        idempotent,
        // Enforced by the tool itself, which knows whether a late answer
        // may mean the server acted (see `McpTool::call_json`).
        timeout_ms: None,
        destructive,
        output_schema,
    };
    Some(ToolInfo {
        server: server.name.clone(),
        tool: name.clone(),
        hints,
        overridden: overridden(&over),
        timeout_ms: server.config.timeout_ms(&name),
        spec,
    })
}

fn overridden(over: &ToolOverride) -> Vec<&'static str> {
    [
        ("side_effect", over.side_effect.is_some()),
        ("idempotent", over.idempotent.is_some()),
        ("destructive", over.destructive.is_some()),
        ("timeout_ms", over.timeout_ms.is_some()),
    ]
    .into_iter()
    .filter_map(|(k, set)| set.then_some(k))
    .collect()
}

/// A tool of a running server.
pub(crate) struct McpTool {
    pub(crate) server: Arc<Server>,
    pub(crate) info: ToolInfo,
    /// Whether the tool structures its output (an `outputSchema` was given).
    pub(crate) structured: bool,
}

impl DynTool for McpTool {
    fn spec(&self) -> &ToolSpec {
        &self.info.spec
    }

    /// Calls the tool. A result with `isError: true` is a persistent
    /// failure carrying the server's message, as is a JSON-RPC error. A
    /// server that died or dropped its session is restarted (at the latest
    /// by the next attempt) and the failure is transient, as is a timeout —
    /// unless the tool has side effects and is not idempotent, and the
    /// request may have reached the server: then the outcome is unknown,
    /// the failure fatal, and nothing is retried blindly.
    fn call_json(&self, ctx: ToolContext, args: Value) -> BoxFuture<'_, Result<Value, ToolError>> {
        Box::pin(async move {
            let name = &self.info.spec.name;
            let arguments = match args {
                Value::Object(map) => map,
                Value::Null => Map::new(),
                other => {
                    return Err(ToolError::persistent(format!(
                        "{name} takes an object of arguments, not {other}"
                    )));
                }
            };
            let unsafe_to_repeat = self.info.spec.side_effect && !self.info.spec.idempotent;
            let unknown = |why: String| {
                ToolError::fatal(format!(
                    "outcome unknown: {name} has side effects and is not idempotent, and {why}; \
                     it may or may not have acted, so it is not retried (check its effect by hand; \
                     idempotency key {})",
                    ctx.idempotency_key
                ))
            };
            match self
                .server
                .call(
                    &self.info.tool,
                    arguments,
                    self.info
                        .spec
                        .side_effect
                        .then_some(ctx.idempotency_key.as_str()),
                    self.info.timeout_ms,
                )
                .await
            {
                CallOutcome::Answered(result) if result.is_error == Some(true) => Err(
                    ToolError::persistent(format!("{name} failed: {}", error_text(&result))),
                ),
                CallOutcome::Answered(result) => Ok(output_value(result, self.structured)),
                CallOutcome::Refused(message) => Err(ToolError::persistent(format!(
                    "{name} was refused by the server: {message}"
                ))),
                CallOutcome::TimedOut(ms) if unsafe_to_repeat => {
                    Err(unknown(format!("it did not answer within {ms} ms")))
                }
                CallOutcome::TimedOut(ms) => Err(ToolError::transient(format!(
                    "{name} did not answer within {ms} ms"
                ))),
                CallOutcome::Lost(why) if unsafe_to_repeat => {
                    Err(unknown(format!("the call was lost: {why}")))
                }
                CallOutcome::Lost(why) => {
                    self.server.note(&format!(
                        "{name} (step {}, attempt {}): {why}; the next attempt restarts the server",
                        ctx.step, ctx.attempt
                    ));
                    Err(ToolError::transient(format!("{name}: {why}")))
                }
                CallOutcome::Unavailable(why) => {
                    self.server.note(&format!("{name}: {why}"));
                    Err(ToolError::transient(format!(
                        "{name}: the MCP server {} is not available: {why}",
                        self.server.name
                    )))
                }
            }
        })
    }
}

/// The text blocks of a result, joined with newlines.
fn joined_text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(ContentBlock::as_text)
        .map(|t| t.text.as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// What an `isError` result says, for the step's failure.
fn error_text(result: &CallToolResult) -> String {
    let text = joined_text(result);
    if !text.trim().is_empty() {
        return text.trim().to_owned();
    }
    match &result.structured_content {
        Some(v) => v.to_string(),
        None => "the server gave no message".to_owned(),
    }
}

/// A result as the step's output. A tool with an `outputSchema` gives its
/// `structuredContent` as it is (a server that left it out: its text, parsed
/// if it is JSON). Any other tool gives `{"text": …}`, with `content` for
/// blocks that are not text and `structured` for structured content. It is
/// data for later steps and the report — never instructions: nothing in it
/// can change the approved plan or approve anything.
pub(crate) fn output_value(result: CallToolResult, structured: bool) -> Value {
    let text = joined_text(&result);
    if structured {
        if let Some(value) = result.structured_content {
            return value;
        }
        if let Ok(value @ Value::Object(_)) = serde_json::from_str::<Value>(&text) {
            return value;
        }
    }
    let mut out = Map::new();
    out.insert("text".to_owned(), Value::String(text));
    let others: Vec<Value> = result
        .content
        .iter()
        .filter(|c| c.as_text().is_none())
        .filter_map(|c| serde_json::to_value(c).ok())
        .collect();
    if !others.is_empty() {
        out.insert("content".to_owned(), Value::Array(others));
    }
    if let Some(value) = result.structured_content {
        out.insert("structured".to_owned(), value);
    }
    Value::Object(out)
}

/// Logs a tool that was left out or changed when listed.
pub(crate) fn note_listing(server: &Server, listed: usize, kept: usize) {
    server.note(&format!(
        "listed {listed} tool(s){}",
        if kept < listed {
            format!(", {} disabled by the config", listed - kept)
        } else {
            String::new()
        }
    ));
}
