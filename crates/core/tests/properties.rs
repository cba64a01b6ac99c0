//! Property: for random valid DAG plans, random step outcomes, random
//! assessor verdicts and random replans, every run terminates within its
//! bounds, never starts a step before its dependencies succeeded, and never
//! re-runs a succeeded step.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;

use common::{Behaviour, Harness, assert_dependency_order, assert_fold_matches, plan, step};
use proptest::prelude::*;
use serde_json::json;
use stepwise_core::{Assessment, EventKind, RunStatus, Verdict};

#[derive(Debug, Clone)]
struct Case {
    /// For each step, a bitmask of earlier steps it depends on.
    deps: Vec<u8>,
    /// For each step (and each replanned step), its attempts' behaviours.
    outcomes: Vec<Vec<u8>>,
    verdicts: Vec<u8>,
    /// For each replan: how many new steps, and whether each depends on the previous new one.
    replans: Vec<Vec<bool>>,
    max_replans: u32,
    extra_steps: usize,
    concurrency: usize,
    max_attempts: u32,
}

fn case() -> impl Strategy<Value = Case> {
    (1usize..=7)
        .prop_flat_map(|n| {
            (
                proptest::collection::vec(any::<u8>(), n),
                proptest::collection::vec(proptest::collection::vec(0u8..6, 1..4), n + 12),
                proptest::collection::vec(0u8..10, 0..12),
                proptest::collection::vec(proptest::collection::vec(any::<bool>(), 0..4), 0..5),
                0u32..4,
                0usize..5,
                1usize..5,
                1u32..4,
            )
        })
        .prop_map(
            |(
                deps,
                outcomes,
                verdicts,
                replans,
                max_replans,
                extra_steps,
                concurrency,
                max_attempts,
            )| Case {
                deps,
                outcomes,
                verdicts,
                replans,
                max_replans,
                extra_steps,
                concurrency,
                max_attempts,
            },
        )
}

fn behaviour(code: u8) -> Behaviour {
    match code {
        0..=2 => Behaviour::Ok(json!({"items": [code]}), u64::from(code) * 10 + 1),
        3 | 4 => Behaviour::Transient(None),
        _ => Behaviour::Persistent,
    }
}

fn verdict(code: u8, i: usize) -> Assessment {
    match code {
        0..=5 => Assessment::ok("fine"),
        6 | 7 => Assessment::gap(format!("gap {i}")),
        8 => Assessment {
            verdict: Verdict::Synthesize,
            ..Assessment::ok("enough")
        },
        _ => Assessment {
            verdict: Verdict::NeedsReview,
            ..Assessment::ok("stop")
        },
    }
}

async fn run_case(c: Case) {
    let n = c.deps.len();
    let ids: Vec<String> = (0..n).map(|i| format!("s{i}")).collect();
    let steps = (0..n)
        .map(|i| {
            let deps: Vec<&str> = (0..i)
                .filter(|j| c.deps[i] & (1 << j) != 0)
                .map(|j| ids[j].as_str())
                .collect();
            step(&ids[i], &deps)
        })
        .collect();
    let replans = c
        .replans
        .iter()
        .enumerate()
        .map(|(r, chain)| {
            let new: Vec<String> = (0..chain.len()).map(|j| format!("r{r}_{j}")).collect();
            plan(
                chain
                    .iter()
                    .enumerate()
                    .map(|(j, dep)| {
                        if *dep && j > 0 {
                            step(&new[j], &[&new[j - 1]])
                        } else {
                            step(&new[j], &[])
                        }
                    })
                    .collect(),
            )
        })
        .collect();
    let max_steps = n + c.extra_steps;
    let h = Harness::new(vec![plan(steps)])
        .assessments(
            c.verdicts
                .iter()
                .enumerate()
                .map(|(i, v)| verdict(*v, i))
                .collect(),
        )
        .replans(replans)
        .config(|cfg| {
            cfg.max_replans = c.max_replans;
            cfg.max_steps = max_steps;
            cfg.concurrency = c.concurrency;
            cfg.retry.max_attempts = c.max_attempts;
        });
    let mut all_ids = ids.clone();
    for (r, chain) in c.replans.iter().enumerate() {
        all_ids.extend((0..chain.len()).map(|j| format!("r{r}_{j}")));
    }
    for (id, codes) in all_ids.iter().zip(&c.outcomes) {
        h.work
            .script(id, codes.iter().map(|b| behaviour(*b)).collect());
    }

    let state = h.run("Random plan").await;

    assert_ne!(state.status, RunStatus::Running);
    assert!(
        state.replan_count <= c.max_replans,
        "{} replans > {}",
        state.replan_count,
        c.max_replans
    );
    let mut attempts: BTreeMap<String, u32> = BTreeMap::new();
    for e in &state.execution_history {
        if let EventKind::StepStarted { step, .. } = &e.kind {
            *attempts.entry(step.to_string()).or_default() += 1;
        }
    }
    assert!(
        attempts.len() <= max_steps,
        "{} steps ran, max_steps {max_steps}",
        attempts.len()
    );
    assert!(
        attempts.values().all(|a| *a <= c.max_attempts),
        "{attempts:?}"
    );
    assert_dependency_order(&state);
    assert_fold_matches(&state);
    if state.status == RunStatus::Ok {
        assert!(state.final_report.is_some());
        assert!(state.current_step_ids.is_empty());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn every_run_terminates_within_bounds_and_respects_dependencies(c in case()) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap();
        rt.block_on(run_case(c));
    }
}
