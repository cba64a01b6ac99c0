//! Run health over many runs (seed 003's metrics): how many reach `ok`
//! without a person (the closed loop), how many reach it after a pause or a
//! crash and what that took, how long runs take and what they spend. Pure
//! functions of folded runs *with their history*: `stepwise stats` reads
//! them from the store.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Serialize;

use crate::event::EventKind;
use crate::state::{RunState, RunStatus};

/// What one run did, read from its log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RunFacts {
    /// Where it is.
    pub status: RunStatus,
    /// The strategy it ran (empty in logs from before strategies:
    /// `plan-execute`).
    pub strategy: String,
    /// The model behind its roles, as the host recorded it.
    pub model: String,
    /// From its first event to its last, for a run that is not running.
    pub duration_ms: Option<u64>,
    /// Model calls, all roles.
    pub model_calls: u64,
    /// Input plus output tokens.
    pub tokens: u64,
    /// Replans made.
    pub replans: u32,
    /// Times it was resumed.
    pub resumes: u32,
    /// Resumes of a run that was still `running` (the process had died).
    pub crashes: u32,
    /// Stops for a person: `needs_review` or `awaiting_approval`.
    pub pauses: u32,
    /// Decisions a person made: a plan approved or rejected, a step approved
    /// or refused by someone other than `auto`, a cancellation.
    pub decisions: u32,
}

impl RunFacts {
    /// The facts of a folded run. Its model is the `model` its host recorded
    /// in `run_started` (the CLI, the server and the workers all record it
    /// there), or `-` for a run recorded without one.
    pub fn of(state: &RunState) -> Self {
        let model = state
            .host
            .get("model")
            .and_then(serde_json::Value::as_str)
            .unwrap_or("-");
        let mut facts = RunFacts {
            status: state.status,
            strategy: if state.strategy.is_empty() {
                crate::strategy::DEFAULT_STRATEGY.to_owned()
            } else {
                state.strategy.clone()
            },
            model: model.to_owned(),
            duration_ms: None,
            model_calls: state.usage.llm_calls,
            tokens: state.usage.input_tokens + state.usage.output_tokens,
            replans: state.replan_count,
            resumes: 0,
            crashes: 0,
            pauses: 0,
            decisions: 0,
        };
        if state.status != RunStatus::Running
            && let (Some(start), Some(end)) = (state.started_at(), state.updated_at())
        {
            facts.duration_ms = u64::try_from((end - start).num_milliseconds()).ok();
        }
        let mut paused = false;
        for event in &state.execution_history {
            match &event.kind {
                EventKind::NeedsReview { .. } | EventKind::AwaitingApproval { .. } => {
                    paused = true;
                    facts.pauses += 1;
                }
                EventKind::RunResumed { .. } => {
                    facts.resumes += 1;
                    if !paused {
                        facts.crashes += 1;
                    }
                    paused = false;
                }
                EventKind::PlanApproved { by, .. }
                | EventKind::ApprovalGranted { by, .. }
                | EventKind::ApprovalDenied { by, .. }
                    if by != "auto" =>
                {
                    facts.decisions += 1;
                }
                EventKind::PlanRejected { .. } | EventKind::RunCancelled { .. } => {
                    facts.decisions += 1;
                }
                _ => {}
            }
        }
        facts
    }

    /// `ok` with no person involved: no pause, no decision.
    pub fn closed_loop(&self) -> bool {
        self.status == RunStatus::Ok && self.pauses == 0 && self.decisions == 0
    }

    /// `ok` after a pause or a crash.
    pub fn recovered(&self) -> bool {
        self.status == RunStatus::Ok && (self.pauses > 0 || self.crashes > 0)
    }
}

/// The figures of a set of runs.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Figures {
    /// Runs counted.
    pub runs: usize,
    /// Runs by status (`ok`, `failed`, …), only the statuses present.
    pub by_status: BTreeMap<String, usize>,
    /// Runs that reached `ok` without a person.
    pub closed_loop: usize,
    /// `closed_loop` ÷ `runs`.
    pub closed_loop_rate: f64,
    /// Runs that reached `ok` after a pause or a crash.
    pub recovered: usize,
    /// `recovered` ÷ `runs`.
    pub recovered_rate: f64,
    /// Resumes per recovered run (what recovering took).
    pub resumes_per_recovered: f64,
    /// A person's decisions per recovered run.
    pub decisions_per_recovered: f64,
    /// Mean duration of the runs not running, in milliseconds.
    pub duration_mean_ms: Option<u64>,
    /// 95th percentile of the same (nearest rank).
    pub duration_p95_ms: Option<u64>,
    /// Model calls per run.
    pub model_calls_per_run: f64,
    /// Tokens per run.
    pub tokens_per_run: f64,
    /// Replans per run.
    pub replans_per_run: f64,
}

/// Every figure, over all runs and by strategy and by model.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Stats {
    /// All the runs counted.
    pub all: Figures,
    /// By strategy.
    pub by_strategy: BTreeMap<String, Figures>,
    /// By model.
    pub by_model: BTreeMap<String, Figures>,
}

