//! The store conformance suite, in memory and on disk, plus reopening a file.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use stepwise_core::testing::store_conformance::{self, sample_log};
use stepwise_core::{RunId, RunState, Store};
use stepwise_store::SqliteStore;

#[tokio::test]
async fn in_memory_store_conforms() {
    store_conformance::run(|| SqliteStore::in_memory().unwrap())
        .await
        .unwrap();
}

#[tokio::test]
async fn file_store_conforms() {
    let dir = tempfile::tempdir().unwrap();
    let n = AtomicUsize::new(0);
    let made = std::sync::Mutex::new(Vec::<PathBuf>::new());
    store_conformance::run(|| {
        // A fresh file per call: every store the suite asks for starts empty.
        let path = dir.path().join(format!(
            "nested/store-{}.db",
            n.fetch_add(1, Ordering::SeqCst)
        ));
        made.lock().unwrap().push(path.clone());
        SqliteStore::open(&path).unwrap()
    })
    .await
    .unwrap();
    let made = made.lock().unwrap();
    assert!(made.len() >= 6, "{made:?}");
    assert!(made.iter().all(|p| p.is_file()));
}

#[tokio::test]
async fn a_reopened_file_has_the_same_runs_events_and_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("stepwise.db");
    let run = RunId("run_reopen".into());
    let log = sample_log(&run);
    let (runs, state) = {
        let store = SqliteStore::open(&path).unwrap();
        assert_eq!(store.path(), Some(path.as_path()));
        store.append(&run, &log[..4], None).await.unwrap();
        store.append(&run, &log[4..], None).await.unwrap();
        (
            store.list_runs().await.unwrap(),
            store.state(&run).await.unwrap(),
        )
    };
    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(store.list_runs().await.unwrap(), runs);
    assert_eq!(store.events(&run).await.unwrap(), log);
    let reopened = store.state(&run).await.unwrap();
    assert_eq!(reopened, state);
    assert_eq!(reopened, RunState::from_events(&log).unwrap());
    // The log goes on where it stopped.
    let more = store.append(&run, &log[..1], None).await;
    assert!(
        matches!(
            more,
            Err(stepwise_core::StoreError::Conflict { last_seq: 10, .. })
        ),
        "{more:?}"
    );
}

#[tokio::test]
async fn a_store_opened_twice_in_one_process_is_empty_only_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.db");
    let run = RunId("run_twice".into());
    let first = SqliteStore::open(&path).unwrap();
    let second = SqliteStore::open(&path).unwrap();
    first
        .append(&run, &sample_log(&run)[..3], None)
        .await
        .unwrap();
    assert_eq!(second.events(&run).await.unwrap().len(), 3);
}
