//! Failures through `call()`: which are retried, how long it waits, and
//! what the exchange log records (one exchange per attempt, never the key).

use std::time::{Duration, Instant};

use stepwise_core::model::ExchangeOutcome;
use stepwise_core::{FailureClass, ModelError, TimeoutStage};
use stepwise_llm::call::CallPolicy;
use stepwise_llm::providers::OpenAiClient;

use super::fake::{FakeServer, Reply, recordings};
use super::{KEY, call_logged, openai, question, quick};

fn waits(log: &[stepwise_core::model::ModelExchange]) -> Vec<(u32, u64)> {
    log.iter().map(|e| (e.attempt, e.waited_ms)).collect()
}

#[tokio::test]
async fn rate_limits_wait_for_retry_after_up_to_the_cap() {
    let server = FakeServer::start().await;
    let limited = r#"{"error":{"message":"Rate limit reached for gpt-4o-mini","type":"requests","param":null,"code":"rate_limit_exceeded"}}"#;
    server.push(Reply::json(429, limited).header("retry-after", "1"));
    server.push(Reply::json(429, limited).header("retry-after-ms", "60"));
    server.push(Reply::sse(recordings::OPENAI_TEXT));
    let started = Instant::now();
    let (answer, log) = call_logged(&openai(&server), &question(), &quick(4)).await;
    assert_eq!(answer.unwrap().text, "Plans are DAGs of steps.");
    // Retry-After: 1 s, capped at max_delay (150 ms); then retry-after-ms: 60.
    assert_eq!(waits(&log), [(1, 0), (2, 150), (3, 60)]);
    assert!(started.elapsed() >= Duration::from_millis(210));
    assert!(matches!(
        log[0].outcome,
        ExchangeOutcome::Error {
            class: FailureClass::Transient,
            retry_after_ms: Some(1_000),
            ..
        }
    ));
    assert!(matches!(log[2].outcome, ExchangeOutcome::Response { .. }));
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn server_errors_are_retried() {
    let server = FakeServer::start().await;
    server.push(Reply::json(500, r#"{"error":{"message":"The server had an error while processing your request.","type":"server_error"}}"#));
    server.push(Reply::sse(recordings::OPENAI_TEXT));
    let (answer, log) = call_logged(&openai(&server), &question(), &quick(4)).await;
    assert!(answer.is_ok());
    assert_eq!(waits(&log), [(1, 0), (2, 10)]);
    assert!(
        matches!(&log[0].outcome, ExchangeOutcome::Error { message, .. } if message.contains("HTTP 500"))
    );
}

#[tokio::test]
async fn a_server_slower_than_the_timeout_is_abandoned_and_retried() {
    let server = FakeServer::start().await;
    server.push(Reply::sse(recordings::OPENAI_TEXT).delay(1_500));
    server.push(Reply::sse(recordings::OPENAI_TEXT));
    let policy = CallPolicy {
        timeout_ms: 200,
        ..quick(2)
    };
    let (answer, log) = call_logged(&openai(&server), &question(), &policy).await;
    assert!(answer.is_ok());
    assert!(
        matches!(&log[0].outcome, ExchangeOutcome::Error { class: FailureClass::Transient, message, .. } if message.contains("200 ms"))
    );
    assert!(
        (200..1_500).contains(&log[0].duration_ms),
        "{}",
        log[0].duration_ms
    );

    server.push(Reply::sse(recordings::OPENAI_TEXT).delay(1_500));
    let (err, _) = call_logged(
        &openai(&server),
        &question(),
        &CallPolicy {
            timeout_ms: 200,
            ..quick(1)
        },
    )
    .await;
    assert_eq!(
        err.unwrap_err(),
        ModelError::Timeout {
            stage: TimeoutStage::Call,
            after_ms: 200
        }
    );
}

#[tokio::test]
async fn a_connection_cut_mid_stream_is_retried() {
    let server = FakeServer::start().await;
    server.push(Reply::sse_cut(recordings::OPENAI_TOOL_CALLS));
    server.push(Reply::sse(recordings::OPENAI_TEXT));
    let (answer, log) = call_logged(&openai(&server), &question(), &quick(3)).await;
    assert!(answer.is_ok());
    assert_eq!(log.len(), 2);
    assert!(
        matches!(&log[0].outcome, ExchangeOutcome::Error { class: FailureClass::Transient, message, .. } if message.contains("connection")),
        "{:?}",
        log[0].outcome
    );
}

#[tokio::test]
async fn a_stream_that_ends_without_a_finish_reason_is_truncated_and_retried() {
    let server = FakeServer::start().await;
    server.push(Reply::sse_until(
        recordings::OPENAI_TEXT,
        "\"finish_reason\":\"stop\"",
    ));
    server.push(Reply::sse(recordings::OPENAI_TEXT));
    let (answer, log) = call_logged(&openai(&server), &question(), &quick(3)).await;
    assert!(answer.is_ok());
    assert_eq!(log.len(), 2);
    let truncated = ModelError::Truncated.to_string();
    assert!(
        matches!(&log[0].outcome, ExchangeOutcome::Error { message, .. } if *message == truncated)
    );
}

#[tokio::test]
async fn malformed_bodies_are_persistent() {
    let server = FakeServer::start().await;
    server.push(Reply::json(
        200,
        "<html><body>Welcome to nginx!</body></html>",
    ));
    let (result, log) = call_logged(&openai(&server), &question(), &quick(4)).await;
    assert!(
        matches!(result, Err(ModelError::Malformed(_))),
        "{result:?}"
    );
    assert_eq!(log.len(), 1, "not retried");

    server.push(Reply::json(200, r#"{"object": "list", "data": []}"#));
    let err = call_logged(&openai(&server), &question(), &quick(4))
        .await
        .0
        .unwrap_err();
    assert!(matches!(err, ModelError::Malformed(_)), "{err:?}");
}

#[tokio::test]
async fn a_wrong_key_is_an_auth_error_and_the_key_is_never_shown() {
    let server = FakeServer::start().await;
    // A server that echoes the key it was given.
    let body = format!(
        r#"{{"error":{{"message":"Incorrect API key provided: {KEY}. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}}}"#
    );
    server.push(Reply::json(401, &body));
    let (result, log) = call_logged(&openai(&server), &question(), &quick(4)).await;
    let err = result.unwrap_err();
    assert!(
        matches!(&err, ModelError::Auth { status: 401, fix, .. } if fix.contains("OPENAI_API_KEY")),
        "{err:?}"
    );
    assert_eq!(err.class(), FailureClass::Persistent);
    assert_eq!(log.len(), 1, "not retried");
    assert!(!err.to_string().contains(KEY), "{err}");
    assert!(!format!("{err:?}").contains(KEY));
    let recorded = serde_json::to_string(&log).unwrap();
    assert!(!recorded.contains(KEY), "{recorded}");
    assert!(
        recorded.contains("Incorrect API key provided: <redacted>"),
        "{recorded}"
    );
    assert!(!format!("{:?}", openai(&server)).contains(KEY));
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
}

#[tokio::test]
async fn an_unreachable_server_is_a_connection_error() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let base = format!("http://stepwise:hunter2@127.0.0.1:{port}/v1");
    let client = OpenAiClient::new("openai:m", "m", &base, None).unwrap();
    let (result, log) = call_logged(&client, &question(), &quick(2)).await;
    let err = result.unwrap_err();
    assert!(
        matches!(&err, ModelError::Connection(m) if m.contains("127.0.0.1")),
        "{err:?}"
    );
    assert!(!err.to_string().contains("hunter2"), "{err}");
    assert_eq!(log.len(), 2, "connection failures are transient");
}
