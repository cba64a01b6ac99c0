//! Shared by the engine benches: instant scripted roles (so only the engine
//! is measured), tools with a fixed latency, and the plan shapes of the
//! benchmark issue.
#![allow(
    dead_code,
    unreachable_pub,
    missing_debug_implementations,
    clippy::unwrap_used,
    clippy::expect_used
)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use futures::future::BoxFuture;
use serde_json::{Value, json};
use stepwise_core::roles::{PlanRequest, Planner, Reply, RoleError, Synthesizer};
use stepwise_core::testing::{ScriptedAssessor, ScriptedRepairer, ScriptedReplanner};
use stepwise_core::{
    DraftPlan, DynTool, Engine, Evidence, Report, Roles, RunConfig, RunState, RunStatus, Step,
    ToolContext, ToolError, ToolRegistry, ToolSpec,
};

/// A planner that answers every run with the same draft. Copies made
/// beforehand with [`prepare`](Self::prepare) are handed out first, so a
/// timed run does not pay for copying the draft (a role's work, not the
/// engine's); once they are used up, each answer is a fresh copy.
pub struct FixedPlanner {
    draft: DraftPlan,
    prepared: Mutex<Vec<DraftPlan>>,
}

impl FixedPlanner {
    pub fn new(draft: DraftPlan) -> Self {
        Self {
            draft,
            prepared: Mutex::new(Vec::new()),
        }
    }

    /// Makes `n` copies of the draft ready for the next `n` answers.
    pub fn prepare(&self, n: u64) {
        let mut prepared = self.prepared.lock().unwrap();
        prepared.clear();
        prepared.extend((0..n).map(|_| self.draft.clone()));
    }
}

#[async_trait]
impl Planner for FixedPlanner {
    async fn plan(&self, _request: PlanRequest<'_>) -> Result<Reply<DraftPlan>, RoleError> {
        let prepared = self.prepared.lock().unwrap().pop();
        Ok(Reply::free(prepared.unwrap_or_else(|| self.draft.clone())))
    }
}

/// A synthesizer that answers at once with a report citing the first
/// succeeded step's output ([`LatencyTool::OUTPUT`]): a report that cites
/// nothing ends the run `needs_review`, and the benches measure runs that
/// end `ok`.
pub struct InstantSynthesizer;

#[async_trait]
impl Synthesizer for InstantSynthesizer {
    async fn synthesize(&self, state: &RunState) -> Result<Reply<Report>, RoleError> {
        let evidence = state
            .step_results
            .keys()
            .next()
            .map(|step| Evidence {
                source_id: step.as_str().to_owned(),
                step: step.clone(),
                quote: LatencyTool::OUTPUT.to_owned(),
            })
            .into_iter()
            .collect();
        Ok(Reply::free(Report {
            text: "done".to_owned(),
            evidence,
            gaps: Vec::new(),
        }))
    }
}

/// A tool that returns [`Self::OUTPUT`] after a fixed latency (none: at once, without
/// touching the timer). Unlike the testing `FnTool` it keeps no call log, so
/// it adds nothing to a run's memory.
pub struct LatencyTool {
    spec: ToolSpec,
    latency: Option<Duration>,
}

impl LatencyTool {
    /// What every call returns: text the synthesizer can quote.
    pub const OUTPUT: &'static str = "done";

    pub fn new(name: &str, latency: Option<Duration>) -> Self {
        Self {
            spec: ToolSpec {
                name: name.to_owned(),
                description: format!("returns {:?} after {latency:?}", Self::OUTPUT),
                args_schema: json!({"type": "object"}),
                side_effect: false,
                idempotent: true,
                timeout_ms: None,
                destructive: false,
                output_schema: None,
            },
            latency,
        }
    }
}

impl DynTool for LatencyTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call_json(
        &self,
        _ctx: ToolContext,
        _args: Value,
    ) -> BoxFuture<'_, Result<Value, ToolError>> {
        let latency = self.latency;
        Box::pin(async move {
            if let Some(latency) = latency {
                tokio::time::sleep(latency).await;
            }
            Ok(Value::String(Self::OUTPUT.to_owned()))
        })
    }
}

