//! A scripted model: replays a file of responses in order (`--model
//! script:FILE`), for tests and for users testing their own agents without a
//! provider. Entries can pin the role they answer (`purpose`), so a script
//! that drifts out of step with the run fails loudly at the first wrong
//! request instead of feeding a plan to the assessor; entries can also
//! simulate provider failures, to exercise retries and error paths. See
//! `docs/models.md` for the format.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use stepwise_core::{
    ChatModel, ChatRequest, ChatResponse, FinishReason, ModelError, TimeoutStage, ToolCall, Usage,
};

/// One scripted answer: a response, or an error to simulate.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptEntry {
    /// If set, the request's `purpose` (planner, assessor, …) must equal it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub purpose: Option<String>,
    /// The answer's text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// The answer as a JSON value (written out as compact text): spares
    /// escaping JSON inside a JSON string.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub json: Option<Value>,
    /// Tool calls the answer asks for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// Tokens to report (zero if absent; the call always counts as one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<ScriptUsage>,
    /// `stop` (default), `length`, `tool_calls` (default with tool calls),
    /// `content_filter`, or anything else.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
    /// A failure to return instead of an answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ScriptError>,
    /// Streams the answer's text in pieces at a fixed rate, as a provider
    /// would (asked for whole, it arrives after the same time, at once).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<ScriptStream>,
}

/// How a scripted answer streams: `chunk_chars` characters every
/// `chunk_ms` milliseconds, the first after `chunk_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptStream {
    /// Milliseconds before each piece.
    pub chunk_ms: u64,
    /// Characters per piece (default 16).
    #[serde(default = "default_chunk_chars")]
    pub chunk_chars: usize,
}

fn default_chunk_chars() -> usize {
    16
}

impl ScriptStream {
    /// `text` cut into the pieces it streams as.
    pub fn pieces(self, text: &str) -> Vec<&str> {
        let size = self.chunk_chars.max(1);
        let mut pieces = Vec::new();
        let mut start = 0;
        for (n, (i, _)) in text.char_indices().enumerate() {
            if n > 0 && n % size == 0 {
                pieces.push(&text[start..i]);
                start = i;
            }
        }
        if start < text.len() {
            pieces.push(&text[start..]);
        }
        pieces
    }
}

/// Token counts of a scripted answer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptUsage {
    /// Prompt tokens.
    #[serde(default)]
    pub input_tokens: u64,
    /// Completion tokens.
    #[serde(default)]
    pub output_tokens: u64,
}

/// A provider failure to simulate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptError {
    /// Which failure.
    pub kind: ScriptErrorKind,
    /// Retry-After, for `rate_limited` and `server`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<u64>,
    /// What the provider said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The HTTP status, for `server`, `auth` and `bad_request`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// The fix to suggest, for `auth`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
    /// The time waited, for `timeout`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_ms: Option<u64>,
}

/// The failures a script can simulate, named as in the docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScriptErrorKind {
    /// 429 (transient).
    RateLimited,
    /// 5xx (transient).
    Server,
    /// No answer in time (transient).
    Timeout,
    /// Connection reset (transient).
    Connection,
    /// Stream cut short (transient).
    Truncated,
    /// 401/403 (persistent).
    Auth,
    /// Unknown model (persistent).
    UnknownModel,
    /// Prompt too long (persistent).
    ContextLength,
    /// Another 4xx (persistent).
    BadRequest,
    /// The provider's answer was unreadable (persistent).
    Malformed,
}

impl ScriptEntry {
    /// An answer with this text.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: Some(text.into()),
            ..Self::default()
        }
    }

    /// An answer whose text is this JSON value.
    pub fn json(value: Value) -> Self {
        Self {
            json: Some(value),
            ..Self::default()
        }
    }

    /// A simulated failure.
    pub fn error(kind: ScriptErrorKind) -> Self {
        Self {
            error: Some(ScriptError {
                kind,
                retry_after_ms: None,
                message: None,
                status: None,
                fix: None,
                after_ms: None,
            }),
            ..Self::default()
        }
    }

    /// Only answers a request with this purpose.
    #[must_use]
    pub fn for_purpose(mut self, purpose: impl Into<String>) -> Self {
        self.purpose = Some(purpose.into());
        self
    }

    /// Reports these token counts.
    #[must_use]
    pub fn with_usage(mut self, input_tokens: u64, output_tokens: u64) -> Self {
        self.usage = Some(ScriptUsage {
            input_tokens,
            output_tokens,
        });
        self
    }

    /// What is wrong with the entry, if anything.
    fn problem(&self) -> Option<&'static str> {
        let answers = self.text.is_some() || self.json.is_some() || !self.tool_calls.is_empty();
        if self.error.is_some() && answers {
            Some("has both an error and an answer (text, json or tool_calls)")
        } else if self.text.is_some() && self.json.is_some() {
            Some("has both text and json; give one")
        } else if self.error.is_none() && !answers {
            Some("has neither text, json, tool_calls nor error")
        } else {
            None
        }
    }
}

