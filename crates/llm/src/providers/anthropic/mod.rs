//! The Anthropic Messages client (`POST {base}/v1/messages`), streamed.

mod assemble;
mod wire;

use reqwest::Url;
use stepwise_core::{ChatRequest, ChatResponse, ModelError};

use self::assemble::Assembly;
use self::wire::Event;
use super::errors::ErrorContext;
use super::http::{self, ApiKey, Timeouts};
use super::sse;
use super::streaming::{self, streaming_client};

/// The API version this client speaks (sent as `anthropic-version`).
const API_VERSION: &str = "2023-06-01";

/// A Claude model behind the Anthropic Messages API. Streams every answer.
/// Does not retry: wrap calls in [`crate::call::call`].
#[derive(Clone)]
pub struct AnthropicClient {
    name: String,
    model: String,
    url: Url,
    key: Option<ApiKey>,
    timeouts: Timeouts,
    http: reqwest::Client,
}

impl AnthropicClient {
    /// A client for `model` at `base_url` (e.g. `https://api.anthropic.com`;
    /// a base that already ends in `/v1` is accepted too), named `name` in
    /// logs and exchanges.
    pub fn new(
        name: impl Into<String>,
        model: impl Into<String>,
        base_url: &str,
        api_key: Option<String>,
    ) -> Result<Self, ModelError> {
        let trimmed = base_url.trim().trim_end_matches('/');
        let path = if trimmed.ends_with("/v1") {
            "messages"
        } else {
            "v1/messages"
        };
        Ok(Self {
            name: name.into(),
            model: model.into(),
            url: http::endpoint(trimmed, path)?,
            key: ApiKey::new(api_key),
            timeouts: Timeouts::default(),
            http: http::client(&Timeouts::default())?,
        })
    }

    async fn chat_inner(
        &self,
        request: &ChatRequest,
        on_text: &mut (dyn for<'s> FnMut(&'s str) + Send),
    ) -> Result<ChatResponse, ModelError> {
        let body = wire::request(&self.model, request);
        let mut builder = self
            .http
            .post(self.url.clone())
            .header("anthropic-version", API_VERSION)
            .json(&body);
        if let Some(key) = &self.key {
            builder = builder.header("x-api-key", key.header("")?);
        }
        let ctx = ErrorContext {
            model: &self.model,
            auth_fix: "set ANTHROPIC_API_KEY to a valid key",
        };
        let response = http::send(builder, &ctx, &self.timeouts).await?;
        let mut assembly = Assembly::default();
        let body = sse::read(response, &self.timeouts, |_event, data| {
            let event: Event =
                serde_json::from_str(data).map_err(|e| sse::corrupt_event(&e, data))?;
            if let Some(text) = event.text_delta() {
                on_text(text);
            }
            assembly.push(event, &ctx)
        })
        .await?;
        streaming::answer(body, assembly, &ctx, &self.model, on_text)
    }
}

streaming_client!(AnthropicClient);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_hides_the_key_and_v1_is_not_doubled() {
        let client = AnthropicClient::new(
            "anthropic:c",
            "c",
            "https://api.anthropic.com/v1/",
            Some("sk-ant-hidden".into()),
        )
        .unwrap();
        let shown = format!("{client:?}");
        assert!(!shown.contains("sk-ant-hidden"), "{shown}");
        assert_eq!(client.url.as_str(), "https://api.anthropic.com/v1/messages");
    }
}
