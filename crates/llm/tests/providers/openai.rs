//! OpenAI-compatible chat completions: answers and request shapes.

use serde_json::json;
use stepwise_core::{ChatModel, FinishReason, Message, ModelError, ToolCall, Usage};

use super::fake::{FakeServer, Reply, recordings};
use super::{KEY, openai, question, with_schema, with_tools};

#[tokio::test]
async fn a_streamed_text_answer_is_assembled_with_its_usage() {
    let server = FakeServer::start().await;
    server.push(Reply::sse(recordings::OPENAI_TEXT));
    let mut request = question();
    request.max_tokens = Some(300);
    let answer = openai(&server).chat(&request).await.unwrap();
    assert_eq!(answer.text, "Plans are DAGs of steps.");
    assert_eq!(answer.finish_reason, FinishReason::Stop);
    assert_eq!(answer.usage, Usage::llm_call(19, 10));
    assert_eq!(answer.model, "gpt-4o-mini-2024-07-18");
    assert!(answer.tool_calls.is_empty());

    let sent = &server.requests()[0];
    assert_eq!(
        (sent.method.as_str(), sent.path.as_str()),
        ("POST", "/v1/chat/completions")
    );
    assert_eq!(
        sent.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(
        sent.body,
        json!({
            "model": "gpt-4o-mini",
            "messages": [
                {"role": "system", "content": "You plan research."},
                {"role": "user", "content": "What is a plan?"}
            ],
            "temperature": 0.2,
            "max_tokens": 300,
            "stream": true,
            "stream_options": {"include_usage": true}
        })
    );
}

#[tokio::test]
async fn tool_calls_are_assembled_from_argument_fragments() {
    let server = FakeServer::start().await;
    server.push(Reply::sse(recordings::OPENAI_TOOL_CALLS));
    let answer = openai(&server).chat(&with_tools()).await.unwrap();
    assert_eq!(answer.finish_reason, FinishReason::ToolCalls);
    assert_eq!(answer.text, "");
    assert_eq!(answer.usage, Usage::llm_call(142, 51));
    assert_eq!(
        answer.tool_calls,
        [
            ToolCall {
                id: "call_DdmO9pD3xa9XTPNJ32zg2hcA".into(),
                name: "notes_search".into(),
                arguments: json!({"query": "rag evals", "limit": 3}),
            },
            ToolCall {
                id: "call_x7QmE0v1kZfYb3Lr8sTq2WnP".into(),
                name: "notes_read".into(),
                arguments: json!({"path": "rag.md"}),
            },
        ]
    );
    assert_eq!(
        server.last_body()["tools"],
        json!([{
            "type": "function",
            "function": {
                "name": "notes_search",
                "description": "Search the notes",
                "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}
            }
        }])
    );
}

#[tokio::test]
async fn tool_calls_and_results_round_trip_in_the_history() {
    let server = FakeServer::start().await;
    server.push(Reply::sse(recordings::OPENAI_TEXT));
    let mut request = with_tools();
    let mut asked = Message::assistant("");
    asked.tool_calls.push(ToolCall {
        id: "call_1".into(),
        name: "notes_search".into(),
        arguments: json!({"query": "rag"}),
    });
    request.messages.push(asked);
    request
        .messages
        .push(Message::tool("call_1", "[\"rag.md\"]"));
    openai(&server).chat(&request).await.unwrap();
    let messages = &server.last_body()["messages"];
    assert_eq!(
        messages[2],
        json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "notes_search", "arguments": "{\"query\":\"rag\"}"}}
        ]})
    );
    assert_eq!(
        messages[3],
        json!({"role": "tool", "content": "[\"rag.md\"]", "tool_call_id": "call_1"})
    );
}

#[tokio::test]
async fn a_response_schema_becomes_a_json_schema_response_format() {
    let server = FakeServer::start().await;
    server.push(Reply::sse(recordings::OPENAI_TEXT));
    openai(&server).chat(&with_schema()).await.unwrap();
    assert_eq!(
        server.last_body()["response_format"],
        json!({
            "type": "json_schema",
            "json_schema": {
                "name": "plan",
                "schema": {"type": "object", "properties": {"steps": {"type": "array"}}, "required": ["steps"]},
                "strict": false
            }
        })
    );
}

#[tokio::test]
async fn a_whole_completion_is_accepted_from_servers_that_do_not_stream() {
    let server = FakeServer::start().await;
    server.push(Reply::json(200, recordings::OPENAI_WHOLE));
    let answer = openai(&server).chat(&question()).await.unwrap();
    assert_eq!(answer.text, "Hello! How can I assist you today?");
    assert_eq!(answer.finish_reason, FinishReason::Stop);
    assert_eq!(answer.usage, Usage::llm_call(19, 10));
}