/// The figures of `runs`, all together and grouped.
pub fn stats(runs: &[RunFacts]) -> Stats {
    let group = |key: fn(&RunFacts) -> &str| {
        let mut groups: BTreeMap<String, Vec<&RunFacts>> = BTreeMap::new();
        for run in runs {
            groups.entry(key(run).to_owned()).or_default().push(run);
        }
        groups
            .into_iter()
            .map(|(name, runs)| (name, figures(&runs)))
            .collect()
    };
    Stats {
        all: figures(&runs.iter().collect::<Vec<_>>()),
        by_strategy: group(|r| &r.strategy),
        by_model: group(|r| &r.model),
    }
}

/// The figures of one set of runs.
fn figures(runs: &[&RunFacts]) -> Figures {
    let n = runs.len();
    let per_run = |total: f64| if n == 0 { 0.0 } else { total / n as f64 };
    let mut by_status: BTreeMap<String, usize> = BTreeMap::new();
    for run in runs {
        *by_status.entry(run.status.as_str().to_owned()).or_default() += 1;
    }
    let closed_loop = runs.iter().filter(|r| r.closed_loop()).count();
    let recovered: Vec<&&RunFacts> = runs.iter().filter(|r| r.recovered()).collect();
    let per_recovered = |each: fn(&RunFacts) -> u32| {
        if recovered.is_empty() {
            0.0
        } else {
            recovered.iter().map(|r| f64::from(each(r))).sum::<f64>() / recovered.len() as f64
        }
    };
    let mut durations: Vec<u64> = runs.iter().filter_map(|r| r.duration_ms).collect();
    durations.sort_unstable();
    let duration_mean_ms =
        (!durations.is_empty()).then(|| durations.iter().sum::<u64>() / durations.len() as u64);
    // Nearest rank: the smallest duration at or above 95 % of the runs.
    let duration_p95_ms = durations.len().checked_sub(1).map(|last| {
        durations[(durations.len() * 95)
            .div_ceil(100)
            .saturating_sub(1)
            .min(last)]
    });
    Figures {
        runs: n,
        by_status,
        closed_loop,
        closed_loop_rate: per_run(closed_loop as f64),
        recovered: recovered.len(),
        recovered_rate: per_run(recovered.len() as f64),
        resumes_per_recovered: per_recovered(|r| r.resumes),
        decisions_per_recovered: per_recovered(|r| r.decisions),
        duration_mean_ms,
        duration_p95_ms,
        model_calls_per_run: per_run(runs.iter().map(|r| r.model_calls as f64).sum()),
        tokens_per_run: per_run(runs.iter().map(|r| r.tokens as f64).sum()),
        replans_per_run: per_run(runs.iter().map(|r| f64::from(r.replans)).sum()),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::float_cmp)]

    use super::*;

    fn run(status: RunStatus, strategy: &str) -> RunFacts {
        RunFacts {
            status,
            strategy: strategy.into(),
            model: "offline".into(),
            duration_ms: Some(1000),
            model_calls: 2,
            tokens: 100,
            replans: 0,
            resumes: 0,
            crashes: 0,
            pauses: 0,
            decisions: 0,
        }
    }

    #[test]
    fn closed_loop_and_recovered_runs_are_told_apart() {
        let plain = run(RunStatus::Ok, "plan-execute");
        let reviewed = RunFacts {
            pauses: 1,
            resumes: 1,
            decisions: 1,
            ..plain.clone()
        };
        let crashed = RunFacts {
            resumes: 1,
            crashes: 1,
            duration_ms: Some(5000),
            ..plain.clone()
        };
        let failed = run(RunStatus::Failed, "react");
        let s = stats(&[plain, reviewed, crashed, failed]);
        assert_eq!(s.all.runs, 4);
        assert_eq!(s.all.by_status["ok"], 3);
        assert_eq!(s.all.by_status["failed"], 1);
        // The crash needed no person: closed loop and recovered at once.
        assert_eq!(s.all.closed_loop, 2);
        assert_eq!(s.all.recovered, 2);
        assert_eq!(s.all.closed_loop_rate, 0.5);
        assert_eq!(s.all.resumes_per_recovered, 1.0);
        assert_eq!(s.all.decisions_per_recovered, 0.5);
        assert_eq!(s.all.duration_mean_ms, Some(2000));
        assert_eq!(s.all.duration_p95_ms, Some(5000));
        assert_eq!(s.by_strategy["react"].runs, 1);
        assert_eq!(s.by_strategy["plan-execute"].closed_loop, 2);
        assert_eq!(s.by_model["offline"].runs, 4);
    }

    #[test]
    fn no_runs_give_zeroes_not_a_division_by_zero() {
        let s = stats(&[]);
        assert_eq!(s.all.runs, 0);
        assert_eq!(s.all.closed_loop_rate, 0.0);
        assert_eq!(s.all.duration_p95_ms, None);
        assert!(s.by_strategy.is_empty());
    }

    #[test]
    fn the_p95_is_a_duration_that_was_measured() {
        let runs: Vec<RunFacts> = (1..=20)
            .map(|i| RunFacts {
                duration_ms: Some(i * 100),
                ..run(RunStatus::Ok, "plan-execute")
            })
            .collect();
        assert_eq!(stats(&runs).all.duration_p95_ms, Some(1900));
    }
}
