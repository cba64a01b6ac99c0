//! Typed acceptance criteria (seed 003: criteria are data the executor
//! checks): the engine judges a step whose criteria are all typed checks
//! without asking the assessor; a check that does not hold is a gap the run
//! replans for, closed when the replan's step meets it; free-text criteria still go to the assessor (`auto`), or are
//! named as not judged (`rules`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Behaviour, Harness, plan, step};
use serde_json::json;
use stepwise_core::plan::criteria::{Check, Criterion};
use stepwise_core::{AssessMode, EventKind, RunStatus, Step};

/// A `work` step whose only criterion is a typed check.
fn checked(id: &str, deps: &[&str], check: Check) -> Step {
    let mut s = step(id, deps);
    s.acceptance_criteria = vec![Criterion::Check(check)];
    s
}

fn has_results() -> Check {
    Check::MinResults {
        path: "results".into(),
        min: 1,
    }
}

#[tokio::test(start_paused = true)]
async fn typed_checks_are_judged_by_the_engine_without_the_assessor() {
    let h = Harness::new(vec![plan(vec![
        checked("a", &[], has_results()),
        checked("b", &["a"], has_results()),
    ])]);
    h.work
        .script(
            "a",
            vec![Behaviour::Ok(json!({"results": ["one", "two"]}), 10)],
        )
        .script("b", vec![Behaviour::Ok(json!({"results": ["three"]}), 10)]);
    let state = h.run("Find two things").await;
    assert_eq!(state.status, RunStatus::Ok, "{:?}", state.blocked_reason);
    assert_eq!(h.assessor.calls(), 0, "no assessor call for typed checks");
    let judged: Vec<(bool, String)> = state
        .execution_history
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Assessed {
                acceptance_met,
                reason,
                usage,
                ..
            } => {
                assert_eq!(usage.llm_calls, 0);
                Some((*acceptance_met, reason.clone()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(judged.len(), 2);
    assert!(
        judged
            .iter()
            .all(|(met, why)| *met && why.contains("checked by the engine")),
        "{judged:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_check_that_does_not_hold_is_a_gap_and_the_run_replans() {
    let h = Harness::new(vec![plan(vec![checked("a", &[], has_results())])])
        .replans(vec![plan(vec![checked("a2", &[], has_results())])]);
    h.work
        .script("a", vec![Behaviour::Ok(json!({"results": []}), 10)])
        .script("a2", vec![Behaviour::Ok(json!({"results": ["x"]}), 10)]);
    let state = h.run("Find something").await;
    assert_eq!(state.status, RunStatus::Ok);
    assert_eq!(h.assessor.calls(), 0);
    assert_eq!(state.replan_count, 1);
    // a's check named the gap; a2's same check held and closed it.
    let (named, resolved): (Vec<&String>, Vec<&String>) = state
        .execution_history
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Assessed {
                new_gaps,
                resolved_gaps,
                ..
            } => Some((new_gaps, resolved_gaps)),
            _ => None,
        })
        .fold((Vec::new(), Vec::new()), |(mut n, mut r), (new, res)| {
            n.extend(new);
            r.extend(res);
            (n, r)
        });
    assert_eq!(named.len(), 1, "{named:?}");
    assert!(named[0].starts_with("a: ") && named[0].contains("fewer than 1"));
    assert_eq!(resolved, named, "a2 resolves a's gap");
    assert!(
        state.knowledge_gaps.is_empty(),
        "{:?}",
        state.knowledge_gaps
    );
}

#[tokio::test(start_paused = true)]
async fn text_criteria_go_to_the_assessor_unless_the_run_assesses_by_rules() {
    // One typed step, one with text: auto asks the assessor about the text one only.
    let mixed = || plan(vec![checked("a", &[], has_results()), step("b", &["a"])]);
    let h = Harness::new(vec![mixed()]);
    h.work
        .script("a", vec![Behaviour::Ok(json!({"results": ["one"]}), 10)]);
    let state = h.run("Find and judge").await;
    assert_eq!(state.status, RunStatus::Ok);
    assert_eq!(h.assessor.calls(), 1, "only b needs judgement");

    // Model: the assessor judges every step, typed or not.
    let h = Harness::new(vec![mixed()]).config(|c| c.assess = AssessMode::Model);
    h.work
        .script("a", vec![Behaviour::Ok(json!({"results": ["one"]}), 10)]);
    h.run("Find and judge").await;
    assert_eq!(h.assessor.calls(), 2);

    // Rules: no assessor at all; b's text criterion is named as not judged.
    let h = Harness::new(vec![mixed()]).config(|c| c.assess = AssessMode::Rules);
    h.work
        .script("a", vec![Behaviour::Ok(json!({"results": ["one"]}), 10)]);
    let state = h.run("Find and judge").await;
    assert_eq!(h.assessor.calls(), 0);
    let unjudged = state.execution_history.iter().any(|e| {
        matches!(&e.kind, EventKind::Assessed { step, acceptance_met: false, observations, .. }
            if step.as_str() == "b" && observations.iter().any(|o| o.contains("not judged")))
    });
    assert!(unjudged, "b's text criterion is said to be not judged");
}
