//! `stepwise runs` and `stepwise show`: what the run database holds. Both
//! only read; neither creates a database that does not exist yet.
//!
//! Exit status: 0 shown, 2 usage error (an unknown run, an unusable
//! database file), 1 anything else that went wrong.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, anyhow};
use chrono::{DateTime, Utc};
use serde_json::Value;
use stepwise_core::{
    Event, EventKind, RunState, RunStatus, RunSummary, StepId, StepStatus, Store, Usage, Verdict,
};
use stepwise_store::SqliteStore;

use crate::cli::{RunsArgs, ShowArgs};
use crate::config::Price;
use crate::db;
use crate::output;
use crate::run_cmd::UsageError;

/// Longest goal `stepwise runs` prints, in characters.
const GOAL_WIDTH: usize = 60;

/// `stepwise runs`: every run, newest first.
pub(crate) fn runs(args: &RunsArgs, db: Option<&PathBuf>) -> anyhow::Result<ExitCode> {
    finish(list_runs(args, db))
}

/// `stepwise show RUN`: one run, as a summary, its events, its final output
/// (JSON) or its plan as a Mermaid flowchart.
pub(crate) fn show(args: &ShowArgs, db: Option<&PathBuf>) -> anyhow::Result<ExitCode> {
    finish(show_run(args, db))
}

/// Usage errors go back to `main` (exit 2); any other error is reported
/// here as one `error:` line and exits 1 (the request was fine, the run or
/// the database did not allow it).
pub(crate) fn finish(result: anyhow::Result<ExitCode>) -> anyhow::Result<ExitCode> {
    match result {
        Err(err) if err.downcast_ref::<UsageError>().is_none() => {
            output::error(&err);
            Ok(ExitCode::FAILURE)
        }
        other => other,
    }
}

fn usage(err: anyhow::Error) -> anyhow::Error {
    anyhow::Error::new(UsageError(err))
}

/// The database if its file exists (`None`: nothing was ever recorded there).
fn open_existing(flag: Option<&PathBuf>) -> anyhow::Result<Option<Arc<SqliteStore>>> {
    if db::path(flag).exists() {
        db::open(flag).map(Some)
    } else {
        Ok(None)
    }
}

/// The database and one run's state; an unknown run (or a database that does
/// not exist) is a usage error.
pub(crate) fn open_run(
    flag: Option<&PathBuf>,
    run: &str,
) -> anyhow::Result<(Arc<SqliteStore>, RunState)> {
    let Some(store) = open_existing(flag)? else {
        return Err(usage(anyhow!(
            "no run with id {run}: there is no database at {} yet (pass --db or set STEPWISE_DB)",
            db::path(flag).display()
        )));
    };
    let state = db::block_on(db::load(&store, run))??;
    Ok((store, state))
}

