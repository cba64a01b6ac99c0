//! What both clients share on the HTTP side: one reqwest client (rustls
//! with ring), endpoints, sending under the connect and first-byte
//! timeouts, body pieces under the idle timeout, and the API key kept out
//! of every message. Failures are classified in [`super::errors`].

use std::fmt;
use std::future::Future;
use std::sync::Once;
use std::time::Duration;

use futures::{Stream, StreamExt};
use reqwest::header::HeaderValue;
use reqwest::{RequestBuilder, Response, Url};
use stepwise_core::{ModelError, TimeoutStage};

use super::Provider;
use super::errors::{ErrorBody, ErrorContext, classify, retry_after_ms};

/// How long one attempt waits at each stage before it gives up, in
/// milliseconds (0: no limit). They bound a server that accepts a request
/// and goes silent; a healthy stream, however long, keeps sending and is
/// bounded only by the whole-attempt limit,
/// [`crate::call::CallPolicy::timeout_ms`]. A timeout is transient: the
/// call is retried under its policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// Reaching the server (TCP and TLS).
    pub connect_ms: u64,
    /// From sending the request to the response's headers (connecting
    /// included): how long the provider may take to start answering.
    pub first_byte_ms: u64,
    /// Longest silence between two pieces of the body, before the first
    /// included.
    pub idle_ms: u64,
}

impl Default for Timeouts {
    /// Short enough that a silent server fails a default call (three
    /// attempts) in about half a minute; remote providers send headers and
    /// stream pieces within a second or two, and Anthropic pings in between.
    fn default() -> Self {
        Self {
            connect_ms: 10_000,
            first_byte_ms: 10_000,
            idle_ms: 10_000,
        }
    }
}

impl Timeouts {
    /// The defaults for a provider: Ollama loads a model into memory before
    /// it sends the first byte, which takes far longer than a remote API.
    pub fn for_provider(provider: Provider) -> Self {
        match provider {
            Provider::Ollama => Self {
                first_byte_ms: 60_000,
                ..Self::default()
            },
            Provider::OpenAi | Provider::Anthropic => Self::default(),
        }
    }
}

/// `future`, or a timeout at `stage` after `ms` (0: no limit).
pub(crate) async fn within<T>(
    ms: u64,
    stage: TimeoutStage,
    future: impl Future<Output = Result<T, ModelError>>,
) -> Result<T, ModelError> {
    if ms == 0 {
        return future.await;
    }
    tokio::time::timeout(Duration::from_millis(ms), future)
        .await
        .unwrap_or(Err(ModelError::Timeout {
            stage,
            after_ms: ms,
        }))
}

/// An API key. Its `Debug` is redacted, and [`redact`] scrubs it from any
/// message a provider echoes back, so it reaches no log or recorded exchange.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct ApiKey(String);

impl ApiKey {
    /// A key, if there is a non-blank one.
    pub(crate) fn new(key: Option<String>) -> Option<Self> {
        key.map(|k| k.trim().to_owned())
            .filter(|k| !k.is_empty())
            .map(Self)
    }

