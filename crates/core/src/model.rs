//! Chat models: one normalised request and response for every provider
//! (OpenAI-compatible chat completions, Anthropic Messages, scripted,
//! replayed). Provider wire types stay private to their clients; only these
//! types cross the border. Failures are classified ([`ModelError::class`]),
//! so retries are decided by a wrapper, not by each provider.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::retry::FailureClass;
use crate::tool::ToolSpec;
use crate::usage::Usage;

/// Who speaks a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ChatRole {
    /// Instructions.
    System,
    /// The user (or the runtime speaking for it).
    User,
    /// The model.
    Assistant,
    /// A tool's result, answering a tool call.
    Tool,
}

/// A tool call the model asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolCall {
    /// The provider's id for the call (echoed back with the result).
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments, as JSON (a string the model wrote that is not JSON is
    /// kept as a JSON string, for the caller to reject).
    pub arguments: Value,
}

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Message {
    /// Who speaks.
    pub role: ChatRole,
    /// The text.
    pub content: String,
    /// Tool calls (assistant messages only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// The call a tool message answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl Message {
    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Self {
            role: ChatRole::System,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Self {
            role: ChatRole::User,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }

    /// An assistant message.
    pub fn assistant(content: impl Into<String>) -> Self {
        Self {
            role: ChatRole::Assistant,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }

    /// A tool result.
    pub fn tool(call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            role: ChatRole::Tool,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: Some(call_id.into()),
        }
    }
}

/// A JSON Schema the answer must follow (structured output).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ResponseSchema {
    /// A short name for it (providers require one), e.g. `plan`.
    pub name: String,
    /// The schema.
    pub schema: Value,
}

/// A normalised chat request.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct ChatRequest {
    /// Which role of the graph asks (planner, assessor, …): for scripts,
    /// recordings and logs; never sent to a provider.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub purpose: String,
    /// The conversation.
    pub messages: Vec<Message>,
    /// Tools the model may call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolSpec>,
    /// A schema the answer must follow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_schema: Option<ResponseSchema>,
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// Most tokens to generate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// It finished its answer.
    Stop,
    /// It hit `max_tokens`.
    Length,
    /// It asked for tool calls.
    ToolCalls,
    /// A provider filter stopped it.
    ContentFilter,
    /// Something else the provider said.
    Other(String),
}

/// A normalised chat response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ChatResponse {
    /// The text (may be empty when there are tool calls).
    pub text: String,
    /// Tool calls asked for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// Why it stopped.
    pub finish_reason: FinishReason,
    /// Tokens (and one model call).
    pub usage: Usage,
    /// The model that answered, as the provider names it.
    #[serde(default)]
    pub model: String,
}

