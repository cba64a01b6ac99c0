//! Streaming plans through the model-backed planner: a script model streams
//! a 10-step plan's JSON at a fixed rate (16 characters every 2 ms, about
//! 20 ms per step), the planner reads each step out of the text as it
//! arrives, and the engine runs it. Measured: the first tool call against
//! the instant the model's text first held the whole first step — streamed
//! (`RunConfig::stream_plans`) and whole. A plain program (`harness =
//! false`): `cargo bench -p stepwise-llm --bench stream`; figures in
//! docs/benchmarks.md.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use stepwise_core::testing::{first_call_engine, first_calls};
use stepwise_core::{ChatModel, ChatRequest, ChatResponse, Constraints, ModelError, RunStatus};
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
    let planner = Arc::new(LlmPlanner::new(
        Arc::clone(&model) as Arc<dyn ChatModel>,
        CallPolicy::default(),
        Prompts::embedded(),
    ));
    let (engine, first_call) = first_call_engine(planner, stream, store).unwrap();
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
        "script model streaming a {STEPS}-step plan, {} characters every {} ms; {runs} runs each",
        STREAM.chunk_chars, STREAM.chunk_ms
    );
    for row in first_calls(&rt, runs, once).unwrap() {
        println!("{row}");
    }
}
