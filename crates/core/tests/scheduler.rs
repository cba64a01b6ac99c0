//! The scheduler: eager parallel dispatch, dependency blocking, retries,
//! preconditions, timeouts and argument references — on tokio's paused clock,
//! so durations are exact and nothing sleeps for real.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::{Behaviour, Harness, events_of, plan, started_steps, step};
use serde_json::json;
use stepwise_core::{
    EventKind, FailureClass, FailureKind, Precondition, RunStatus, StepId, StepStatus,
};
use tokio::time::Instant;

fn latency(h: &Harness, id: &str, ms: u64) {
    h.work.script(
        id,
        vec![Behaviour::Ok(json!(format!("result of {id}")), ms)],
    );
}

#[tokio::test(start_paused = true)]
async fn a_diamond_takes_exactly_its_critical_path() {
    // a(100) -> b(200), c(300) -> d(100): critical path a, c, d = 500 ms.
    let h = Harness::new(vec![plan(vec![
        step("a", &[]),
        step("b", &["a"]),
        step("c", &["a"]),
        step("d", &["b", "c"]),
    ])]);
    for (id, ms) in [("a", 100), ("b", 200), ("c", 300), ("d", 100)] {
        latency(&h, id, ms);
    }
    let start = Instant::now();
    let state = h.run("Diamond").await;
    assert_eq!(state.status, RunStatus::Ok);
    assert_eq!(start.elapsed(), Duration::from_millis(500));

    let calls = h.work.calls.lock().unwrap().clone();
    let span = |id: &str| {
        calls
            .iter()
            .find(|(s, ..)| s == id)
            .map(|(_, a, b)| (*a - start, *b - start))
            .unwrap()
    };
    assert_eq!(span("b").0, span("c").0, "b and c start together");
    assert_eq!(span("b").0, Duration::from_millis(100));
    assert_eq!(
        span("d").0,
        Duration::from_millis(400),
        "d starts the moment its last dependency ends"
    );
}

#[tokio::test(start_paused = true)]
async fn independent_steps_overlap_up_to_the_concurrency_bound() {
    let steps = (0..6).map(|i| step(&format!("s{i}"), &[])).collect();
    let h = Harness::new(vec![plan(steps)]).config(|c| c.concurrency = 2);
    for i in 0..6 {
        latency(&h, &format!("s{i}"), 100);
    }
    let start = Instant::now();
    let state = h.run("Fan out").await;
    assert_eq!(state.status, RunStatus::Ok);
    assert_eq!(h.work.max_concurrency(), 2);
    assert_eq!(
        start.elapsed(),
        Duration::from_millis(300),
        "6 steps, 2 at a time, 100 ms each"
    );
}

#[tokio::test(start_paused = true)]
async fn eager_dispatch_starts_a_dependant_before_slow_siblings_finish() {
    // a(50) -> b(50); c(500) is independent. b must not wait for c.
    let h = Harness::new(vec![plan(vec![
        step("a", &[]),
        step("b", &["a"]),
        step("c", &[]),
    ])]);
    latency(&h, "a", 50);
    latency(&h, "b", 50);
    latency(&h, "c", 500);
    let start = Instant::now();
    h.run("Eager").await;
    let calls = h.work.calls.lock().unwrap().clone();
    let b = calls.iter().find(|(s, ..)| s == "b").unwrap();
    assert_eq!(b.1 - start, Duration::from_millis(50));
    assert_eq!(start.elapsed(), Duration::from_millis(500));
}

#[tokio::test(start_paused = true)]
async fn a_failed_dependency_blocks_its_dependants() {
    let h = Harness::new(vec![plan(vec![
        step("a", &[]),
        step("b", &["a"]),
        step("c", &["b"]),
    ])])
    .config(|c| c.max_replans = 0);
    h.work.script("a", vec![Behaviour::Persistent]);
    let state = h.run("Blocked").await;

    assert_eq!(state.status, RunStatus::NeedsReview);
    assert_eq!(started_steps(&state), ["a"]);
    let status = |id: &str| state.plan.step(&StepId::new(id)).unwrap().status;
    assert_eq!(status("a"), StepStatus::Terminated);
    assert_eq!(status("b"), StepStatus::Pending);
    assert_eq!(status("c"), StepStatus::Pending);
    common::assert_dependency_order(&state);
}