fn step(id: String) -> Step {
    Step::new(id, "bench step", "work").accept("done")
}

/// `s0 -> s1 -> ... -> s{n-1}`.
pub fn sequential(n: usize) -> Vec<Step> {
    (0..n)
        .map(|i| {
            let s = step(format!("s{i}"));
            if i == 0 {
                s
            } else {
                s.after([format!("s{}", i - 1)])
            }
        })
        .collect()
}

/// `k` independent steps, then one instant `join` step (tool `noop`)
/// depending on all of them.
pub fn fan_out(k: usize) -> Vec<Step> {
    let mut steps: Vec<Step> = (0..k).map(|i| step(format!("f{i}"))).collect();
    let mut join = step("join".to_owned()).after((0..k).map(|i| format!("f{i}")));
    join.tool = "noop".to_owned();
    steps.push(join);
    steps
}

/// `layers` layers of `width` steps; every step depends on every step of the
/// layer before.
pub fn layered(layers: usize, width: usize) -> Vec<Step> {
    let mut steps = Vec::new();
    for l in 0..layers {
        for w in 0..width {
            let s = step(format!("l{l}_{w}"));
            steps.push(if l == 0 {
                s
            } else {
                s.after((0..width).map(|p| format!("l{}_{p}", l - 1)))
            });
        }
    }
    steps
}

/// The draft a model would write for these steps: the fields the plan
/// format requires, `depends_on` where there are dependencies, nothing the
/// runtime manages (`status`, `attempts`) and no empty defaults.
pub fn draft_of(steps: &[Step]) -> DraftPlan {
    let steps: Vec<Value> = steps
        .iter()
        .map(|s| {
            let mut step = json!({
                "id": s.id,
                "description": s.description,
                "tool": s.tool,
                "acceptance_criteria": s.acceptance_criteria,
            });
            if !s.depends_on.is_empty() {
                step["depends_on"] = json!(s.depends_on);
            }
            step
        })
        .collect();
    DraftPlan(json!({ "steps": steps }))
}

/// An engine that runs `plan` for every goal with a `work` tool of this
/// latency and an instant `noop` tool, `concurrency` steps in flight at
/// most, keeping each run's history in memory or not.
pub fn engine(
    plan: Vec<Step>,
    latency: Option<Duration>,
    concurrency: usize,
    keep_history: bool,
) -> Engine {
    engine_with(plan, latency, concurrency, keep_history).0
}

/// [`engine`] keeping the history, and its planner.
pub fn engine_and_planner(
    plan: Vec<Step>,
    latency: Option<Duration>,
    concurrency: usize,
) -> (Engine, Arc<FixedPlanner>) {
    engine_with(plan, latency, concurrency, true)
}

fn engine_with(
    plan: Vec<Step>,
    latency: Option<Duration>,
    concurrency: usize,
    keep_history: bool,
) -> (Engine, Arc<FixedPlanner>) {
    let config = RunConfig {
        max_steps: plan.len(),
        concurrency,
        keep_history,
        ..RunConfig::default()
    };
    let planner = Arc::new(FixedPlanner::new(draft_of(&plan)));
    let roles = Roles::new(
        Arc::clone(&planner) as Arc<dyn Planner>,
        Arc::new(ScriptedRepairer::new([])),
        Arc::new(ScriptedAssessor::new([])),
        Arc::new(ScriptedReplanner::new([])),
        Arc::new(InstantSynthesizer),
    );
    let mut tools = ToolRegistry::new();
    tools.register_dyn(Arc::new(LatencyTool::new("work", latency)));
    tools.register_dyn(Arc::new(LatencyTool::new("noop", None)));
    let engine = Engine::new(roles, tools, config).expect("the bench tool's schema compiles");
    (engine, planner)
}

/// Panics unless the run finished with every one of its `n` steps done.
pub fn check(state: &RunState, n: usize) {
    assert_eq!(state.status, RunStatus::Ok, "{:?}", state.blocked_reason);
    assert_eq!(state.step_results.len(), n);
}

/// A multi-threaded runtime with one worker per core, as `#[tokio::main]` builds.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
}
