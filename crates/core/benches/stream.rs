//! Streaming plans (LLMCompiler): time to the first tool call when the
//! planner writes a 10-step plan at a fixed rate, one step every 20 ms (a
//! model streaming its plan), against the time it wrote the first step —
//! streamed (`RunConfig::stream_plans`) and whole. A plain program
//! (`harness = false`), since the figure is one instant per run, not a
//! throughput: `cargo bench -p stepwise-core --bench stream`. The same
//! through the model-backed planner: `stepwise-llm`'s `stream` bench. See
//! docs/benchmarks.md.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use stepwise_core::testing::{StreamingPlanner, first_call_engine, first_calls};
use stepwise_core::{Constraints, RunStatus};
use tokio::time::Instant;

const STEPS: usize = 10;
const WRITE_EVERY: Duration = Duration::from_millis(20);
const RUNS: usize = 30;

fn plan() -> Vec<Value> {
    (1..=STEPS)
        .map(|i| {
            json!({"id": format!("s{i}"), "description": format!("look up {i}"), "tool": "look",
                   "args": {"q": format!("q{i}")}, "acceptance_criteria": [{"check": "non_empty"}]})
        })
        .collect()
}

/// One run: (first step written, first tool call), from the run's start.
async fn once(stream: bool, store: bool) -> (Duration, Duration) {
    let planner = StreamingPlanner::new(plan(), WRITE_EVERY);
    let planner = Arc::new(if stream { planner } else { planner.whole() });
    let (engine, first_call) = first_call_engine(Arc::clone(&planner) as _, stream, store).unwrap();
    let started = Instant::now();
    let state = engine
        .run("look it all up", Constraints::default())
        .await
        .unwrap();
    assert_eq!(state.status, RunStatus::Ok, "{:?}", state.blocked_reason);
    let written = planner.written()[0];
    let called = first_call.lock().unwrap().expect("a tool was called");
    (written - started, called - started)
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    // `cargo test --benches` (scripts/test) runs it once per mode, to check it still runs.
    let runs = if std::env::args().any(|a| a == "--bench") {
        RUNS
    } else {
        1
    };
    println!(
        "time to first tool call, {STEPS}-step plan written one step every {} ms; {runs} runs each",
        WRITE_EVERY.as_millis()
    );
    for row in first_calls(&rt, runs, once).unwrap() {
        println!("{row}");
    }
}
