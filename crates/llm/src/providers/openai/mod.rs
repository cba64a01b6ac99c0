//! The OpenAI-compatible chat-completions client: OpenAI, Azure OpenAI,
//! Ollama, vLLM, llama.cpp server, LM Studio, OpenRouter — any server at a
//! base URL that answers `POST {base}/chat/completions`.

mod assemble;
mod wire;

use reqwest::Url;
use reqwest::header::AUTHORIZATION;
use stepwise_core::{ChatRequest, ChatResponse, ModelError};

use self::assemble::Assembly;
use self::wire::{Chunk, MaxTokensField};
use super::errors::ErrorContext;
use super::http::{self, ApiKey, Timeouts};
use super::sse::{self, Flow};
use super::streaming::{self, streaming_client};

/// How the key is sent: `Authorization: Bearer` everywhere but Azure,
/// which wants an `api-key` header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AuthStyle {
    Bearer,
    ApiKeyHeader,
}

/// A chat model behind an OpenAI-compatible API. Streams every answer.
/// Does not retry: wrap calls in [`crate::call::call`].
#[derive(Clone)]
pub struct OpenAiClient {
    name: String,
    model: String,
    url: Url,
    key: Option<ApiKey>,
    auth: AuthStyle,
    max_tokens: MaxTokensField,
    auth_fix: String,
    timeouts: Timeouts,
    http: reqwest::Client,
}

impl OpenAiClient {
    /// A client for `model` at `base_url` (e.g. `https://api.openai.com/v1`
    /// or `http://localhost:11434/v1`), named `name` in logs and exchanges.
    /// A key is optional: local servers need none.
    pub fn new(
        name: impl Into<String>,
        model: impl Into<String>,
        base_url: &str,
        api_key: Option<String>,
    ) -> Result<Self, ModelError> {
        let url = http::endpoint(base_url, "chat/completions")?;
        let host = url.host_str().unwrap_or("").to_ascii_lowercase();
        let azure = host.ends_with(".azure.com") || host.ends_with(".azure-api.net");
        Ok(Self {
            name: name.into(),
            model: model.into(),
            key: ApiKey::new(api_key),
            auth: if azure {
                AuthStyle::ApiKeyHeader
            } else {
                AuthStyle::Bearer
            },
            max_tokens: if host == "api.openai.com" {
                MaxTokensField::MaxCompletionTokens
            } else {
                MaxTokensField::MaxTokens
            },
            auth_fix: "set OPENAI_API_KEY to a valid key for this server".to_owned(),
            timeouts: Timeouts::default(),
            http: http::client(&Timeouts::default())?,
            url,
        })
    }

    /// What a 401/403 should tell the user to do (the default mentions
    /// `OPENAI_API_KEY`; the Ollama preset points at `OLLAMA_BASE_URL`).
    #[must_use]
    pub fn with_auth_fix(mut self, fix: impl Into<String>) -> Self {
        self.auth_fix = fix.into();
        self
    }

    async fn chat_inner(
        &self,
        request: &ChatRequest,
        on_text: &mut (dyn for<'s> FnMut(&'s str) + Send),
    ) -> Result<ChatResponse, ModelError> {
        let body = wire::request(&self.model, request, self.max_tokens);
        let mut builder = self.http.post(self.url.clone()).json(&body);
        if let Some(key) = &self.key {
            builder = match self.auth {
                AuthStyle::Bearer => builder.header(AUTHORIZATION, key.header("Bearer ")?),
                AuthStyle::ApiKeyHeader => builder.header("api-key", key.header("")?),
            };
        }
        let ctx = ErrorContext {
            model: &self.model,
            auth_fix: &self.auth_fix,
        };
        let response = http::send(builder, &ctx, &self.timeouts).await?;
        let mut assembly = Assembly::default();
        let body = sse::read(response, &self.timeouts, |_event, data| {
            if data.trim() == "[DONE]" {
                return Ok(Flow::Done);
            }
            let chunk: Chunk =
                serde_json::from_str(data).map_err(|e| sse::corrupt_event(&e, data))?;
            let before = assembly.text().len();
            assembly.push(chunk, &ctx)?;
            let text = &assembly.text()[before..];
            if !text.is_empty() {
                on_text(text);
            }
            Ok(Flow::Continue)
        })
        .await?;
        streaming::answer(body, assembly, &ctx, &self.model, on_text)
    }
}

streaming_client!(OpenAiClient, auth);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_hides_the_key() {
        let client = OpenAiClient::new(
            "openai:m",
            "m",
            "https://api.openai.com/v1",
            Some("sk-hidden-42".into()),
        )
        .unwrap();
        let shown = format!("{client:?}");
        assert!(!shown.contains("sk-hidden-42"), "{shown}");
        assert!(shown.contains("<redacted>"), "{shown}");
        assert_eq!(client.max_tokens, MaxTokensField::MaxCompletionTokens);
        let azure = OpenAiClient::new(
            "a",
            "d",
            "https://r.openai.azure.com/openai/v1",
            Some("k".into()),
        )
        .unwrap();
        assert_eq!(azure.auth, AuthStyle::ApiKeyHeader);
        assert_eq!(azure.max_tokens, MaxTokensField::MaxTokens);
    }
}
