//! Deleting a run (`stepwise runs delete` and `prune`): its events,
//! snapshot, idempotency records, lease and summary row, in one
//! transaction, and only by the holder of its lease, so no process can be
//! writing to it meanwhile.

use rusqlite::OptionalExtension;
use stepwise_core::{RunId, StoreError};

use crate::SqliteStore;
use crate::lease::check_fence;

impl SqliteStore {
    /// Deletes everything recorded of `run`. `fence` must hold the run's
    /// lease right now (else `StoreError::Fenced`, and nothing changes);
    /// the lease row goes too, so every fence of the run is refused from
    /// then on. `StoreError::NotFound` if there is no such run.
    pub fn delete_run(&self, run: &RunId, fence: u64) -> Result<(), StoreError> {
        self.write(|tx| {
            let exists = tx
                .prepare_cached("SELECT 1 FROM runs WHERE run_id = ?1")?
                .query_row([run.as_str()], |_| Ok(()))
                .optional()?
                .is_some();
            if !exists {
                return Err(StoreError::NotFound(run.clone()).into());
            }
            check_fence(tx, run, fence)?;
            for table in ["events", "snapshots", "idempotency", "leases", "runs"] {
                tx.execute(
                    &format!("DELETE FROM {table} WHERE run_id = ?1"),
                    [run.as_str()],
                )?;
            }
            Ok(())
        })?;
        // A cached fold of a deleted run must not outlive it.
        drop(self.states.take(run));
        Ok(())
    }
}