impl ScriptError {
    fn to_model_error(&self, model: &str) -> ModelError {
        let message = |default: &str| self.message.clone().unwrap_or_else(|| default.to_owned());
        match self.kind {
            ScriptErrorKind::RateLimited => ModelError::RateLimited {
                retry_after_ms: self.retry_after_ms,
            },
            ScriptErrorKind::Server => ModelError::Server {
                status: self.status.unwrap_or(500),
                message: message("scripted server error"),
                retry_after_ms: self.retry_after_ms,
            },
            ScriptErrorKind::Timeout => ModelError::Timeout {
                stage: TimeoutStage::Call,
                after_ms: self.after_ms.unwrap_or(0),
            },
            ScriptErrorKind::Connection => ModelError::Connection(message("connection reset")),
            ScriptErrorKind::Truncated => ModelError::Truncated,
            ScriptErrorKind::Auth => ModelError::Auth {
                status: self.status.unwrap_or(401),
                message: message("invalid API key"),
                fix: self
                    .fix
                    .clone()
                    .unwrap_or_else(|| "check the API key".to_owned()),
            },
            ScriptErrorKind::UnknownModel => ModelError::UnknownModel {
                model: model.to_owned(),
                message: message("model not found"),
            },
            ScriptErrorKind::ContextLength => {
                ModelError::ContextLength(message("the prompt is too long"))
            }
            ScriptErrorKind::BadRequest => ModelError::BadRequest {
                status: self.status.unwrap_or(400),
                message: message("bad request"),
            },
            ScriptErrorKind::Malformed => ModelError::Malformed(message("unreadable answer")),
        }
    }
}

/// A script file that could not be loaded; names the file and the entry.
#[derive(Debug, thiserror::Error)]
pub enum ScriptLoadError {
    /// The file could not be read.
    #[error("cannot read the model script {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not a JSON array or JSON lines.
    #[error("the model script {source_name} is not a JSON array of entries: {message}")]
    Syntax {
        /// The file.
        source_name: String,
        /// The JSON error, with line and column.
        message: String,
    },
    /// One entry is wrong.
    #[error("the model script {source_name}, entry {entry}{}: {message}", line.map(|l| format!(" (line {l})")).unwrap_or_default())]
    Entry {
        /// The file.
        source_name: String,
        /// The entry, from 1.
        entry: usize,
        /// Its line, for JSON lines.
        line: Option<usize>,
        /// What is wrong.
        message: String,
    },
}

/// A [`ChatModel`] that replays a script of answers in order.
pub struct ScriptModel {
    name: String,
    source: String,
    entries: Vec<ScriptEntry>,
    next: Mutex<usize>,
}

impl fmt::Debug for ScriptModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScriptModel")
            .field("name", &self.name)
            .field("entries", &self.entries.len())
            .field("used", &self.used())
            .finish()
    }
}

impl ScriptModel {
    /// Loads a script file: a JSON array of entries (after any lines
    /// starting with `#`, a header saying what the script is), or one entry
    /// per line (JSON lines; blank lines and lines starting with `#` are
    /// skipped).
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, ScriptLoadError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| ScriptLoadError::Read {
            path: path.to_owned(),
            source,
        })?;
        let file_name = path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        let entries = parse(&text, &path.display().to_string())?;
        Ok(Self::new(
            format!("script:{file_name}"),
            path.display().to_string(),
            entries,
        ))
    }

    /// A script from entries built in code.
    pub fn from_entries(entries: Vec<ScriptEntry>) -> Self {
        Self::new(
            "script:inline".to_owned(),
            "the inline script".to_owned(),
            entries,
        )
    }

    fn new(name: String, source: String, entries: Vec<ScriptEntry>) -> Self {
        Self {
            name,
            source,
            entries,
            next: Mutex::new(0),
        }
    }

    /// Entries answered so far.
    pub fn used(&self) -> usize {
        self.next.lock().map_or(0, |n| *n)
    }

    /// Entries not yet answered.
    pub fn remaining(&self) -> usize {
        self.entries.len().saturating_sub(self.used())
    }
}

