//! What a bench measured: a row per run (checks, status, calls, tokens,
//! wall time), a summary per strategy, and both as tables or CSV.

use serde::Serialize;
use stepwise_core::decision::Route;
use stepwise_core::{Driver, EventKind, RunState, RunStatus, StopCondition};

use super::suite::{Task, closed_loop};
use crate::render::table::Table;

/// One strategy on one task.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct RunRow {
    pub(crate) strategy: String,
    pub(crate) task: String,
    /// Every check of the task held.
    pub(crate) success: bool,
    /// The checks that did not.
    pub(crate) failed_checks: Vec<String>,
    pub(crate) status: RunStatus,
    /// How the run was driven: `graph` (replanning or not), `verified`,
    /// `react` or `react-isolated` — for `router`, the route it took.
    pub(crate) driver: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) stop_condition: Option<StopCondition>,
    /// The route a router drew (`router` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) route: Option<Route>,
    /// The route the task expects (`expected_route`), if it names one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) expected_route: Option<Route>,
    /// ReAct reached its cap and the router escalated to plan-execute.
    pub(crate) escalated: bool,
    /// Ended `ok` or at a resumable breakpoint.
    pub(crate) closed_loop: bool,
    /// Role decisions on record (see [`role_calls`]).
    pub(crate) role_calls: u64,
    pub(crate) model_calls: u64,
    pub(crate) input_tokens: u64,
    pub(crate) output_tokens: u64,
    pub(crate) tool_calls: u64,
    pub(crate) replans: u32,
    /// Measured around the run, in milliseconds.
    pub(crate) wall_ms: u64,
    /// Note ids the accepted evidence cites.
    pub(crate) citations: Vec<String>,
    /// Knowledge gaps left open.
    pub(crate) gaps: usize,
    /// Which repeat of the task this run is (from 1; see `bench --repeat`).
    pub(crate) repeat: usize,
    /// How far its first plan is from the first repeat's (see
    /// `instability.rs`); none for the first repeat.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) plan_changes: Option<usize>,
}

/// Role decisions a run's log records, whether a model or the offline roles
/// made them: `plan_created` (planner), `plan_repaired` (repairer),
/// `assessed` (assessor), `replanned` (replanner), `verified` (verifier),
/// `synthesized` (synthesizer, or the ReAct actor's answer), `step_added`
/// (the ReAct actor's tool call), `step_summarized` (summarizer) and
/// `strategy_chosen` when the strategy is `router` (the router's
/// classification). Not counted: automatic plan approval, tool calls (their
/// own column), and a role call that failed (the run ends `failed`).
pub(crate) fn role_calls(state: &RunState) -> u64 {
    let n = state
        .execution_history
        .iter()
        .filter(|e| match &e.kind {
            EventKind::PlanCreated { .. }
            | EventKind::PlanRepaired { .. }
            | EventKind::Assessed { .. }
            | EventKind::Replanned { .. }
            | EventKind::Verified { .. }
            | EventKind::Synthesized { .. }
            | EventKind::StepSummarized { .. } => true,
            // The actor's choice; a streamed plan's step is the planner's one call.
            EventKind::StepAdded { streamed, .. } => !streamed,
            EventKind::StrategyChosen { strategy, .. } => strategy == "router",
            // The actor's call refused at the cap, recorded with the hand-over.
            EventKind::StrategyEscalated { .. } => true,
            // A partial brief was written by the synthesizer (or is the actor's answer).
            EventKind::NeedsReview { brief, .. } => brief.is_some(),
            _ => false,
        })
        .count();
    u64::try_from(n).unwrap_or(u64::MAX)
}

/// The route the run's router drew, if a router chose its driver.
fn route_of(state: &RunState) -> Option<Route> {
    state.execution_history.iter().find_map(|e| match &e.kind {
        EventKind::StrategyChosen {
            routing: Some(r), ..
        } => Some(r.route),
        _ => None,
    })
}

/// A short name for how a run was driven (`-` if it ended before choosing).
fn driver_name(driver: Option<Driver>) -> String {
    match driver {
        None => "-",
        Some(Driver::Graph {
            verify: Some(_), ..
        }) => "verified",
        Some(Driver::Graph {
            replanning: true, ..
        }) => "graph",
        Some(Driver::Graph {
            replanning: false, ..
        }) => "graph-no-replan",
        Some(Driver::React {
            isolated: false, ..
        }) => "react",
        Some(Driver::React { isolated: true, .. }) => "react-isolated",
    }
    .to_owned()
}

