//! Plan instability (seed 003): how often the same request, run again,
//! gets a different plan. Each repeat's first plan is compared with the
//! first repeat's by structure (`stepwise_core::plan::diff`: steps added,
//! removed, retooled, reargued, rewired), never by text.

use serde::Serialize;
use stepwise_core::RunState;
use stepwise_core::event::EventKind;
use stepwise_core::plan::Plan;

use super::report::RunRow;
use crate::render::table::Table;

/// The plan a run was given first: its first validated plan, else (a
/// ReAct run, or one that never got a valid plan) the steps it took.
pub(crate) fn first_plan(state: &RunState) -> Plan {
    state
        .execution_history
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::PlanValidated { plan } => Some(plan.clone()),
            _ => None,
        })
        .unwrap_or_else(|| state.plan.clone())
}

/// One strategy's instability over the repeats of every task.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Instability {
    pub(crate) strategy: String,
    /// Repeats compared with their task's first (all but the first of each).
    pub(crate) compared: usize,
    /// Of those, the repeats whose plan differed.
    pub(crate) changed: usize,
    /// `changed` ÷ `compared`.
    pub(crate) rate: f64,
    /// Mean structural distance of the compared repeats (see `PlanDiff::distance`).
    pub(crate) mean_distance: f64,
}

/// Instability per strategy, in the order the strategies first appear;
/// none when no task was repeated.
pub(crate) fn instability(rows: &[RunRow]) -> Vec<Instability> {
    let mut order: Vec<&str> = Vec::new();
    for row in rows {
        if row.plan_changes.is_some() && !order.contains(&row.strategy.as_str()) {
            order.push(&row.strategy);
        }
    }
    order
        .into_iter()
        .map(|name| {
            let distances: Vec<usize> = rows
                .iter()
                .filter(|r| r.strategy == name)
                .filter_map(|r| r.plan_changes)
                .collect();
            let compared = distances.len();
            let changed = distances.iter().filter(|d| **d > 0).count();
            Instability {
                strategy: name.to_owned(),
                compared,
                changed,
                rate: changed as f64 / compared as f64,
                mean_distance: distances.iter().sum::<usize>() as f64 / compared as f64,
            }
        })
        .collect()
}

/// The instability table (empty when nothing was repeated).
pub(crate) fn table(rows: &[Instability]) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let mut table = Table::new(&[
        "STRATEGY",
        "REPEATS COMPARED",
        "PLAN CHANGED",
        "MEAN DISTANCE",
    ])
    .right(&[1, 2, 3]);
    for r in rows {
        table.row([
            r.strategy.clone(),
            r.compared.to_string(),
            format!("{} ({:.0}%)", r.changed, r.rate * 100.0),
            format!("{:.2}", r.mean_distance),
        ]);
    }
    format!("\n{}", table.render())
}
