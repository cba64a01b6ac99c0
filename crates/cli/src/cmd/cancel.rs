//! `stepwise cancel RUN [--reason TEXT]`: ends a run that has not ended
//! and that no process is working on.

use std::path::PathBuf;

use anyhow::bail;
use stepwise_core::{EventKind, RunState, RunStatus};

use super::act::with_lease;
use crate::cli::CancelArgs;
use crate::db;
use crate::error::CliResult;
use crate::output;
use crate::render::one_line;

/// `stepwise cancel RUN [--reason TEXT]`.
pub(crate) fn cancel(args: &CancelArgs, flag: Option<&PathBuf>) -> CliResult {
    let reason = match one_line(&args.reason) {
        r if r.is_empty() => "cancelled by a person".to_owned(),
        r => r,
    };
    let (store, state) = db::open_run(flag, &args.run)?;
    cancellable(&state)?;
    let (state, _) = with_lease(store.as_ref(), &args.run, |state| {
        cancellable(state)?;
        Ok(vec![EventKind::RunCancelled {
            reason: reason.clone(),
        }])
    })?;
    output::stdout(&format!("cancelled run {}: {reason}\n", state.run_id))?;
    Ok(())
}

/// A run that ended stays ended.
fn cancellable(state: &RunState) -> anyhow::Result<()> {
    match state.status {
        RunStatus::Ok | RunStatus::Failed | RunStatus::Cancelled => bail!(
            "run {} already ended ({})",
            state.run_id,
            state.status.as_str()
        ),
        RunStatus::Running | RunStatus::NeedsReview | RunStatus::AwaitingApproval => Ok(()),
    }
}
