//! `stepwise cancel RUN [--reason TEXT]`: ends a run that has not ended
//! and that no process is working on.

use std::path::PathBuf;

use stepwise_core::act;

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
    act::cancel(&state, &reason)?; // fail early, before touching the lease
    let (state, _) = with_lease(store.as_ref(), &state.run_id.to_string(), |state| {
        act::cancel(state, &reason)
    })?;
    output::stdout(&format!("cancelled run {}: {reason}\n", state.run_id))?;
    Ok(())
}