impl RunRow {
    pub(crate) fn new(strategy: &str, task: &Task, state: &RunState, wall_ms: u64) -> Self {
        let failed_checks = task.checks.failures(state);
        let mut citations: Vec<String> =
            state.evidence.iter().map(|e| e.source_id.clone()).collect();
        citations.sort();
        citations.dedup();
        RunRow {
            strategy: strategy.to_owned(),
            task: task.id.clone(),
            success: failed_checks.is_empty(),
            failed_checks,
            status: state.status,
            driver: driver_name(state.driver),
            stop_condition: state.stop_condition,
            route: route_of(state),
            expected_route: task.expected_route,
            escalated: state
                .execution_history
                .iter()
                .any(|e| matches!(e.kind, EventKind::StrategyEscalated { .. })),
            closed_loop: closed_loop(state.status),
            role_calls: role_calls(state),
            model_calls: state.usage.llm_calls,
            input_tokens: state.usage.input_tokens,
            output_tokens: state.usage.output_tokens,
            tool_calls: state.usage.tool_calls,
            replans: state.replan_count,
            wall_ms,
            citations,
            gaps: state.knowledge_gaps.len(),
            repeat: 1,
            plan_changes: None,
        }
    }
}

/// One strategy over the whole suite.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Summary {
    pub(crate) strategy: String,
    pub(crate) runs: usize,
    pub(crate) successes: usize,
    pub(crate) success_rate: f64,
    /// Runs that ended `ok` or at a resumable breakpoint.
    pub(crate) closed_loop: usize,
    pub(crate) closed_loop_rate: f64,
    pub(crate) role_calls: u64,
    pub(crate) model_calls: u64,
    pub(crate) input_tokens: u64,
    pub(crate) output_tokens: u64,
    pub(crate) tool_calls: u64,
    pub(crate) replans: u64,
    pub(crate) wall_ms: u64,
}

fn rate(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// A summary per strategy, in the order the strategies first appear.
pub(crate) fn summarize(rows: &[RunRow]) -> Vec<Summary> {
    let mut order: Vec<&str> = Vec::new();
    for row in rows {
        if !order.contains(&row.strategy.as_str()) {
            order.push(&row.strategy);
        }
    }
    order
        .into_iter()
        .map(|name| {
            let mine: Vec<&RunRow> = rows.iter().filter(|r| r.strategy == name).collect();
            let successes = mine.iter().filter(|r| r.success).count();
            let closed = mine.iter().filter(|r| r.closed_loop).count();
            Summary {
                strategy: name.to_owned(),
                runs: mine.len(),
                successes,
                success_rate: rate(successes, mine.len()),
                closed_loop: closed,
                closed_loop_rate: rate(closed, mine.len()),
                role_calls: mine.iter().map(|r| r.role_calls).sum(),
                model_calls: mine.iter().map(|r| r.model_calls).sum(),
                input_tokens: mine.iter().map(|r| r.input_tokens).sum(),
                output_tokens: mine.iter().map(|r| r.output_tokens).sum(),
                tool_calls: mine.iter().map(|r| r.tool_calls).sum(),
                replans: mine.iter().map(|r| u64::from(r.replans)).sum(),
                wall_ms: mine.iter().map(|r| r.wall_ms).sum(),
            }
        })
        .collect()
}

/// A task the router sent elsewhere than its `expected_route`.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Misroute {
    pub(crate) task: String,
    pub(crate) expected: Route,
    pub(crate) route: Route,
}

/// How often one routing strategy drew the route its tasks expect (seed
/// 000: a wrong route costs more than the router, so track its accuracy).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct RoutingAccuracy {
    pub(crate) strategy: String,
    /// Runs that drew a route, of tasks that name an expected one.
    pub(crate) scored: usize,
    pub(crate) correct: usize,
    pub(crate) accuracy: f64,
    /// Runs that escalated from react to plan-execute at the cap.
    pub(crate) escalated: usize,
    pub(crate) misrouted: Vec<Misroute>,
}

