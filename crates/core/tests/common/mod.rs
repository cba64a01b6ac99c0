//! Shared test harness: scripted roles, a recording tool, event helpers.
#![allow(
    dead_code,
    unreachable_pub,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use stepwise_core::roles::Reviewer;
use stepwise_core::testing::{
    FnTool, ScriptedAssessor, ScriptedPlanner, ScriptedRepairer, ScriptedReplanner,
    ScriptedSynthesizer,
};
use stepwise_core::{
    Assessment, DraftPlan, Engine, Event, EventKind, Report, Roles, RunConfig, RunState, Step,
    ToolError, ToolRegistry,
};
use tokio::time::Instant;

/// What a scripted step does on a given attempt.
#[derive(Debug, Clone)]
pub enum Behaviour {
    /// Succeed with this output after this latency.
    Ok(Value, u64),
    /// Fail transiently (optionally with Retry-After).
    Transient(Option<u64>),
    /// Fail persistently.
    Persistent,
    /// Sleep this long (to trip a timeout), then succeed.
    Hang(u64),
    /// Panic, as a buggy tool would.
    Panic,
}

/// A tool `work` whose behaviour is scripted per step (by the `step` arg) and
/// per attempt, and which logs start and end times on tokio's clock.
#[derive(Clone, Default)]
pub struct Work {
    pub script: Arc<Mutex<HashMap<String, Vec<Behaviour>>>>,
    pub calls: Arc<Mutex<Vec<(String, Instant, Instant)>>>,
    pub running: Arc<Mutex<(usize, usize)>>,
    /// Arguments of every call, as the tool received them (references resolved).
    pub args: Arc<Mutex<Vec<Value>>>,
}

impl Work {
    pub fn new() -> Self {
        Self::default()
    }

    /// Scripts `step`'s attempts in order; the last one repeats.
    pub fn script(&self, step: &str, behaviours: Vec<Behaviour>) -> &Self {
        self.script
            .lock()
            .unwrap()
            .insert(step.to_owned(), behaviours);
        self
    }

    pub fn calls_of(&self, step: &str) -> usize {
        self.calls
            .lock()
            .unwrap()
            .iter()
            .filter(|(s, ..)| s == step)
            .count()
    }

    pub fn started(&self) -> Vec<String> {
        self.calls
            .lock()
            .unwrap()
            .iter()
            .map(|(s, ..)| s.clone())
            .collect()
    }

    pub fn max_concurrency(&self) -> usize {
        self.running.lock().unwrap().1
    }

    pub fn tool(&self) -> FnTool {
        let me = self.clone();
        FnTool::new("work", move |args: Value| {
            let me = me.clone();
            Box::pin(async move {
                let step = args
                    .get("step")
                    .and_then(Value::as_str)
                    .unwrap_or("?")
                    .to_owned();
                me.args.lock().unwrap().push(args.clone());
                let start = Instant::now();
                // Record the call as it starts, so a call cut short by a timeout still counts.
                let (attempt, index) = {
                    let mut calls = me.calls.lock().unwrap();
                    let attempt = calls.iter().filter(|(s, ..)| *s == step).count();
                    calls.push((step.clone(), start, start));
                    (attempt, calls.len() - 1)
                };
                let behaviour = {
                    let script = me.script.lock().unwrap();
                    script
                        .get(&step)
                        .and_then(|b| b.get(attempt).or(b.last()).cloned())
                        .unwrap_or(Behaviour::Ok(json!(format!("result of {step}")), 10))
                };
                {
                    let mut r = me.running.lock().unwrap();
                    r.0 += 1;
                    r.1 = r.1.max(r.0);
                }
                let out = match behaviour {
                    Behaviour::Ok(v, ms) => {
                        tokio::time::sleep(Duration::from_millis(ms)).await;
                        Ok(v)
                    }
                    Behaviour::Hang(ms) => {
                        tokio::time::sleep(Duration::from_millis(ms)).await;
                        Ok(json!("late"))
                    }
                    Behaviour::Transient(ra) => {
                        let e = ToolError::transient("503 service unavailable");
                        Err(match ra {
                            Some(ms) => e.retry_after_ms(ms),
                            None => e,
                        })
                    }
                    Behaviour::Persistent => Err(ToolError::persistent("404 not found")),
                    Behaviour::Panic => {
                        me.running.lock().unwrap().0 -= 1;
                        panic!("the tool broke on {step}");
                    }
                };
                me.running.lock().unwrap().0 -= 1;
                me.calls.lock().unwrap()[index].2 = Instant::now();
                out
            })
        })
        .with_schema(json!({
            "type": "object",
            "properties": {"step": {"type": "string"}, "input": {}},
            "required": ["step"],
            "additionalProperties": false
        }))
    }
}

/// A `work` step: args name the step so the tool knows which script to follow.
pub fn step(id: &str, deps: &[&str]) -> Step {
    Step::new(id, format!("do {id}"), "work")
        .with_args(json!({ "step": id }))
        .after(deps.iter().copied())
        .accept(format!("{id} produced a result"))
}

pub fn plan(steps: Vec<Step>) -> DraftPlan {
    DraftPlan::from_steps(steps)
}

