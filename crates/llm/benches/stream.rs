//! Streaming plans through the model-backed planner: a script model streams
//! a 10-step plan's JSON at a fixed rate (16 characters every 2 ms, about
//! 20 ms per step), the planner reads each step out of the text as it
//! arrives, and the engine runs it. Measured: the first tool call against
//! the instant the model's text first held the whole first step — streamed
//! (`RunConfig::stream_plans`) and whole. A plain program (`harness =
//! false`): `cargo bench -p stepwise-llm --bench stream`; figures in
//! docs/benchmarks.md.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::panic
)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use stepwise_core::testing::{
    FnTool, ScriptedAssessor, ScriptedRepairer, ScriptedReplanner, ScriptedSynthesizer,
};
use stepwise_core::{
    ChatModel, ChatRequest, ChatResponse, Constraints, Engine, MemoryStore, ModelError, RunConfig,
    RunStatus, StoreSink, ToolRegistry,
};
use stepwise_llm::call::CallPolicy;
use stepwise_llm::roles::{LlmPlanner, Prompts};
use stepwise_llm::script::{ScriptEntry, ScriptModel, ScriptStream};
use tokio::time::Instant;

const STEPS: usize = 10;
const RUNS: usize = 30;
const STREAM: ScriptStream = ScriptStream {
    chunk_ms: 2,
    chunk_chars: 16,
};

/// The script model, noting when each piece of text was handed over and
/// how much text had arrived by then.
struct Timed {
    inner: ScriptModel,
    pieces: Mutex<Vec<(Instant, usize)>>,
}

#[async_trait]
impl ChatModel for Timed {
    fn name(&self) -> &str {
        self.inner.name()
    }

    /// Asked whole, the text is still written piece by piece (and noted);
    /// the planner sees it only at the end.
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        self.chat_streaming(request, &mut |_| {}).await
    }

    fn streams(&self) -> bool {
        self.inner.streams()
    }

    async fn chat_streaming(
        &self,
        request: &ChatRequest,
        on_text: &mut (dyn for<'s> FnMut(&'s str) + Send),
    ) -> Result<ChatResponse, ModelError> {
        let mut total = 0;
        self.inner
            .chat_streaming(request, &mut |piece| {
                total += piece.len();
                self.pieces.lock().unwrap().push((Instant::now(), total));
                on_text(piece);
            })
            .await
    }
}

fn steps() -> Vec<Value> {
    (1..=STEPS)
        .map(|i| {
            json!({"id": format!("s{i}"), "description": format!("look up topic {i}"),
                   "tool": "look", "args": {"q": format!("query {i}")},
                   "acceptance_criteria": [{"check": "non_empty"}]})
        })
        .collect()
}

/// One run: (the first step fully written, the first tool call), from the start.
async fn once(stream: bool, store: bool) -> (Duration, Duration) {
    let plan = json!({"steps": steps()});
    let text = plan.to_string();
    // The text up to the first step's closing brace.
    let first_step_ends = format!("{{\"steps\":[{}", steps()[0]).len();
    let mut entry = ScriptEntry::text(text).for_purpose("planner");
    entry.stream = Some(STREAM);
    let model = Arc::new(Timed {
        inner: ScriptModel::from_entries(vec![entry]),
        pieces: Mutex::new(Vec::new()),
    });
    let roles = stepwise_core::Roles::new(
        Arc::new(LlmPlanner::new(
            Arc::clone(&model) as Arc<dyn ChatModel>,
            CallPolicy::default(),
            Prompts::embedded(),
        )),
        Arc::new(ScriptedRepairer::new([])),
        Arc::new(ScriptedAssessor::new([])),
        Arc::new(ScriptedReplanner::new([])),
        Arc::new(ScriptedSynthesizer::summarising()),
    );
    let first_call: Arc<Mutex<Option<Instant>>> = Arc::default();
    let seen = Arc::clone(&first_call);
    let mut tools = ToolRegistry::new();
    tools.register_dyn(Arc::new(FnTool::new("look", move |args: Value| {
        seen.lock().unwrap().get_or_insert_with(Instant::now);
        Box::pin(async move { Ok(json!({"found": args})) })
    })));
    let config = RunConfig {
        stream_plans: stream,
        ..RunConfig::default()
    };
    let mut engine = Engine::new(roles, tools, config).unwrap();
    if store {
        engine = engine.with_sink(Arc::new(StoreSink::new(Arc::new(MemoryStore::new()), None)));
    }
    let started = Instant::now();
    let state = engine
        .run("look it all up", Constraints::default())
        .await
        .unwrap();
    assert_eq!(state.status, RunStatus::Ok, "{:?}", state.blocked_reason);
    assert_eq!(state.step_results.len(), STEPS);
    let written = model
        .pieces
        .lock()
        .unwrap()
        .iter()
        .find(|(_, total)| *total >= first_step_ends)
        .map(|(at, _)| *at)
        .expect("the first step was written");
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
        "script model streaming a {STEPS}-step plan, {} characters every {} ms; {RUNS} runs each",
        STREAM.chunk_chars, STREAM.chunk_ms
    );
    for (stream, store) in [(true, false), (true, true), (false, false), (false, true)] {
        let mut firsts = Vec::with_capacity(RUNS);
        let mut gaps = Vec::with_capacity(RUNS);
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