fn list_runs(args: &RunsArgs, flag: Option<&PathBuf>) -> anyhow::Result<ExitCode> {
    let summaries = match open_existing(flag)? {
        Some(store) => db::block_on(store.list_runs())?.context("cannot list the runs")?,
        None => Vec::new(),
    };
    if args.json {
        let mut json =
            serde_json::to_string_pretty(&summaries).context("cannot encode the runs")?;
        json.push('\n');
        output::stdout(&json)?;
    } else if summaries.is_empty() {
        output::stdout(&format!("no runs yet in {}\n", db::path(flag).display()))?;
    } else {
        output::stdout(&runs_table(&summaries))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The table of `stepwise runs`: columns padded to their widest cell.
fn runs_table(summaries: &[RunSummary]) -> String {
    const HEADERS: [&str; 7] = [
        "RUN",
        "STATUS",
        "STARTED (UTC)",
        "STEPS",
        "REPLANS",
        "TOKENS",
        "GOAL",
    ];
    let rows: Vec<[String; 7]> = summaries
        .iter()
        .map(|s| {
            [
                s.run_id.to_string(),
                s.status.as_str().to_owned(),
                s.started_at.format("%Y-%m-%d %H:%M").to_string(),
                format!("{}/{}", s.steps_done, s.steps_total),
                s.replans.to_string(),
                s.tokens.to_string(),
                clip(&s.goal, GOAL_WIDTH),
            ]
        })
        .collect();
    let mut widths = HEADERS.map(|h| h.chars().count());
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |cells: [&str; 7]| {
        let mut text = String::new();
        for (i, (cell, width)) in cells.iter().zip(widths).enumerate() {
            if i > 0 {
                text.push_str("  ");
            }
            text.push_str(cell);
            if i + 1 < cells.len() {
                let pad = width.saturating_sub(cell.chars().count());
                text.extend(std::iter::repeat_n(' ', pad));
            }
        }
        let mut text = text.trim_end().to_owned();
        text.push('\n');
        text
    };
    let mut text = line(HEADERS);
    for row in &rows {
        text.push_str(&line(row.each_ref().map(String::as_str)));
    }
    text
}

fn show_run(args: &ShowArgs, flag: Option<&PathBuf>) -> anyhow::Result<ExitCode> {
    let (_store, state) = open_run(flag, &args.run)?;
    let text = if args.json && args.events {
        let mut json = serde_json::to_string_pretty(&state.execution_history)
            .context("cannot encode the events")?;
        json.push('\n');
        json
    } else if args.json {
        let mut value =
            serde_json::to_value(state.final_output()).context("cannot encode the run")?;
        let price = crate::session::price(&state);
        if let (Some((model, price)), Value::Object(map)) = (&price, &mut value) {
            map.insert(
                "cost".to_owned(),
                serde_json::json!({"model": model, "usd": price.cost(&state.usage)}),
            );
        }
        price_usage_breakdown(&mut value, price.map(|(_, p)| p));
        let mut json = serde_json::to_string_pretty(&value).context("cannot encode the run")?;
        json.push('\n');
        json
    } else if args.mermaid {
        mermaid(&state)
    } else if args.events {
        events(&state.execution_history)
    } else {
        summary(&state)
    };
    output::stdout(&text)?;
    Ok(ExitCode::SUCCESS)
}

// ---------------------------------------------------------------------------
// The summary

/// The readable summary of `stepwise show RUN`.
fn summary(state: &RunState) -> String {
    let mut text = String::new();
    let field = |text: &mut String, name: &str, value: &str| {
        text.push_str(&format!("{name:<9} {value}\n"));
    };
    field(&mut text, "run", state.run_id.as_str());
    field(&mut text, "goal", &one_line(goal_of(state)));
    field(&mut text, "status", state.status.as_str());
    if !state.strategy.is_empty() {
        field(&mut text, "strategy", &state.strategy);
    }
    if let Some(condition) = state.stop_condition {
        field(&mut text, "stopped", &condition.to_string());
    }
    if let Some(v) = state.verification_history.last() {
        field(
            &mut text,
            "verified",
            &format!(
                "{} iteration(s); last: completeness {:.2}, confidence {:.2}, {} missing, {} contradiction(s)",
                state.verification_history.len(),
                v.completeness,
                v.confidence,
                v.missing.len(),
                v.contradictions.len()
            ),
        );
    }
    if let Some(reason) = &state.blocked_reason {
        field(&mut text, "why", &one_line(reason));
    }
    if let Some(first) = state.execution_history.first() {
        field(
            &mut text,
            "started",
            &first.at.format("%Y-%m-%d %H:%M:%S UTC").to_string(),
        );
    }
    let plan = if state.plan.version == 0 {
        "none yet".to_owned()
    } else {
        format!(
            "version {}, {}",
            state.plan.version,
            output::plural(state.plan.steps.len(), "step")
        )
    };
    field(&mut text, "plan", &plan);
    field(
        &mut text,
        "replans",
        &format!("{} of at most {}", state.replan_count, state.max_replans),
    );
    field(&mut text, "usage", &usage_line(&state.usage));
    let price = crate::session::price(state);
    if let Some((model, price)) = &price {
        field(
            &mut text,
            "cost",
            &format!("{} ({model})", usd(price.cost(&state.usage))),
        );
    }

    if !state.plan.steps.is_empty() {
        text.push_str(&format!("\nPlan (version {})\n", state.plan.version));
        let id_width = column_width(state.plan.steps.iter().map(|s| s.id.as_str()));
        let tool_width = column_width(state.plan.steps.iter().map(|s| s.tool.as_str()));
        for step in &state.plan.steps {
            let mut line = format!(
                "  {} {:<10} {:<id_width$}  {:<tool_width$}",
                glyph(step.status),
                step.status.as_str(),
                step.id.as_str(),
                step.tool,
            );
            if !step.depends_on.is_empty() {
                let deps: Vec<&str> = step.depends_on.iter().map(StepId::as_str).collect();
                line.push_str(&format!("  after {}", deps.join(", ")));
            }
            if step.attempts > 1 {
                line.push_str(&format!("  ({} attempts)", step.attempts));
            }
            if !step.description.is_empty() {
                line.push_str(&format!("  — {}", clip(&step.description, 80)));
            }
            text.push_str(line.trim_end());
            text.push('\n');
        }
    }

    text.push_str(&usage_table(state, price.as_ref().map(|(_, p)| p)));

    if !state.plan_errors.is_empty() {
        text.push_str("\nPlan problems\n");
        for d in &state.plan_errors {
            text.push_str(&format!("  - {}\n", one_line(&d.to_string())));
        }
    }

    if state.pending_review.is_some() || !state.pending_approvals.is_empty() {
        text.push_str("\nWaiting for approval\n");
        if let Some(version) = state.pending_review {
            text.push_str(&format!(
                "  plan version {version} (review the plan above)\n"
            ));
        }
        for (step, hash) in &state.pending_approvals {
            text.push_str(&format!("  {}\n", describe_request(state, step, hash)));
        }
    }

    if !state.knowledge_gaps.is_empty() {
        text.push_str("\nKnowledge gaps\n");
        for gap in &state.knowledge_gaps {
            text.push_str(&format!("  - {}\n", one_line(gap)));
        }
    }

    if let Some(report) = &state.final_report {
        text.push_str("\nReport\n\n");
        text.push_str(report.trim_end());
        text.push('\n');
    }

    if let Some(hint) = next_command(state) {
        text.push('\n');
        text.push_str(&hint);
        text.push('\n');
    }
    text
}

/// The normalised goal, or the raw input if there is none.
fn goal_of(state: &RunState) -> &str {
    if state.goal.is_empty() {
        &state.input
    } else {
        &state.goal
    }
}

fn column_width<'a>(cells: impl Iterator<Item = &'a str>) -> usize {
    cells.map(|c| c.chars().count()).max().unwrap_or(0)
}

/// One character for a step status, so a plan can be scanned at a glance.
fn glyph(status: StepStatus) -> char {
    match status {
        StepStatus::Pending => '·',
        StepStatus::Running => '▶',
        StepStatus::Succeeded => '✓',
        StepStatus::Failed | StepStatus::Terminated => '✗',
        StepStatus::Retrying => '↻',
        StepStatus::Skipped => '–',
    }
}

/// `3 llm calls · 1200 tokens (1000 in, 200 out) · 2 tool calls · 1.2 s`.
fn usage_line(usage: &Usage) -> String {
    format!(
        "{} · {} tokens ({} in, {} out) · {} · {}",
        output::plural(
            usize::try_from(usage.llm_calls).unwrap_or(usize::MAX),
            "llm call"
        ),
        usage.input_tokens + usage.output_tokens,
        usage.input_tokens,
        usage.output_tokens,
        output::plural(
            usize::try_from(usage.tool_calls).unwrap_or(usize::MAX),
            "tool call"
        ),
        duration(usage.wall_time_ms),
    )
}

/// `850 ms`, `12.3 s`, `4 min 03 s`.
fn duration(ms: u64) -> String {
    if ms < 1_000 {
        format!("{ms} ms")
    } else if ms < 60_000 {
        format!("{}.{} s", ms / 1_000, (ms % 1_000) / 100)
    } else {
        let s = ms / 1_000;
        format!("{} min {:02} s", s / 60, s % 60)
    }
}

/// The tool and arguments a step asked approval for: from the last
/// `approval_requested` event of the step.
pub(crate) fn requested<'a>(state: &'a RunState, step: &StepId) -> Option<(&'a str, &'a Value)> {
    state
        .execution_history
        .iter()
        .rev()
        .find_map(|e| match &e.kind {
            EventKind::ApprovalRequested {
                step: s,
                tool,
                args,
                ..
            } if s == step => Some((tool.as_str(), args)),
            _ => None,
        })
}