/// Parses a script's text; `source` names it in errors.
pub fn parse(text: &str, source: &str) -> Result<Vec<ScriptEntry>, ScriptLoadError> {
    let entry_error = |entry, line, message: String| ScriptLoadError::Entry {
        source_name: source.to_owned(),
        entry,
        line,
        message,
    };
    let mut values: Vec<(Value, Option<usize>)> = Vec::new();
    // A header of `#` lines may precede an array; blanked, not removed, so
    // the parser's line numbers stay the file's.
    let mut in_header = true;
    let body: String = text
        .split_inclusive('\n')
        .map(|line| {
            let t = line.trim();
            in_header = in_header && (t.is_empty() || t.starts_with('#'));
            if in_header && t.starts_with('#') {
                "\n"
            } else {
                line
            }
        })
        .collect();
    if body.trim_start().starts_with('[') {
        let all: Vec<Value> = serde_json::from_str(&body).map_err(|e| ScriptLoadError::Syntax {
            source_name: source.to_owned(),
            message: e.to_string(),
        })?;
        values.extend(all.into_iter().map(|v| (v, None)));
    } else {
        for (i, line) in text.lines().enumerate() {
            let line_text = line.trim();
            if line_text.is_empty() || line_text.starts_with('#') {
                continue;
            }
            let value = serde_json::from_str(line_text)
                .map_err(|e| entry_error(values.len() + 1, Some(i + 1), e.to_string()))?;
            values.push((value, Some(i + 1)));
        }
    }
    values
        .into_iter()
        .enumerate()
        .map(|(i, (value, line))| {
            let entry: ScriptEntry = serde_json::from_value(value)
                .map_err(|e| entry_error(i + 1, line, e.to_string()))?;
            match entry.problem() {
                Some(problem) => Err(entry_error(i + 1, line, problem.to_owned())),
                None => Ok(entry),
            }
        })
        .collect()
}

fn finish_reason(entry: &ScriptEntry) -> FinishReason {
    match entry.finish_reason.as_deref() {
        None if !entry.tool_calls.is_empty() => FinishReason::ToolCalls,
        None | Some("stop") => FinishReason::Stop,
        Some("length") => FinishReason::Length,
        Some("tool_calls") => FinishReason::ToolCalls,
        Some("content_filter") => FinishReason::ContentFilter,
        Some(other) => FinishReason::Other(other.to_owned()),
    }
}

impl ScriptModel {
    /// The entry answering `request` (the next one, if it fits), moved past.
    fn next_entry(&self, request: &ChatRequest) -> Result<ScriptEntry, ModelError> {
        let mut next = self.next.lock().map_err(|_| {
            ModelError::Script(format!("{}: the script's lock is poisoned", self.source))
        })?;
        let Some(entry) = self.entries.get(*next) else {
            return Err(ModelError::Script(format!(
                "the script has no more responses ({} used): {}",
                *next, self.source
            )));
        };
        if let Some(purpose) = &entry.purpose
            && *purpose != request.purpose
        {
            let got = if request.purpose.is_empty() {
                "a request with no purpose".to_owned()
            } else {
                request.purpose.clone()
            };
            return Err(ModelError::Script(format!(
                "script entry {} expects a {purpose} request, got {got} ({})",
                *next + 1,
                self.source
            )));
        }
        *next += 1;
        Ok(entry.clone())
    }

    /// The entry's answer (or its simulated failure).
    fn response(&self, entry: &ScriptEntry) -> Result<ChatResponse, ModelError> {
        if let Some(error) = &entry.error {
            return Err(error.to_model_error(&self.name));
        }
        let text = match (&entry.text, &entry.json) {
            (Some(text), _) => text.clone(),
            (None, Some(json)) => json.to_string(),
            (None, None) => String::new(),
        };
        let usage = entry.usage.unwrap_or_default();
        Ok(ChatResponse {
            text,
            tool_calls: entry.tool_calls.clone(),
            finish_reason: finish_reason(entry),
            usage: Usage::llm_call(usage.input_tokens, usage.output_tokens),
            model: self.name.clone(),
        })
    }
}

