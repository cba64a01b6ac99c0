//! What both clients share on the HTTP side: one reqwest client (rustls
//! with ring), endpoints, sending, and the API key kept out of every
//! message. Failures are classified in [`super::errors`].

use std::fmt;
use std::sync::Once;
use std::time::Duration;

use reqwest::header::HeaderValue;
use reqwest::{RequestBuilder, Response, Url};
use stepwise_core::ModelError;

use super::errors::{ErrorBody, ErrorContext, classify, retry_after_ms};

/// Providers' own calls may take minutes (see [`crate::call::CallPolicy`]);
/// only reaching the server is bounded here.
pub(crate) const CONNECT_TIMEOUT_MS: u64 = 10_000;

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
pub(crate) fn client() -> Result<reqwest::Client, ModelError> {
    static RING: Once = Once::new();
    RING.call_once(|| {
        // Err means a provider is already installed, which is what we want.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
    reqwest::Client::builder()
        .connect_timeout(Duration::from_millis(CONNECT_TIMEOUT_MS))
        .user_agent(concat!("stepwise/", env!("CARGO_PKG_VERSION")))
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

/// Sends a request; a non-2xx status becomes a classified error.
pub(crate) async fn send(
    request: RequestBuilder,
    ctx: &ErrorContext<'_>,
) -> Result<Response, ModelError> {
    let response = request.send().await.map_err(transport)?;
    let status = response.status().as_u16();
    if response.status().is_success() {
        return Ok(response);
    }
    let headers = response.headers().clone();
    let body = response.text().await.unwrap_or_default();
    Err(classify(
        status,
        &ErrorBody::parse(&body),
        retry_after_ms(&headers),
        ctx,
    ))
}

/// A failure to reach the server, or a connection cut while reading.
pub(crate) fn transport(err: reqwest::Error) -> ModelError {
    if err.is_timeout() {
        return ModelError::Timeout {
            after_ms: CONNECT_TIMEOUT_MS,
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
        ModelError::Server { status, message } => ModelError::Server {
            status,
            message: r(message),
        },
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
