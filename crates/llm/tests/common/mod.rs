//! What the engine-level LLM role tests share: the notes tools, a fast retry
//! policy, scripts in the documented format, and the recorded model calls.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;

use serde_json::Value;
use stepwise_core::event::EventKind;
use stepwise_core::model::ModelExchange;
use stepwise_core::{RetryPolicy, RunState, ToolRegistry};
use stepwise_llm::call::CallPolicy;
use stepwise_llm::script::{ScriptModel, parse};
use stepwise_tools::{Corpus, register_notes_tools};

pub const GOAL: &str = "What does fine-tuning cost us?";

/// The notes tools over `examples/notes`.
pub fn registry() -> ToolRegistry {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/notes");
    let corpus = Corpus::load(dir).unwrap().corpus;
    let mut tools = ToolRegistry::new();
    register_notes_tools(&mut tools, Arc::new(corpus));
    tools
}

/// Tiny backoff, no jitter: retries are on record but cost no time.
pub fn policy() -> CallPolicy {
    CallPolicy {
        retry: RetryPolicy {
            max_attempts: 3,
            initial_delay_ms: 1,
            max_delay_ms: 5,
            multiplier: 2.0,
            jitter: 0.0,
        },
        timeout_ms: 10_000,
    }
}

/// A script in the documented file format (a JSON array of entries).
pub fn model(entries: Value) -> Arc<ScriptModel> {
    let text = serde_json::to_string_pretty(&entries).unwrap();
    Arc::new(ScriptModel::from_entries(
        parse(&text, "test script").unwrap(),
    ))
}

/// The run's model calls, with the role that made each.
pub fn calls(state: &RunState) -> Vec<(String, ModelExchange)> {
    state
        .execution_history
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ModelCalled { role, exchange } => Some((role.clone(), (**exchange).clone())),
            _ => None,
        })
        .collect()
}

/// The roles of the run's model calls, in order.
pub fn roles_called(state: &RunState) -> Vec<String> {
    calls(state).into_iter().map(|(r, _)| r).collect()
}