/// `step save (write_file) {"path":"brief.md",...} hash 3fa2c1d9e0ab`.
pub(crate) fn describe_request(state: &RunState, step: &StepId, hash: &str) -> String {
    let (tool, args) = match requested(state, step) {
        Some((tool, args)) => (tool.to_owned(), compact_json(args)),
        None => (
            state
                .plan
                .step(step)
                .map_or_else(|| "?".to_owned(), |s| s.tool.clone()),
            "(arguments not recorded)".to_owned(),
        ),
    };
    format!("step {step} ({tool}) {args}  hash {}", short_hash(hash))
}

/// The first 12 hex digits of a hash: enough to tell two apart.
pub(crate) fn short_hash(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}

/// JSON on one line, with long strings shortened, at most ~200 characters.
pub(crate) fn compact_json(value: &Value) -> String {
    fn shorten(value: &Value) -> Value {
        match value {
            Value::String(s) if s.chars().count() > 60 => {
                let head: String = s.chars().take(57).collect();
                Value::String(format!("{head}… ({} chars)", s.chars().count()))
            }
            Value::Array(items) => Value::Array(items.iter().map(shorten).collect()),
            Value::Object(map) => {
                Value::Object(map.iter().map(|(k, v)| (k.clone(), shorten(v))).collect())
            }
            other => other.clone(),
        }
    }
    clip(&shorten(value).to_string(), 200)
}

