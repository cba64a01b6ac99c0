//! `stepwise reject RUN --reason TEXT`: refuses what a paused run waits for
//! (its plan version, its side-effect steps); the run stops for review, and
//! `reject` exits as a run that needs review does.

use std::path::PathBuf;

use anyhow::{anyhow, bail};
use stepwise_core::{EventKind, Usage};

use super::act::{approvable, waiting_for, with_lease};
use crate::cli::RejectArgs;
use crate::db;
use crate::error::{CliError, CliResult, ErrorKind};
use crate::output;
use crate::render::one_line;

/// `stepwise reject RUN --reason TEXT`.
pub(crate) fn reject(args: &RejectArgs, flag: Option<&PathBuf>) -> CliResult {
    let reason = one_line(&args.reason);
    if reason.is_empty() {
        return Err(CliError::usage(anyhow!(
            "--reason must say why (it is recorded)"
        )));
    }
    let (store, state) = db::open_run(flag, &args.run)?;
    approvable(&state)?;
    let rejected = with_lease(store.as_ref(), &args.run, |state| {
        approvable(state)?;
        let what = waiting_for(state);
        if what.is_empty() {
            bail!(
                "run {} has nothing waiting for a decision (its approvals are on record); to stop it, use: stepwise cancel {}",
                state.run_id,
                state.run_id
            );
        }
        let by = db::person();
        let mut kinds = Vec::new();
        if let Some(version) = state.pending_review {
            kinds.push(EventKind::PlanRejected {
                version,
                reason: reason.clone(),
                usage: Usage::default(),
            });
        }
        for step in state.pending_approvals.keys() {
            kinds.push(EventKind::ApprovalDenied {
                step: step.clone(),
                reason: reason.clone(),
                by: by.clone(),
            });
        }
        kinds.push(EventKind::NeedsReview {
            reason: format!("{by} rejected {}: {reason}", what.join(", ")),
            usage: stepwise_core::Usage::default(),
            // No roles here to write one; `stepwise resume` asks again.
            brief: None,
            ask_again: false,
        });
        Ok(kinds)
    })?;
    let (state, kinds) = rejected;
    let what: Vec<String> = kinds
        .iter()
        .filter_map(|kind| match kind {
            EventKind::PlanRejected { version, .. } => Some(format!("plan version {version}")),
            EventKind::ApprovalDenied { step, .. } => Some(format!("step {step}")),
            _ => None,
        })
        .collect();
    let run = &state.run_id;
    output::stdout(&format!(
        "rejected {}: {reason}\nrun {run} now needs review (exit status {}); to be asked again: stepwise resume {run}; to give up: stepwise cancel {run}\n",
        what.join(", "),
        ErrorKind::NeedsReview.code()
    ))?;
    // The line above says so; the exit code tells a script.
    Err(CliError::quiet(ErrorKind::NeedsReview))
}
