//! `stepwise approve RUN [--step ID]`: approves the plan version a paused
//! run waits for and/or its side-effect steps, each with exactly the
//! arguments it asked for (the hash on record).

use std::path::PathBuf;

use stepwise_core::act::{self, Approve, waiting_for};
use stepwise_core::{EventKind, StepId};

use super::act::with_lease;
use crate::cli::ApproveArgs;
use crate::db;
use crate::error::CliResult;
use crate::output;
use crate::render::{describe_request, plural};

/// `stepwise approve RUN [--step ID]`.
pub(crate) fn approve(args: &ApproveArgs, flag: Option<&PathBuf>) -> CliResult {
    let (store, state) = db::open_run(flag, &args.run)?;
    act::awaiting(&state)?; // fail early, before touching the lease
    let named: Vec<(StepId, Option<String>)> = args
        .step
        .iter()
        .map(|s| (StepId::new(s.as_str()), None))
        .collect();
    let what = if named.is_empty() {
        Approve::Everything
    } else {
        Approve::Named {
            plan_version: None,
            steps: &named,
        }
    };
    let by = db::person();
    let (state, granted) = with_lease(store.as_ref(), &state.run_id.to_string(), |state| {
        act::approve(state, what, &by)
    })?;

    let run = &state.run_id;
    let mut text = String::new();
    if granted.is_empty() {
        text.push_str(&format!(
            "run {run} has nothing left to approve (its approvals are on record)\n"
        ));
    }
    for kind in &granted {
        match kind {
            EventKind::PlanApproved { version, .. } => {
                text.push_str(&format!(
                    "approved plan version {version} ({})\n",
                    plural(state.plan.steps.len(), "step")
                ));
            }
            EventKind::ApprovalGranted {
                step, args_hash, ..
            } => {
                text.push_str(&format!(
                    "approved {}\n",
                    describe_request(&state, step, args_hash)
                ));
            }
            _ => {}
        }
    }
    if state.pending_review.is_some() || !state.pending_approvals.is_empty() {
        text.push_str(&format!(
            "still waiting for: {}\napprove with: stepwise approve {run}\n",
            waiting_for(&state).join(", ")
        ));
    } else {
        text.push_str(&format!("continue with: stepwise resume {run}\n"));
    }
    output::stdout(&text)?;
    Ok(())
}