#[tokio::test(start_paused = true)]
async fn transient_failures_are_retried_with_backoff_until_success() {
    let h = Harness::new(vec![plan(vec![step("a", &[])])]).config(|c| {
        c.retry.max_attempts = 3;
        c.retry.jitter = 0.0;
        c.retry.initial_delay_ms = 100;
    });
    h.work.script(
        "a",
        vec![
            Behaviour::Transient(None),
            Behaviour::Transient(None),
            Behaviour::Ok(json!("ok"), 0),
        ],
    );
    let start = Instant::now();
    let state = h.run("Flaky").await;

    assert_eq!(state.status, RunStatus::Ok);
    assert_eq!(h.work.calls_of("a"), 3);
    assert_eq!(state.step_results[&StepId::new("a")].attempts, 3);
    let delays: Vec<u64> = events_of(&state, "step_retrying")
        .iter()
        .map(|e| match e.kind {
            EventKind::StepRetrying { delay_ms, .. } => delay_ms,
            _ => unreachable!(),
        })
        .collect();
    assert_eq!(delays, [100, 200], "exponential backoff");
    assert_eq!(start.elapsed(), Duration::from_millis(300));
}

#[tokio::test(start_paused = true)]
async fn retry_after_is_honoured() {
    let h = Harness::new(vec![plan(vec![step("a", &[])])]).config(|c| {
        c.retry.jitter = 0.0;
        c.retry.initial_delay_ms = 100;
    });
    h.work.script(
        "a",
        vec![
            Behaviour::Transient(Some(2_000)),
            Behaviour::Ok(json!("ok"), 0),
        ],
    );
    let start = Instant::now();
    let state = h.run("Rate limited").await;
    assert_eq!(state.status, RunStatus::Ok);
    assert_eq!(start.elapsed(), Duration::from_millis(2_000));
}

#[tokio::test(start_paused = true)]
async fn transient_failures_stop_at_the_attempt_bound() {
    let h = Harness::new(vec![plan(vec![step("a", &[])])]).config(|c| {
        c.retry.max_attempts = 3;
        c.max_replans = 0;
    });
    h.work.script("a", vec![Behaviour::Transient(None)]);
    let state = h.run("Always down").await;

    assert_eq!(h.work.calls_of("a"), 3);
    assert_eq!(state.plan.steps[0].status, StepStatus::Terminated);
    assert_eq!(state.status, RunStatus::NeedsReview);
    assert_eq!(events_of(&state, "step_retrying").len(), 2);
}

#[tokio::test(start_paused = true)]
async fn persistent_failures_are_never_retried_and_go_to_assessment() {
    let h =
        Harness::new(vec![plan(vec![step("a", &[])])]).replans(vec![plan(vec![step("a2", &[])])]);
    h.work.script("a", vec![Behaviour::Persistent]);
    let state = h.run("Not found").await;

    assert_eq!(h.work.calls_of("a"), 1, "no blind retry");
    assert!(events_of(&state, "step_retrying").is_empty());
    let failed = events_of(&state, "step_failed");
    assert!(
        matches!(&failed[0].kind, EventKind::StepFailed { failure, .. } if failure.class == FailureClass::Persistent)
    );
    assert_eq!(state.replan_count, 1, "the assessor sent it to replan");
    assert_eq!(state.status, RunStatus::Ok);
    assert_eq!(h.work.calls_of("a2"), 1);
}

