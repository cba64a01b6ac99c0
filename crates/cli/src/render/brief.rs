//! The Markdown `stepwise run` and `resume` print: the report when the run
//! earned one, else why it stopped and what a person can do about it.

use stepwise_core::{RunState, RunStatus, StepStatus};

use crate::host::Host;
use crate::review;

/// The Markdown for stdout: the report when the run is `ok`; when it needs
/// review, why, then its partial brief (what it found, cited, with its
/// gaps) and its plan problems with their fixes; otherwise a summary of why
/// it stopped, what ran and which gaps are open — never a report it did not
/// earn. A plan the user gave and `--repair` changed says how.
pub(crate) fn markdown(state: &RunState) -> String {
    let host = Host::of(state).ok();
    let mut text = body(state, host.as_ref());
    let repaired = review::repairs(state, host.as_ref());
    if !repaired.is_empty() {
        text.push_str("\n## Your plan, as repaired (--repair)\n\n");
        for change in repaired {
            text.push_str(&format!("- {change}\n"));
        }
    }
    text
}

fn body(state: &RunState, host: Option<&Host>) -> String {
    if let (RunStatus::Ok, Some(report)) = (state.status, &state.final_report) {
        let mut text = report.clone();
        if !text.ends_with('\n') {
            text.push('\n');
        }
        return text;
    }
    let title = match state.status {
        RunStatus::NeedsReview => "Needs review",
        RunStatus::AwaitingApproval => "Awaiting approval",
        RunStatus::Cancelled => "Cancelled",
        _ => "Run failed",
    };
    let goal = if state.goal.is_empty() {
        state.input.trim()
    } else {
        state.goal.as_str()
    };
    let goal = stepwise_core::goal::title(goal);
    let mut text = format!("# {title}: {goal}\n\n");
    if let Some(reason) = &state.blocked_reason {
        text.push_str(&format!("**Why:** {reason}\n"));
    }
    let brief = state
        .final_report
        .as_deref()
        .filter(|_| state.status == RunStatus::NeedsReview);
    if let Some(brief) = brief {
        // The brief's own title is the goal, already in the heading.
        let mut lines = brief.lines().peekable();
        while lines.peek().is_some_and(|l| l.trim().is_empty()) {
            lines.next();
        }
        if lines.peek().is_some_and(|l| l.starts_with("# ")) {
            lines.next();
        }
        let rest: Vec<&str> = lines.collect();
        text.push_str("\n_Partial brief: what the run found before it stopped._\n\n");
        text.push_str(rest.join("\n").trim());
        text.push('\n');
    }
    if !state.pending_approvals.is_empty() || state.pending_review.is_some() {
        text.push_str("\n## Waiting for approval\n\n");
        if let Some(v) = state.pending_review {
            text.push_str(&format!("- plan version {v}\n"));
        }
        for step in state.pending_approvals.keys() {
            let tool = super::requested(state, step).map_or_else(
                || {
                    state
                        .plan
                        .step(step)
                        .map_or("?", |s| s.tool.as_str())
                        .to_owned()
                },
                |(tool, _)| tool,
            );
            text.push_str(&format!("- step {step} ({tool})\n"));
        }
        text.push_str(&format!(
            "\nApprove with `stepwise approve {0}`, then continue with `stepwise resume {0}`.\n",
            state.run_id
        ));
    }
    if brief.is_none() && !state.plan.steps.is_empty() {
        text.push_str(&format!("\n## Plan (version {})\n\n", state.plan.version));
        for s in &state.plan.steps {
            let mark = if s.status == StepStatus::Succeeded {
                "x"
            } else {
                " "
            };
            text.push_str(&format!(
                "- [{mark}] {} ({}, {}): {}\n",
                s.id, s.tool, s.status, s.description
            ));
        }
    }
    if !state.plan_errors.is_empty() {
        text.push_str("\n## Plan problems\n\n");
        for d in &state.plan_errors {
            let fix = review::fix(d, state, host);
            text.push_str(&format!("- {d}\n  fix: {fix}\n"));
        }
        if host.is_some_and(|h| h.plan.is_some() && !h.repair) {
            text.push_str(
                "\nYour plan (--plan) was not changed. Fix it and run again, or add --repair to let stepwise repair it (the output then says what it changed).\n",
            );
        }
    }
    if brief.is_none() {
        text.push_str("\n## Unresolved gaps\n\n");
        if state.knowledge_gaps.is_empty() {
            text.push_str("None recorded.\n");
        } else {
            for gap in &state.knowledge_gaps {
                text.push_str(&format!("- {gap}\n"));
            }
        }
    }
    text
}