/// What a person can do next with a paused or stopped run.
fn next_command(state: &RunState) -> Option<String> {
    let run = &state.run_id;
    match state.status {
        RunStatus::AwaitingApproval
            if state.pending_review.is_some() || !state.pending_approvals.is_empty() =>
        {
            Some(format!(
                "next: stepwise approve {run}   (or refuse: stepwise reject {run} --reason TEXT)"
            ))
        }
        RunStatus::AwaitingApproval => Some(format!(
            "next: stepwise resume {run}   (everything it waited for is approved)"
        )),
        RunStatus::NeedsReview => Some(format!(
            "next: stepwise resume {run}   (once something changed: --max-replans N or --max-steps N raise the bounds, or change the notes; resumed unchanged it stays needs_review)"
        )),
        RunStatus::Running => Some(format!(
            "if no process is working on it any more (it crashed or was killed): stepwise resume {run}"
        )),
        RunStatus::Ok | RunStatus::Failed | RunStatus::Cancelled => None,
    }
}

// ---------------------------------------------------------------------------
// Model usage per step and per role

/// With a price, adds `cost_usd` to each entry of the output's
/// `usage_by_step` and `usage_by_role` (the run's final output computes the
/// split; the price table is the CLI's).
pub(crate) fn price_usage_breakdown(value: &mut Value, price: Option<Price>) {
    let Some(price) = price else { return };
    for key in ["usage_by_step", "usage_by_role"] {
        let Some(Value::Object(parts)) = value.get_mut(key) else {
            continue;
        };
        for part in parts.values_mut() {
            let Ok(usage) = serde_json::from_value::<Usage>(part.clone()) else {
                continue;
            };
            if let Value::Object(map) = part {
                map.insert("cost_usd".to_owned(), serde_json::json!(price.cost(&usage)));
            }
        }
    }
}

