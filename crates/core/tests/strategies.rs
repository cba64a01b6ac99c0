//! The strategies on one skeleton: plan-solve never replans, verified stops
//! on each of its five conditions, the ReAct loop ends at its cap,
//! react-isolated shows summaries only, the router's decision is recorded,
//! and a token budget ends a run gracefully.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use async_trait::async_trait;
use common::{Behaviour, Harness, events_of, kinds, plan, step};
use serde_json::{Value, json};
use stepwise_core::decision::{Completeness, Driver, Route, Routing, Verification};
use stepwise_core::roles::Action;
use stepwise_core::roles::{Reply, StepContext, StepExecutor, ToolCallExecutor};
use stepwise_core::strategy::Fixed;
use stepwise_core::strategy::react::MAX_SUMMARY_CHARS;
use stepwise_core::testing::{PrefixSummarizer, ScriptedActor, ScriptedRouter, ScriptedVerifier};
use stepwise_core::{
    Assessment, Constraints, DynTool, EventKind, Evidence, Report, RunStatus, StepFailure,
    StepStatus, StopCondition, Usage,
};

fn verdict(completeness: f64, confidence: f64) -> Verification {
    Verification {
        status: if completeness >= 1.0 {
            Completeness::Complete
        } else {
            Completeness::Partial
        },
        completeness,
        confidence,
        missing: vec![format!("still missing at {completeness}")],
        contradictions: Vec::new(),
        weak_steps: Vec::new(),
    }
}

fn call(step: &str) -> Action {
    Action::Call {
        thought: format!("look up {step}"),
        tool: "work".to_owned(),
        args: json!({ "step": step }).as_object().cloned().unwrap(),
    }
}

/// An answer citing step `citing`, whose `work` call was for step `of`.
fn answer_from(citing: &str, of: &str) -> Action {
    Action::Answer {
        report: Report {
            text: format!("The answer is in {citing} [{citing}]."),
            evidence: vec![Evidence {
                source_id: citing.to_owned(),
                step: citing.into(),
                quote: format!("result of {of}"),
            }],
            gaps: Vec::new(),
        },
        gaps: vec!["nothing on the second part".to_owned()],
    }
}

fn answer(citing: &str) -> Action {
    answer_from(citing, "a")
}

#[tokio::test(start_paused = true)]
async fn plan_solve_never_replans_and_names_what_a_failure_skipped() {
    let h = Harness::new(vec![plan(vec![
        step("a", &[]),
        step("b", &["a"]),
        step("c", &[]),
    ])])
    .strategy("plan-solve");
    h.work.script("a", vec![Behaviour::Persistent]);
    let state = h.run("Plan once and go").await;

    assert_eq!(state.status, RunStatus::Ok, "{:?}", state.blocked_reason);
    assert!(events_of(&state, "replanned").is_empty());
    assert_eq!(h.replanner.0.calls(), 0);
    assert_eq!(
        state.plan.step(&"b".into()).unwrap().status,
        StepStatus::Skipped
    );
    assert_eq!(
        state.plan.step(&"c".into()).unwrap().status,
        StepStatus::Succeeded
    );
    assert!(
        state
            .knowledge_gaps
            .iter()
            .any(|g| g.contains("b depends on a")),
        "{:?}",
        state.knowledge_gaps
    );
    assert!(state.final_report.unwrap().contains("b depends on a"));
    assert_eq!(state.strategy, "plan-solve");
}

#[tokio::test(start_paused = true)]
async fn plan_execute_replans_where_plan_solve_skips() {
    let h = Harness::new(vec![plan(vec![step("a", &[]), step("b", &["a"])])])
        .replans(vec![plan(vec![step("a2", &[]), step("b2", &["a2"])])]);
    h.work.script("a", vec![Behaviour::Persistent]);
    let state = h.run("Plan and adapt").await;
    assert_eq!(state.status, RunStatus::Ok);
    assert_eq!(events_of(&state, "replanned").len(), 1);
}

