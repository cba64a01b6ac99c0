//! `stepwise approve RUN [--step ID]`: approves the plan version a paused
//! run waits for and/or its side-effect steps, each with exactly the
//! arguments it asked for (the hash on record).

use std::path::PathBuf;

use anyhow::bail;
use stepwise_core::{EventKind, RunState, StepId, Usage};

use super::act::{approvable, waiting_for, with_lease};
use crate::cli::ApproveArgs;
use crate::db;
use crate::error::CliResult;
use crate::output;
use crate::render::{describe_request, plural};

/// `stepwise approve RUN [--step ID]`.
pub(crate) fn approve(args: &ApproveArgs, flag: Option<&PathBuf>) -> CliResult {
    let (store, state) = db::open_run(flag, &args.run)?;
    approvable(&state)?; // fail early, before touching the lease
    let (state, granted) = with_lease(store.as_ref(), &args.run, |state| {
        approvable(state)?;
        let by = db::person();
        let mut kinds = Vec::new();
        match &args.step {
            Some(step) => {
                let step = StepId::new(step.as_str());
                if !state.pending_approvals.contains_key(&step) {
                    bail!(
                        "run {} has no approval pending for step {step}; {}",
                        state.run_id,
                        pending_list(state)
                    );
                }
                kinds.push(grant(state, &step, &by));
            }
            None => {
                if let Some(version) = state.pending_review {
                    kinds.push(EventKind::PlanApproved {
                        version,
                        by: by.clone(),
                        usage: Usage::default(),
                    });
                }
                for step in state.pending_approvals.keys() {
                    kinds.push(grant(state, step, &by));
                }
            }
        }
        Ok(kinds)
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

/// `approval_granted` for a pending step, naming the hash it asked for.
fn grant(state: &RunState, step: &StepId, by: &str) -> EventKind {
    EventKind::ApprovalGranted {
        step: step.clone(),
        args_hash: state
            .pending_approvals
            .get(step)
            .cloned()
            .unwrap_or_default(),
        by: by.to_owned(),
    }
}

/// `it waits for: step a, step b` (for an error about `--step`).
fn pending_list(state: &RunState) -> String {
    let what = waiting_for(state);
    if what.is_empty() {
        "it waits for nothing (its approvals are on record)".to_owned()
    } else {
        format!("it waits for: {}", what.join(", "))
    }
}