/// Every scripted role, kept so tests can count calls.
pub struct Harness {
    pub planner: Arc<ScriptedPlanner>,
    pub repairer: Arc<ScriptedRepairer>,
    pub assessor: Arc<ScriptedAssessor>,
    pub replanner: Arc<ScriptedReplanner>,
    pub synthesizer: Arc<ScriptedSynthesizer>,
    pub reviewer: Option<Arc<dyn Reviewer>>,
    pub work: Work,
    pub timeout_ms: Option<u64>,
    pub config: RunConfig,
    /// Adds roles (verifier, actor, …) or replaces the executor.
    pub roles_hook: Option<Arc<dyn Fn(Roles) -> Roles + Send + Sync>>,
    pub strategy: Option<Arc<dyn stepwise_core::Strategy>>,
}

impl Harness {
    pub fn new(plans: Vec<DraftPlan>) -> Self {
        Self {
            planner: Arc::new(ScriptedPlanner::new(plans)),
            repairer: Arc::new(ScriptedRepairer::new([])),
            assessor: Arc::new(ScriptedAssessor::new([])),
            replanner: Arc::new(ScriptedReplanner::new([])),
            synthesizer: Arc::new(ScriptedSynthesizer::summarising()),
            reviewer: None,
            work: Work::new(),
            timeout_ms: None,
            config: RunConfig::default(),
            roles_hook: None,
            strategy: None,
        }
    }

    pub fn roles(mut self, hook: impl Fn(Roles) -> Roles + Send + Sync + 'static) -> Self {
        self.roles_hook = Some(Arc::new(hook));
        self
    }

    /// Runs with the builtin strategy of this name.
    pub fn strategy(self, name: &str) -> Self {
        let strategy = stepwise_core::StrategyRegistry::builtin()
            .get(name)
            .unwrap();
        self.with_strategy(strategy)
    }

    pub fn with_strategy(mut self, strategy: Arc<dyn stepwise_core::Strategy>) -> Self {
        self.strategy = Some(strategy);
        self
    }

    pub fn repairs(mut self, plans: Vec<DraftPlan>) -> Self {
        self.repairer = Arc::new(ScriptedRepairer::new(plans));
        self
    }

    pub fn replans(mut self, plans: Vec<DraftPlan>) -> Self {
        self.replanner = Arc::new(ScriptedReplanner::new(plans));
        self
    }

    pub fn assessments(mut self, answers: Vec<Assessment>) -> Self {
        self.assessor = Arc::new(ScriptedAssessor::new(answers));
        self
    }

    pub fn reports(mut self, reports: Vec<Report>) -> Self {
        self.synthesizer = Arc::new(ScriptedSynthesizer::new(reports));
        self
    }

    pub fn reviewer(mut self, reviewer: Arc<dyn Reviewer>) -> Self {
        self.reviewer = Some(reviewer);
        self
    }

    pub fn config(mut self, f: impl FnOnce(&mut RunConfig)) -> Self {
        f(&mut self.config);
        self
    }

    pub fn engine(&self) -> Engine {
        let mut roles = Roles::new(
            self.planner.clone(),
            self.repairer.clone(),
            self.assessor.clone(),
            self.replanner.clone(),
            self.synthesizer.clone(),
        );
        if let Some(r) = &self.reviewer {
            roles = roles.with_reviewer(r.clone());
        }
        if let Some(hook) = &self.roles_hook {
            roles = hook(roles);
        }
        let mut tools = ToolRegistry::new();
        let mut work = self.work.tool();
        if let Some(ms) = self.timeout_ms {
            work = work.with_timeout_ms(ms);
        }
        tools.register_dyn(Arc::new(work));
        let engine = Engine::new(roles, tools, self.config).unwrap();
        match &self.strategy {
            Some(s) => engine.with_strategy(s.clone()),
            None => engine,
        }
    }

    pub async fn run_with(&self, goal: &str, constraints: stepwise_core::Constraints) -> RunState {
        let state = self.engine().run(goal, constraints).await.unwrap();
        assert_fold_matches(&state);
        state
    }

    pub async fn run(&self, goal: &str) -> RunState {
        let state = self.engine().run(goal, Default::default()).await.unwrap();
        assert_fold_matches(&state);
        state
    }
}

/// Folding the log from scratch gives exactly the live state.
pub fn assert_fold_matches(state: &RunState) {
    let rebuilt = RunState::from_events(&state.execution_history).unwrap();
    assert_eq!(
        &rebuilt, state,
        "fold of the event log differs from the live state"
    );
}

pub fn kinds(state: &RunState) -> Vec<&'static str> {
    state
        .execution_history
        .iter()
        .map(|e| e.kind.name())
        .collect()
}

pub fn events_of<'a>(state: &'a RunState, name: &str) -> Vec<&'a Event> {
    state
        .execution_history
        .iter()
        .filter(|e| e.kind.name() == name)
        .collect()
}

pub fn started_steps(state: &RunState) -> Vec<String> {
    state
        .execution_history
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::StepStarted { step, .. } => Some(step.to_string()),
            _ => None,
        })
        .collect()
}

/// Replays the log and checks that every `step_started` finds the step's
/// dependencies succeeded and the step itself not yet succeeded.
pub fn assert_dependency_order(state: &RunState) {
    let mut replay = RunState::default();
    for event in &state.execution_history {
        if let EventKind::StepStarted { step, .. } = &event.kind {
            let s = replay.plan.step(step).unwrap();
            assert_ne!(
                s.status,
                stepwise_core::StepStatus::Succeeded,
                "{step} re-run after it succeeded"
            );
            for d in &s.depends_on {
                assert_eq!(
                    replay.plan.step(d).map(|d| d.status),
                    Some(stepwise_core::StepStatus::Succeeded),
                    "{step} started before its dependency {d} succeeded"
                );
            }
        }
        replay.apply(event).unwrap();
    }
}
