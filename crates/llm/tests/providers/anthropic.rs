//! Anthropic Messages: answers and request shapes.

use serde_json::json;
use stepwise_core::{ChatModel, FinishReason, Message, ModelError, ToolCall, Usage};

use super::fake::{FakeServer, Reply, recordings};
use super::{KEY, anthropic, call_logged, question, quick, with_schema, with_tools};

#[tokio::test]
async fn a_streamed_text_answer_is_assembled_with_its_usage() {
    let server = FakeServer::start().await;
    server.push(Reply::sse(recordings::ANTHROPIC_TEXT));
    let answer = anthropic(&server).chat(&question()).await.unwrap();
    assert_eq!(answer.text, "Plans are DAGs of steps.");
    assert_eq!(answer.finish_reason, FinishReason::Stop);
    // 21 input + 4 read from the prompt cache; output as of message_delta.
    assert_eq!(answer.usage, Usage::llm_call(25, 12));
    assert_eq!(answer.model, "claude-sonnet-4-5-20250929");

    let sent = &server.requests()[0];
    assert_eq!(sent.path, "/v1/messages");
    assert_eq!(sent.header("x-api-key"), Some(KEY));
    assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(sent.header("authorization"), None);
    assert_eq!(
        sent.body,
        json!({
            "model": "claude-sonnet-4-5",
            "max_tokens": 4096,
            "system": "You plan research.",
            "messages": [{"role": "user", "content": [{"type": "text", "text": "What is a plan?"}]}],
            "temperature": 0.2,
            "stream": true
        })
    );
}

#[tokio::test]
async fn tool_use_is_assembled_from_input_json_deltas() {
    let server = FakeServer::start().await;
    server.push(Reply::sse(recordings::ANTHROPIC_TOOL_USE));
    let answer = anthropic(&server).chat(&with_tools()).await.unwrap();
    assert_eq!(answer.finish_reason, FinishReason::ToolCalls);
    assert_eq!(answer.text, "I'll search the notes.");
    assert_eq!(answer.usage, Usage::llm_call(476, 89));
    assert_eq!(
        answer.tool_calls,
        [
            ToolCall {
                id: "toolu_01T1x1fJ34qAmk2tNTrN7Up6".into(),
                name: "notes_search".into(),
                arguments: json!({"query": "rag evals", "limit": 3}),
            },
            ToolCall {
                id: "toolu_01B2c3D4e5F6g7H8i9J0kLmN".into(),
                name: "notes_list".into(),
                arguments: json!({}),
            },
        ]
    );
    assert_eq!(
        server.last_body()["tools"],
        json!([{
            "name": "notes_search",
            "description": "Search the notes",
            "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}
        }])
    );
}

#[tokio::test]
async fn tool_results_share_one_user_turn_after_the_tool_use() {
    let server = FakeServer::start().await;
    server.push(Reply::sse(recordings::ANTHROPIC_TEXT));
    let mut request = with_tools();
    let mut asked = Message::assistant("Searching.");
    for (id, query) in [("toolu_1", "rag"), ("toolu_2", "evals")] {
        asked.tool_calls.push(ToolCall {
            id: id.into(),
            name: "notes_search".into(),
            arguments: json!({"query": query}),
        });
    }
    request.messages.push(asked);
    request.messages.push(Message::tool("toolu_1", "rag.md"));
    request.messages.push(Message::tool("toolu_2", "evals.md"));
    anthropic(&server).chat(&request).await.unwrap();
    let messages = &server.last_body()["messages"];
    assert_eq!(
        messages[1],
        json!({"role": "assistant", "content": [
            {"type": "text", "text": "Searching."},
            {"type": "tool_use", "id": "toolu_1", "name": "notes_search", "input": {"query": "rag"}},
            {"type": "tool_use", "id": "toolu_2", "name": "notes_search", "input": {"query": "evals"}}
        ]})
    );
    assert_eq!(
        messages[2],
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "rag.md"},
            {"type": "tool_result", "tool_use_id": "toolu_2", "content": "evals.md"}
        ]})
    );
    assert_eq!(messages.as_array().unwrap().len(), 3);
}

#[tokio::test]
async fn a_response_schema_is_an_instruction_in_the_system_prompt() {
    let server = FakeServer::start().await;
    server.push(Reply::sse(recordings::ANTHROPIC_TEXT));
    let mut request = with_schema();
    request.max_tokens = Some(512);
    anthropic(&server).chat(&request).await.unwrap();
    let body = server.last_body();
    let system = body["system"].as_str().unwrap();
    assert!(
        system.starts_with(
            "You plan research.\n\nAnswer with only a JSON object matching this JSON Schema"
        ),
        "{system}"
    );
    assert!(system.contains(r#""required":["steps"]"#), "{system}");
    assert_eq!(body["max_tokens"], 512);
    assert!(body.get("response_format").is_none());
}

#[tokio::test]
async fn a_whole_message_is_accepted() {
    let server = FakeServer::start().await;
    server.push(Reply::json(200, recordings::ANTHROPIC_WHOLE));
    let answer = anthropic(&server).chat(&question()).await.unwrap();
    assert_eq!(answer.text, "Hi! My name is Claude.");
    assert_eq!(answer.usage, Usage::llm_call(2095, 503));
}

#[tokio::test]
async fn overloaded_529_and_an_error_event_mid_stream_are_retried() {
    let server = FakeServer::start().await;
    server.push(Reply::json(
        529,
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
    ));
    server.push(Reply::sse(recordings::ANTHROPIC_OVERLOADED_MID_STREAM));
    server.push(Reply::sse(recordings::ANTHROPIC_TEXT));
    let (answer, log) = call_logged(&anthropic(&server), &question(), &quick(4)).await;
    assert_eq!(answer.unwrap().text, "Plans are DAGs of steps.");
    assert_eq!(log.len(), 3);
    for exchange in &log[..2] {
        let text = serde_json::to_string(&exchange.outcome).unwrap();
        assert!(
            text.contains("HTTP 529") && text.contains("Overloaded"),
            "{text}"
        );
    }
}

#[tokio::test]
async fn a_wrong_key_is_an_auth_error_naming_the_variable() {
    let server = FakeServer::start().await;
    server.push(Reply::json(
        401,
        r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#,
    ));
    let (result, log) = call_logged(&anthropic(&server), &question(), &quick(4)).await;
    let err = result.unwrap_err();
    assert!(
        matches!(&err, ModelError::Auth { status: 401, fix, .. } if fix.contains("ANTHROPIC_API_KEY")),
        "{err:?}"
    );
    assert_eq!(log.len(), 1, "not retried");
    assert!(!serde_json::to_string(&log).unwrap().contains(KEY));
}

#[tokio::test]
async fn a_stream_without_a_stop_reason_is_truncated() {
    let server = FakeServer::start().await;
    server.push(Reply::sse_until(
        recordings::ANTHROPIC_TEXT,
        "message_delta",
    ));
    let err = anthropic(&server).chat(&question()).await.unwrap_err();
    assert_eq!(err, ModelError::Truncated);
}