/// Routing accuracy per strategy that routes, in order of appearance.
pub(crate) fn routing_accuracy(rows: &[RunRow]) -> Vec<RoutingAccuracy> {
    let mut out: Vec<RoutingAccuracy> = Vec::new();
    for row in rows {
        let (Some(route), Some(expected)) = (row.route, row.expected_route) else {
            continue;
        };
        let at = match out.iter().position(|a| a.strategy == row.strategy) {
            Some(at) => at,
            None => {
                out.push(RoutingAccuracy {
                    strategy: row.strategy.clone(),
                    scored: 0,
                    correct: 0,
                    accuracy: 0.0,
                    escalated: 0,
                    misrouted: Vec::new(),
                });
                out.len() - 1
            }
        };
        let a = &mut out[at];
        a.scored += 1;
        a.escalated += usize::from(row.escalated);
        if route == expected {
            a.correct += 1;
        } else {
            a.misrouted.push(Misroute {
                task: row.task.clone(),
                expected,
                route,
            });
        }
        a.accuracy = rate(a.correct, a.scored);
    }
    out
}

/// The CSV columns (one row per run follows).
pub(crate) const CSV_COLUMNS: [&str; 18] = [
    "strategy",
    "task",
    "success",
    "status",
    "driver",
    "stop_condition",
    "closed_loop",
    "role_calls",
    "model_calls",
    "input_tokens",
    "output_tokens",
    "tool_calls",
    "replans",
    "wall_ms",
    "failed_checks",
    "route",
    "expected_route",
    "escalated",
];

/// One CSV row per run, under a header (quoted as RFC 4180 asks).
pub(crate) fn csv(rows: &[RunRow]) -> anyhow::Result<String> {
    let mut out = csv::Writer::from_writer(Vec::new());
    out.write_record(CSV_COLUMNS)?;
    for r in rows {
        out.write_record([
            r.strategy.clone(),
            r.task.clone(),
            r.success.to_string(),
            r.status.as_str().to_owned(),
            r.driver.clone(),
            r.stop_condition.map(|c| c.to_string()).unwrap_or_default(),
            r.closed_loop.to_string(),
            r.role_calls.to_string(),
            r.model_calls.to_string(),
            r.input_tokens.to_string(),
            r.output_tokens.to_string(),
            r.tool_calls.to_string(),
            r.replans.to_string(),
            r.wall_ms.to_string(),
            r.failed_checks.join("; "),
            r.route.map(|x| x.to_string()).unwrap_or_default(),
            r.expected_route.map(|x| x.to_string()).unwrap_or_default(),
            r.escalated.to_string(),
        ])?;
    }
    let bytes = out
        .into_inner()
        .map_err(|e| anyhow::anyhow!("{}", e.error()))?;
    Ok(String::from_utf8(bytes)?)
}

fn percent(part: usize, whole: usize) -> String {
    format!("{part}/{whole} {:.0}%", rate(part, whole) * 100.0)
}