/// `$0.000180`: enough digits for the cost of one call.
fn usd(amount: f64) -> String {
    format!("${amount:.6}")
}

/// The summary's "Model usage" table: each step that called a model (plan
/// order), then each other role that did, with calls, tokens and (with a
/// price) cost. Empty when the run made no model call.
fn usage_table(state: &RunState, price: Option<&Price>) -> String {
    let steps = stepwise_core::usage::usage_by_step(&state.execution_history);
    let roles = stepwise_core::usage::usage_by_role(&state.execution_history);
    let mut labelled: Vec<(String, Usage)> = state
        .plan
        .steps
        .iter()
        .filter_map(|s| steps.get(&s.id).map(|u| (format!("step {}", s.id), *u)))
        .collect();
    // Steps no longer in the plan, if any.
    labelled.extend(
        steps
            .iter()
            .filter(|(id, _)| state.plan.step(id).is_none())
            .map(|(id, u)| (format!("step {id}"), *u)),
    );
    labelled.extend(roles);
    let rows: Vec<[String; 5]> = labelled
        .into_iter()
        .map(|(label, u)| {
            [
                label,
                output::plural(usize::try_from(u.llm_calls).unwrap_or(usize::MAX), "call"),
                format!("{} in", u.input_tokens),
                format!("{} out", u.output_tokens),
                price.map(|p| usd(p.cost(&u))).unwrap_or_default(),
            ]
        })
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let mut widths = [0usize; 5];
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut text = String::from("\nModel usage\n");
    for row in &rows {
        let mut line = String::new();
        for (i, (cell, width)) in row.iter().zip(widths).enumerate() {
            let pad = width.saturating_sub(cell.chars().count());
            line.push_str("  ");
            // The label and the calls to the left, tokens and cost to the right.
            if i < 2 {
                line.push_str(cell);
                line.extend(std::iter::repeat_n(' ', pad));
            } else {
                line.extend(std::iter::repeat_n(' ', pad));
                line.push_str(cell);
            }
        }
        text.push_str(line.trim_end());
        text.push('\n');
    }
    text
}

// ---------------------------------------------------------------------------
// Events

/// `stepwise show --events`: one line per event.
fn events(history: &[Event]) -> String {
    let seq_width = history.last().map_or(1, |e| e.seq.to_string().len());
    let kind_width = column_width(history.iter().map(|e| e.kind.name()));
    let mut text = String::new();
    for event in history {
        let detail = clip(&event_detail(&event.kind), 140);
        let line = format!(
            "{:>seq_width$}  {}  {:<kind_width$}  {detail}",
            event.seq,
            clock(event.at),
            event.kind.name(),
        );
        text.push_str(line.trim_end());
        text.push('\n');
    }
    text
}

/// `HH:MM:SS.mmm`, UTC.
fn clock(at: DateTime<Utc>) -> String {
    at.format("%H:%M:%S%.3f").to_string()
}

fn verdict_name(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::Continue => "continue",
        Verdict::Synthesize => "synthesize",
        Verdict::Replan => "replan",
        Verdict::NeedsReview => "needs_review",
    }
}

/// Steps in a draft (`{"steps": [...]}` or a bare array), if it has any.
fn draft_steps(draft: &Value) -> Option<usize> {
    match draft {
        Value::Array(steps) => Some(steps.len()),
        Value::Object(map) => map.get("steps").and_then(Value::as_array).map(Vec::len),
        _ => None,
    }
}

