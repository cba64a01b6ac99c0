//! A planner that streams its draft at a fixed rate, for tests and the
//! streaming bench: like a model writing one step every `interval`.

use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;
use tokio::time::Instant;

use crate::plan::DraftPlan;
use crate::roles::{PlanRequest, Planner, Reply, RoleError, StepSender};

/// Writes step `i` of its draft `i × interval` after it is asked (from 1),
/// handing each over at once when streaming; asked whole, it answers after
/// the same time, with everything. Remembers when it wrote each step.
#[derive(Debug)]
pub struct StreamingPlanner {
    steps: Vec<Value>,
    interval: Duration,
    streams: bool,
    written: Mutex<Vec<Instant>>,
}

impl StreamingPlanner {
    /// Streams `steps` (raw plan JSON), one every `interval`.
    pub fn new(steps: Vec<Value>, interval: Duration) -> Self {
        Self {
            steps,
            interval,
            streams: true,
            written: Mutex::new(Vec::new()),
        }
    }

    /// The same planner, answering only whole (`streams()` is false).
    #[must_use]
    pub fn whole(mut self) -> Self {
        self.streams = false;
        self
    }

    /// When each step was written, in order (the last call's).
    pub fn written(&self) -> Vec<Instant> {
        self.written.lock().map(|w| w.clone()).unwrap_or_default()
    }

    async fn write(&self, steps: Option<&StepSender>) -> Reply<DraftPlan> {
        let mut written = Vec::with_capacity(self.steps.len());
        for step in &self.steps {
            tokio::time::sleep(self.interval).await;
            written.push(Instant::now());
            if let Some(sender) = steps {
                sender.send(step.clone());
            }
        }
        if let Ok(mut w) = self.written.lock() {
            *w = written;
        }
        let mut draft = serde_json::Map::new();
        draft.insert("steps".to_owned(), Value::Array(self.steps.clone()));
        Reply::free(DraftPlan(Value::Object(draft)))
    }
}

#[async_trait]
impl Planner for StreamingPlanner {
    async fn plan(&self, _request: PlanRequest<'_>) -> Result<Reply<DraftPlan>, RoleError> {
        Ok(self.write(None).await)
    }

    fn streams(&self) -> bool {
        self.streams
    }

    async fn plan_streaming(
        &self,
        _request: PlanRequest<'_>,
        steps: StepSender,
    ) -> Result<Reply<DraftPlan>, RoleError> {
        Ok(self.write(Some(&steps)).await)
    }
}

/// When a tool was first called, if it was.
pub type FirstCall = std::sync::Arc<Mutex<Option<Instant>>>;

/// An engine for the streaming benches: `planner`, scripted instant roles,
/// a read-only `look` tool that answers at once and notes its first call,
/// `stream_plans` as asked, and every event appended to a memory store
/// first if `store`.
pub fn first_call_engine(
    planner: std::sync::Arc<dyn Planner>,
    stream: bool,
    store: bool,
) -> Result<(crate::Engine, FirstCall), crate::tool::CatalogError> {
    use std::sync::Arc;

    let roles = crate::Roles::new(
        planner,
        Arc::new(super::ScriptedRepairer::new([])),
        Arc::new(super::ScriptedAssessor::new([])),
        Arc::new(super::ScriptedReplanner::new([])),
        Arc::new(super::ScriptedSynthesizer::summarising()),
    );
    let first: FirstCall = Arc::default();
    let seen = Arc::clone(&first);
    let mut tools = crate::ToolRegistry::new();
    tools.register_dyn(Arc::new(super::FnTool::new("look", move |args: Value| {
        if let Ok(mut first) = seen.lock() {
            first.get_or_insert_with(Instant::now);
        }
        Box::pin(async move { Ok(serde_json::json!({ "found": args })) })
    })));
    let config = crate::RunConfig {
        stream_plans: stream,
        ..crate::RunConfig::default()
    };
    let mut engine = crate::Engine::new(roles, tools, config)?;
    if store {
        let store = Arc::new(crate::MemoryStore::new());
        engine = engine.with_sink(Arc::new(crate::StoreSink::new(store, None)));
    }
    Ok((engine, first))
}

/// One mode's figures: when the first step was written (median, from the
/// run's start) and how long after it the first tool call came.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FirstCallRow {
    /// Streamed, or planned whole.
    pub stream: bool,
    /// Events appended to a memory store first.
    pub store: bool,
    /// Median instant the first step was written, in ms.
    pub written_ms: f64,
    /// Median delay of the first tool call after it, in ms.
    pub median_ms: f64,
    /// Its 95th percentile, in ms.
    pub p95_ms: f64,
}

impl std::fmt::Display for FirstCallRow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "  {:<8} {:<13} first step written at {:6.2} ms; first tool call {:8.3} ms after it (median), {:8.3} ms (p95)",
            if self.stream { "streamed" } else { "whole" },
            if self.store {
                "memory store"
            } else {
                "no store"
            },
            self.written_ms,
            self.median_ms,
            self.p95_ms,
        )
    }
}

/// Runs `once(stream, store)` `runs` times on `rt`'s workers for each of
/// the four modes. `once` returns, from the run's start, when the first
/// step was written and when the first tool was called.
pub fn first_calls<F, Fut>(
    rt: &tokio::runtime::Runtime,
    runs: usize,
    once: F,
) -> Result<Vec<FirstCallRow>, tokio::task::JoinError>
where
    F: Fn(bool, bool) -> Fut,
    Fut: Future<Output = (Duration, Duration)> + Send + 'static,
{
    let percentile = |v: &mut Vec<f64>, p: f64| {
        v.sort_by(f64::total_cmp);
        v.get(((v.len().max(1) - 1) as f64 * p).round() as usize)
            .copied()
            .unwrap_or(f64::NAN)
    };
    let mut rows = Vec::new();
    for (stream, store) in [(true, false), (true, true), (false, false), (false, true)] {
        let mut firsts = Vec::with_capacity(runs);
        let mut gaps = Vec::with_capacity(runs);
        for _ in 0..runs {
            let run = once(stream, store);
            let (written, called) = rt.block_on(async { tokio::spawn(run).await })?;
            firsts.push(written.as_secs_f64() * 1e3);
            gaps.push((called.as_secs_f64() - written.as_secs_f64()) * 1e3);
        }
        rows.push(FirstCallRow {
            stream,
            store,
            written_ms: percentile(&mut firsts, 0.5),
            median_ms: percentile(&mut gaps, 0.5),
            p95_ms: percentile(&mut gaps, 0.95),
        });
    }
    Ok(rows)
}
