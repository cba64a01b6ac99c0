//! Provider resilience over real HTTP: Retry-After honoured on 503 and
//! Anthropic's 529 (seconds, milliseconds, HTTP date), an empty answer
//! named as such, Anthropic streams without their start events, a corrupt
//! chunk retried, and the first-byte and idle timeouts. Waits are checked
//! from below only: the machine is shared, so an upper bound would flake.

use std::time::{Duration, Instant};

use stepwise_core::model::{ExchangeOutcome, ModelExchange};
use stepwise_core::{
    ChatModel, Constraints, Engine, FailureClass, ModelError, RetryPolicy, RunConfig, RunStatus,
    TimeoutStage,
};
use stepwise_llm::call::CallPolicy;
use stepwise_llm::providers::{AnthropicClient, OpenAiClient, Timeouts};
use stepwise_llm::roles::{Prompts, llm_roles};

use super::fake::{FakeServer, Reply, recordings};
use super::{KEY, anthropic, call_logged, openai, question, quick};

/// Waits for a Retry-After of up to 5 s; 10 ms backoff otherwise.
fn patient(max_attempts: u32) -> CallPolicy {
    CallPolicy {
        retry: RetryPolicy {
            max_attempts,
            initial_delay_ms: 10,
            max_delay_ms: 5_000,
            multiplier: 2.0,
            jitter: 0.0,
        },
        timeout_ms: 20_000,
    }
}

/// The Retry-After the first attempt recorded.
fn hint(log: &[ModelExchange]) -> u64 {
    match &log[0].outcome {
        ExchangeOutcome::Error {
            class: FailureClass::Transient,
            retry_after_ms: Some(ms),
            ..
        } => *ms,
        other => panic!("no Retry-After recorded: {other:?}"),
    }
}

const UNAVAILABLE: &str = r#"{"error":{"message":"The engine is currently overloaded, please try again later","type":"server_error"}}"#;
const OVERLOADED: &str =
    r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;

#[tokio::test]
async fn a_503_waits_at_least_its_retry_after_in_seconds_milliseconds_or_as_a_date() {
    let server = FakeServer::start().await;
    let in_two_seconds = || {
        (chrono::Utc::now() + chrono::Duration::seconds(2))
            .format("%a, %d %b %Y %H:%M:%S GMT")
            .to_string()
    };
    for (name, value) in [
        ("retry-after", "1".to_owned()),
        ("retry-after-ms", "400".to_owned()),
        ("retry-after", String::new()),
    ] {
        let value = if value.is_empty() {
            in_two_seconds()
        } else {
            value
        };
        server.push(Reply::json(503, UNAVAILABLE).header(name, &value));
        server.push(Reply::sse(recordings::OPENAI_TEXT));
        let started = Instant::now();
        let (answer, log) = call_logged(&openai(&server), &question(), &patient(3)).await;
        let elapsed = started.elapsed();
        assert_eq!(answer.unwrap().text, "Plans are DAGs of steps.", "{name}");
        let hint = hint(&log);
        // A date has whole seconds, so two seconds ahead is at least one left.
        assert!(hint >= 400, "{name}: {hint}");
        assert!(log[1].waited_ms >= hint, "{name}: {log:?}");
        assert!(
            elapsed >= Duration::from_millis(hint),
            "{name}: {elapsed:?} < {hint} ms"
        );
    }
    assert_eq!(server.requests().len(), 6);
}

#[tokio::test]
async fn an_anthropic_529_waits_at_least_its_retry_after() {
    let server = FakeServer::start().await;
    server.push(Reply::json(529, OVERLOADED).header("retry-after", "1"));
    server.push(Reply::json(529, OVERLOADED).header("retry-after-ms", "300"));
    server.push(Reply::sse(recordings::ANTHROPIC_TEXT));
    let started = Instant::now();
    let (answer, log) = call_logged(&anthropic(&server), &question(), &patient(3)).await;
    let elapsed = started.elapsed();
    assert_eq!(answer.unwrap().text, "Plans are DAGs of steps.");
    assert_eq!(hint(&log), 1_000);
    let waits: Vec<u64> = log.iter().map(|e| e.waited_ms).collect();
    assert_eq!(waits, [0, 1_000, 300]);
    assert!(elapsed >= Duration::from_millis(1_300), "{elapsed:?}");
    let recorded = serde_json::to_string(&log[0].outcome).unwrap();
    assert!(
        recorded.contains("HTTP 529") && recorded.contains("retry after 1000 ms"),
        "{recorded}"
    );
}

