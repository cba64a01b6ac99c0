//! `stepwise reject RUN --reason TEXT`: refuses what a paused run waits for
//! (its plan version, its side-effect steps); the run stops for review, and
//! `reject` exits as a run that needs review does.

use std::path::PathBuf;

use anyhow::anyhow;
use stepwise_core::EventKind;
use stepwise_core::act;

use super::act::with_lease;
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
    act::awaiting(&state)?;
    let by = db::person();
    let rejected = with_lease(store.as_ref(), &state.run_id.to_string(), |state| {
        act::reject(state, &reason, &by)
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