    /// A header carrying the key, marked sensitive so hyper never prints it.
    pub(crate) fn header(&self, prefix: &str) -> Result<HeaderValue, ModelError> {
        let mut value = HeaderValue::from_str(&format!("{prefix}{}", self.0)).map_err(|_| {
            ModelError::Config("the API key contains characters not allowed in a header".into())
        })?;
        value.set_sensitive(true);
        Ok(value)
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

/// An HTTP client for one model, with the ring crypto provider installed
/// before rustls is first used. Not shared process-wide: pooled connections
/// belong to the tokio runtime that opened them, and a client outliving its
/// runtime (tests, a CLI that builds several) would hand out dead ones.
pub(crate) fn client(timeouts: &Timeouts) -> Result<reqwest::Client, ModelError> {
    static RING: Once = Once::new();
    RING.call_once(|| {
        // Err means a provider is already installed, which is what we want.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
    let mut builder =
        reqwest::Client::builder().user_agent(concat!("stepwise/", env!("CARGO_PKG_VERSION")));
    if timeouts.connect_ms > 0 {
        builder = builder.connect_timeout(Duration::from_millis(timeouts.connect_ms));
    }
    builder
        .build()
        .map_err(|e| ModelError::Config(format!("could not set up the HTTP client: {}", chain(&e))))
}

/// `base` joined with `path`, keeping a query string where it is (Azure
/// deployments put `?api-version=…` in the base URL).
pub(crate) fn endpoint(base: &str, path: &str) -> Result<Url, ModelError> {
    let mut url = Url::parse(base.trim())
        .map_err(|e| ModelError::Config(format!("invalid base URL {base:?}: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(ModelError::Config(format!(
            "base URL {base:?} must start with http:// or https://"
        )));
    }
    let joined = format!("{}/{}", url.path().trim_end_matches('/'), path);
    url.set_path(&joined);
    Ok(url)
}

/// A URL fit for messages and `Debug`: without credentials or query (a
/// base URL may carry either).
pub(crate) fn safe_url(url: &Url) -> String {
    let mut url = url.clone();
    let _ = url.set_username("");
    let _ = url.set_password(None);
    url.set_query(None);
    url.to_string()
}

/// Sends a request, waiting for its headers at most the first-byte
/// timeout; a non-2xx status becomes a classified error (its body read
/// under the idle timeout: a status and Retry-After are enough to go on).
pub(crate) async fn send(
    request: RequestBuilder,
    ctx: &ErrorContext<'_>,
    timeouts: &Timeouts,
) -> Result<Response, ModelError> {
    let sent = async { request.send().await.map_err(|e| transport(e, timeouts)) };
    let response = within(timeouts.first_byte_ms, TimeoutStage::FirstByte, sent).await?;
    let status = response.status().as_u16();
    if response.status().is_success() {
        return Ok(response);
    }
    let headers = response.headers().clone();
    let body = text(response, timeouts).await.unwrap_or_default();
    Err(classify(
        status,
        &ErrorBody::parse(&body),
        retry_after_ms(&headers),
        ctx,
    ))
}

/// The body's pieces, each awaited at most the idle timeout; the stream
/// ends after its first error.
pub(crate) fn pieces(
    response: Response,
    timeouts: &Timeouts,
) -> impl Stream<Item = Result<impl AsRef<[u8]> + use<>, ModelError>> + Unpin + use<> {
    let timeouts = *timeouts;
    let state = (response.bytes_stream().boxed(), false);
    Box::pin(futures::stream::unfold(
        state,
        move |(mut body, failed)| async move {
            if failed {
                return None;
            }
            let next = async { Ok(body.next().await) };
            match within(timeouts.idle_ms, TimeoutStage::Idle, next).await {
                Ok(None) => None,
                Ok(Some(Ok(piece))) => Some((Ok(piece), (body, false))),
                Ok(Some(Err(e))) => Some((Err(transport(e, &timeouts)), (body, true))),
                Err(e) => Some((Err(e), (body, true))),
            }
        },
    ))
}

/// The whole body as text (lossy UTF-8), read under the idle timeout.
pub(crate) async fn text(response: Response, timeouts: &Timeouts) -> Result<String, ModelError> {
    let mut body = Vec::new();
    let mut pieces = pieces(response, timeouts);
    while let Some(piece) = pieces.next().await {
        body.extend_from_slice(piece?.as_ref());
    }
    Ok(String::from_utf8_lossy(&body).into_owned())
}

/// A failure to reach the server, or a connection cut while reading.
pub(crate) fn transport(err: reqwest::Error, timeouts: &Timeouts) -> ModelError {
    // Only connecting has a reqwest timeout; the others are ours.
    if err.is_timeout() {
        return ModelError::Timeout {
            stage: TimeoutStage::Connect,
            after_ms: timeouts.connect_ms,
        };
    }
    let url = err.url().map(safe_url);
    let cut = err.is_body() || err.is_decode();
    let mut message = chain(&err.without_url());
    if let Some(url) = url {
        message.push_str(&format!(" ({url})"));
    }
    if cut {
        message = format!("the connection was cut while reading the answer: {message}");
    }
    ModelError::Connection(message)
}

/// An error and its sources, one line: reqwest's own message is only
/// "error sending request", the reason ("connection refused") is below.
pub(crate) fn chain(err: &dyn std::error::Error) -> String {
    let mut out = err.to_string();
    let mut source = err.source();
    while let Some(inner) = source {
        let text = inner.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = inner.source();
    }
    out
}

/// Scrubs the key from every message of an error (a provider may echo it).
pub(crate) fn redact(err: ModelError, key: Option<&ApiKey>) -> ModelError {
    let Some(ApiKey(key)) = key else { return err };
    let r = |s: String| s.replace(key.as_str(), "<redacted>");
    match err {
        ModelError::Server {
            status,
            message,
            retry_after_ms,
        } => ModelError::Server {
            status,
            message: r(message),
            retry_after_ms,
        },
        ModelError::CorruptStream(m) => ModelError::CorruptStream(r(m)),
        ModelError::Connection(m) => ModelError::Connection(r(m)),
        ModelError::Auth {
            status,
            message,
            fix,
        } => ModelError::Auth {
            status,
            message: r(message),
            fix,
        },
        ModelError::UnknownModel { model, message } => ModelError::UnknownModel {
            model,
            message: r(message),
        },
        ModelError::ContextLength(m) => ModelError::ContextLength(r(m)),
        ModelError::BadRequest { status, message } => ModelError::BadRequest {
            status,
            message: r(message),
        },
        ModelError::Malformed(m) => ModelError::Malformed(r(m)),
        ModelError::Config(m) => ModelError::Config(r(m)),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_keep_azure_query_strings() {
        let url = endpoint(
            "https://x.openai.azure.com/openai/deployments/d?api-version=2024-10-21",
            "chat/completions",
        )
        .unwrap();
        assert_eq!(
            url.as_str(),
            "https://x.openai.azure.com/openai/deployments/d/chat/completions?api-version=2024-10-21"
        );
        let url = endpoint("http://localhost:11434/v1/", "chat/completions").unwrap();
        assert_eq!(url.as_str(), "http://localhost:11434/v1/chat/completions");
        assert!(endpoint("localhost:11434", "x").is_err());
    }

    #[test]
    fn keys_are_scrubbed_and_never_debug_printed() {
        let key = ApiKey::new(Some("sk-live-123".into())).unwrap();
        assert_eq!(format!("{key:?}"), "ApiKey(<redacted>)");
        let err = redact(
            ModelError::BadRequest {
                status: 400,
                message: "bad key sk-live-123".into(),
            },
            Some(&key),
        );
        assert!(!err.to_string().contains("sk-live-123"));
    }
}