#[tokio::test(start_paused = true)]
async fn a_tool_that_panics_fails_its_step_and_the_run_goes_on() {
    // a panics; b runs beside it and succeeds; the run ends with a status,
    // not an engine error.
    let h = Harness::new(vec![plan(vec![step("a", &[]), step("b", &[])])])
        .config(|c| c.max_replans = 0);
    h.work.script("a", vec![Behaviour::Panic]);
    let state = h.run("Panics").await;

    assert_eq!(h.work.calls_of("a"), 1, "a panic is not retried");
    let failed = events_of(&state, "step_failed");
    let [failed] = failed.as_slice() else {
        panic!("one step_failed, got {failed:?}");
    };
    let EventKind::StepFailed { step, failure, .. } = &failed.kind else {
        unreachable!()
    };
    assert_eq!(step.as_str(), "a");
    assert_eq!(failure.class, FailureClass::Persistent);
    assert_eq!(failure.kind, FailureKind::Executor);
    assert!(
        failure.message.contains("panicked") && failure.message.contains("the tool broke on a"),
        "{}",
        failure.message
    );
    let status = |id: &str| state.plan.step(&StepId::new(id)).unwrap().status;
    assert_eq!(status("a"), StepStatus::Terminated);
    assert_eq!(status("b"), StepStatus::Succeeded);
    assert!(state.status.has_ended() || state.status == RunStatus::NeedsReview);
}

/// An executor that panics while it sets the call up, before any future.
struct Broken;

impl stepwise_core::roles::StepExecutor for Broken {
    fn execute<'life0, 'async_trait>(
        &'life0 self,
        _context: stepwise_core::roles::StepContext,
        _tool: std::sync::Arc<dyn stepwise_core::DynTool>,
    ) -> std::pin::Pin<
        Box<
            dyn std::future::Future<
                    Output = Result<
                        stepwise_core::roles::Reply<serde_json::Value>,
                        stepwise_core::StepFailure,
                    >,
                > + Send
                + 'async_trait,
        >,
    >
    where
        'life0: 'async_trait,
        Self: 'async_trait,
    {
        #[allow(clippy::panic)] // the point: a broken executor
        {
            panic!("the executor broke while setting up")
        }
    }
}

#[tokio::test(start_paused = true)]
async fn an_executor_that_panics_before_its_call_fails_the_step_not_the_run() {
    let h = Harness::new(vec![plan(vec![step("a", &[])])])
        .config(|c| c.max_replans = 0)
        .roles(|r| r.with_executor(std::sync::Arc::new(Broken)));
    let state = h.run("Broken executor").await;

    let failed = events_of(&state, "step_failed");
    let [failed] = failed.as_slice() else {
        panic!("one step_failed, got {failed:?}");
    };
    let EventKind::StepFailed { failure, .. } = &failed.kind else {
        unreachable!()
    };
    assert!(
        failure
            .message
            .contains("the executor broke while setting up"),
        "{}",
        failure.message
    );
    assert_eq!(
        state.plan.step(&StepId::new("a")).unwrap().status,
        StepStatus::Terminated
    );
}

#[tokio::test(start_paused = true)]
async fn a_failed_precondition_is_a_typed_outcome_and_the_tool_is_not_called() {
    let check = step("b", &["a"]).require(Precondition::NonEmpty {
        reference: "${a.output.items}".into(),
    });
    let h = Harness::new(vec![plan(vec![step("a", &[]), check])]).config(|c| c.max_replans = 0);
    h.work
        .script("a", vec![Behaviour::Ok(json!({"items": []}), 0)]);
    let state = h.run("Preconditions").await;

    assert_eq!(h.work.calls_of("b"), 0);
    let failed = events_of(&state, "step_failed");
    let EventKind::StepFailed { failure, .. } = &failed[0].kind else {
        unreachable!()
    };
    assert_eq!(failure.kind, FailureKind::PreconditionFailed);
    assert_eq!(failure.class, FailureClass::Persistent);
    assert!(
        failure
            .message
            .contains("${a.output.items} must be non-empty"),
        "{}",
        failure.message
    );
    assert_eq!(state.status, RunStatus::NeedsReview);
}

