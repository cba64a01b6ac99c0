//! An event in words, in the two places a person reads them:
//!
//! - [`line`]: the live progress line, which stands alone in a CI log, so it
//!   says what happened (`[a] succeeded in 12 ms`);
//! - [`detail`]: the detail column of `show --events`, which sits beside the
//!   event's kind and time, so it leaves the verb out (`a in 12 ms`).
//!
//! Both come from one match over the event kinds ([`describe`]), each arm
//! giving the line and the detail from the same pieces (durations,
//! verdicts, step lists, model calls), so a new event kind is described
//! once and the two views cannot drift.

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use serde_json::Value;
use stepwise_core::model::{ExchangeOutcome, ModelExchange};
use stepwise_core::{Event, EventKind, Plan, Step, Usage};

use super::{approval_tool, clip, duration, join_ids, plural, short_hash, verdict_name};

/// Longest progress line: one event stays one readable line in a CI log.
pub(crate) const MAX_LINE: usize = 160;
/// Longest detail in `show --events`.
const MAX_DETAIL: usize = 140;

/// The progress lines for one event (usually one; an assessment adds a line
/// per new gap). `plan` is the plan as folded so far, for step descriptions.
pub(crate) fn line(kind: &EventKind, plan: &Plan) -> Vec<String> {
    let described = describe(kind, plan);
    std::iter::once(clip(&described.line, MAX_LINE))
        .chain(
            described
                .more
                .iter()
                .map(|l| format!("  {}", clip(l, MAX_LINE - 2))),
        )
        .collect()
}

/// The detail of an event beside its kind in `show --events`: step,
/// verdict, reason, counts — whatever the kind's name does not already say.
pub(crate) fn detail(kind: &EventKind) -> String {
    clip(&describe(kind, &Plan::default()).detail, MAX_DETAIL)
}

/// One event in words, both ways (see the module's doc).
struct Described {
    /// The progress line, with its verb.
    line: String,
    /// Lines under it (an assessment's new gaps).
    more: Vec<String>,
    /// The detail beside the kind's name.
    detail: String,
}

impl Described {
    fn new(line: String, detail: String) -> Self {
        Self {
            line,
            more: Vec::new(),
            detail,
        }
    }
}