#[async_trait]
impl ChatModel for ScriptModel {
    fn name(&self) -> &str {
        &self.name
    }

    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        self.chat_streaming(request, &mut |_| {}).await
    }

    /// A script streams if any of its entries does.
    fn streams(&self) -> bool {
        self.entries.iter().any(|e| e.stream.is_some())
    }

    async fn chat_streaming(
        &self,
        request: &ChatRequest,
        on_text: &mut (dyn for<'s> FnMut(&'s str) + Send),
    ) -> Result<ChatResponse, ModelError> {
        let entry = self.next_entry(request)?;
        let response = self.response(&entry)?;
        match entry.stream {
            Some(stream) => {
                for piece in stream.pieces(&response.text) {
                    tokio::time::sleep(std::time::Duration::from_millis(stream.chunk_ms)).await;
                    on_text(piece);
                }
            }
            None => on_text(&response.text),
        }
        Ok(response)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use stepwise_core::FailureClass;

    fn req(purpose: &str) -> ChatRequest {
        ChatRequest {
            purpose: purpose.to_owned(),
            ..ChatRequest::default()
        }
    }

    #[tokio::test]
    async fn replays_jsonl_in_order_and_checks_purpose() {
        let text = "# a comment\n{\"purpose\":\"planner\",\"json\":{\"steps\":[]}}\n\n\
                    {\"error\":{\"kind\":\"rate_limited\",\"retry_after_ms\":10}}\n\
                    {\"purpose\":\"assessor\",\"text\":\"ok\",\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}\n";
        let entries = parse(text, "t.jsonl").unwrap();
        let model = ScriptModel::new("script:t.jsonl".into(), "t.jsonl".into(), entries);
        assert_eq!(
            model.chat(&req("planner")).await.unwrap().text,
            "{\"steps\":[]}"
        );
        let err = model.chat(&req("assessor")).await.unwrap_err();
        assert_eq!(err.class(), FailureClass::Transient);
        assert_eq!(err.retry_after_ms(), Some(10));
        let err = model.chat(&req("planner")).await.unwrap_err();
        assert!(
            err.to_string()
                .contains("script entry 3 expects a assessor request, got planner")
        );
        let ok = model.chat(&req("assessor")).await.unwrap();
        assert_eq!(ok.usage, Usage::llm_call(3, 1));
        let err = model.chat(&req("assessor")).await.unwrap_err();
        assert!(err.to_string().contains("no more responses (3 used)"));
    }

    #[tokio::test(start_paused = true)]
    async fn a_streamed_entry_arrives_in_pieces_at_its_rate() {
        let entries = parse(
            "{\"text\": \"abcdefghij\", \"stream\": {\"chunk_ms\": 20, \"chunk_chars\": 4}}\n\
             {\"text\": \"whole\", \"stream\": {\"chunk_ms\": 20, \"chunk_chars\": 4}}",
            "s.jsonl",
        )
        .unwrap();
        let model = ScriptModel::new("script:s".into(), "s".into(), entries);
        assert!(model.streams());
        let started = tokio::time::Instant::now();
        let mut seen = Vec::new();
        let response = model
            .chat_streaming(&req(""), &mut |piece| {
                seen.push((piece.to_owned(), started.elapsed().as_millis()))
            })
            .await
            .unwrap();
        assert_eq!(response.text, "abcdefghij");
        assert_eq!(
            seen,
            [("abcd".into(), 20), ("efgh".into(), 40), ("ij".into(), 60)]
        );
        // Asked whole, it takes as long and comes at once.
        let started = tokio::time::Instant::now();
        assert_eq!(model.chat(&req("")).await.unwrap().text, "whole");
        assert_eq!(started.elapsed().as_millis(), 40);
    }

    #[test]
    fn load_errors_name_the_entry() {
        let err = parse("[{\"text\":\"a\"},{\"txt\":\"b\"}]", "s.json").unwrap_err();
        assert!(err.to_string().contains("s.json, entry 2"), "{err}");
        let err = parse(
            "{\"text\":\"a\"}\n{\"text\":\"a\",\"error\":{\"kind\":\"auth\"}}",
            "s.jsonl",
        )
        .unwrap_err();
        assert!(err.to_string().contains("entry 2 (line 2)"), "{err}");
        assert!(parse("[{}]", "s").is_err());
        assert!(parse("[{\"error\":{\"kind\":\"nope\"}}]", "s").is_err());
        assert!(parse("[", "s").is_err());
    }

    #[test]
    fn an_array_may_follow_a_header_of_comment_lines() {
        let text =
            "# A scripted model: canned answers.\n#\n\n[{\"text\": \"a\"},\n {\"text\": \"b\"}]\n";
        assert_eq!(parse(text, "s.json").unwrap().len(), 2);
        // Line numbers in errors are still the file's.
        let err = parse("# header\n[\n{\"text\": }]", "s.json").unwrap_err();
        assert!(err.to_string().contains("line 3"), "{err}");
        // JSON lines with comments read as before.
        assert_eq!(
            parse("# c\n{\"text\": \"a\"}\n", "s.jsonl").unwrap().len(),
            1
        );
    }

    #[test]
    fn from_file_names_the_model_after_the_file() {
        let dir = std::env::temp_dir().join(format!("stepwise-script-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("demo.json");
        std::fs::write(&path, "[{\"text\":\"hi\"}]").unwrap();
        let model = ScriptModel::from_file(&path).unwrap();
        assert_eq!(model.name(), "script:demo.json");
        assert!(ScriptModel::from_file(dir.join("missing.json")).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
