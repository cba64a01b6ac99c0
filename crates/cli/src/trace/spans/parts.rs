//! The spans still open while the events are folded: a graph node, a
//! wave, a step attempt, a model call waiting for its parent, a resume.

use std::time::Duration;

use chrono::{DateTime, Utc};
use opentelemetry::KeyValue;
use opentelemetry::trace::{Event as SpanEvent, SpanId};
use serde_json::Value as Json;
use stepwise_core::model::ModelExchange;

/// A graph node being extended by consecutive events of the same kind.
pub(super) struct Node {
    pub(super) id: SpanId,
    pub(super) parent: SpanId,
    pub(super) name: &'static str,
    pub(super) start: DateTime<Utc>,
    pub(super) end: DateTime<Utc>,
    pub(super) events: Vec<&'static str>,
    pub(super) attrs: Vec<KeyValue>,
}

/// Steps dispatched together, until none is running and a decision comes.
pub(super) struct Wave {
    pub(super) id: SpanId,
    pub(super) parent: SpanId,
    pub(super) start: DateTime<Utc>,
    pub(super) end: DateTime<Utc>,
    pub(super) running: usize,
    pub(super) marks: Vec<SpanEvent>,
}

/// A step attempt in flight.
pub(super) struct Attempt {
    pub(super) id: SpanId,
    pub(super) parent: SpanId,
    pub(super) seq: u64,
    pub(super) attempt: u32,
    pub(super) start: DateTime<Utc>,
    pub(super) plan_version: Option<u32>,
}

/// A model call waiting for the span it belongs to.
pub(super) struct Call {
    pub(super) seq: u64,
    pub(super) at: DateTime<Utc>,
    pub(super) role: String,
    pub(super) exchange: ModelExchange,
}

/// A resume of a run whose root span was already sent.
pub(super) struct Segment {
    pub(super) id: SpanId,
    pub(super) start: DateTime<Utc>,
    pub(super) marks: Vec<SpanEvent>,
}

/// How a step attempt ended.
pub(super) enum Ended<'a> {
    Succeeded { duration_ms: u64, output: &'a Json },
    Failed { kind: String, message: &'a str },
    Interrupted,
}

/// When a model call began: its event is recorded when it ends.
pub(super) fn call_start(call: &Call) -> DateTime<Utc> {
    let took = Duration::from_millis(call.exchange.duration_ms);
    chrono::Duration::from_std(took).map_or(call.at, |took| call.at - took)
}
