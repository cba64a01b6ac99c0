//! Seed 001's ten test ideas, each as a named test of the planning graph,
//! driven by scripted roles.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::{Harness, events_of, kinds, plan, started_steps, step};
use serde_json::json;
use stepwise_core::testing::ScriptedReviewer;
use stepwise_core::{
    Assessment, DiagnosticCode, EventKind, Evidence, Report, ReviewDecision, RunStatus, StepId,
    StepStatus, StopCondition,
};

#[tokio::test(start_paused = true)]
async fn happy_path_runs_every_step_and_ends_ok_with_a_report() {
    let h = Harness::new(vec![plan(vec![
        step("a", &[]),
        step("b", &["a"]),
        step("c", &["b"]),
    ])]);
    let state = h.run("Write a short brief on RAG for support").await;

    assert_eq!(state.status, RunStatus::Ok);
    let report = state.final_report.as_deref().unwrap();
    assert!(
        report.contains("result of a") && report.contains("result of c"),
        "{report}"
    );
    assert!(
        state
            .plan
            .steps
            .iter()
            .all(|s| s.status == StepStatus::Succeeded)
    );
    assert_eq!(state.step_results.len(), 3);
    assert!(state.knowledge_gaps.is_empty());
    assert_eq!(state.evidence.len(), 3, "each result is cited");
    let out = state.final_output();
    assert_eq!(out.status, RunStatus::Ok);
    assert_eq!(out.plan.len(), 3);
    assert_eq!(h.planner.0.calls(), 1);
}

#[tokio::test(start_paused = true)]
async fn an_invalid_plan_is_repaired_and_the_run_continues() {
    // The draft lacks a description and names a tool that does not exist.
    let broken = stepwise_core::DraftPlan(json!({"steps": [
        {"id": "a", "tool": "work", "args": {"step": "a"}, "acceptance_criteria": ["done"]},
        {"id": "b", "description": "b", "tool": "wrok", "args": {"step": "b"}, "depends_on": ["a"], "acceptance_criteria": ["done"]}
    ]}));
    let h = Harness::new(vec![broken]).repairs(vec![plan(vec![step("a", &[]), step("b", &["a"])])]);
    let state = h.run("Repair me").await;

    assert_eq!(state.status, RunStatus::Ok);
    assert_eq!(h.repairer.0.calls(), 1);
    let invalid = events_of(&state, "plan_invalid");
    let EventKind::PlanInvalid { diagnostics } = &invalid[0].kind else {
        unreachable!()
    };
    let codes: Vec<_> = diagnostics.iter().map(|d| d.code).collect();
    assert_eq!(
        codes,
        [DiagnosticCode::MissingField, DiagnosticCode::UnknownTool]
    );
    assert_eq!(
        kinds(&state)[..7],
        [
            "run_started",
            "input_prepared",
            "strategy_chosen",
            "plan_created",
            "plan_invalid",
            "plan_repaired",
            "plan_validated"
        ]
    );
    assert_eq!(state.plan.version, 1);
}

#[tokio::test(start_paused = true)]
async fn a_cycle_that_repairs_cannot_fix_ends_in_needs_review() {
    let cyclic = plan(vec![
        step("a", &["c"]),
        step("b", &["a"]),
        step("c", &["b"]),
    ]);
    let h = Harness::new(vec![cyclic.clone()]).repairs(vec![cyclic.clone(), cyclic]);
    let state = h.run("Loop forever").await;

    assert_eq!(state.status, RunStatus::NeedsReview);
    assert_eq!(
        h.repairer.0.calls(),
        2,
        "max_repairs (2) attempts, then stop"
    );
    assert!(
        state.step_results.is_empty() && started_steps(&state).is_empty(),
        "nothing ran"
    );
    assert!(
        state
            .plan_errors
            .iter()
            .any(|d| d.code == DiagnosticCode::DependencyCycle
                && d.message.contains("a → c → b → a")),
        "{:?}",
        state.plan_errors
    );
    let stop = events_of(&state, "stop_condition_met");
    assert!(matches!(
        stop[0].kind,
        EventKind::StopConditionMet {
            condition: StopCondition::MaxRepairs,
            ..
        }
    ));
}

#[tokio::test(start_paused = true)]
async fn an_unknown_tool_that_repairs_cannot_fix_ends_in_needs_review() {
    let mut bad = step("a", &[]);
    bad.tool = "web_search".into();
    let h = Harness::new(vec![plan(vec![bad.clone()])])
        .repairs(vec![plan(vec![bad.clone()]), plan(vec![bad])]);
    let state = h.run("Search the web").await;

    assert_eq!(state.status, RunStatus::NeedsReview);
    assert!(
        state
            .plan_errors
            .iter()
            .all(|d| d.code == DiagnosticCode::UnknownTool)
    );
    assert!(
        state
            .blocked_reason
            .as_deref()
            .unwrap()
            .contains("max_repairs"),
        "{:?}",
        state.blocked_reason
    );
    assert_eq!(h.work.calls.lock().unwrap().len(), 0);
}