fn draft_detail(draft: &Value, usage: &Usage) -> String {
    let mut parts = Vec::new();
    if let Some(n) = draft_steps(draft) {
        parts.push(output::plural(n, "step"));
    }
    let tokens = usage.input_tokens + usage.output_tokens;
    if tokens > 0 {
        parts.push(format!("{tokens} tokens"));
    }
    parts.join(", ")
}

/// The short detail of an event: step, verdict, reason…
fn event_detail(kind: &EventKind) -> String {
    match kind {
        EventKind::RunStarted {
            input,
            max_replans,
            max_steps,
            ..
        } => format!(
            "{:?} (max_replans {max_replans}, max_steps {max_steps})",
            clip(input, 60)
        ),
        EventKind::InputRejected { reason } => reason.clone(),
        EventKind::InputPrepared { goal } => goal.goal.clone(),
        EventKind::PlanCreated { draft, usage } => draft_detail(draft, usage),
        EventKind::PlanValidated { plan } => format!(
            "version {}, {}",
            plan.version,
            output::plural(plan.steps.len(), "step")
        ),
        EventKind::PlanInvalid { diagnostics } => {
            let first = diagnostics
                .first()
                .map(|d| format!(": {d}"))
                .unwrap_or_default();
            format!("{}{first}", output::plural(diagnostics.len(), "problem"))
        }
        EventKind::PlanRepaired {
            attempt,
            draft,
            usage,
        } => {
            let rest = draft_detail(draft, usage);
            if rest.is_empty() {
                format!("attempt {attempt}")
            } else {
                format!("attempt {attempt}, {rest}")
            }
        }
        EventKind::PlanApproved { version, by, .. } => format!("version {version} by {by}"),
        EventKind::PlanRejected {
            version, reason, ..
        } => format!("version {version}: {reason}"),
        EventKind::StepStarted { step, attempt } => format!("{step} attempt {attempt}"),
        EventKind::StepSucceeded { step, result, .. } => {
            format!("{step} in {}", duration(result.duration_ms))
        }
        EventKind::StepFailed {
            step,
            attempt,
            failure,
        } => format!("{step} attempt {attempt}: {failure}"),
        EventKind::StepRetrying {
            step,
            next_attempt,
            delay_ms,
        } => format!(
            "{step} attempt {next_attempt} after {}",
            duration(*delay_ms)
        ),
        EventKind::StepTerminated { step, reason } => format!("{step}: {reason}"),
        EventKind::Assessed {
            step,
            verdict,
            reason,
            ..
        } => format!("{step} {}: {reason}", verdict_name(*verdict)),
        EventKind::StopConditionMet {
            condition, detail, ..
        } => format!("{condition}: {detail}"),
        EventKind::Replanned {
            replan_count,
            reason,
            ..
        } => format!("replan {replan_count}: {reason}"),
        EventKind::Synthesized {
            report,
            evidence,
            rejected_evidence,
            ..
        } => {
            let mut text = format!(
                "report of {} chars, {} cited",
                report.chars().count(),
                output::plural(evidence.len(), "source")
            );
            if !rejected_evidence.is_empty() {
                text.push_str(&format!(", {} refused", rejected_evidence.len()));
            }
            text
        }
        EventKind::NeedsReview { reason, brief, .. } => match brief {
            Some(brief) => format!(
                "{reason} (partial brief of {} chars, {} cited)",
                brief.report.chars().count(),
                output::plural(brief.evidence.len(), "source")
            ),
            None => reason.clone(),
        },
        EventKind::RunFailed { error, .. } => error.clone(),
        EventKind::PlanReviewRequested { version } => format!("version {version}"),
        EventKind::ApprovalRequested {
            step,
            tool,
            args_hash,
            ..
        } => format!("{step} ({tool}) hash {}", short_hash(args_hash)),
        EventKind::ApprovalGranted {
            step,
            args_hash,
            by,
        } => format!("{step} by {by}, hash {}", short_hash(args_hash)),
        EventKind::ApprovalDenied { step, reason, by } => format!("{step} by {by}: {reason}"),
        EventKind::AwaitingApproval {
            steps,
            plan_version,
        } => {
            let mut what: Vec<String> = steps.iter().map(|s| format!("step {s}")).collect();
            if let Some(v) = plan_version {
                what.insert(0, format!("plan version {v}"));
            }
            what.join(", ")
        }
        EventKind::StepInterrupted { step, attempt } => format!("{step} attempt {attempt}"),
        EventKind::RunResumed {
            by,
            max_replans,
            max_steps,
            changed,
            ..
        } => {
            let mut text = format!("by {by}");
            if let Some(n) = max_replans {
                text.push_str(&format!(", max_replans {n}"));
            }
            if let Some(n) = max_steps {
                text.push_str(&format!(", max_steps {n}"));
            }
            if !changed.is_empty() {
                text.push_str(&format!("; changed: {}", changed.join("; ")));
            }
            text
        }
        EventKind::RunCancelled { reason } => reason.clone(),
        EventKind::StrategyChosen {
            strategy, reason, ..
        } => format!("{strategy}: {reason}"),
        EventKind::StepAdded { step, .. } => format!(
            "{}: {} {}",
            step.id,
            step.tool,
            serde_json::Value::Object(step.args.clone())
        ),
        EventKind::StepSkipped { step, reason } => format!("{step}: {reason}"),
        EventKind::StepSummarized { step, summary, .. } => format!("{step}: {summary}"),
        EventKind::GapsNoted { gaps } => gaps.join("; "),
        EventKind::Verified {
            iteration,
            verification: v,
            ..
        } => format!(
            "iteration {iteration}: completeness {:.2}, confidence {:.2}; missing: {}",
            v.completeness,
            v.confidence,
            v.missing.join("; ")
        ),
        EventKind::ModelCalled { role, exchange } => {
            let what = match &exchange.outcome {
                stepwise_core::model::ExchangeOutcome::Response { response } => format!(
                    "ok, {} in / {} out tokens",
                    response.usage.input_tokens, response.usage.output_tokens
                ),
                stepwise_core::model::ExchangeOutcome::Error { message, .. } => {
                    format!("failed: {message}")
                }
            };
            format!(
                "{role} → {} (attempt {}): {what}",
                exchange.model, exchange.attempt
            )
        }
    }
}