#[tokio::test]
async fn a_retry_after_beyond_the_cap_waits_the_cap() {
    let server = FakeServer::start().await;
    server.push(Reply::json(529, OVERLOADED).header("retry-after", "3600"));
    server.push(Reply::sse(recordings::ANTHROPIC_TEXT));
    // quick(): max_delay_ms 150.
    let (answer, log) = call_logged(&anthropic(&server), &question(), &quick(2)).await;
    assert!(answer.is_ok());
    assert_eq!(hint(&log), 3_600_000);
    assert_eq!(log[1].waited_ms, 150);
}

#[tokio::test]
async fn an_empty_answer_fails_the_run_saying_the_model_returned_an_empty_answer() {
    let server = FakeServer::start().await;
    server.push(Reply::sse(recordings::OPENAI_EMPTY_ANSWER));
    server.push(Reply::sse(recordings::OPENAI_EMPTY_ANSWER));
    let roles = llm_roles(
        std::sync::Arc::new(openai(&server)),
        quick(3),
        Prompts::embedded(),
    );
    let engine = Engine::new(roles, super::common::registry(), RunConfig::default()).unwrap();
    let state = engine
        .run(super::common::GOAL, Constraints::default())
        .await
        .unwrap();
    assert_eq!(state.status, RunStatus::Failed);
    let reason = state.blocked_reason.clone().unwrap_or_default();
    assert!(
        reason.contains("the model returned an empty answer"),
        "{reason}"
    );
    assert!(
        !reason.contains("invalid plan") && !reason.contains("string"),
        "{reason}"
    );
    assert_eq!(server.requests().len(), 2, "asked once more, then stopped");
    assert_eq!(state.usage.llm_calls, 2);
}

/// `body` without the events that mention any of `names`.
fn without(body: &str, names: &[&str]) -> String {
    body.split_inclusive("\n\n")
        .filter(|event| !names.iter().any(|n| event.contains(n)))
        .collect()
}

#[tokio::test]
async fn an_anthropic_stream_without_its_start_events_keeps_its_text() {
    let server = FakeServer::start().await;
    let bare = without(
        recordings::ANTHROPIC_TEXT,
        &["message_start", "content_block_start"],
    );
    assert!(!bare.contains("message_start") && bare.contains("text_delta"));
    server.push(Reply::sse(&bare));
    // Nor a stop reason: `message_stop` alone says the message is complete.
    server.push(Reply::sse(&without(&bare, &["message_delta"])));
    let client = anthropic(&server);
    for _ in 0..2 {
        let answer = client.chat(&question()).await.unwrap();
        assert_eq!(answer.text, "Plans are DAGs of steps.");
        assert_eq!(answer.model, "claude-sonnet-4-5", "the requested model");
    }
}

#[tokio::test]
async fn an_anthropic_tool_input_without_its_block_start_is_a_malformed_stream() {
    let server = FakeServer::start().await;
    let bare = without(recordings::ANTHROPIC_TOOL_USE, &["content_block_start"]);
    assert!(bare.contains("input_json_delta"));
    server.push(Reply::sse(&bare));
    let (result, log) = call_logged(&anthropic(&server), &question(), &quick(3)).await;
    let err = result.unwrap_err();
    assert!(
        matches!(&err, ModelError::Malformed(m) if m.contains("malformed stream")),
        "{err:?}"
    );
    assert_eq!(
        log.len(),
        1,
        "a server that leaves out starts does so every time"
    );
}

#[tokio::test]
async fn a_corrupt_chunk_is_retried_and_the_call_then_succeeds() {
    let server = FakeServer::start().await;
    let corrupt = recordings::OPENAI_TEXT.replacen("data: {", "data: {\"choices\": [", 2);
    server.push(Reply::sse(&corrupt));
    server.push(Reply::sse(recordings::OPENAI_TEXT));
    let (answer, log) = call_logged(&openai(&server), &question(), &quick(3)).await;
    assert_eq!(answer.unwrap().text, "Plans are DAGs of steps.");
    assert_eq!(log.len(), 2);
    assert!(
        matches!(&log[0].outcome, ExchangeOutcome::Error { class: FailureClass::Transient, message, .. }
            if message.contains("corrupt") && message.contains("not JSON")),
        "{:?}",
        log[0].outcome
    );

    let corrupt = recordings::ANTHROPIC_TEXT.replacen("\"text_delta\"", "\"text_delta", 1);
    server.push(Reply::sse(&corrupt));
    server.push(Reply::sse(recordings::ANTHROPIC_TEXT));
    let (answer, log) = call_logged(&anthropic(&server), &question(), &quick(3)).await;
    assert_eq!(answer.unwrap().text, "Plans are DAGs of steps.");
    assert_eq!(log.len(), 2);
}

