//! The one place model calls are retried. Providers only classify their
//! failures ([`ModelError::class`]); [`call`] wraps any [`ChatModel`] with a
//! per-attempt timeout and capped, jittered backoff that honours
//! Retry-After, and records every attempt as a [`ModelExchange`] so that
//! retries are visible in the run's log and a run can be replayed.

use std::time::Duration;

use stepwise_core::model::{ExchangeOutcome, ModelExchange};
use stepwise_core::{
    ChatModel, ChatRequest, ChatResponse, FailureClass, ModelError, RetryPolicy, TimeoutStage,
};
use tokio::time::Instant;

/// How [`call`] retries and how long one attempt may take.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CallPolicy {
    /// Attempts and backoff; only transient failures are retried. Its
    /// `max_delay_ms` also caps a Retry-After hint.
    pub retry: RetryPolicy,
    /// Most time one attempt may take, in milliseconds, streaming included
    /// (0 means no limit). A silent server is stopped sooner by the
    /// provider's own [`crate::providers::Timeouts`]; this bounds an answer
    /// that keeps streaming.
    pub timeout_ms: u64,
}

impl Default for CallPolicy {
    /// Three attempts, 0.5 s then 1 s apart (rate limits and overloads are
    /// common and short; a Retry-After is honoured up to 30 s), and five
    /// minutes per attempt (long answers stream for a while; silences are
    /// cut short by the providers' idle timeout).
    fn default() -> Self {
        Self {
            retry: RetryPolicy {
                max_attempts: 3,
                initial_delay_ms: 500,
                max_delay_ms: 30_000,
                multiplier: 2.0,
                jitter: 0.2,
            },
            timeout_ms: 300_000,
        }
    }
}

/// Where a streamed answer's text goes as it arrives (see
/// [`ChatModel::chat_streaming`]).
pub trait TextSink: Send {
    /// A new attempt starts: what came before is void (a retry, or a
    /// repair round-trip, streams its answer again from the start).
    fn restart(&mut self);
    /// The next piece of the answer's text.
    fn text(&mut self, piece: &str);
}

/// Sends `request` to `model`, retrying transient failures (rate limits,
/// 5xx, timeouts, cut connections, truncated streams) with backoff, and
/// returning persistent ones at once. Every attempt, failed or not, is
/// appended to `log`.
pub async fn call(
    model: &dyn ChatModel,
    request: &ChatRequest,
    policy: &CallPolicy,
    log: &mut Vec<ModelExchange>,
) -> Result<ChatResponse, ModelError> {
    call_streaming(model, request, policy, log, None).await
}

