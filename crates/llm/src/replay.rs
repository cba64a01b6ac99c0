//! Replaying a recorded run: a [`ChatModel`] that answers every request with
//! the response recorded for it — zero network calls — and reports the first
//! request that differs from the recording (a divergence) with the call and
//! the difference.

use std::sync::Mutex;

use async_trait::async_trait;
use serde_json::Value;
use stepwise_core::event::EventKind;
use stepwise_core::model::{ExchangeOutcome, ModelExchange};
use stepwise_core::{ChatModel, ChatRequest, ChatResponse, ModelError, RunState};

/// Answers requests from a run's recorded model calls, in order.
#[derive(Debug)]
pub struct ReplayModel {
    name: String,
    calls: Vec<(String, ModelExchange)>,
    next: Mutex<usize>,
}

impl ReplayModel {
    /// The recorded calls of a run (its `model_called` events), in order.
    pub fn from_run(state: &RunState) -> Self {
        let calls: Vec<(String, ModelExchange)> = state
            .execution_history
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::ModelCalled { role, exchange } => {
                    Some((role.clone(), (**exchange).clone()))
                }
                _ => None,
            })
            .collect();
        let name = calls.first().map_or_else(
            || "replay".to_owned(),
            |(_, x)| format!("replay:{}", x.model),
        );
        Self {
            name,
            calls,
            next: Mutex::new(0),
        }
    }

    /// Recorded calls in all.
    pub fn len(&self) -> usize {
        self.calls.len()
    }

    /// Whether the run made no model calls.
    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    /// Calls played back so far.
    pub fn used(&self) -> usize {
        self.next.lock().map_or(0, |n| *n)
    }
}

/// Where two requests first differ, for a person.
pub fn difference(recorded: &ChatRequest, now: &ChatRequest) -> Option<String> {
    let a = serde_json::to_value(recorded).unwrap_or(Value::Null);
    let b = serde_json::to_value(now).unwrap_or(Value::Null);
    first_difference("", &a, &b)
}

fn clip(v: &Value) -> String {
    let text = v.to_string();
    if text.chars().count() > 120 {
        format!("{}…", text.chars().take(120).collect::<String>())
    } else {
        text
    }
}

fn first_difference(path: &str, a: &Value, b: &Value) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            keys.into_iter().find_map(|k| {
                let (va, vb) = (
                    x.get(k).unwrap_or(&Value::Null),
                    y.get(k).unwrap_or(&Value::Null),
                );
                first_difference(&format!("{path}/{k}"), va, vb)
            })
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (va, vb))| first_difference(&format!("{path}/{i}"), va, vb)),
        _ if a == b => None,
        _ => Some(format!(
            "at {}: recorded {} but now {}",
            if path.is_empty() { "/" } else { path },
            clip(a),
            clip(b)
        )),
    }
}

#[async_trait]
impl ChatModel for ReplayModel {
    fn name(&self) -> &str {
        &self.name
    }

    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        let index = {
            let mut next = self
                .next
                .lock()
                .map_err(|_| ModelError::Script("the replay is unusable".into()))?;
            let i = *next;
            *next += 1;
            i
        };
        let Some((role, recorded)) = self.calls.get(index) else {
            return Err(ModelError::Script(format!(
                "replay diverged: call {} ({}) was never made in the recorded run ({} calls recorded)",
                index + 1,
                request.purpose,
                self.calls.len()
            )));
        };
        if let Some(diff) = difference(&recorded.request, request) {
            return Err(ModelError::Script(format!(
                "replay diverged at call {} ({role}): {diff}",
                index + 1
            )));
        }
        match &recorded.outcome {
            ExchangeOutcome::Response { response } => Ok(response.clone()),
            ExchangeOutcome::Error {
                class,
                message,
                retry_after_ms,
            } => Err(ModelError::Replayed {
                class: *class,
                message: message.clone(),
                retry_after_ms: *retry_after_ms,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use stepwise_core::Message;

    use super::*;

    #[test]
    fn differences_name_the_path() {
        let a = ChatRequest {
            purpose: "planner".into(),
            messages: vec![Message::user("hello")],
            ..Default::default()
        };
        let mut b = a.clone();
        assert_eq!(difference(&a, &b), None);
        b.messages[0].content = "hullo".into();
        let d = difference(&a, &b).unwrap();
        assert!(
            d.starts_with("at /messages/0/content: recorded \"hello\" but now \"hullo\""),
            "{d}"
        );
    }
}
