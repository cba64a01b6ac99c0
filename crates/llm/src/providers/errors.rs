//! Provider failures as classified [`ModelError`]s: HTTP statuses, the
//! error bodies of OpenAI, Anthropic and compatible servers, and
//! Retry-After (on any status: 429, 503 and Anthropic's 529 all send it).
//! One mapping for both clients, so a 429 or a context-length error means
//! the same thing whoever sent it.

use reqwest::header::HeaderMap;
use serde_json::Value;
use stepwise_core::ModelError;

/// Provider messages are shown to people; a proxy's HTML page is not worth
/// more than this.
const MAX_MESSAGE_CHARS: usize = 600;

/// What the error mapping needs to know about the caller.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ErrorContext<'a> {
    /// The model asked for, for [`ModelError::UnknownModel`].
    pub(crate) model: &'a str,
    /// What to do about a 401/403, e.g. "set OPENAI_API_KEY".
    pub(crate) auth_fix: &'a str,
}

/// The message and code of a provider's error body: OpenAI's
/// `{"error": {"message", "code", "type"}}`, Anthropic's
/// `{"type": "error", "error": {"type", "message"}}`, and what compatible
/// servers send instead (`{"error": "…"}`, `{"detail": "…"}`, plain text).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ErrorBody {
    pub(crate) message: String,
    /// `error.code`: a string, or a number as text (llama.cpp, OpenRouter).
    pub(crate) code: Option<String>,
    /// `error.type`, e.g. `overloaded_error`.
    pub(crate) kind: Option<String>,
}

impl ErrorBody {
    pub(crate) fn parse(body: &str) -> Self {
        match serde_json::from_str::<Value>(body) {
            Ok(value) => Self::from_value(&value).unwrap_or_else(|| Self::text(body)),
            Err(_) => Self::text(body),
        }
    }

    /// The error inside a JSON value, if it has one.
    pub(crate) fn from_value(value: &Value) -> Option<Self> {
        let text = |v: Option<&Value>| match v {
            Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
            Some(Value::Number(n)) => Some(n.to_string()),
            _ => None,
        };
        match value.get("error") {
            Some(Value::String(s)) => Some(Self::text(s)),
            Some(err @ Value::Object(_)) => Some(Self {
                message: text(err.get("message")).unwrap_or_else(|| err.to_string()),
                code: text(err.get("code")),
                kind: text(err.get("type")),
            }),
            _ => text(value.get("message"))
                .or_else(|| text(value.get("detail")))
                .map(|message| Self::text(&message)),
        }
    }

    fn text(body: &str) -> Self {
        Self {
            message: body.trim().to_owned(),
            ..Self::default()
        }
    }

    /// Whether the code or the type is `name`.
    pub(crate) fn is(&self, name: &str) -> bool {
        self.code.as_deref() == Some(name) || self.kind.as_deref() == Some(name)
    }
}

/// The error for an HTTP status (or a status-like code inside a stream).
pub(crate) fn classify(
    status: u16,
    body: &ErrorBody,
    retry_after_ms: Option<u64>,
    ctx: &ErrorContext<'_>,
) -> ModelError {
    let message = shorten(&body.message, status);
    let lower = message.to_ascii_lowercase();
    match status {
        // A quota that is used up does not come back by waiting.
        429 if body.is("insufficient_quota") => ModelError::BadRequest { status, message },
        429 => ModelError::RateLimited { retry_after_ms },
        401 | 403 => ModelError::Auth {
            status,
            message,
            fix: ctx.auth_fix.to_owned(),
        },
        // 501 and 505: the server will never support this request.
        501 | 505 => ModelError::BadRequest { status, message },
        // 408 (request timeout), 5xx and Anthropic's 529 (overloaded) pass;
        // a 503 or 529 often says when to come back.
        408 | 500..=599 => ModelError::Server {
            status,
            message,
            retry_after_ms,
        },
        _ if body.is("model_not_found") || (status == 404 && lower.contains("model")) => {
            ModelError::UnknownModel {
                model: ctx.model.to_owned(),
                message,
            }
        }
        // A 404 that is not about the model is usually a wrong base URL.
        404 => ModelError::BadRequest {
            status,
            message: format!("{message} (is the base URL right?)"),
        },
        _ if is_context_length(body, &lower) || status == 413 => ModelError::ContextLength(message),
        _ => ModelError::BadRequest { status, message },
    }
}

/// The codes and phrasings OpenAI, Anthropic, vLLM and llama.cpp use for a
/// prompt that does not fit.
fn is_context_length(body: &ErrorBody, lower_message: &str) -> bool {
    const PHRASES: [&str; 6] = [
        "context length",
        "context_length",
        "prompt is too long",
        "context window",
        "exceeds the available context",
        "maximum context",
    ];
    body.is("context_length_exceeded")
        || body.is("exceed_context_size_error")
        || PHRASES.iter().any(|p| lower_message.contains(p))
}