/// The runs table, the per-strategy summary, routing accuracy (when a
/// routing strategy ran tasks with an `expected_route`), and the checks that failed.
pub(crate) fn tables(rows: &[RunRow], summary: &[Summary], routing: &[RoutingAccuracy]) -> String {
    const RUN_HEADERS: [&str; 13] = [
        "STRATEGY",
        "TASK",
        "SUCCESS",
        "STATUS",
        "STOP",
        "ROUTE",
        "ROLE CALLS",
        "MODEL CALLS",
        "TOKENS IN",
        "TOKENS OUT",
        "TOOL CALLS",
        "REPLANS",
        "WALL MS",
    ];
    // The counts aligned right, so their digits line up.
    let mut runs = Table::new(&RUN_HEADERS).right(&[6, 7, 8, 9, 10, 11, 12]);
    for r in rows {
        runs.row([
            r.strategy.clone(),
            if r.repeat > 1 {
                format!("{} #{}", r.task, r.repeat)
            } else {
                r.task.clone()
            },
            if r.success { "pass" } else { "FAIL" }.to_owned(),
            r.status.as_str().to_owned(),
            r.stop_condition
                .map_or_else(|| "-".to_owned(), |c| c.to_string()),
            match (r.route, r.escalated) {
                (None, _) => "-".to_owned(),
                (Some(route), false) => route.to_string(),
                (Some(route), true) => format!("{route} → escalated"),
            },
            r.role_calls.to_string(),
            r.model_calls.to_string(),
            r.input_tokens.to_string(),
            r.output_tokens.to_string(),
            r.tool_calls.to_string(),
            r.replans.to_string(),
            r.wall_ms.to_string(),
        ]);
    }
    let mut text = runs.render();

    const SUM_HEADERS: [&str; 11] = [
        "STRATEGY",
        "RUNS",
        "SUCCESS",
        "CLOSED LOOP",
        "ROLE CALLS",
        "MODEL CALLS",
        "TOKENS IN",
        "TOKENS OUT",
        "TOOL CALLS",
        "REPLANS",
        "WALL MS",
    ];
    let mut sums = Table::new(&SUM_HEADERS).right(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    for s in summary {
        sums.row([
            s.strategy.clone(),
            s.runs.to_string(),
            percent(s.successes, s.runs),
            percent(s.closed_loop, s.runs),
            s.role_calls.to_string(),
            s.model_calls.to_string(),
            s.input_tokens.to_string(),
            s.output_tokens.to_string(),
            s.tool_calls.to_string(),
            s.replans.to_string(),
            s.wall_ms.to_string(),
        ]);
    }
    text.push('\n');
    text.push_str(&sums.render());

    if !routing.is_empty() {
        let mut table =
            Table::new(&["STRATEGY", "ROUTED", "ROUTING ACCURACY", "ESCALATED"]).right(&[1, 2, 3]);
        for a in routing {
            table.row([
                a.strategy.clone(),
                a.scored.to_string(),
                percent(a.correct, a.scored),
                a.escalated.to_string(),
            ]);
        }
        text.push('\n');
        text.push_str(&table.render());
        for a in routing {
            for m in &a.misrouted {
                text.push_str(&format!(
                    "  misrouted: {} · {}: expected {}, routed {}\n",
                    a.strategy, m.task, m.expected, m.route
                ));
            }
        }
    }

    let failed: Vec<&RunRow> = rows.iter().filter(|r| !r.success).collect();
    if !failed.is_empty() {
        text.push_str("\nfailed checks:\n");
        for r in failed {
            text.push_str(&format!(
                "  {} · {}: {}\n",
                r.strategy,
                r.task,
                r.failed_checks.join("; ")
            ));
        }
    }
    text
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn row(strategy: &str, success: bool, status: RunStatus, tools: u64) -> RunRow {
        RunRow {
            strategy: strategy.to_owned(),
            task: "t".to_owned(),
            success,
            failed_checks: if success {
                vec![]
            } else {
                vec!["not cited: x".to_owned()]
            },
            status,
            driver: "graph".to_owned(),
            stop_condition: None,
            route: None,
            expected_route: None,
            escalated: false,
            closed_loop: closed_loop(status),
            role_calls: 2,
            model_calls: 0,
            input_tokens: 0,
            output_tokens: 0,
            tool_calls: tools,
            replans: 1,
            wall_ms: 3,
            citations: vec![],
            gaps: 0,
            repeat: 1,
            plan_changes: None,
        }
    }

    #[test]
    fn the_summary_counts_closed_loops_and_successes() {
        let rows = [
            row("a", true, RunStatus::Ok, 3),
            row("a", false, RunStatus::NeedsReview, 4),
            row("a", false, RunStatus::Failed, 1),
            row("b", true, RunStatus::AwaitingApproval, 2),
        ];
        let s = summarize(&rows);
        assert_eq!(s.len(), 2);
        assert_eq!((s[0].runs, s[0].successes, s[0].closed_loop), (3, 1, 2));
        assert_eq!((s[0].tool_calls, s[0].replans, s[0].role_calls), (8, 3, 6));
        assert!((s[0].closed_loop_rate - 2.0 / 3.0).abs() < 1e-9);
        assert_eq!((s[1].runs, s[1].closed_loop), (1, 1));
        let text = tables(&rows, &s, &routing_accuracy(&rows));
        assert!(text.contains("2/3 67%"), "{text}");
        assert!(
            text.contains("failed checks:\n  a · t: not cited: x\n"),
            "{text}"
        );
        let csv = csv(&rows).unwrap();
        assert!(csv.starts_with(&CSV_COLUMNS.join(",")), "{csv}");
        assert_eq!(csv.lines().count(), 5);
    }

    #[test]
    fn csv_fields_are_quoted_when_needed() {
        let mut r = row("plain", false, RunStatus::Ok, 1);
        r.task = "a, b".to_owned();
        r.failed_checks = vec!["say \"x\"".to_owned(), "y".to_owned()];
        let csv = csv(&[r]).unwrap();
        let line = csv.lines().nth(1).unwrap();
        assert!(line.starts_with("plain,\"a, b\",false,ok,"), "{line}");
        assert!(line.ends_with(",3,\"say \"\"x\"\"; y\",,,false"), "{line}");
    }
}
