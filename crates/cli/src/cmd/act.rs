//! What `approve`, `reject` and `cancel` share: a person acts on a run that
//! no process is working on. Each takes the run's lease (so it cannot write
//! underneath a live run), appends its events fenced by that lease, and
//! gives the lease back.

use anyhow::{Context, bail};
use stepwise_core::{EventKind, RunId, RunState, RunStatus};

use crate::db;
use crate::output;

/// Only a run paused at `awaiting_approval` takes approvals and refusals.
pub(super) fn approvable(state: &RunState) -> anyhow::Result<()> {
    if state.status == RunStatus::AwaitingApproval {
        Ok(())
    } else {
        bail!(
            "run {} is not waiting for an approval (it is {})",
            state.run_id,
            state.status.as_str()
        )
    }
}

/// `plan version 2`, `step save`, …: what the run waits for.
pub(super) fn waiting_for(state: &RunState) -> Vec<String> {
    let mut what: Vec<String> = state
        .pending_review
        .iter()
        .map(|v| format!("plan version {v}"))
        .collect();
    what.extend(state.pending_approvals.keys().map(|s| format!("step {s}")));
    what
}

/// Takes the run's lease, reloads its state under it, appends the events
/// `decide` returns (fenced), and gives the lease back whatever happened.
/// Returns the state after the append and the events' kinds.
pub(super) fn with_lease(
    store: &dyn db::RunStore,
    run: &str,
    decide: impl FnOnce(&RunState) -> anyhow::Result<Vec<EventKind>>,
) -> anyhow::Result<(RunState, Vec<EventKind>)> {
    let run_id = RunId(run.to_owned());
    db::block_on(async {
        // A dead holder on this host is taken over; a live one is a clear error.
        let lease = db::take_lease(store, &run_id).await?;
        let result = async {
            let state = db::load(store, run).await?;
            let kinds = decide(&state)?;
            if kinds.is_empty() {
                return Ok((state, kinds));
            }
            let events = state.next_events(kinds.iter().cloned());
            store
                .append(&run_id, &events, Some(lease.fence))
                .await
                .with_context(|| format!("cannot record the change to run {run}"))?;
            let state = db::load(store, run).await?;
            Ok((state, kinds))
        }
        .await;
        if let Err(e) = store.release(&lease).await {
            // Harmless: the lease runs out by itself at `until`.
            output::note(&format!(
                "cannot give back the lease of run {run} ({e}); it runs out at {}",
                lease.until.format("%H:%M:%S UTC")
            ));
        }
        result
    })?
}
