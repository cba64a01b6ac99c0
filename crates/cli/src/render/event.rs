//! An event in words, in the two places a person reads them:
//!
//! - [`line`]: the live progress line, which stands alone in a CI log, so it
//!   says what happened (`[a] succeeded in 12 ms`);
//! - [`detail`]: the detail column of `show --events`, which sits beside the
//!   event's kind and time, so it leaves the verb out (`a in 12 ms`).
//!
//! Both are written here, next to each other and from the same pieces
//! (durations, verdicts, step lists, model calls), so a new event kind is
//! described once in this file and the two views cannot drift.

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
    use EventKind as K;
    let text = match kind {
        K::RunStarted { run_id, .. } => format!("run {run_id} started"),
        K::InputRejected { reason } => format!("input rejected: {reason}"),
        K::InputPrepared { goal } => format!("goal: {}", goal.goal),
        K::PlanCreated { .. } => "plan drafted".to_owned(),
        K::PlanValidated { plan } => {
            let steps: Vec<String> = plan.steps.iter().map(step_with_deps).collect();
            let (v, n) = (plan.version, plural(plan.steps.len(), "step"));
            format!("plan v{v} validated: {n} — {}", steps.join(", "))
        }
        K::PlanInvalid { diagnostics } => {
            let mut codes: Vec<&str> = diagnostics.iter().map(|d| d.code.as_str()).collect();
            let mut seen = HashSet::new();
            codes.retain(|c| seen.insert(*c));
            let n = plural(diagnostics.len(), "problem");
            format!("plan invalid: {n} ({})", codes.join(", "))
        }
        K::PlanRepaired { attempt, .. } => format!("plan repaired (attempt {attempt})"),
        K::PlanApproved { version, by, .. } => format!("plan v{version} approved by {by}"),
        K::PlanRejected {
            version: v, reason, ..
        } => format!("plan v{v} rejected: {reason}"),
        K::StepStarted { step, attempt } => {
            let mut text = format!("[{step}] running");
            if *attempt > 1 {
                text.push_str(&format!(" (attempt {attempt})"));
            }
            if let Some(s) = plan.step(step) {
                text.push_str(&format!(" — {}", s.description));
            }
            text
        }
        K::StepSucceeded { step, result, .. } => {
            format!("[{step}] succeeded in {}", duration(result.duration_ms))
        }
        K::StepFailed { step, failure, .. } => {
            format!("[{step}] failed ({}): {}", failure.class, failure.message)
        }
        K::StepRetrying {
            step,
            next_attempt: n,
            delay_ms: ms,
        } => format!("[{step}] retrying in {} (attempt {n})", duration(*ms)),
        K::StepTerminated { step, reason } => format!("[{step}] terminated: {reason}"),
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
            let head = clip(
                &format!("[{step}] assessed: {verdict}{unmet} — {reason}"),
                MAX_LINE,
            );
            let gaps = new_gaps
                .iter()
                .map(|g| format!("  {}", clip(&format!("gap: {g}"), MAX_LINE - 2)));
            return std::iter::once(head).chain(gaps).collect();
        }
        K::StopConditionMet {
            condition, detail, ..
        } => format!("stop: {condition} — {detail}"),
        K::Replanned {
            replan_count: n,
            reason,
            ..
        } => format!("replan {n}: {reason}"),
        K::Synthesized {
            evidence,
            rejected_evidence: rejected,
            ..
        } => match (evidence.len(), rejected.len()) {
            (n, 0) => format!("report written ({n} evidence)"),
            (n, r) => format!("report written ({n} evidence, {r} rejected)"),
        },
        K::NeedsReview {
            reason,
            brief: Some(brief),
            ..
        } => format!(
            "needs review: {reason} (partial brief, {} evidence)",
            brief.evidence.len()
        ),
        K::NeedsReview { reason, .. } => format!("needs review: {reason}"),
        K::RunFailed { error, .. } => format!("run failed: {error}"),
        K::PlanReviewRequested { version } => format!("plan v{version} waits for review"),
        K::ApprovalRequested {
            step,
            tool,
            args,
            destructive,
            ..
        } => {
            let warning = if *destructive { " (destructive)" } else { "" };
            format!("[{step}] needs approval: {tool}{warning} {args}")
        }
        K::ApprovalGranted { step, by, .. } => format!("[{step}] approved by {by}"),
        K::ApprovalDenied { step, by, reason } => format!("[{step}] refused by {by}: {reason}"),
        K::AwaitingApproval { .. } => "paused: waiting for approval".to_owned(),
        K::StepInterrupted { step, attempt } => {
            format!("[{step}] attempt {attempt} was interrupted (the process stopped)")
        }
        K::RunResumed { by, .. } => format!("resumed by {by}"),
        K::RunCancelled { reason } => format!("cancelled: {reason}"),
        K::ModelCalled { role, exchange } => model_line(role, exchange),
        K::StrategyChosen {
            strategy, reason, ..
        } => format!("strategy {strategy}: {reason}"),
        K::StrategyEscalated { reason, .. } => format!("escalated to plan-execute: {reason}"),
        K::StepAdded { step, .. } => format!("[{}] added: {}", step.id, tool_call(step)),
        K::StepSkipped { step, reason } => format!("[{step}] skipped: {reason}"),
        K::StepSummarized { step, summary, .. } => format!("[{step}] summary: {summary}"),
        K::GapsNoted { gaps } => format!("gaps: {}", gaps.join("; ")),
        K::Verified {
            iteration,
            verification: v,
            ..
        } => format!(
            "verified (iteration {iteration}): completeness {:.2}, confidence {:.2}, {} missing",
            v.completeness,
            v.confidence,
            v.missing.len()
        ),
    };
    vec![clip(&text, MAX_LINE)]
}