/// [`call`], handing each attempt's text to `sink` as it streams in.
pub async fn call_streaming(
    model: &dyn ChatModel,
    request: &ChatRequest,
    policy: &CallPolicy,
    log: &mut Vec<ModelExchange>,
    mut sink: Option<&mut (dyn TextSink + '_)>,
) -> Result<ChatResponse, ModelError> {
    let mut attempt: u32 = 1;
    let mut waited_ms: u64 = 0;
    loop {
        let started = Instant::now();
        let result = attempt_once(model, request, policy.timeout_ms, sink.as_deref_mut()).await;
        let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        log.push(ModelExchange {
            model: model.name().to_owned(),
            request: request.clone(),
            outcome: ExchangeOutcome::of(&result),
            attempt,
            waited_ms,
            duration_ms,
        });
        match result {
            Err(err)
                if err.class() == FailureClass::Transient
                    && policy.retry.allows_retry_after(attempt) =>
            {
                waited_ms = policy
                    .retry
                    .delay_ms(attempt, err.retry_after_ms(), fastrand::f64());
                tokio::time::sleep(Duration::from_millis(waited_ms)).await;
                attempt = attempt.saturating_add(1);
            }
            other => return other,
        }
    }
}

/// One attempt under the policy's timeout.
async fn attempt_once(
    model: &dyn ChatModel,
    request: &ChatRequest,
    timeout_ms: u64,
    sink: Option<&mut (dyn TextSink + '_)>,
) -> Result<ChatResponse, ModelError> {
    let answer = async {
        match sink {
            Some(sink) => {
                sink.restart();
                model
                    .chat_streaming(request, &mut |piece| sink.text(piece))
                    .await
            }
            None => model.chat(request).await,
        }
    };
    if timeout_ms == 0 {
        return answer.await;
    }
    match tokio::time::timeout(Duration::from_millis(timeout_ms), answer).await {
        Ok(result) => result,
        Err(_) => Err(ModelError::Timeout {
            stage: TimeoutStage::Call,
            after_ms: timeout_ms,
        }),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use async_trait::async_trait;
    use stepwise_core::{FinishReason, Message, Usage};

    use super::*;

    /// Fails with each queued error in turn, then answers (or sleeps first).
    struct Flaky {
        errors: Mutex<Vec<ModelError>>,
        calls: Mutex<u32>,
        sleep_ms: u64,
    }

    impl Flaky {
        fn new(mut errors: Vec<ModelError>) -> Self {
            errors.reverse();
            Self {
                errors: Mutex::new(errors),
                calls: Mutex::new(0),
                sleep_ms: 0,
            }
        }

        fn calls(&self) -> u32 {
            *self.calls.lock().unwrap()
        }
    }

    #[async_trait]
    impl ChatModel for Flaky {
        fn name(&self) -> &str {
            "test:flaky"
        }

        async fn chat(&self, _request: &ChatRequest) -> Result<ChatResponse, ModelError> {
            *self.calls.lock().unwrap() += 1;
            let next = self.errors.lock().unwrap().pop();
            if let Some(err) = next {
                return Err(err);
            }
            tokio::time::sleep(Duration::from_millis(self.sleep_ms)).await;
            Ok(ChatResponse {
                text: "ok".into(),
                tool_calls: Vec::new(),
                finish_reason: FinishReason::Stop,
                usage: Usage::llm_call(3, 1),
                model: "flaky-1".into(),
            })
        }
    }

    fn request() -> ChatRequest {
        ChatRequest {
            messages: vec![Message::user("hi")],
            ..ChatRequest::default()
        }
    }

    fn policy(max_attempts: u32) -> CallPolicy {
        CallPolicy {
            retry: RetryPolicy {
                max_attempts,
                initial_delay_ms: 100,
                max_delay_ms: 1_000,
                multiplier: 2.0,
                jitter: 0.0,
            },
            timeout_ms: 5_000,
        }
    }

    fn server() -> ModelError {
        ModelError::Server {
            status: 503,
            message: "overloaded".into(),
            retry_after_ms: None,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn transient_failures_are_retried_with_growing_delays() {
        let model = Flaky::new(vec![server(), server()]);
        let mut log = Vec::new();
        let started = Instant::now();
        let answer = call(&model, &request(), &policy(4), &mut log)
            .await
            .unwrap();
        assert_eq!(answer.text, "ok");
        assert_eq!(model.calls(), 3);
        assert_eq!(started.elapsed(), Duration::from_millis(300));
        let attempts: Vec<_> = log.iter().map(|e| (e.attempt, e.waited_ms)).collect();
        assert_eq!(attempts, [(1, 0), (2, 100), (3, 200)]);
        assert!(matches!(
            log[0].outcome,
            ExchangeOutcome::Error {
                class: FailureClass::Transient,
                ..
            }
        ));
        assert!(matches!(log[2].outcome, ExchangeOutcome::Response { .. }));
        assert!(
            log.iter()
                .all(|e| e.model == "test:flaky" && e.request == request())
        );
    }

    #[tokio::test(start_paused = true)]
    async fn attempts_are_bounded_and_the_last_error_returned() {
        let model = Flaky::new(vec![server(), server(), server()]);
        let mut log = Vec::new();
        let err = call(&model, &request(), &policy(2), &mut log)
            .await
            .unwrap_err();
        assert_eq!(err, server());
        assert_eq!(model.calls(), 2);
        assert_eq!(log.len(), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn retry_after_is_honoured_up_to_the_cap() {
        let limited = |ms| ModelError::RateLimited {
            retry_after_ms: Some(ms),
        };
        let model = Flaky::new(vec![limited(700), limited(60_000)]);
        let mut log = Vec::new();
        let started = Instant::now();
        call(&model, &request(), &policy(4), &mut log)
            .await
            .unwrap();
        let waits: Vec<_> = log.iter().map(|e| e.waited_ms).collect();
        assert_eq!(waits, [0, 700, 1_000]);
        assert_eq!(started.elapsed(), Duration::from_millis(1_700));
        assert!(matches!(
            log[0].outcome,
            ExchangeOutcome::Error {
                retry_after_ms: Some(700),
                ..
            }
        ));
    }

    #[tokio::test(start_paused = true)]
    async fn persistent_failures_are_not_retried() {
        let auth = ModelError::Auth {
            status: 401,
            message: "bad key".into(),
            fix: "set OPENAI_API_KEY".into(),
        };
        let model = Flaky::new(vec![auth.clone()]);
        let mut log = Vec::new();
        let err = call(&model, &request(), &policy(4), &mut log)
            .await
            .unwrap_err();
        assert_eq!(err, auth);
        assert_eq!(model.calls(), 1);
        assert_eq!(log.len(), 1);
        assert!(matches!(
            log[0].outcome,
            ExchangeOutcome::Error {
                class: FailureClass::Persistent,
                ..
            }
        ));
    }

    #[tokio::test(start_paused = true)]
    async fn a_slow_attempt_times_out_as_transient_and_is_retried() {
        let mut model = Flaky::new(Vec::new());
        model.sleep_ms = 10_000;
        let mut log = Vec::new();
        let err = call(&model, &request(), &policy(2), &mut log)
            .await
            .unwrap_err();
        assert_eq!(
            err,
            ModelError::Timeout {
                stage: TimeoutStage::Call,
                after_ms: 5_000
            }
        );
        assert_eq!(model.calls(), 2);
        assert_eq!(log.len(), 2);
        assert!(log.iter().all(|e| e.duration_ms == 5_000));
    }

    #[test]
    fn the_default_policy_allows_three_attempts_and_caps_retry_after_at_30_s() {
        let p = CallPolicy::default();
        assert_eq!(p.retry.max_attempts, 3);
        assert_eq!(p.retry.delay_ms(1, Some(600_000), 0.5), 30_000);
        assert_eq!(p.timeout_ms, 300_000);
    }

    #[tokio::test(start_paused = true)]
    async fn a_server_error_waits_for_its_retry_after() {
        let overloaded = ModelError::Server {
            status: 529,
            message: "Overloaded".into(),
            retry_after_ms: Some(800),
        };
        let model = Flaky::new(vec![overloaded]);
        let mut log = Vec::new();
        call(&model, &request(), &policy(3), &mut log)
            .await
            .unwrap();
        assert_eq!(log[1].waited_ms, 800, "not the 100 ms backoff");
    }
}