#[tokio::test(start_paused = true)]
async fn steps_run_only_after_their_dependencies_succeeded() {
    // d depends on b and c, which depend on a; e is independent.
    let h = Harness::new(vec![plan(vec![
        step("d", &["b", "c"]),
        step("b", &["a"]),
        step("c", &["a"]),
        step("a", &[]),
        step("e", &[]),
    ])]);
    let state = h.run("Respect the order").await;

    assert_eq!(state.status, RunStatus::Ok);
    let calls = h.work.calls.lock().unwrap().clone();
    let span = |id: &str| {
        calls
            .iter()
            .find(|(s, ..)| s == id)
            .map(|(_, a, b)| (*a, *b))
            .unwrap()
    };
    for (later, earlier) in [("b", "a"), ("c", "a"), ("d", "b"), ("d", "c")] {
        assert!(
            span(later).0 >= span(earlier).1,
            "{later} started before {earlier} finished"
        );
    }
    // In the log too: every step_started comes after its dependencies' step_succeeded.
    common::assert_dependency_order(&state);
}

#[tokio::test(start_paused = true)]
async fn a_recoverable_gap_replans_and_keeps_completed_results() {
    let h = Harness::new(vec![plan(vec![
        step("a", &[]),
        step("b", &["a"]),
        step("c", &["b"]),
    ])])
    .assessments(vec![
        Assessment::ok("a fine"),
        Assessment::gap("b found no sources on pricing"),
    ])
    .replans(vec![plan(vec![step("b2", &["a"]), step("c2", &["b2"])])]);
    let state = h.run("Find pricing").await;

    assert_eq!(state.status, RunStatus::Ok);
    assert_eq!(state.replan_count, 1);
    assert_eq!(
        h.work.calls_of("a"),
        1,
        "a succeeded before the replan and is not re-run"
    );
    assert_eq!(h.work.calls_of("b"), 1);
    assert_eq!(h.work.calls_of("c"), 0, "c was superseded");
    let status = |id: &str| state.plan.step(&StepId::new(id)).unwrap().status;
    assert_eq!(status("a"), StepStatus::Succeeded);
    assert_eq!(status("b"), StepStatus::Succeeded);
    assert_eq!(status("c"), StepStatus::Skipped);
    assert_eq!(status("b2"), StepStatus::Succeeded);
    assert_eq!(status("c2"), StepStatus::Succeeded);
    assert!(
        state.step_results.contains_key(&StepId::new("a")),
        "a's result survives the replan"
    );
    assert_eq!(state.plan.version, 2);
    assert_eq!(
        state.knowledge_gaps,
        ["b found no sources on pricing"],
        "the gap stays on record"
    );
}

#[tokio::test(start_paused = true)]
async fn replan_count_bounds_the_loop() {
    // Every result is judged a gap; the replanner would go on forever.
    let endless: Vec<_> = (0..10)
        .map(|i| plan(vec![step(&format!("r{i}"), &[])]))
        .collect();
    let h = Harness::new(vec![plan(vec![step("a", &[])])])
        .assessments(
            (0..20)
                .map(|i| Assessment::gap(format!("gap {i}")))
                .collect(),
        )
        .replans(endless)
        .config(|c| c.max_replans = 2);
    let state = h.run("Never satisfied").await;

    assert_eq!(state.status, RunStatus::NeedsReview);
    assert_eq!(state.replan_count, 2);
    assert_eq!(h.replanner.0.calls(), 2);
    let stop = events_of(&state, "stop_condition_met");
    assert!(matches!(
        stop[0].kind,
        EventKind::StopConditionMet {
            condition: StopCondition::MaxReplans,
            ..
        }
    ));
}

#[tokio::test(start_paused = true)]
async fn max_steps_bounds_the_loop() {
    // Each replan adds one more step; max_steps = 3 stops the run after three steps ran.
    let endless: Vec<_> = (0..10)
        .map(|i| plan(vec![step(&format!("r{i}"), &[])]))
        .collect();
    let h = Harness::new(vec![plan(vec![step("a", &[])])])
        .assessments(
            (0..20)
                .map(|i| Assessment::gap(format!("gap {i}")))
                .collect(),
        )
        .replans(endless)
        .config(|c| {
            c.max_replans = 100;
            c.max_steps = 3;
        });
    let state = h.run("Never satisfied").await;

    assert_eq!(state.status, RunStatus::NeedsReview);
    assert_eq!(started_steps(&state).len(), 3);
    let stop = events_of(&state, "stop_condition_met");
    assert!(matches!(
        stop[0].kind,
        EventKind::StopConditionMet {
            condition: StopCondition::MaxSteps,
            ..
        }
    ));
}

