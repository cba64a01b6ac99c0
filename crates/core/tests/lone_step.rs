//! A step started alone is first polled in the run's own task: a tool that
//! answers at once costs no task, and one that waits moves into a task of
//! its own and finishes there. Steps started together each get a task.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::{Arc, Mutex};

use serde_json::json;
use stepwise_core::testing::{
    FnTool, ScriptedAssessor, ScriptedPlanner, ScriptedRepairer, ScriptedReplanner,
    ScriptedSynthesizer, draft,
};
use stepwise_core::{Constraints, Engine, RunConfig, RunStatus, Step, ToolRegistry};
use tokio::task::Id;

/// Where each call ran: (step, task before its first wait, task after it).
type Seen = Arc<Mutex<Vec<(String, Option<Id>, Option<Id>)>>>;

fn step(id: &str, tool: &str, deps: &[&str]) -> Step {
    Step::new(id, format!("do {id}"), tool)
        .after(deps.iter().copied())
        .accept(format!("{id} produced a result"))
}

/// `now` answers at once; `later` waits once (`yield_now`) first.
fn engine_for(plan: Vec<Step>, seen: &Seen) -> Engine {
    let roles = stepwise_core::Roles::new(
        Arc::new(ScriptedPlanner::new([draft(plan)])),
        Arc::new(ScriptedRepairer::new([])),
        Arc::new(ScriptedAssessor::new([])),
        Arc::new(ScriptedReplanner::new([])),
        Arc::new(ScriptedSynthesizer::summarising()),
    );
    let mut tools = ToolRegistry::new();
    let s = Arc::clone(seen);
    tools.register_dyn(Arc::new(FnTool::with_context("now", move |ctx, _| {
        s.lock()
            .unwrap()
            .push((ctx.step.to_string(), tokio::task::try_id(), None));
        Box::pin(async move { Ok(json!("done")) })
    })));
    let s = Arc::clone(seen);
    tools.register_dyn(Arc::new(FnTool::with_context("later", move |ctx, _| {
        let s = Arc::clone(&s);
        Box::pin(async move {
            let before = tokio::task::try_id();
            tokio::task::yield_now().await;
            let after = tokio::task::try_id();
            s.lock()
                .unwrap()
                .push((ctx.step.to_string(), before, after));
            Ok(json!("done"))
        })
    })));
    let config = RunConfig {
        concurrency: 8,
        ..RunConfig::default()
    };
    Engine::new(roles, tools, config).unwrap()
}

/// Runs `plan` in a task of its own; returns that task's id and the calls.
async fn run(plan: Vec<Step>) -> (Id, Vec<(String, Option<Id>, Option<Id>)>) {
    let seen: Seen = Arc::default();
    let engine = engine_for(plan, &seen);
    let (run_task, status) = tokio::spawn(async move {
        let state = engine
            .run("lone steps", Constraints::default())
            .await
            .unwrap();
        (tokio::task::id(), state.status)
    })
    .await
    .unwrap();
    assert_eq!(status, RunStatus::Ok);
    let calls = seen.lock().unwrap().clone();
    (run_task, calls)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lone_step_that_answers_at_once_runs_in_the_runs_own_task() {
    let (run_task, calls) = run(vec![step("a", "now", &[]), step("b", "now", &["a"])]).await;
    assert_eq!(calls.len(), 2);
    for (step, task, _) in &calls {
        assert_eq!(*task, Some(run_task), "{step} ran in a task of its own");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lone_step_that_waits_moves_into_a_task_and_finishes_there() {
    let (run_task, calls) = run(vec![step("a", "later", &[]), step("b", "now", &["a"])]).await;
    let (_, before, after) = calls.iter().find(|(s, _, _)| s == "a").unwrap();
    assert_eq!(*before, Some(run_task), "first polled in the run's task");
    assert!(
        after.is_some() && *after != Some(run_task),
        "then in its own: {after:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steps_started_together_each_get_a_task() {
    let (run_task, calls) = run(vec![
        step("a", "now", &[]),
        step("b", "now", &[]),
        step("join", "now", &["a", "b"]),
    ])
    .await;
    for (step, task, _) in &calls {
        match step.as_str() {
            "join" => assert_eq!(*task, Some(run_task), "join starts alone"),
            _ => assert!(
                task.is_some() && *task != Some(run_task),
                "{step}: {task:?}"
            ),
        }
    }
}