/// Each event kind, described once: its progress line and its detail.
fn describe(kind: &EventKind, plan: &Plan) -> Described {
    use EventKind as K;
    let both = Described::new;
    match kind {
        K::RunStarted {
            run_id,
            input,
            max_replans,
            max_steps,
            ..
        } => both(
            format!("run {run_id} started"),
            format!(
                "{:?} (max_replans {max_replans}, max_steps {max_steps})",
                clip(input, 60)
            ),
        ),
        K::InputRejected { reason } => both(format!("input rejected: {reason}"), reason.clone()),
        K::InputPrepared { goal } => both(format!("goal: {}", goal.goal), goal.goal.clone()),
        K::PlanCreated { draft, usage } => {
            both("plan drafted".to_owned(), draft_detail(draft, usage))
        }
        K::PlanValidated { plan } => {
            let steps: Vec<String> = plan.steps.iter().map(step_with_deps).collect();
            let (v, n) = (plan.version, plural(plan.steps.len(), "step"));
            both(
                format!("plan v{v} validated: {n} — {}", steps.join(", ")),
                format!("version {v}, {n}"),
            )
        }
        K::PlanInvalid { diagnostics } => {
            let mut codes: Vec<&str> = diagnostics.iter().map(|d| d.code.as_str()).collect();
            let mut seen = HashSet::new();
            codes.retain(|c| seen.insert(*c));
            let n = plural(diagnostics.len(), "problem");
            let first = diagnostics
                .first()
                .map(|d| format!(": {d}"))
                .unwrap_or_default();
            both(
                format!("plan invalid: {n} ({})", codes.join(", ")),
                format!("{n}{first}"),
            )
        }
        K::PlanRepaired {
            attempt,
            draft,
            usage,
        } => both(
            format!("plan repaired (attempt {attempt})"),
            match draft_detail(draft, usage) {
                rest if rest.is_empty() => format!("attempt {attempt}"),
                rest => format!("attempt {attempt}, {rest}"),
            },
        ),
        K::PlanApproved { version, by, .. } => both(
            format!("plan v{version} approved by {by}"),
            format!("version {version} by {by}"),
        ),
        K::PlanRejected {
            version: v, reason, ..
        } => both(
            format!("plan v{v} rejected: {reason}"),
            format!("version {v}: {reason}"),
        ),
        K::StepStarted { step, attempt } => {
            let mut text = format!("[{step}] running");
            if *attempt > 1 {
                text.push_str(&format!(" (attempt {attempt})"));
            }
            if let Some(s) = plan.step(step) {
                text.push_str(&format!(" — {}", s.description));
            }
            both(text, format!("{step} attempt {attempt}"))
        }
        K::StepSucceeded { step, result, .. } => {
            let took = duration(result.duration_ms);
            both(
                format!("[{step}] succeeded in {took}"),
                format!("{step} in {took}"),
            )
        }
        K::StepFailed {
            step,
            attempt,
            failure,
        } => both(
            format!("[{step}] failed ({}): {}", failure.class, failure.message),
            format!("{step} attempt {attempt}: {failure}"),
        ),
        K::StepRetrying {
            step,
            next_attempt: n,
            delay_ms: ms,
        } => both(
            format!("[{step}] retrying in {} (attempt {n})", duration(*ms)),
            format!("{step} attempt {n} after {}", duration(*ms)),
        ),
        K::StepTerminated { step, reason } => both(
            format!("[{step}] terminated: {reason}"),
            format!("{step}: {reason}"),
        ),
        K::Assessed {
            step,
            acceptance_met: met,
            verdict,
            reason,
            new_gaps,
            ..
        } => {
            let unmet = if *met { "" } else { " (criteria unmet)" };
            let verdict = verdict_name(*verdict);
            Described {
                line: format!("[{step}] assessed: {verdict}{unmet} — {reason}"),
                more: new_gaps.iter().map(|g| format!("gap: {g}")).collect(),
                detail: format!("{step} {verdict}: {reason}"),
            }
        }
        K::StopConditionMet {
            condition, detail, ..
        } => both(
            format!("stop: {condition} — {detail}"),
            format!("{condition}: {detail}"),
        ),
        K::Replanned {
            replan_count: n,
            reason,
            ..
        } => {
            let text = format!("replan {n}: {reason}");
            both(text.clone(), text)
        }
        K::Synthesized {
            report,
            evidence,
            rejected_evidence: rejected,
            ..
        } => {
            let mut detail = format!(
                "report of {} chars, {} cited",
                report.chars().count(),
                plural(evidence.len(), "source")
            );
            if !rejected.is_empty() {
                detail.push_str(&format!(", {} refused", rejected.len()));
            }
            let line = match (evidence.len(), rejected.len()) {
                (n, 0) => format!("report written ({n} evidence)"),
                (n, r) => format!("report written ({n} evidence, {r} rejected)"),
            };
            both(line, detail)
        }
        K::NeedsReview { reason, brief, .. } => match brief {
            Some(brief) => both(
                format!(
                    "needs review: {reason} (partial brief, {} evidence)",
                    brief.evidence.len()
                ),
                format!(
                    "{reason} (partial brief of {} chars, {} cited)",
                    brief.report.chars().count(),
                    plural(brief.evidence.len(), "source")
                ),
            ),
            None => both(format!("needs review: {reason}"), reason.clone()),
        },
        K::RunFailed { error, .. } => both(format!("run failed: {error}"), error.clone()),
        K::PlanReviewRequested { version } => both(
            format!("plan v{version} waits for review"),
            format!("version {version}"),
        ),
        K::ApprovalRequested {
            step,
            tool,
            args,
            args_hash,
            destructive,
        } => {
            let warning = if *destructive { " (destructive)" } else { "" };
            both(
                format!("[{step}] needs approval: {tool}{warning} {args}"),
                format!(
                    "{step} ({}) hash {}",
                    approval_tool(tool, *destructive),
                    short_hash(args_hash)
                ),
            )
        }
        K::ApprovalGranted {
            step,
            args_hash,
            by,
        } => both(
            format!("[{step}] approved by {by}"),
            format!("{step} by {by}, hash {}", short_hash(args_hash)),
        ),
        K::ApprovalDenied { step, by, reason } => both(
            format!("[{step}] refused by {by}: {reason}"),
            format!("{step} by {by}: {reason}"),
        ),
        K::AwaitingApproval {
            steps,
            plan_version,
        } => {
            let mut what: Vec<String> = steps.iter().map(|s| format!("step {s}")).collect();
            if let Some(v) = plan_version {
                what.insert(0, format!("plan version {v}"));
            }
            both("paused: waiting for approval".to_owned(), what.join(", "))
        }
        K::StepInterrupted { step, attempt } => both(
            format!("[{step}] attempt {attempt} was interrupted (the process stopped)"),
            format!("{step} attempt {attempt}"),
        ),
        K::RunResumed {
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
            both(format!("resumed by {by}"), text)
        }
        K::RunCancelled { reason } => both(format!("cancelled: {reason}"), reason.clone()),
        K::ModelCalled { role, exchange } => {
            let what = match &exchange.outcome {
                ExchangeOutcome::Response { response } => format!(
                    "ok, {} in / {} out tokens",
                    response.usage.input_tokens, response.usage.output_tokens
                ),
                ExchangeOutcome::Error { message, .. } => format!("failed: {message}"),
            };
            both(
                model_line(role, exchange),
                format!(
                    "{role} → {} (attempt {}): {what}",
                    exchange.model, exchange.attempt
                ),
            )
        }
        K::StrategyChosen {
            strategy, reason, ..
        } => both(
            format!("strategy {strategy}: {reason}"),
            format!("{strategy}: {reason}"),
        ),
        K::StrategyEscalated { reason, .. } => both(
            format!("escalated to plan-execute: {reason}"),
            reason.clone(),
        ),
        K::StepAdded { step, .. } => both(
            format!("[{}] added: {}", step.id, tool_call(step)),
            format!("{}: {}", step.id, tool_call(step)),
        ),
        K::StepSkipped { step, reason } => both(
            format!("[{step}] skipped: {reason}"),
            format!("{step}: {reason}"),
        ),
        K::StepSummarized { step, summary, .. } => both(
            format!("[{step}] summary: {summary}"),
            format!("{step}: {summary}"),
        ),
        K::GapsNoted { gaps } => both(format!("gaps: {}", gaps.join("; ")), gaps.join("; ")),
        K::Verified {
            iteration,
            verification: v,
            ..
        } => both(
            format!(
                "verified (iteration {iteration}): completeness {:.2}, confidence {:.2}, {} missing",
                v.completeness,
                v.confidence,
                v.missing.len()
            ),
            format!(
                "iteration {iteration}: completeness {:.2}, confidence {:.2}; missing: {}",
                v.completeness,
                v.confidence,
                v.missing.join("; ")
            ),
        ),
    }
}