/// A model call failed. Each variant has a class: transient ones are
/// retried with backoff, persistent ones fail at once with a fix to try.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ModelError {
    /// 429: slow down.
    #[error("rate limited by the provider{}", retry_hint(*.retry_after_ms))]
    RateLimited {
        /// What the provider asked for (Retry-After), in milliseconds.
        retry_after_ms: Option<u64>,
    },
    /// 5xx or 529: the provider is having trouble.
    #[error("the provider failed with HTTP {status}: {message}{}", retry_hint(*.retry_after_ms))]
    Server {
        /// The HTTP status.
        status: u16,
        /// What it said.
        message: String,
        /// What the provider asked for (Retry-After on a 503 or 529), in milliseconds.
        retry_after_ms: Option<u64>,
    },
    /// No answer, or no more of it, in time.
    #[error("timed out after {after_ms} ms {stage}")]
    Timeout {
        /// Which wait ran out.
        stage: TimeoutStage,
        /// The time waited.
        after_ms: u64,
    },
    /// The connection failed or was cut.
    #[error("connection to the provider failed: {0}")]
    Connection(String),
    /// A stream ended without a finish reason.
    #[error("the response stream ended before the model finished")]
    Truncated,
    /// A piece of a streamed answer could not be read (not JSON, not UTF-8,
    /// not an event): transient, since a proxy or a cut usually garbles one
    /// chunk and the next attempt reads fine. A whole body that is not the
    /// provider's format is [`ModelError::Malformed`] instead.
    #[error("the response stream was corrupt: {0}")]
    CorruptStream(String),
    /// 401/403: the key is missing, wrong or not allowed.
    #[error("the provider refused the credentials (HTTP {status}): {message}; {fix}")]
    Auth {
        /// The HTTP status.
        status: u16,
        /// What it said (never the key).
        message: String,
        /// What to do, e.g. "set OPENAI_API_KEY".
        fix: String,
    },
    /// 404 on the model, or the provider says it does not know it.
    #[error("the provider does not know model {model:?}: {message}")]
    UnknownModel {
        /// The model asked for.
        model: String,
        /// What it said.
        message: String,
    },
    /// The prompt is longer than the model's context.
    #[error("the prompt does not fit the model's context: {0}")]
    ContextLength(String),
    /// Another 4xx: the request is wrong.
    #[error("the provider rejected the request (HTTP {status}): {message}")]
    BadRequest {
        /// The HTTP status.
        status: u16,
        /// What it said.
        message: String,
    },
    /// The provider answered something that is not its own format.
    #[error("the provider's answer could not be read: {0}")]
    Malformed(String),
    /// Stepwise is not configured to reach the model.
    #[error("{0}")]
    Config(String),
    /// A scripted or replayed model has no answer for this request.
    #[error("{0}")]
    Script(String),
    /// An error as it was recorded, played back by a replay.
    #[error("{message}")]
    Replayed {
        /// Its class when it happened.
        class: FailureClass,
        /// Its message when it happened.
        message: String,
        /// Its Retry-After, if any.
        retry_after_ms: Option<u64>,
    },
}

/// Which of an attempt's waits ran out (each has its own limit).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TimeoutStage {
    /// Reaching the server (TCP and TLS).
    Connect,
    /// From sending the request to the response's headers.
    FirstByte,
    /// A silence between two pieces of the body.
    Idle,
    /// The whole attempt, from the request to the end of the answer.
    Call,
}

impl fmt::Display for TimeoutStage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Connect => "connecting to the provider (connect timeout)",
            Self::FirstByte => "waiting for the provider to start answering (first-byte timeout)",
            Self::Idle => "waiting for more of the provider's answer (idle timeout)",
            Self::Call => "before the provider finished answering (call timeout)",
        })
    }
}

fn retry_hint(ms: Option<u64>) -> String {
    ms.map(|ms| format!(" (retry after {ms} ms)"))
        .unwrap_or_default()
}

impl ModelError {
    /// Transient (retry with backoff) or persistent (fail now).
    pub fn class(&self) -> FailureClass {
        match self {
            Self::RateLimited { .. }
            | Self::Server { .. }
            | Self::Timeout { .. }
            | Self::Connection(_)
            | Self::Truncated
            | Self::CorruptStream(_) => FailureClass::Transient,
            Self::Auth { .. }
            | Self::UnknownModel { .. }
            | Self::ContextLength(_)
            | Self::BadRequest { .. }
            | Self::Malformed(_)
            | Self::Config(_)
            | Self::Script(_) => FailureClass::Persistent,
            Self::Replayed { class, .. } => *class,
        }
    }

    /// The delay the provider asked for, if any.
    pub fn retry_after_ms(&self) -> Option<u64> {
        match self {
            Self::RateLimited { retry_after_ms }
            | Self::Server { retry_after_ms, .. }
            | Self::Replayed { retry_after_ms, .. } => *retry_after_ms,
            _ => None,
        }
    }
}

/// A chat model: OpenAI-compatible, Anthropic, scripted or replayed.
#[async_trait]
pub trait ChatModel: Send + Sync {
    /// The model's name, e.g. `openai:gpt-4o-mini`.
    fn name(&self) -> &str;
    /// One request, one response.
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError>;