fn timeouts(first_byte_ms: u64, idle_ms: u64) -> Timeouts {
    Timeouts {
        connect_ms: 2_000,
        first_byte_ms,
        idle_ms,
    }
}

#[tokio::test]
async fn a_configured_idle_timeout_fires_when_the_stream_goes_silent() {
    let server = FakeServer::start().await;
    // Headers and the first chunk, then silence with the connection open.
    let first = recordings::OPENAI_TEXT
        .split_inclusive("\n\n")
        .next()
        .unwrap();
    server.push(Reply::sse_then_silence(first));
    server.push(Reply::sse_then_silence(""));
    let client = openai(&server).with_timeouts(timeouts(5_000, 300)).unwrap();
    let started = Instant::now();
    let (result, log) = call_logged(&client, &question(), &quick(2)).await;
    let err = result.unwrap_err();
    assert_eq!(
        err,
        ModelError::Timeout {
            stage: TimeoutStage::Idle,
            after_ms: 300
        }
    );
    assert!(err.to_string().contains("timed out after 300 ms"), "{err}");
    assert!(err.to_string().contains("idle timeout"), "{err}");
    assert_eq!(log.len(), 2, "a timeout is transient");
    assert!(started.elapsed() >= Duration::from_millis(600));
    assert!(log.iter().all(|e| e.duration_ms >= 300));

    // Anthropic alike, then an answer on the retry.
    let first = recordings::ANTHROPIC_TEXT
        .split_inclusive("\n\n")
        .next()
        .unwrap();
    server.push(Reply::sse_then_silence(first));
    server.push(Reply::sse(recordings::ANTHROPIC_TEXT));
    let client = AnthropicClient::new("anthropic:c", "c", &server.url, Some(KEY.into()))
        .unwrap()
        .with_timeouts(timeouts(5_000, 300))
        .unwrap();
    let (answer, log) = call_logged(&client, &question(), &quick(2)).await;
    assert_eq!(answer.unwrap().text, "Plans are DAGs of steps.");
    assert!(
        matches!(&log[0].outcome, ExchangeOutcome::Error { message, .. } if message.contains("idle timeout")),
        "{:?}",
        log[0].outcome
    );
}

#[tokio::test]
async fn a_server_that_sends_no_headers_hits_the_first_byte_timeout() {
    let server = FakeServer::start().await;
    server.push(Reply::sse(recordings::OPENAI_TEXT).delay(3_000));
    let client = OpenAiClient::new("openai:m", "m", &format!("{}/v1", server.url), None)
        .unwrap()
        .with_timeouts(timeouts(250, 5_000))
        .unwrap();
    let started = Instant::now();
    let (result, _) = call_logged(&client, &question(), &quick(1)).await;
    let err = result.unwrap_err();
    assert_eq!(
        err,
        ModelError::Timeout {
            stage: TimeoutStage::FirstByte,
            after_ms: 250
        }
    );
    assert!(err.to_string().contains("first-byte timeout"), "{err}");
    assert!(started.elapsed() >= Duration::from_millis(250));
}

#[test]
fn by_default_a_silent_server_fails_a_call_well_within_a_minute() {
    let policy = CallPolicy::default();
    let timeouts = Timeouts::default();
    let attempts = u64::from(policy.retry.max_attempts);
    let backoff: u64 = (1..policy.retry.max_attempts)
        .map(|a| policy.retry.delay_ms(a, None, 1.0))
        .sum();
    // Silent before the headers, or after them: each attempt waits one limit.
    let worst = attempts * timeouts.first_byte_ms.max(timeouts.idle_ms) + backoff;
    assert!(worst <= 40_000, "{worst} ms");
    assert!(policy.timeout_ms >= 60_000, "long answers still stream");
}