/// `show --events`: one line per event — seq, time (UTC), kind, [`detail`].
pub(crate) fn listing(history: &[Event]) -> String {
    let seq_width = history.last().map_or(1, |e| e.seq.to_string().len());
    let kind_width = history
        .iter()
        .map(|e| e.kind.name().chars().count())
        .max()
        .unwrap_or(0);
    let mut text = String::new();
    for event in history {
        let line = format!(
            "{:>seq_width$}  {}  {:<kind_width$}  {}",
            event.seq,
            clock(event.at),
            event.kind.name(),
            detail(&event.kind),
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

/// `c (after a, b)`: a step and what it waits for.
fn step_with_deps(step: &Step) -> String {
    match step.depends_on.as_slice() {
        [] => step.id.to_string(),
        deps => format!("{} (after {})", step.id, join_ids(deps)),
    }
}

/// `search_notes {"query":"…"}`: the call a ReAct step makes.
fn tool_call(step: &Step) -> String {
    format!("{} {}", step.tool, Value::Object(step.args.clone()))
}

/// Steps in a draft (`{"steps": [...]}` or a bare array), if it has any.
fn draft_steps(draft: &Value) -> Option<usize> {
    match draft {
        Value::Array(steps) => Some(steps.len()),
        Value::Object(map) => map.get("steps").and_then(Value::as_array).map(Vec::len),
        _ => None,
    }
}

/// `3 steps, 1200 tokens`: a draft's size and what it cost.
fn draft_detail(draft: &Value, usage: &Usage) -> String {
    let mut parts = Vec::new();
    if let Some(n) = draft_steps(draft) {
        parts.push(plural(n, "step"));
    }
    let tokens = usage.input_tokens + usage.output_tokens;
    if tokens > 0 {
        parts.push(format!("{tokens} tokens"));
    }
    parts.join(", ")
}

/// One model call: who asked, what came back, what it cost.
fn model_line(role: &str, exchange: &ModelExchange) -> String {
    let attempt = if exchange.attempt > 1 {
        format!(" (attempt {})", exchange.attempt)
    } else {
        String::new()
    };
    match &exchange.outcome {
        ExchangeOutcome::Response { response } => format!(
            "{role}: {} answered{attempt} in {} · {} in / {} out tokens",
            exchange.model,
            duration(exchange.duration_ms),
            response.usage.input_tokens,
            response.usage.output_tokens
        ),
        ExchangeOutcome::Error { class, message, .. } => {
            format!(
                "{role}: {} failed{attempt} ({class}): {message}",
                exchange.model
            )
        }
    }
}