#[tokio::test(start_paused = true)]
async fn a_tool_that_hangs_times_out_as_a_transient_failure() {
    let mut h = Harness::new(vec![plan(vec![step("a", &[])])]).config(|c| c.retry.max_attempts = 2);
    h.timeout_ms = Some(1_000);
    h.work.script(
        "a",
        vec![Behaviour::Hang(60_000), Behaviour::Ok(json!("fast"), 10)],
    );
    let state = h.run("Slow tool").await;

    assert_eq!(state.status, RunStatus::Ok);
    let failed = events_of(&state, "step_failed");
    assert!(
        matches!(&failed[0].kind, EventKind::StepFailed { failure, .. }
        if failure.kind == FailureKind::Timeout && failure.class == FailureClass::Transient)
    );
    assert_eq!(state.step_results[&StepId::new("a")].output, json!("fast"));
}

#[tokio::test(start_paused = true)]
async fn references_resolve_to_earlier_results_at_dispatch() {
    let b = stepwise_core::Step::new("b", "use a", "work")
        .with_args(json!({"step": "b", "input": {"first": "${a.output.items[0]}", "all": "$a", "text": "n=${a.output.n}"}}))
        .after(["a"])
        .accept("used a");
    let h = Harness::new(vec![plan(vec![step("a", &[]), b])]);
    h.work.script(
        "a",
        vec![Behaviour::Ok(json!({"items": ["x", "y"], "n": 2}), 0)],
    );
    let state = h.run("References").await;
    assert_eq!(state.status, RunStatus::Ok);
    let args = h.work.args.lock().unwrap().clone();
    assert_eq!(
        args[1],
        json!({"step": "b", "input": {"first": "x", "all": {"items": ["x", "y"], "n": 2}, "text": "n=2"}})
    );
}

#[tokio::test(start_paused = true)]
async fn a_dangling_path_fails_the_step_at_dispatch_not_the_process() {
    let b = stepwise_core::Step::new("b", "use a", "work")
        .with_args(json!({"step": "b", "input": "${a.output.missing.deep}"}))
        .after(["a"])
        .accept("used a");
    let h = Harness::new(vec![plan(vec![step("a", &[]), b])]).config(|c| c.max_replans = 0);
    let state = h.run("Dangling").await;
    let failed = events_of(&state, "step_failed");
    let EventKind::StepFailed { failure, .. } = &failed[0].kind else {
        unreachable!()
    };
    assert_eq!(failure.kind, FailureKind::ArgResolution);
    assert_eq!(h.work.calls_of("b"), 0);
    assert_eq!(state.status, RunStatus::NeedsReview);
}

#[tokio::test(start_paused = true)]
async fn malformed_planner_output_goes_to_repair_not_to_a_crash() {
    let h = Harness::new(vec![stepwise_core::DraftPlan(json!(
        "Sure! Here is your plan: 1. search 2. write"
    ))])
    .repairs(vec![plan(vec![step("a", &[])])]);
    let state = h.run("Malformed").await;
    assert_eq!(state.status, RunStatus::Ok);
    let invalid = events_of(&state, "plan_invalid");
    assert!(
        matches!(&invalid[0].kind, EventKind::PlanInvalid { diagnostics }
        if diagnostics[0].code == stepwise_core::DiagnosticCode::InvalidPlan)
    );
}

#[tokio::test(start_paused = true)]
async fn a_planner_error_fails_the_run_with_an_event() {
    let h = Harness::new(vec![]); // the script is empty: the planner errors
    let state = h.run("No planner").await;
    assert_eq!(state.status, RunStatus::Failed);
    assert_eq!(common::kinds(&state).last(), Some(&"run_failed"));
    assert!(
        state
            .blocked_reason
            .as_deref()
            .unwrap()
            .contains("planner failed")
    );
}
