//! `stepwise show RUN`: one run, as a summary, its events, its final output
//! (JSON) or its plan as a Mermaid flowchart. Only reads; never creates a
//! database that does not exist yet.

use std::path::PathBuf;

use anyhow::{Context, anyhow};
use stepwise_core::{EventKind, RunState, RunStatus, StepId, StepStatus};

use crate::cli::ShowArgs;
use crate::db;
use crate::error::{CliError, CliResult};
use crate::host::price;
use crate::output;
use crate::render::table::Table;
use crate::render::usage::{priced_output, usage_line, usage_table, usd};
use crate::render::{clip, describe_request, event, goal_of, mermaid, one_line, plan_diff, plural};

/// `stepwise show RUN [--events] [--json | --mermaid]`.
pub(crate) fn show(args: &ShowArgs, flag: Option<&PathBuf>) -> CliResult {
    let (_store, state) = db::open_run(flag, &args.run)?;
    let text = if let Some(range) = &args.diff {
        let plans = plan_diff::versions(&state);
        let range = (!range.is_empty()).then_some(range.as_str());
        let (before, after) =
            plan_diff::pick(&plans, range).map_err(|e| CliError::usage(anyhow!(e)))?;
        if args.json {
            let mut json = serde_json::to_string_pretty(&plan_diff::json(before, after))
                .context("cannot encode the difference")?;
            json.push('\n');
            json
        } else {
            plan_diff::text(before, after)
        }
    } else if args.json && args.events {
        let mut json = serde_json::to_string_pretty(&state.execution_history)
            .context("cannot encode the events")?;
        json.push('\n');
        json
    } else if args.json {
        let mut json = serde_json::to_string_pretty(&priced_output(&state)?)
            .context("cannot encode the run")?;
        json.push('\n');
        json
    } else if args.mermaid {
        mermaid::flowchart(&state)
    } else if args.events {
        event::listing(&state.execution_history)
    } else {
        summary(&state)
    };
    output::stdout(&text)?;
    Ok(())
}

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
    for e in &state.execution_history {
        match &e.kind {
            EventKind::StrategyChosen {
                routing: Some(r), ..
            } => {
                let yes = |b: bool| if b { "yes" } else { "no" };
                field(
                    &mut text,
                    "route",
                    &format!(
                        "{} (steps known up front: {}; three or more steps: {}; same tool repeated: {})",
                        r.route,
                        yes(r.answers.steps_known_up_front),
                        yes(r.answers.three_or_more_steps),
                        yes(r.answers.same_tool_repeated)
                    ),
                );
            }
            EventKind::StrategyEscalated { reason, .. } => {
                field(&mut text, "escalated", &one_line(reason));
            }
            _ => {}
        }
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
            plural(state.plan.steps.len(), "step")
        )
    };
    field(&mut text, "plan", &plan);
    field(
        &mut text,
        "replans",
        &format!("{} of at most {}", state.replan_count, state.max_replans),
    );
    field(&mut text, "usage", &usage_line(&state.usage));
    let price = price(state);
    if let Some((model, price)) = &price {
        field(
            &mut text,
            "cost",
            &format!("{} ({model})", usd(price.cost(&state.usage))),
        );
    }

    if !state.plan.steps.is_empty() {
        text.push_str(&format!("\nPlan (version {})\n", state.plan.version));
        let mut table = Table::headless(4).indent(2);
        for step in &state.plan.steps {
            let mut rest: Vec<String> = Vec::new();
            if !step.depends_on.is_empty() {
                let deps: Vec<&str> = step.depends_on.iter().map(StepId::as_str).collect();
                rest.push(format!("after {}", deps.join(", ")));
            }
            if step.attempts > 1 {
                rest.push(format!("({} attempts)", step.attempts));
            }
            if !step.description.is_empty() {
                rest.push(format!("— {}", clip(&step.description, 80)));
            }
            table.row([
                format!("{} {}", glyph(step.status), step.status.as_str()),
                step.id.to_string(),
                step.tool.clone(),
                rest.join("  "),
            ]);
        }
        text.push_str(&table.render());
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
