//! Streaming plans (LLMCompiler): time to the first tool call when the
//! planner writes a 10-step plan at a fixed rate, one step every 20 ms (a
//! model streaming its plan), against the time it wrote the first step —
//! streamed (`RunConfig::stream_plans`) and whole. A plain program
//! (`harness = false`), since the figure is one instant per run, not a
//! throughput: `cargo bench -p stepwise-core --bench stream`. See
//! docs/benchmarks.md.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::panic
)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use stepwise_core::testing::{
    FnTool, ScriptedAssessor, ScriptedRepairer, ScriptedReplanner, ScriptedSynthesizer,
    StreamingPlanner,
};
use stepwise_core::{
    Constraints, Engine, MemoryStore, RunConfig, RunStatus, StoreSink, ToolRegistry,
};
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
    let roles = stepwise_core::Roles::new(
        Arc::clone(&planner) as _,
        Arc::new(ScriptedRepairer::new([])),
        Arc::new(ScriptedAssessor::new([])),
        Arc::new(ScriptedReplanner::new([])),
        Arc::new(ScriptedSynthesizer::summarising()),
    );
    let first_call: Arc<Mutex<Option<Instant>>> = Arc::default();
    let seen = Arc::clone(&first_call);
    let mut tools = ToolRegistry::new();
    tools.register_dyn(Arc::new(FnTool::new("look", move |args: Value| {
        let mut first = seen.lock().unwrap();
        first.get_or_insert_with(Instant::now);
        Box::pin(async move { Ok(json!({"found": args})) })
    })));
    let config = RunConfig {
        stream_plans: true,
        ..RunConfig::default()
    };
    let mut engine = Engine::new(roles, tools, config).unwrap();
    if store {
        // Every event appended to a store before it is acted on.
        engine = engine.with_sink(Arc::new(StoreSink::new(Arc::new(MemoryStore::new()), None)));
    }
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

fn percentile(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * p).round() as usize]
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    println!(
        "time to first tool call, {STEPS}-step plan written one step every {} ms, {RUNS} runs each",
        WRITE_EVERY.as_millis()
    );
    for (stream, store) in [(true, false), (true, true), (false, false), (false, true)] {
        let mut gaps = Vec::with_capacity(RUNS);
        let mut firsts = Vec::with_capacity(RUNS);
        for _ in 0..RUNS {
            let (written, called) = rt
                .block_on(async { tokio::spawn(once(stream, store)).await })
                .unwrap();
            firsts.push(written.as_secs_f64() * 1e3);
            gaps.push((called.as_secs_f64() - written.as_secs_f64()) * 1e3);
        }
        println!(
            "  {:<8} {:<13} first step written at {:6.2} ms; first tool call {:8.3} ms after it (median), {:8.3} ms (p95)",
            if stream { "streamed" } else { "whole" },
            if store { "memory store" } else { "no store" },
            percentile(&mut firsts, 0.5),
            percentile(&mut gaps.clone(), 0.5),
            percentile(&mut gaps, 0.95),
        );
    }
}
