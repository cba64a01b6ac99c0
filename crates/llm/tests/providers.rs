//! The OpenAI-compatible and Anthropic clients against a fake provider that
//! serves recorded bodies: answers assembled from streamed deltas, the
//! request bodies we send, and every failure class — through
//! `stepwise_llm::call::call`, so retries, timeouts and the exchange log
//! are tested as a user's run would meet them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "providers/anthropic.rs"]
mod anthropic;
mod common;
#[path = "providers/failures.rs"]
mod failures;
mod fake;
#[path = "providers/openai.rs"]
mod openai;
#[path = "providers/resilience.rs"]
mod resilience;

use serde_json::json;
use stepwise_core::model::ModelExchange;
use stepwise_core::{ChatModel, ChatRequest, Message, ResponseSchema, RetryPolicy, ToolSpec};
use stepwise_llm::call::{CallPolicy, call};
use stepwise_llm::providers::{AnthropicClient, OpenAiClient, ProviderEnv, from_spec};

use fake::FakeServer;

/// A key that must never appear in an error or a recorded exchange.
const KEY: &str = "sk-test-SECRET-9f8e7d6c5b4a";

fn openai(server: &FakeServer) -> OpenAiClient {
    OpenAiClient::new(
        "openai:gpt-4o-mini",
        "gpt-4o-mini",
        &format!("{}/v1", server.url),
        Some(KEY.into()),
    )
    .unwrap()
}

fn anthropic(server: &FakeServer) -> AnthropicClient {
    AnthropicClient::new(
        "anthropic:claude-sonnet-4-5",
        "claude-sonnet-4-5",
        &server.url,
        Some(KEY.into()),
    )
    .unwrap()
}

fn question() -> ChatRequest {
    ChatRequest {
        purpose: "planner".into(),
        messages: vec![
            Message::system("You plan research."),
            Message::user("What is a plan?"),
        ],
        temperature: Some(0.2),
        ..ChatRequest::default()
    }
}

fn with_tools() -> ChatRequest {
    let mut request = question();
    request.tools = vec![ToolSpec {
        name: "notes_search".into(),
        description: "Search the notes".into(),
        args_schema: json!({"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}),
        side_effect: false,
        idempotent: true,
        timeout_ms: None,
        destructive: false,
        output_schema: None,
    }];
    request
}

fn with_schema() -> ChatRequest {
    let mut request = question();
    request.response_schema = Some(ResponseSchema {
        name: "plan".into(),
        schema: json!({"type": "object", "properties": {"steps": {"type": "array"}}, "required": ["steps"]}),
    });
    request
}

/// Short real delays, no jitter, so the tests can check what was waited.
fn quick(max_attempts: u32) -> CallPolicy {
    CallPolicy {
        retry: RetryPolicy {
            max_attempts,
            initial_delay_ms: 10,
            max_delay_ms: 150,
            multiplier: 2.0,
            jitter: 0.0,
        },
        timeout_ms: 2_000,
    }
}

async fn call_logged(
    model: &dyn ChatModel,
    request: &ChatRequest,
    policy: &CallPolicy,
) -> (
    Result<stepwise_core::ChatResponse, stepwise_core::ModelError>,
    Vec<ModelExchange>,
) {
    let mut log = Vec::new();
    let result = call(model, request, policy, &mut log).await;
    (result, log)
}

#[tokio::test]
async fn specs_build_clients_that_reach_the_configured_servers() {
    let server = FakeServer::start().await;
    server.push(fake::Reply::sse(fake::recordings::OPENAI_TEXT));
    server.push(fake::Reply::sse(fake::recordings::ANTHROPIC_TEXT));
    let env = ProviderEnv {
        ollama_base_url: Some(format!("{}/v1", server.url)),
        anthropic_api_key: Some(KEY.into()),
        anthropic_base_url: Some(server.url.clone()),
        ..ProviderEnv::default()
    };
    let ollama = from_spec("ollama:llama3.2:3b", &env).unwrap();
    assert_eq!(
        ollama.chat(&question()).await.unwrap().text,
        "Plans are DAGs of steps."
    );
    let claude = from_spec("anthropic:claude-sonnet-4-5", &env).unwrap();
    assert_eq!(
        claude.chat(&question()).await.unwrap().text,
        "Plans are DAGs of steps."
    );
    let requests = server.requests();
    assert_eq!(requests[0].body["model"], "llama3.2:3b");
    assert_eq!(
        requests[0].header("authorization"),
        None,
        "Ollama needs no key"
    );
    assert_eq!(requests[1].path, "/v1/messages");
    assert_eq!(requests[1].header("x-api-key"), Some(KEY));
}
