//! Deleting a run on PostgreSQL, as [`SqliteStore::delete_run`](crate::SqliteStore::delete_run)
//! does on SQLite: everything of it in one transaction, under its lease.
//! Its queue entry and lease grants go too.

use std::sync::Arc;

use stepwise_core::{RunId, StoreError};

use super::error::Fail;
use super::log::check_fence;
use super::{Inner, PgStore};

async fn delete(inner: &Inner, run: &RunId, fence: u64) -> Result<(), Fail> {
    let mut conn = inner.pool.get().await?;
    let tx = conn.transaction().await?;
    let exists = tx
        .query_opt(
            "SELECT 1 FROM stepwise.runs WHERE run_id = $1 FOR UPDATE",
            &[&run.as_str()],
        )
        .await?
        .is_some();
    if !exists {
        return Err(StoreError::NotFound(run.clone()).into());
    }
    check_fence(&tx, run, fence).await?;
    for table in [
        "events",
        "snapshots",
        "idempotency",
        "jobs",
        "lease_grants",
        "leases",
        "runs",
    ] {
        tx.execute(
            &format!("DELETE FROM stepwise.{table} WHERE run_id = $1"),
            &[&run.as_str()],
        )
        .await?;
    }
    tx.commit().await?;
    Ok(())
}

impl PgStore {
    /// Deletes everything recorded of `run`: `fence` must hold its lease
    /// right now (else `StoreError::Fenced`, and nothing changes);
    /// `StoreError::NotFound` if there is no such run.
    pub fn delete_run(&self, run: &RunId, fence: u64) -> Result<(), StoreError> {
        let run = run.clone();
        self.wait(move |inner: Arc<Inner>| async move {
            delete(&inner, &run, fence)
                .await
                .map_err(|e| e.into_store(&inner.name))?;
            drop(inner.states.take(&run));
            inner.committed();
            Ok(())
        })
    }
}
