//! The store keeps the state it folded at a run's last append; these check
//! that the cached state is used only while the file still ends where it
//! left it — never after another connection appended, or after a failure.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::block_on;
use stepwise_core::testing::store_conformance::sample_log;
use stepwise_core::{RunId, RunState, Store, StoreError};
use stepwise_store::SqliteStore;

#[test]
fn appends_through_two_connections_fold_onto_the_file_not_a_stale_cache() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let (a, b) = (
        SqliteStore::open(&path).unwrap(),
        SqliteStore::open(&path).unwrap(),
    );
    let run = RunId("r".to_owned());
    let log = sample_log(&run);
    assert!(
        log.len() >= 6,
        "the sample log is long enough to interleave"
    );
    block_on(async {
        // Each store appends in turn, one event at a time: every append by
        // one finds the other's cache out of date.
        for (i, event) in log.iter().enumerate() {
            let store = if i % 3 == 2 { &b } else { &a };
            store
                .append(&run, std::slice::from_ref(event), None)
                .await
                .unwrap();
        }
        let folded = RunState::from_events(&log).unwrap();
        assert_eq!(a.state(&run).await.unwrap(), folded);
        assert_eq!(b.state(&run).await.unwrap(), folded);
    });
}

#[test]
fn a_refused_append_leaves_the_next_one_correct() {
    let store = SqliteStore::in_memory().unwrap();
    let run = RunId("r".to_owned());
    let log = sample_log(&run);
    block_on(async {
        store.append(&run, &log[..3], None).await.unwrap();
        // Out of order: refused, and nothing of it may linger.
        let refused = store.append(&run, &log[4..5], None).await;
        assert!(
            matches!(refused, Err(StoreError::Conflict { .. })),
            "{refused:?}"
        );
        // A batch whose second event does not fold: refused as a whole.
        let mut bad = log[3..5].to_vec();
        bad[1].seq = 4;
        let refused = store.append(&run, &bad, None).await;
        assert!(refused.is_err(), "{refused:?}");
        store.append(&run, &log[3..], None).await.unwrap();
        assert_eq!(
            store.state(&run).await.unwrap(),
            RunState::from_events(&log).unwrap()
        );
        assert_eq!(store.events(&run).await.unwrap(), log);
    });
}