/// The detail of an event beside its kind in `show --events`: step,
/// verdict, reason, counts — whatever the kind's name does not already say.
pub(crate) fn detail(kind: &EventKind) -> String {
    use EventKind as K;
    let text = match kind {
        K::RunStarted {
            input,
            max_replans,
            max_steps,
            ..
        } => format!(
            "{:?} (max_replans {max_replans}, max_steps {max_steps})",
            clip(input, 60)
        ),
        K::InputRejected { reason } => reason.clone(),
        K::InputPrepared { goal } => goal.goal.clone(),
        K::PlanCreated { draft, usage } => draft_detail(draft, usage),
        K::PlanValidated { plan } => format!(
            "version {}, {}",
            plan.version,
            plural(plan.steps.len(), "step")
        ),
        K::PlanInvalid { diagnostics } => {
            let first = diagnostics
                .first()
                .map(|d| format!(": {d}"))
                .unwrap_or_default();
            format!("{}{first}", plural(diagnostics.len(), "problem"))
        }
        K::PlanRepaired {
            attempt,
            draft,
            usage,
        } => match draft_detail(draft, usage) {
            rest if rest.is_empty() => format!("attempt {attempt}"),
            rest => format!("attempt {attempt}, {rest}"),
        },
        K::PlanApproved { version, by, .. } => format!("version {version} by {by}"),
        K::PlanRejected {
            version, reason, ..
        } => format!("version {version}: {reason}"),
        K::StepStarted { step, attempt } => format!("{step} attempt {attempt}"),
        K::StepSucceeded { step, result, .. } => {
            format!("{step} in {}", duration(result.duration_ms))
        }
        K::StepFailed {
            step,
            attempt,
            failure,
        } => format!("{step} attempt {attempt}: {failure}"),
        K::StepRetrying {
            step,
            next_attempt,
            delay_ms,
        } => format!(
            "{step} attempt {next_attempt} after {}",
            duration(*delay_ms)
        ),
        K::StepTerminated { step, reason } => format!("{step}: {reason}"),
        K::Assessed {
            step,
            verdict,
            reason,
            ..
        } => format!("{step} {}: {reason}", verdict_name(*verdict)),
        K::StopConditionMet {
            condition, detail, ..
        } => format!("{condition}: {detail}"),
        K::Replanned {
            replan_count,
            reason,
            ..
        } => format!("replan {replan_count}: {reason}"),
        K::Synthesized {
            report,
            evidence,
            rejected_evidence,
            ..
        } => {
            let mut text = format!(
                "report of {} chars, {} cited",
                report.chars().count(),
                plural(evidence.len(), "source")
            );
            if !rejected_evidence.is_empty() {
                text.push_str(&format!(", {} refused", rejected_evidence.len()));
            }
            text
        }
        K::NeedsReview { reason, brief, .. } => match brief {
            Some(brief) => format!(
                "{reason} (partial brief of {} chars, {} cited)",
                brief.report.chars().count(),
                plural(brief.evidence.len(), "source")
            ),
            None => reason.clone(),
        },
        K::RunFailed { error, .. } => error.clone(),
        K::PlanReviewRequested { version } => format!("version {version}"),
        K::ApprovalRequested {
            step,
            tool,
            args_hash,
            destructive,
            ..
        } => format!(
            "{step} ({}) hash {}",
            approval_tool(tool, *destructive),
            short_hash(args_hash)
        ),
        K::ApprovalGranted {
            step,
            args_hash,
            by,
        } => format!("{step} by {by}, hash {}", short_hash(args_hash)),
        K::ApprovalDenied { step, reason, by } => format!("{step} by {by}: {reason}"),
        K::AwaitingApproval {
            steps,
            plan_version,
        } => {
            let mut what: Vec<String> = steps.iter().map(|s| format!("step {s}")).collect();
            if let Some(v) = plan_version {
                what.insert(0, format!("plan version {v}"));
            }
            what.join(", ")
        }
        K::StepInterrupted { step, attempt } => format!("{step} attempt {attempt}"),
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
            text
        }
        K::RunCancelled { reason } => reason.clone(),
        K::StrategyChosen {
            strategy, reason, ..
        } => format!("{strategy}: {reason}"),
        K::StrategyEscalated { reason, .. } => reason.clone(),
        K::StepAdded { step, .. } => format!("{}: {}", step.id, tool_call(step)),
        K::StepSkipped { step, reason } => format!("{step}: {reason}"),
        K::StepSummarized { step, summary, .. } => format!("{step}: {summary}"),
        K::GapsNoted { gaps } => gaps.join("; "),
        K::Verified {
            iteration,
            verification: v,
            ..
        } => format!(
            "iteration {iteration}: completeness {:.2}, confidence {:.2}; missing: {}",
            v.completeness,
            v.confidence,
            v.missing.join("; ")
        ),
        K::ModelCalled { role, exchange } => {
            let what = match &exchange.outcome {
                ExchangeOutcome::Response { response } => format!(
                    "ok, {} in / {} out tokens",
                    response.usage.input_tokens, response.usage.output_tokens
                ),
                ExchangeOutcome::Error { message, .. } => format!("failed: {message}"),
            };
            format!(
                "{role} → {} (attempt {}): {what}",
                exchange.model, exchange.attempt
            )
        }
    };
    clip(&text, MAX_DETAIL)
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