    /// Whether [`chat_streaming`](Self::chat_streaming) hands the text over
    /// piece by piece as it arrives (a provider's streamed answer), rather
    /// than all at once at the end.
    fn streams(&self) -> bool {
        false
    }

    /// [`chat`](Self::chat), handing the answer's text to `on_text` piece by
    /// piece as it arrives; the pieces joined are the response's `text`.
    /// The default hands it over whole once the answer is complete.
    async fn chat_streaming(
        &self,
        request: &ChatRequest,
        on_text: &mut (dyn for<'s> FnMut(&'s str) + Send),
    ) -> Result<ChatResponse, ModelError> {
        let response = self.chat(request).await?;
        on_text(&response.text);
        Ok(response)
    }
}

#[async_trait]
impl<M: ChatModel + ?Sized> ChatModel for Arc<M> {
    fn name(&self) -> &str {
        (**self).name()
    }

    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        (**self).chat(request).await
    }

    fn streams(&self) -> bool {
        (**self).streams()
    }

    async fn chat_streaming(
        &self,
        request: &ChatRequest,
        on_text: &mut (dyn for<'s> FnMut(&'s str) + Send),
    ) -> Result<ChatResponse, ModelError> {
        (**self).chat_streaming(request, on_text).await
    }
}

impl fmt::Display for FinishReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Stop => f.write_str("stop"),
            Self::Length => f.write_str("length"),
            Self::ToolCalls => f.write_str("tool_calls"),
            Self::ContentFilter => f.write_str("content_filter"),
            Self::Other(s) => f.write_str(s),
        }
    }
}

/// How one model call ended, as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum ExchangeOutcome {
    /// The model answered.
    Response {
        /// The answer.
        response: ChatResponse,
    },
    /// The call failed.
    Error {
        /// Transient (retried) or persistent.
        class: FailureClass,
        /// The error, as a person reads it (never a key).
        message: String,
        /// Retry-After, if the provider sent one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retry_after_ms: Option<u64>,
    },
}

/// One request to a model and what came back: recorded in the run's log
/// (so a run can be replayed with zero network calls), one per attempt, so
/// every retry is on record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ModelExchange {
    /// The model, e.g. `openai:gpt-4o-mini`.
    pub model: String,
    /// The request, as sent (normalised form).
    pub request: ChatRequest,
    /// What came back.
    #[serde(flatten)]
    pub outcome: ExchangeOutcome,
    /// Attempt number for this request, from 1.
    pub attempt: u32,
    /// Backoff waited before this attempt, in milliseconds.
    #[serde(default)]
    pub waited_ms: u64,
    /// How long the attempt took, in milliseconds.
    #[serde(default)]
    pub duration_ms: u64,
}

impl ModelExchange {
    /// What this call cost: one model call with its tokens if the model
    /// answered; nothing if the attempt failed (no answer, no tokens billed).
    pub fn usage(&self) -> Usage {
        match &self.outcome {
            ExchangeOutcome::Response { response } => Usage {
                llm_calls: 1,
                ..response.usage
            },
            ExchangeOutcome::Error { .. } => Usage::default(),
        }
    }
}

/// What a list of model calls cost (see [`ModelExchange::usage`]).
pub fn usage_of(exchanges: &[ModelExchange]) -> Usage {
    let mut total = Usage::default();
    for exchange in exchanges {
        total += exchange.usage();
    }
    total
}

impl ExchangeOutcome {
    /// The outcome of a call.
    pub fn of(result: &Result<ChatResponse, ModelError>) -> Self {
        match result {
            Ok(response) => Self::Response {
                response: response.clone(),
            },
            Err(e) => Self::Error {
                class: e.class(),
                message: e.to_string(),
                retry_after_ms: e.retry_after_ms(),
            },
        }
    }
}
