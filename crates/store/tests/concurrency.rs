//! Two writers at once: in one store from two threads, and in two stores on
//! one file (two connections, as two processes would have).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::block_on;
use std::sync::Barrier;
use std::time::Duration;

use stepwise_core::testing::store_conformance::sample_log;
use stepwise_core::{RunId, RunLease, Store, StoreError};
use stepwise_store::SqliteStore;

/// Appends the same event (seq 4) from two threads, each through its own
/// store handle, after a barrier; returns both results.
fn race(a: &SqliteStore, b: &SqliteStore, run: &RunId) -> Vec<Result<(), StoreError>> {
    let log = sample_log(run);
    block_on(a.append(run, &log[..3], None)).unwrap();
    let barrier = Barrier::new(2);
    std::thread::scope(|s| {
        let handles: Vec<_> = [a, b]
            .into_iter()
            .map(|store| {
                let (barrier, log) = (&barrier, &log);
                s.spawn(move || {
                    barrier.wait();
                    block_on(store.append(run, &log[3..4], None))
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

fn exactly_one_wins(results: &[Result<(), StoreError>]) {
    let ok = results.iter().filter(|r| r.is_ok()).count();
    let conflicts = results
        .iter()
        .filter(|r| {
            matches!(
                r,
                Err(StoreError::Conflict {
                    last_seq: 4,
                    first_seq: 4,
                    ..
                })
            )
        })
        .count();
    assert_eq!((ok, conflicts), (1, 1), "{results:?}");
}

#[test]
fn two_threads_one_store_one_wins() {
    let store = SqliteStore::in_memory().unwrap();
    let run = RunId("run_race_1".into());
    exactly_one_wins(&race(&store, &store, &run));
    assert_eq!(block_on(store.events(&run)).unwrap().len(), 4);
}

#[test]
fn two_connections_one_file_one_wins() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("race.db");
    let (a, b) = (
        SqliteStore::open(&path).unwrap(),
        SqliteStore::open(&path).unwrap(),
    );
    for i in 0..10 {
        let run = RunId(format!("run_race_{i}"));
        exactly_one_wins(&race(&a, &b, &run));
        assert_eq!(block_on(b.state(&run)).unwrap().execution_history.len(), 4);
    }
}

#[test]
fn leases_hold_across_connections() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lease.db");
    let (a, b) = (
        SqliteStore::open(&path).unwrap(),
        SqliteStore::open(&path).unwrap(),
    );
    let run = RunId("run_shared".into());
    let log = sample_log(&run);
    block_on(async {
        let la = a.acquire(&run, "worker-a", 60_000).await.unwrap();
        let taken = b.acquire(&run, "worker-b", 60_000).await;
        assert!(
            matches!(&taken, Err(StoreError::Leased { holder, .. }) if holder == "worker-a"),
            "{taken:?}"
        );
        a.append(&run, &log[..2], Some(la.fence)).await.unwrap();
        // B holds no lease: a guessed fence is refused too.
        let guessed = b.append(&run, &log[2..3], Some(la.fence + 1)).await;
        assert!(
            matches!(guessed, Err(StoreError::Fenced { .. })),
            "{guessed:?}"
        );

        a.release(&la).await.unwrap();
        // A released fence no longer writes, even before anyone else takes over.
        let released = a.append(&run, &log[2..3], Some(la.fence)).await;
        assert!(
            matches!(released, Err(StoreError::Fenced { .. })),
            "{released:?}"
        );

        let lb = b.acquire(&run, "worker-b", 60_000).await.unwrap();
        assert!(lb.fence > la.fence);
        let stale = a.append(&run, &log[2..3], Some(la.fence)).await;
        assert!(matches!(stale, Err(StoreError::Fenced { .. })), "{stale:?}");
        b.append(&run, &log[2..3], Some(lb.fence)).await.unwrap();
        assert_eq!(a.events(&run).await.unwrap().len(), 3);
    });
}

#[test]
fn an_expired_lease_is_taken_over_and_the_old_holder_is_fenced() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("expiry.db");
    let (a, b) = (
        SqliteStore::open(&path).unwrap(),
        SqliteStore::open(&path).unwrap(),
    );
    let run = RunId("run_expiry".into());
    let log = sample_log(&run);
    block_on(async {
        let la = a.acquire(&run, "worker-a", 1).await.unwrap();
        a.append(&run, &log[..1], Some(la.fence)).await.unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
        let lb = b.acquire(&run, "worker-b", 60_000).await.unwrap();
        assert_eq!(lb.fence, la.fence + 1);
        let stale = a.append(&run, &log[1..2], Some(la.fence)).await;
        assert!(matches!(stale, Err(StoreError::Fenced { .. })), "{stale:?}");
        let renew = a.renew(&la, 60_000).await;
        assert!(matches!(renew, Err(StoreError::Fenced { .. })), "{renew:?}");
        // A's late release is a no-op: B still holds the lease.
        a.release(&la).await.unwrap();
        b.append(&run, &log[1..2], Some(lb.fence)).await.unwrap();
    });
}

#[test]
fn racing_acquisitions_from_two_connections_grant_one_lease() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("acquire.db");
    let (a, b) = (
        SqliteStore::open(&path).unwrap(),
        SqliteStore::open(&path).unwrap(),
    );
    for i in 0..10 {
        let run = RunId(format!("run_acquire_{i}"));
        let barrier = Barrier::new(2);
        let results: Vec<_> = std::thread::scope(|s| {
            let handles: Vec<_> = [(&a, "worker-a"), (&b, "worker-b")]
                .into_iter()
                .map(|(store, holder)| {
                    let (barrier, run) = (&barrier, &run);
                    s.spawn(move || {
                        barrier.wait();
                        block_on(store.acquire(run, holder, 60_000))
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let granted = results.iter().filter(|r| r.is_ok()).count();
        let refused = results
            .iter()
            .filter(|r| matches!(r, Err(StoreError::Leased { .. })))
            .count();
        assert_eq!((granted, refused), (1, 1), "{results:?}");
    }
}