#[tokio::test(start_paused = true)]
async fn every_decision_is_recorded_in_the_execution_history() {
    let h = Harness::new(vec![plan(vec![step("a", &[]), step("b", &["a"])])])
        .assessments(vec![Assessment::ok("a fine"), Assessment::gap("b is thin")])
        .replans(vec![plan(vec![step("b2", &["a"])])]);
    let state = h.run("Record everything").await;

    assert_eq!(
        kinds(&state),
        [
            "run_started",
            "input_prepared",
            "strategy_chosen",
            "plan_created",
            "plan_validated",
            "plan_approved",
            "step_started",
            "step_succeeded",
            "assessed",
            "step_started",
            "step_succeeded",
            "assessed",
            "replanned",
            "plan_validated",
            "plan_approved",
            "step_started",
            "step_succeeded",
            "assessed",
            "synthesized",
        ]
    );
    let seqs: Vec<u64> = state.execution_history.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=19).collect::<Vec<_>>());
}

#[tokio::test(start_paused = true)]
async fn synthesis_never_fills_a_knowledge_gap() {
    // b fails; the assessor records a gap and judges the evidence enough.
    // The synthesizer then cites b anyway and claims the gap is covered.
    let h = Harness::new(vec![plan(vec![step("a", &[]), step("b", &[])])])
        .assessments(vec![
            Assessment::ok("a fine"),
            Assessment {
                acceptance_met: false,
                verdict: stepwise_core::Verdict::Synthesize,
                reason: "enough without b".into(),
                new_gaps: vec!["no data on b".into()],
                resolved_gaps: vec![],
                observations: vec![],
            },
        ])
        .reports(vec![Report {
            text: "# Brief\n\nA says result of a. B proves everything.".into(),
            evidence: vec![
                Evidence {
                    source_id: "a".into(),
                    step: StepId::new("a"),
                    quote: "result of a".into(),
                },
                Evidence {
                    source_id: "b".into(),
                    step: StepId::new("b"),
                    quote: "B proves everything".into(),
                },
                Evidence {
                    source_id: "a".into(),
                    step: StepId::new("a"),
                    quote: "an invented quote".into(),
                },
            ],
            gaps: Vec::new(),
        }]);
    h.work.script("b", vec![common::Behaviour::Persistent]);
    let state = h.run("Do not guess").await;

    assert_eq!(state.status, RunStatus::Ok);
    assert_eq!(state.knowledge_gaps, ["no data on b"]);
    let report = state.final_report.as_deref().unwrap();
    assert!(
        report.contains("## Unresolved gaps") && report.contains("- no data on b"),
        "{report}"
    );
    assert_eq!(
        state.evidence.len(),
        1,
        "only the real quote from a succeeded step is kept"
    );
    assert_eq!(state.evidence[0].step.as_str(), "a");
    let EventKind::Synthesized {
        rejected_evidence, ..
    } = &events_of(&state, "synthesized")[0].kind
    else {
        unreachable!()
    };
    assert_eq!(rejected_evidence.len(), 2);
}

#[tokio::test(start_paused = true)]
async fn a_rejected_plan_ends_in_needs_review_without_running_anything() {
    let h =
        Harness::new(vec![plan(vec![step("a", &[])])]).reviewer(Arc::new(ScriptedReviewer::new([
            ReviewDecision::Rejected {
                reason: "too risky".into(),
            },
        ])));
    let state = h.run("Please review").await;

    assert_eq!(state.status, RunStatus::NeedsReview);
    assert!(!state.approved_plan);
    assert!(
        state
            .blocked_reason
            .as_deref()
            .unwrap()
            .contains("too risky")
    );
    assert!(started_steps(&state).is_empty());
    assert_eq!(kinds(&state).last(), Some(&"needs_review"));
}

#[tokio::test(start_paused = true)]
async fn empty_input_fails_before_the_planner_is_called() {
    for input in ["", "   \n\t", "?!"] {
        let h = Harness::new(vec![plan(vec![step("a", &[])])]);
        let state = h.run(input).await;
        assert_eq!(state.status, RunStatus::Failed, "{input:?}");
        assert_eq!(
            h.planner.0.calls(),
            0,
            "the planner must not be called for {input:?}"
        );
        assert_eq!(kinds(&state), ["run_started", "input_rejected"]);
    }
}