fn shorten(message: &str, status: u16) -> String {
    if message.trim().is_empty() {
        return format!("HTTP {status} with no message");
    }
    let mut out: String = message.trim().chars().take(MAX_MESSAGE_CHARS).collect();
    if out.len() < message.trim().len() {
        out.push('…');
    }
    out
}

/// Retry-After as milliseconds: OpenAI's `retry-after-ms`, else
/// `Retry-After` in seconds (possibly fractional) or as an HTTP date.
pub(crate) fn retry_after_ms(headers: &HeaderMap) -> Option<u64> {
    let get = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = get("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        return finite_ms(ms);
    }
    let value = get("retry-after")?;
    if let Ok(secs) = value.parse::<f64>() {
        return finite_ms(secs * 1000.0);
    }
    let at = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    let ms = (at.with_timezone(&chrono::Utc) - chrono::Utc::now()).num_milliseconds();
    Some(u64::try_from(ms).unwrap_or(0))
}

fn finite_ms(ms: f64) -> Option<u64> {
    (ms.is_finite() && ms >= 0.0).then(|| ms.min(u64::MAX as f64).ceil() as u64)
}

#[cfg(test)]
mod tests {
    use reqwest::header::HeaderValue;

    use super::*;

    fn ctx() -> ErrorContext<'static> {
        ErrorContext {
            model: "m",
            auth_fix: "set OPENAI_API_KEY",
        }
    }

    #[test]
    fn retry_after_reads_seconds_milliseconds_and_dates() {
        let mut h = HeaderMap::new();
        h.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(retry_after_ms(&h), Some(2_000));
        h.insert("retry-after-ms", HeaderValue::from_static("150.5"));
        assert_eq!(retry_after_ms(&h), Some(151));
        let mut h = HeaderMap::new();
        h.insert(
            "retry-after",
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(retry_after_ms(&h), Some(0));
        h.insert("retry-after", HeaderValue::from_static("soon"));
        assert_eq!(retry_after_ms(&h), None);
    }

    #[test]
    fn statuses_map_to_classes() {
        let body = |m: &str, c: Option<&str>| ErrorBody {
            message: m.into(),
            code: c.map(Into::into),
            kind: None,
        };
        assert!(matches!(
            classify(429, &body("slow", None), Some(5), &ctx()),
            ModelError::RateLimited {
                retry_after_ms: Some(5)
            }
        ));
        assert!(matches!(
            classify(429, &body("pay", Some("insufficient_quota")), None, &ctx()),
            ModelError::BadRequest { .. }
        ));
        assert!(matches!(
            classify(529, &body("Overloaded", None), Some(2_000), &ctx()),
            ModelError::Server {
                status: 529,
                retry_after_ms: Some(2_000),
                ..
            }
        ));
        assert!(matches!(
            classify(
                404,
                &body("The model `x` does not exist", None),
                None,
                &ctx()
            ),
            ModelError::UnknownModel { .. }
        ));
        assert!(matches!(
            classify(404, &body("Not Found", None), None, &ctx()),
            ModelError::BadRequest { .. }
        ));
        assert!(matches!(
            classify(
                400,
                &body("prompt is too long: 210000 tokens", None),
                None,
                &ctx()
            ),
            ModelError::ContextLength(_)
        ));
        assert!(matches!(
            classify(
                400,
                &body("x", Some("context_length_exceeded")),
                None,
                &ctx()
            ),
            ModelError::ContextLength(_)
        ));
        assert!(matches!(
            classify(400, &body("bad", None), None, &ctx()),
            ModelError::BadRequest { status: 400, .. }
        ));
        assert!(matches!(
            classify(403, &body("", None), None, &ctx()),
            ModelError::Auth { .. }
        ));
    }

    #[test]
    fn error_bodies_of_several_servers_parse() {
        let openai = ErrorBody::parse(
            r#"{"error":{"message":"Bad key","type":"invalid_request_error","code":"invalid_api_key"}}"#,
        );
        assert_eq!(openai.message, "Bad key");
        assert!(openai.is("invalid_api_key") && openai.is("invalid_request_error"));
        let anthropic = ErrorBody::parse(
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        );
        assert_eq!(anthropic.kind.as_deref(), Some("overloaded_error"));
        let llama = ErrorBody::parse(
            r#"{"error":{"code":400,"message":"too big","type":"exceed_context_size_error"}}"#,
        );
        assert_eq!(llama.code.as_deref(), Some("400"));
        assert!(matches!(
            classify(400, &llama, None, &ctx()),
            ModelError::ContextLength(_)
        ));
        assert_eq!(ErrorBody::parse(r#"{"detail":"nope"}"#).message, "nope");
        assert_eq!(
            ErrorBody::parse("<html>502</html>").message,
            "<html>502</html>"
        );
    }
}