/// A verified run over a two-step plan whose replans add one step each.
fn verified(verdicts: Vec<Verification>) -> (Harness, Arc<ScriptedVerifier>) {
    let verifier = Arc::new(ScriptedVerifier::new(verdicts));
    let h = verified_with(verifier.clone());
    (h, verifier)
}

fn verified_with(verifier: Arc<ScriptedVerifier>) -> Harness {
    Harness::new(vec![plan(vec![step("a", &[]), step("b", &[])])])
        .replans(vec![
            plan(vec![step("r1", &[])]),
            plan(vec![step("r2", &[])]),
            plan(vec![step("r3", &[])]),
        ])
        .strategy("verified")
        .roles(move |roles| roles.with_verifier(verifier.clone()))
}

fn stop_of(state: &stepwise_core::RunState) -> Vec<StopCondition> {
    events_of(state, "stop_condition_met")
        .iter()
        .map(|e| match &e.kind {
            EventKind::StopConditionMet { condition, .. } => *condition,
            _ => unreachable!(),
        })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn verified_stops_at_the_completeness_threshold() {
    let (h, verifier) = verified(vec![verdict(0.9, 0.2)]);
    let state = h.run("Verify me").await;
    assert_eq!(state.status, RunStatus::Ok);
    assert_eq!(stop_of(&state), [StopCondition::CompletenessThreshold]);
    assert_eq!(
        state.final_output().stop_condition,
        Some(StopCondition::CompletenessThreshold)
    );
    assert_eq!(verifier.0.calls(), 1);
    assert_eq!(h.replanner.0.calls(), 0);
    assert_eq!(
        kinds(&state)[..3],
        ["run_started", "input_prepared", "strategy_chosen"]
    );
    let out = state.final_output();
    assert_eq!(out.verification.unwrap().completeness, 0.9);
    // The verdict's missing elements are named in the report.
    assert!(state.final_report.unwrap().contains("still missing at 0.9"));
}

#[tokio::test(start_paused = true)]
async fn verified_stops_at_the_confidence_threshold() {
    let (h, _) = verified(vec![verdict(0.3, 0.9), verdict(0.6, 0.8)]);
    let state = h.run("Verify me").await;
    assert_eq!(stop_of(&state), [StopCondition::ConfidenceThreshold]);
    assert_eq!(state.verification_history.len(), 2);
    assert_eq!(events_of(&state, "replanned").len(), 1);
    // The replan kept the first iteration's results.
    assert!(state.step_results.contains_key(&"a".into()));
    assert!(state.step_results.contains_key(&"r1".into()));
    assert_eq!(h.work.calls_of("a"), 1, "good results are kept, not re-run");
}

#[tokio::test(start_paused = true)]
async fn verified_stops_on_diminishing_returns() {
    let (h, _) = verified(vec![verdict(0.3, 0.1), verdict(0.32, 0.1)]);
    let state = h.run("Verify me").await;
    assert_eq!(stop_of(&state), [StopCondition::DiminishingReturns]);
    let EventKind::Replanned { reason, .. } = &events_of(&state, "replanned")[0].kind else {
        unreachable!()
    };
    assert!(reason.contains("still missing at 0.3"), "{reason}");
}

#[tokio::test(start_paused = true)]
async fn verified_stops_at_max_iterations() {
    let (h, verifier) = verified(vec![
        verdict(0.1, 0.1),
        verdict(0.3, 0.1),
        verdict(0.5, 0.1),
    ]);
    let state = h.run("Verify me").await;
    assert_eq!(stop_of(&state), [StopCondition::MaxIterations]);
    assert_eq!(verifier.0.calls(), 3);
    assert_eq!(events_of(&state, "verified").len(), 3);
    assert_eq!(state.status, RunStatus::Ok);
}

#[tokio::test(start_paused = true)]
async fn verified_stops_when_the_token_budget_is_spent() {
    let verifier = Arc::new(
        ScriptedVerifier::new(vec![verdict(0.1, 0.1), verdict(0.3, 0.1)])
            .costing(Usage::llm_call(400, 200)),
    );
    let h = verified_with(verifier.clone());
    let constraints = Constraints {
        token_budget: Some(500),
        ..Constraints::default()
    };
    let state = h.run_with("Verify me on a budget", constraints).await;
    assert_eq!(stop_of(&state), [StopCondition::TokenBudget]);
    assert_eq!(
        verifier.0.calls(),
        1,
        "no model call after the budget is spent"
    );
    assert_eq!(state.status, RunStatus::Ok);
    assert!(state.final_report.is_some());
}

/// An executor that charges tokens for every step, like an LLM executor.
struct Costly;

#[async_trait]
impl StepExecutor for Costly {
    async fn execute(
        &self,
        context: StepContext,
        tool: Arc<dyn DynTool>,
    ) -> Result<Reply<Value>, StepFailure> {
        let mut reply = ToolCallExecutor.execute(context, tool).await?;
        reply.usage = Usage::llm_call(300, 100);
        Ok(reply)
    }
}

#[tokio::test(start_paused = true)]
async fn a_token_budget_stops_plan_execute_gracefully_naming_what_did_not_run() {
    let h = Harness::new(vec![plan(vec![
        step("a", &[]),
        step("b", &["a"]),
        step("c", &["b"]),
        step("d", &["c"]),
    ])])
    .roles(|roles| roles.with_executor(Arc::new(Costly)));
    let constraints = Constraints {
        token_budget: Some(700),
        ..Constraints::default()
    };
    let state = h.run_with("Spend carefully", constraints).await;
    assert_eq!(state.status, RunStatus::Ok);
    assert_eq!(stop_of(&state), [StopCondition::TokenBudget]);
    assert_eq!(
        state.step_results.len(),
        2,
        "a and b ran (800 tokens), then it stopped"
    );
    assert_eq!(
        state.plan.step(&"c".into()).unwrap().status,
        StepStatus::Pending
    );
    let report = state.final_report.unwrap();
    assert!(
        report.contains("Not run (the token budget was spent): c"),
        "{report}"
    );
    assert!(
        report.contains("Not run (the token budget was spent): d"),
        "{report}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_token_budget_waits_for_steps_in_flight() {
    // a and b run in parallel; a's cost spends the budget while b is running.
    let h = Harness::new(vec![plan(vec![
        step("a", &[]),
        step("b", &[]),
        step("c", &["a", "b"]),
    ])])
    .roles(|roles| roles.with_executor(Arc::new(Costly)));
    h.work
        .script("b", vec![Behaviour::Ok(json!("result of b"), 500)]);
    let constraints = Constraints {
        token_budget: Some(300),
        ..Constraints::default()
    };
    let state = h.run_with("Spend carefully", constraints).await;
    assert_eq!(state.status, RunStatus::Ok);
    assert!(
        state.step_results.contains_key(&"b".into()),
        "b finished, not cut off"
    );
    assert_eq!(
        state.plan.step(&"c".into()).unwrap().status,
        StepStatus::Pending
    );
}

fn react(isolated: bool, cap: usize, actor: Arc<ScriptedActor>) -> Harness {
    let strategy = Arc::new(Fixed::new(
        if isolated { "react-isolated" } else { "react" },
        "test",
        Driver::React {
            isolated,
            max_tool_calls: cap,
            escalate: false,
        },
    ));
    Harness::new(vec![])
        .with_strategy(strategy)
        .roles(move |roles| {
            roles
                .with_actor(actor.clone())
                .with_summarizer(Arc::new(PrefixSummarizer { chars: 40 }))
        })
}

#[tokio::test(start_paused = true)]
async fn react_calls_tools_one_at_a_time_then_answers() {
    let actor = Arc::new(ScriptedActor::new(vec![
        call("a"),
        call("b"),
        answer("call-1"),
    ]));
    let h = react(false, 8, actor.clone());
    let state = h.run("Look it up").await;
    assert_eq!(state.status, RunStatus::Ok, "{:?}", state.blocked_reason);
    assert_eq!(events_of(&state, "step_added").len(), 2);
    assert!(events_of(&state, "plan_created").is_empty());
    assert_eq!(h.planner.0.calls(), 0);
    assert_eq!(
        state.evidence.len(),
        1,
        "the cited quote is in call-1's result"
    );
    assert!(
        state
            .knowledge_gaps
            .contains(&"nothing on the second part".to_owned())
    );
    // Each call saw the raw results of the calls before it.
    let seen = actor.histories();
    assert_eq!(seen.iter().map(Vec::len).collect::<Vec<_>>(), [0, 1, 2]);
    assert_eq!(seen[2][0].observation, "\"result of a\"");
}

#[tokio::test(start_paused = true)]
async fn react_ends_gracefully_at_its_tool_call_cap() {
    let actor = Arc::new(
        ScriptedActor::new((0..10).map(|i| call(&format!("s{i}")))).costing(Usage::llm_call(10, 5)),
    );
    let h = react(false, 3, actor.clone());
    let state = h.run("Keep calling").await;
    assert_eq!(state.status, RunStatus::Ok);
    assert_eq!(stop_of(&state), [StopCondition::ToolCallCap]);
    assert_eq!(
        actor.actions.calls(),
        4,
        "three calls, then asked to answer"
    );
    // The refused fourth call is paid for too.
    assert_eq!(state.usage.llm_calls, 4);
    assert_eq!(state.usage.input_tokens, 40);
    assert_eq!(state.step_results.len(), 3);
    let report = state.final_report.unwrap();
    assert!(report.contains("tool-call cap (3)"), "{report}");
}

#[tokio::test(start_paused = true)]
async fn a_failed_call_is_an_observation_not_the_end() {
    let actor = Arc::new(ScriptedActor::new(vec![
        Action::Call {
            thought: "try a tool that does not exist".into(),
            tool: "nope".into(),
            args: Default::default(),
        },
        call("a"),
        answer("call-2"),
    ]));
    let h = react(false, 8, actor.clone());
    let state = h.run("Recover").await;
    assert_eq!(state.status, RunStatus::Ok);
    let seen = actor.histories();
    assert!(
        seen[1][0].observation.contains("no tool named"),
        "{:?}",
        seen[1][0]
    );
}

#[tokio::test(start_paused = true)]
async fn react_isolated_shows_summaries_so_prompts_stay_bounded() {
    let big = "x".repeat(5_000);
    let steps = 6;
    let mut actions: Vec<Action> = (0..steps).map(|i| call(&format!("s{i}"))).collect();
    // The answer quotes what call-1 really returned (a report citing nothing is never ok).
    actions.push(Action::Answer {
        report: Report {
            text: "Mostly x. [call-1]".into(),
            evidence: vec![Evidence {
                source_id: "call-1".into(),
                step: "call-1".into(),
                quote: "x".repeat(20),
            }],
            gaps: Vec::new(),
        },
        gaps: Vec::new(),
    });
    let run = |isolated: bool| {
        let actor = Arc::new(ScriptedActor::new(actions.clone()));
        let h = react(isolated, 10, actor.clone());
        for i in 0..steps {
            h.work
                .script(&format!("s{i}"), vec![Behaviour::Ok(json!(big.clone()), 1)]);
        }
        (h, actor)
    };
    let (h, actor) = run(true);
    let state = h.run("Read big results").await;
    assert_eq!(state.status, RunStatus::Ok);
    assert_eq!(events_of(&state, "step_summarized").len(), steps);
    let seen = actor.histories();
    let size = |turns: &Vec<stepwise_core::roles::Turn>| {
        turns.iter().map(|t| t.observation.len()).sum::<usize>()
    };
    for turns in &seen {
        for t in turns {
            assert!(
                t.observation.len() <= MAX_SUMMARY_CHARS * 4,
                "{}",
                t.observation.len()
            );
            assert!(t.observation.starts_with("summary: "));
        }
    }
    let isolated_last = size(seen.last().unwrap());

    let (h, actor) = run(false);
    let state = h.run("Read big results").await;
    assert_eq!(state.status, RunStatus::Ok);
    let raw_last = size(actor.histories().last().unwrap());
    assert!(raw_last >= steps * 5_000, "{raw_last}");
    assert!(
        isolated_last * 20 < raw_last,
        "{isolated_last} vs {raw_last}"
    );
}

fn routing(up_front: bool, three: bool, repeated: bool) -> Routing {
    Routing {
        steps_known_up_front: up_front,
        three_or_more_steps: three,
        same_tool_repeated: repeated,
        reason: "because the test says so".into(),
    }
}

#[tokio::test(start_paused = true)]
async fn each_branch_of_the_routers_tree_is_recorded_with_its_answers() {
    // Seed 000 §11: [1] no → react; [2] no → react; [3] yes → batched, no → sequential.
    let branches = [
        (routing(false, true, true), Route::React),
        (routing(true, false, true), Route::React),
        (routing(true, true, true), Route::PlanExecuteBatched),
        (routing(true, true, false), Route::PlanExecuteSequential),
    ];
    for (answers, expected) in branches {
        let router = Arc::new(ScriptedRouter::new(vec![answers.clone()]));
        let actor = Arc::new(ScriptedActor::new(vec![call("a"), answer("call-1")]));
        let h = Harness::new(vec![plan(vec![step("a", &[])])])
            .strategy("router")
            .roles(move |roles| roles.with_router(router.clone()).with_actor(actor.clone()));
        let state = h.run("Route me").await;
        assert_eq!(state.status, RunStatus::Ok);
        let chosen = events_of(&state, "strategy_chosen");
        let EventKind::StrategyChosen {
            strategy,
            driver,
            reason,
            routing,
            ..
        } = &chosen[0].kind
        else {
            unreachable!()
        };
        assert_eq!(strategy, "router");
        let routing = routing.as_ref().expect("the router's answers are recorded");
        assert_eq!(routing.answers, answers);
        assert_eq!(routing.route, expected, "{answers:?}");
        assert!(reason.contains("because the test says so"), "{reason}");
        assert!(reason.contains(expected.as_str()), "{reason}");
        match expected {
            Route::React => assert!(
                matches!(driver, Driver::React { escalate: true, .. }),
                "{driver:?}"
            ),
            Route::PlanExecuteBatched => assert_eq!(*driver, Driver::PLAN_EXECUTE),
            Route::PlanExecuteSequential => assert!(
                matches!(
                    driver,
                    Driver::Graph {
                        sequential: true,
                        replanning: true,
                        ..
                    }
                ),
                "{driver:?}"
            ),
        }
        assert_eq!(
            events_of(&state, "plan_created").len(),
            usize::from(expected != Route::React)
        );
    }
}

#[tokio::test(start_paused = true)]
async fn batched_dispatches_independent_steps_in_one_wave_sequential_one_at_a_time() {
    let run = |repeated: bool| async move {
        let router = Arc::new(ScriptedRouter::new(vec![routing(true, true, repeated)]));
        let h = Harness::new(vec![plan(vec![
            step("a", &[]),
            step("b", &[]),
            step("c", &[]),
        ])])
        .strategy("router")
        .config(|c| c.concurrency = 4)
        .roles(move |roles| roles.with_router(router.clone()));
        let state = h.run("Three of the same").await;
        assert_eq!(state.status, RunStatus::Ok, "{:?}", state.blocked_reason);
        let order: Vec<&str> = state
            .execution_history
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::StepStarted { .. } => Some("started"),
                EventKind::StepSucceeded { .. } => Some("succeeded"),
                _ => None,
            })
            .collect();
        (h.work.max_concurrency(), order)
    };
    let (batched, order) = run(true).await;
    assert_eq!(batched, 3, "batched: every independent step in one wave");
    assert_eq!(&order[..3], ["started"; 3], "{order:?}");
    let (sequential, order) = run(false).await;
    assert_eq!(sequential, 1, "sequential: one step at a time");
    assert_eq!(
        order,
        [
            "started",
            "succeeded",
            "started",
            "succeeded",
            "started",
            "succeeded"
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn at_the_cap_the_routers_react_escalates_to_plan_execute_and_keeps_its_calls() {
    let strategy = stepwise_core::testing::capped_router(2);
    let router = Arc::new(ScriptedRouter::new(vec![routing(false, false, false)]));
    let actor = Arc::new(ScriptedActor::new(vec![call("a"), call("b"), call("c")]));
    let h = Harness::new(vec![plan(vec![step("x", &[]), step("y", &["x"])])])
        .with_strategy(strategy.clone())
        .roles(move |roles| roles.with_router(router.clone()).with_actor(actor.clone()));
    let state = h.run("Explore until done").await;
    assert_eq!(
        state.status,
        RunStatus::Ok,
        "{:?} {:?}",
        state.blocked_reason,
        events_of(&state, "plan_invalid")
    );
    let escalated = events_of(&state, "strategy_escalated");
    assert_eq!(escalated.len(), 1, "{:?}", kinds(&state));
    let EventKind::StrategyEscalated {
        from, to, reason, ..
    } = &escalated[0].kind
    else {
        unreachable!()
    };
    assert!(matches!(from, Driver::React { escalate: true, .. }));
    assert_eq!(*to, Driver::PLAN_EXECUTE);
    assert!(reason.contains("the cap is 2"), "{reason}");
    assert_eq!(state.driver, Some(Driver::PLAN_EXECUTE));
    // No stop at the cap: the plan ran after the two calls, which stay.
    assert!(events_of(&state, "stop_condition_met").is_empty());
    assert_eq!(h.work.started(), ["a", "b", "x", "y"]);
    let ids: Vec<&str> = state.plan.steps.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, ["call-1", "call-2", "x", "y"]);
    assert_eq!(state.step_results.len(), 4, "every step succeeded");

    // With a step bound at or below the cap, the router's react keeps half
    // the bound for the plan: it escalates after max_steps / 2 calls, and
    // the plan runs in the room left.
    let router = Arc::new(ScriptedRouter::new(vec![routing(false, false, false)]));
    let actor = Arc::new(ScriptedActor::new(vec![call("a"), call("b"), call("c")]));
    let h = Harness::new(vec![plan(vec![step("x", &[]), step("y", &["x"])])])
        .with_strategy(stepwise_core::testing::capped_router(8))
        .roles(move |roles| roles.with_router(router.clone()).with_actor(actor.clone()));
    let bounded = Constraints {
        max_steps: Some(4),
        ..Constraints::default()
    };
    let state = h.run_with("Explore until done", bounded).await;
    assert_eq!(state.status, RunStatus::Ok, "{:?}", state.blocked_reason);
    let escalated = events_of(&state, "strategy_escalated");
    assert_eq!(escalated.len(), 1, "{:?}", kinds(&state));
    assert_eq!(h.work.started(), ["a", "b", "x", "y"]);
    assert!(events_of(&state, "stop_condition_met").is_empty());

    // Plain react (no escalation) may use the whole bound.
    let actor = Arc::new(ScriptedActor::new(vec![call("a"), call("b"), call("c")]));
    let h = Harness::new(vec![])
        .strategy("react")
        .roles(move |roles| roles.with_actor(actor.clone()));
    let bounded = Constraints {
        max_steps: Some(2),
        ..Constraints::default()
    };
    let state = h.run_with("Explore until done", bounded).await;
    assert!(events_of(&state, "strategy_escalated").is_empty());
    assert_eq!(state.stop_condition, Some(StopCondition::ToolCallCap));
    assert_eq!(h.work.started(), ["a", "b"]);
}

#[tokio::test(start_paused = true)]
async fn a_strategy_without_its_role_fails_with_a_clear_message() {
    let h = Harness::new(vec![plan(vec![step("a", &[])])]).strategy("verified");
    let state = h.run("No verifier").await;
    assert_eq!(state.status, RunStatus::Failed);
    let failed = events_of(&state, "run_failed");
    let EventKind::RunFailed { error, .. } = &failed[0].kind else {
        unreachable!()
    };
    assert!(error.contains("needs a verifier role"), "{error}");
}

#[tokio::test(start_paused = true)]
async fn verified_replans_after_verifying_not_after_each_step() {
    // The assessor calls a result short; verified waits for its verifier.
    let (h, _) = verified(vec![verdict(0.9, 0.9)]);
    let h = h.assessments(vec![Assessment::gap("a found little")]);
    let state = h.run("Verify me").await;
    assert_eq!(state.status, RunStatus::Ok);
    assert!(events_of(&state, "replanned").is_empty());
    assert_eq!(events_of(&state, "verified").len(), 1);
}

/// Answers garbage first (after its repair round-trip, as an LLM role would
/// report it), then a proper answer.
struct GarbageOnce(std::sync::atomic::AtomicUsize);

#[async_trait]
impl stepwise_core::roles::Actor for GarbageOnce {
    async fn act(
        &self,
        _request: stepwise_core::roles::ActRequest<'_>,
    ) -> Result<Reply<Action>, stepwise_core::roles::RoleError> {
        if self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
            return Err(stepwise_core::roles::RoleError::Malformed {
                role: stepwise_core::roles::RoleName::Actor,
                message: "not valid twice: expected an action".into(),
                raw: Some("I think I'll look around".into()),
                exchanges: Vec::new(),
                usage: Usage::llm_call(50, 7),
            });
        }
        Ok(Reply::free(Action::Answer {
            report: Report {
                text: "nothing to look up".into(),
                evidence: Vec::new(),
                gaps: Vec::new(),
            },
            gaps: Vec::new(),
        }))
    }
}

#[tokio::test(start_paused = true)]
async fn an_unusable_action_stops_for_review_and_a_resume_asks_again_but_an_uncited_answer_is_not_ok()
 {
    let actor = Arc::new(GarbageOnce(0.into()));
    let strategy = Arc::new(Fixed::new(
        "react",
        "test",
        Driver::React {
            isolated: false,
            max_tool_calls: 4,
            escalate: false,
        },
    ));
    let h = Harness::new(vec![])
        .with_strategy(strategy)
        .roles(move |roles| roles.with_actor(actor.clone()));
    let state = h.run("Say something").await;
    assert_eq!(state.status, RunStatus::NeedsReview);
    let why = state.blocked_reason.clone().unwrap();
    assert!(
        why.contains("actor returned output that could not be used"),
        "{why}"
    );
    assert_eq!(
        state.usage.input_tokens, 50,
        "the unusable answer is paid for"
    );

    // Nothing else changed, but the stop was an unusable answer: a resume
    // asks the actor again.
    let resumed = h
        .engine()
        .resume(state, stepwise_core::engine::ResumeOptions::default())
        .await
        .unwrap();
    // Its answer cites nothing: kept as the partial brief, but never `ok`.
    assert_eq!(resumed.status, RunStatus::NeedsReview);
    let why = resumed.blocked_reason.clone().unwrap();
    assert!(why.starts_with("the report cites no evidence: "), "{why}");
    assert_eq!(resumed.final_report.as_deref(), Some("nothing to look up"));
    assert!(resumed.evidence.is_empty());
    common::assert_fold_matches(&resumed);

    // Resumed again with nothing changed, it stays as it is: nothing recorded.
    let err = h
        .engine()
        .resume(
            resumed.clone(),
            stepwise_core::engine::ResumeOptions::default(),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(err, stepwise_core::EngineError::Unchanged { .. }),
        "{err}"
    );
}

/// A ReAct engine with one side-effect tool, `send`, and an actor that sends
/// once and then answers.
fn sending_engine(
    approver: Option<Arc<dyn stepwise_core::engine::Approver>>,
    sent: Arc<std::sync::Mutex<Vec<Value>>>,
) -> stepwise_core::Engine {
    let actor = Arc::new(SendThenAnswer);
    let roles = stepwise_core::Roles::new(
        Arc::new(stepwise_core::testing::ScriptedPlanner::new([])),
        Arc::new(stepwise_core::testing::ScriptedRepairer::new([])),
        Arc::new(stepwise_core::testing::ScriptedAssessor::new([])),
        Arc::new(stepwise_core::testing::ScriptedReplanner::new([])),
        Arc::new(stepwise_core::testing::ScriptedSynthesizer::summarising()),
    )
    .with_actor(actor);
    let mut tools = stepwise_core::ToolRegistry::new();
    tools.register_dyn(Arc::new(
        stepwise_core::testing::FnTool::new("send", move |args: Value| {
            let sent = Arc::clone(&sent);
            Box::pin(async move {
                sent.lock().unwrap().push(args.clone());
                Ok(json!("sent"))
            })
        })
        .with_side_effect(),
    ));
    let engine = stepwise_core::Engine::new(roles, tools, Default::default())
        .unwrap()
        .with_strategy(
            stepwise_core::StrategyRegistry::builtin()
                .get("react")
                .unwrap(),
        );
    match approver {
        Some(a) => engine.with_approver(a),
        None => engine,
    }
}

struct SendThenAnswer;

#[async_trait]
impl stepwise_core::roles::Actor for SendThenAnswer {
    async fn act(
        &self,
        request: stepwise_core::roles::ActRequest<'_>,
    ) -> Result<Reply<Action>, stepwise_core::roles::RoleError> {
        if request.history.is_empty() {
            return Ok(Reply::free(Action::Call {
                thought: "tell the team".into(),
                tool: "send".into(),
                args: json!({"text": "hello"}).as_object().cloned().unwrap(),
            }));
        }
        // The answer cites the call's own result as the evidence it ran.
        let turn = &request.history[0];
        Ok(Reply::free(Action::Answer {
            report: Report {
                text: format!("sent: {}", turn.observation),
                evidence: vec![Evidence {
                    source_id: turn.step.to_string(),
                    step: turn.step.clone(),
                    quote: "sent".into(),
                }],
                gaps: Vec::new(),
            },
            gaps: Vec::new(),
        }))
    }
}

#[tokio::test(start_paused = true)]
async fn a_react_side_effect_waits_for_its_approval_then_runs_once() {
    let sent = Arc::new(std::sync::Mutex::new(Vec::new()));
    // No approver: the call waits for a person.
    let paused = sending_engine(None, Arc::clone(&sent))
        .run("Tell the team", Constraints::default())
        .await
        .unwrap();
    assert_eq!(paused.status, RunStatus::AwaitingApproval);
    assert!(
        sent.lock().unwrap().is_empty(),
        "nothing sent without approval"
    );
    assert_eq!(events_of(&paused, "approval_requested").len(), 1);

    // Resumed by an engine that approves: the same call runs, once.
    let done = sending_engine(
        Some(Arc::new(stepwise_core::engine::ApproveAll)),
        Arc::clone(&sent),
    )
    .resume(paused, stepwise_core::engine::ResumeOptions::default())
    .await
    .unwrap();
    assert_eq!(done.status, RunStatus::Ok, "{:?}", done.blocked_reason);
    assert_eq!(sent.lock().unwrap().len(), 1);
    assert_eq!(done.final_report.as_deref(), Some("sent: \"sent\""));
    common::assert_fold_matches(&done);
}

#[tokio::test(start_paused = true)]
async fn a_denied_react_side_effect_is_an_observation_not_a_call() {
    struct Deny;
    #[async_trait]
    impl stepwise_core::engine::Approver for Deny {
        async fn decide(
            &self,
            _request: stepwise_core::engine::ApprovalRequest<'_>,
        ) -> stepwise_core::engine::ApprovalDecision {
            stepwise_core::engine::ApprovalDecision::Deny {
                by: "lead".into(),
                reason: "not today".into(),
            }
        }
    }
    let sent = Arc::new(std::sync::Mutex::new(Vec::new()));
    let state = sending_engine(Some(Arc::new(Deny)), Arc::clone(&sent))
        .run("Tell the team", Constraints::default())
        .await
        .unwrap();
    // Nothing was sent, so the answer has nothing to cite: not `ok`, but
    // its text is kept and says why.
    assert_eq!(state.status, RunStatus::NeedsReview);
    assert!(sent.lock().unwrap().is_empty());
    let report = state.final_report.clone().unwrap();
    assert!(report.contains("no approval on record"), "{report}");
    assert_eq!(events_of(&state, "approval_denied").len(), 1);
}