// ---------------------------------------------------------------------------
// Mermaid

/// Node styles by step status.
const CLASS_DEFS: [(StepStatus, &str); 7] = [
    (
        StepStatus::Pending,
        "fill:#ffffff,stroke:#868e96,color:#212529",
    ),
    (
        StepStatus::Running,
        "fill:#d0ebff,stroke:#1971c2,color:#0b3d6e",
    ),
    (
        StepStatus::Succeeded,
        "fill:#d3f9d8,stroke:#2b8a3e,color:#1b4332",
    ),
    (
        StepStatus::Failed,
        "fill:#ffe3e3,stroke:#c92a2a,color:#7d1a1a",
    ),
    (
        StepStatus::Retrying,
        "fill:#fff3bf,stroke:#f08c00,color:#6b3f00",
    ),
    (
        StepStatus::Terminated,
        "fill:#ffe3e3,stroke:#c92a2a,color:#7d1a1a",
    ),
    (
        StepStatus::Skipped,
        "fill:#f1f3f5,stroke:#adb5bd,stroke-dasharray:5 5,color:#868e96",
    ),
];

/// `stepwise show --mermaid`: the plan as a `flowchart TD`, one node per step
/// with its status, an edge per dependency.
fn mermaid(state: &RunState) -> String {
    let mut text = String::from("flowchart TD\n");
    if state.plan.steps.is_empty() {
        text.push_str("    %% no plan yet\n");
    }
    let ids = node_ids(state.plan.steps.iter().map(|s| &s.id));
    for step in &state.plan.steps {
        let Some(node) = ids.get(&step.id) else {
            continue;
        };
        text.push_str(&format!(
            "    {node}[\"{}: {}<br/>{}\"]\n",
            mermaid_text(step.id.as_str()),
            mermaid_text(&step.tool),
            step.status.as_str()
        ));
    }
    for step in &state.plan.steps {
        for dep in &step.depends_on {
            if let (Some(from), Some(to)) = (ids.get(dep), ids.get(&step.id)) {
                text.push_str(&format!("    {from} --> {to}\n"));
            }
        }
    }
    for (status, style) in CLASS_DEFS {
        text.push_str(&format!("    classDef {} {style}\n", status.as_str()));
    }
    for step in &state.plan.steps {
        if let Some(node) = ids.get(&step.id) {
            text.push_str(&format!("    class {node} {};\n", step.status.as_str()));
        }
    }
    text
}