/// Documented choice: a stream that finishes with no content is an empty
/// text answer (the model said nothing, and said it was done); a whole body
/// with no choice at all is not an answer, so it is `Malformed`.
#[tokio::test]
async fn empty_answers_are_empty_text_but_no_choices_is_malformed() {
    let server = FakeServer::start().await;
    server.push(Reply::sse(recordings::OPENAI_EMPTY_ANSWER));
    server.push(Reply::json(200, recordings::OPENAI_NO_CHOICES));
    let client = openai(&server);
    let empty = client.chat(&question()).await.unwrap();
    assert_eq!(
        (empty.text.as_str(), &empty.finish_reason),
        ("", &FinishReason::Stop)
    );
    assert_eq!(empty.model, "llama3.2");
    assert_eq!(
        empty.usage,
        Usage::llm_call(0, 0),
        "no usage reported, still one call"
    );
    let err = client.chat(&question()).await.unwrap_err();
    assert!(matches!(err, ModelError::Malformed(_)), "{err:?}");
}

#[tokio::test]
async fn provider_errors_map_to_their_classes() {
    let server = FakeServer::start().await;
    let client = openai(&server);
    server.push(Reply::json(
        404,
        r#"{"error":{"message":"The model `gpt-9` does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}"#,
    ));
    let err = client.chat(&question()).await.unwrap_err();
    assert!(
        matches!(&err, ModelError::UnknownModel { model, .. } if model == "gpt-4o-mini"),
        "{err:?}"
    );
    server.push(Reply::json(
        400,
        r#"{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#,
    ));
    let err = client.chat(&question()).await.unwrap_err();
    assert!(matches!(err, ModelError::ContextLength(_)), "{err:?}");
    server.push(Reply::json(400, r#"{"error":{"message":"Invalid value for 'temperature'.","type":"invalid_request_error","param":"temperature","code":null}}"#));
    let err = client.chat(&question()).await.unwrap_err();
    assert!(
        matches!(&err, ModelError::BadRequest { status: 400, message } if message == "Invalid value for 'temperature'."),
        "{err:?}"
    );
    // OpenRouter reports an upstream failure inside a 200 stream.
    server.push(Reply::sse(
        "data: {\"error\":{\"code\":502,\"message\":\"Provider returned error\"}}\n\n",
    ));
    let err = client.chat(&question()).await.unwrap_err();
    assert!(
        matches!(err, ModelError::Server { status: 502, .. }),
        "{err:?}"
    );
}

/// An OpenAI answer streamed one event at a time, carrying `pieces` of text.
fn streamed_text(pieces: &[&str]) -> String {
    let chunk = |delta: serde_json::Value, finish: serde_json::Value| {
        json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-test",
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], "usage": null})
    };
    let mut events = vec![chunk(
        json!({"role": "assistant", "content": ""}),
        json!(null),
    )];
    events.extend(
        pieces
            .iter()
            .map(|p| chunk(json!({"content": p}), json!(null))),
    );
    events.push(chunk(json!({}), json!("stop")));
    events
        .iter()
        .map(|c| format!("data: {c}\n\n"))
        .collect::<String>()
        + "data: [DONE]\n\n"
}

#[tokio::test]
async fn a_plan_streamed_over_sse_hands_its_first_step_over_before_the_answer_ends() {
    use std::sync::Arc;
    use stepwise_core::roles::{PlanRequest, Planner, StepSender};
    use stepwise_core::{Constraints, Goal};
    use stepwise_llm::call::CallPolicy;
    use stepwise_llm::roles::{LlmPlanner, Prompts};

    let server = FakeServer::start().await;
    let first = r#"{"steps": [{"id": "a", "description": "find", "tool": "search_notes", "args": {"query": "x"}, "acceptance_criteria": ["found"]}"#;
    let second = r#", {"id": "b", "description": "more", "tool": "search_notes", "args": {"query": "y"}, "acceptance_criteria": ["found"]}]}"#;
    // 300 ms between events: the second step is written long after the first.
    server.push(Reply::sse_paced(&streamed_text(&[first, second]), 300));
    let model = Arc::new(openai(&server));
    assert!(model.streams());
    let planner = LlmPlanner::new(model, CallPolicy::default(), Prompts::embedded());
    assert!(planner.streams());
    let goal = Goal::prepare("What is a plan?", Constraints::default()).unwrap();
    let (sender, mut steps) = tokio::sync::mpsc::unbounded_channel();
    let request = PlanRequest {
        goal: &goal,
        tools: &[],
        max_steps: 5,
    };
    let planning = planner.plan_streaming(request, StepSender::new(sender));
    tokio::pin!(planning);
    let step = tokio::select! {
        step = steps.recv() => step.unwrap(),
        _ = &mut planning => panic!("the answer ended before its first step was handed over"),
    };
    assert_eq!(step["id"], "a");
    assert!(steps.try_recv().is_err(), "b is not written yet");
    let reply = planning.await.unwrap();
    assert_eq!(steps.try_recv().unwrap()["id"], "b");
    // The whole draft is the answer as written, with its exchange on record.
    assert_eq!(reply.value.0["steps"].as_array().unwrap().len(), 2);
    assert_eq!(reply.exchanges.len(), 1);
    assert_eq!(server.last_body()["stream"], true);
}
