//! What `approve`, `reject` and `cancel` share: a person acts on a run that
//! no process is working on. Each takes the run's lease (so it cannot write
//! underneath a live run), appends its events fenced by that lease, and
//! gives the lease back.

use anyhow::Context;
use stepwise_core::{EventKind, RunId, RunState};

use crate::db;
use crate::output;

/// Takes the run's lease, then records what `decide` returns under it (see
/// [`stepwise_core::act::under_lease`]), and gives the lease back whatever
/// happened. Returns the state after the append and the events' kinds.
pub(super) fn with_lease(
    store: &dyn db::RunStore,
    run: &str,
    decide: impl FnOnce(&RunState) -> Result<Vec<EventKind>, stepwise_core::act::ActError>,
) -> anyhow::Result<(RunState, Vec<EventKind>)> {
    let run_id = RunId(run.to_owned());
    db::block_on(async {
        // A dead holder on this host is taken over; a live one is a clear error.
        let lease = db::take_lease(store, &run_id).await?;
        let result = stepwise_core::act::under_lease(store, &run_id, lease.fence, |state| {
            decide(state).map_err(anyhow::Error::from)
        })
        .await
        .map(|(state, events)| (state, events.into_iter().map(|e| e.kind).collect()))
        .with_context(|| format!("cannot record the change to run {run}"));
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