/// A safe Mermaid identifier per step: `s_` and the id with every character
/// outside `[A-Za-z0-9_]` replaced by `_` (the prefix keeps clear of keywords
/// such as `end`), with a numeric suffix should two ids end up alike.
fn node_ids<'a>(steps: impl Iterator<Item = &'a StepId>) -> BTreeMap<StepId, String> {
    let mut ids: BTreeMap<StepId, String> = BTreeMap::new();
    let mut taken: std::collections::BTreeSet<String> = std::collections::BTreeSet::new();
    for id in steps {
        if ids.contains_key(id) {
            continue;
        }
        let base: String = std::iter::once('s')
            .chain(std::iter::once('_'))
            .chain(id.as_str().chars().map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' {
                    c
                } else {
                    '_'
                }
            }))
            .collect();
        let mut node = base.clone();
        let mut n = 2;
        while taken.contains(&node) {
            node = format!("{base}_{n}");
            n += 1;
        }
        taken.insert(node.clone());
        ids.insert(id.clone(), node);
    }
    ids
}

/// Text safe inside a quoted Mermaid label: quotes, angle brackets and `#`
/// as Mermaid entity codes, line breaks as spaces.
fn mermaid_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '"' => out.push_str("#quot;"),
            '#' => out.push_str("#35;"),
            '<' => out.push_str("#lt;"),
            '>' => out.push_str("#gt;"),
            '\n' | '\r' | '\t' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

// ---------------------------------------------------------------------------
// Text helpers

/// Whitespace (newlines included) collapsed to single spaces.
pub(crate) fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// [`one_line`], cut to at most `max` characters with a trailing `…`.
pub(crate) fn clip(text: &str, max: usize) -> String {
    let text = one_line(text);
    if text.chars().count() <= max {
        return text;
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.truncate(out.trim_end().len());
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clipping_counts_characters_and_collapses_whitespace() {
        assert_eq!(clip("a  b\nc", 10), "a b c");
        assert_eq!(clip("abcdef", 4), "abc…");
        assert_eq!(clip("ééééé", 3), "éé…");
    }

    #[test]
    fn node_ids_are_safe_and_distinct() {
        let steps = [
            StepId::new("a-b"),
            StepId::new("a_b"),
            StepId::new("end"),
            StepId::new("ü x"),
        ];
        let ids = node_ids(steps.iter());
        assert_eq!(ids[&steps[0]], "s_a_b");
        assert_eq!(ids[&steps[1]], "s_a_b_2");
        assert_eq!(ids[&steps[2]], "s_end");
        assert_eq!(ids[&steps[3]], "s___x");
    }

    #[test]
    fn labels_escape_what_mermaid_would_read() {
        assert_eq!(
            mermaid_text("say \"hi\" <b>#1"),
            "say #quot;hi#quot; #lt;b#gt;#35;1"
        );
    }

    #[test]
    fn durations_read_naturally() {
        assert_eq!(duration(850), "850 ms");
        assert_eq!(duration(12_345), "12.3 s");
        assert_eq!(duration(243_000), "4 min 03 s");
    }
}
