//! `SqliteStore::delete_run`: everything of one run goes, in one
//! transaction, and only under its lease; other runs are untouched.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::block_on;
use stepwise_core::testing::store_conformance::sample_log;
use stepwise_core::{
    IdempotencyLog, IdempotencyRecord, RunId, RunLease, StepId, Store, StoreError,
};
use stepwise_store::SqliteStore;

fn record(run: &RunId) -> IdempotencyRecord {
    IdempotencyRecord {
        key: format!("{run}:save"),
        run: run.clone(),
        step: StepId::new("save"),
        args_hash: "h".to_owned(),
        outcome: None,
    }
}

#[test]
fn a_run_is_deleted_whole_under_its_lease_and_others_stay() {
    let store = SqliteStore::in_memory().unwrap();
    let (gone, kept) = (RunId("gone".to_owned()), RunId("kept".to_owned()));
    block_on(async {
        for run in [&gone, &kept] {
            store.append(run, &sample_log(run), None).await.unwrap();
            store.begin(&record(run)).await.unwrap();
        }
        // Without its lease: refused, nothing changes.
        let refused = store.delete_run(&gone, 1);
        assert!(
            matches!(refused, Err(StoreError::Fenced { .. })),
            "{refused:?}"
        );
        let lease = store.acquire(&gone, "me:1", 30_000).await.unwrap();
        // Another process holding the lease: our stale fence is refused.
        store.release(&lease).await.unwrap();
        let other = store.acquire(&gone, "other:2", 30_000).await.unwrap();
        assert!(store.delete_run(&gone, lease.fence).is_err());
        assert!(store.state(&gone).await.is_ok());
        store.delete_run(&gone, other.fence).unwrap();

        assert!(matches!(
            store.state(&gone).await,
            Err(StoreError::NotFound(_))
        ));
        assert!(matches!(
            store.events(&gone).await,
            Err(StoreError::NotFound(_))
        ));
        assert!(store.get(&record(&gone).key).await.unwrap().is_none());
        let ids: Vec<String> = store
            .list_runs()
            .await
            .unwrap()
            .into_iter()
            .map(|s| s.run_id.0)
            .collect();
        assert_eq!(ids, ["kept"]);
        assert_eq!(
            store.state(&kept).await.unwrap().execution_history.len(),
            sample_log(&kept).len()
        );
        assert!(store.get(&record(&kept).key).await.unwrap().is_some());
        // Its old holder's writes are refused; deleting it again: not found.
        let late = store
            .append(&gone, &sample_log(&gone)[..1], Some(other.fence))
            .await;
        assert!(late.is_err(), "{late:?}");
        assert!(matches!(
            store.delete_run(&gone, other.fence),
            Err(StoreError::NotFound(_))
        ));
    });
}
