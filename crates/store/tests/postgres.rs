//! The PostgreSQL store on a real server (`$STEPWISE_TEST_PG`, which
//! `scripts/test` starts): the conformance suite, migrations from an empty
//! database and re-run, refusals, fencing inside the append's transaction,
//! and connections cut from the server side. Without a server these tests
//! fail, saying how to get one.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::block_on;
use std::sync::{Arc, Mutex};

use stepwise_core::testing::store_conformance::{self, sample_log};
use stepwise_core::{RunId, RunLease, RunState, Store, StoreError};
use stepwise_store::PgStore;
use stepwise_store::postgres::testing::ScratchDb;
use stepwise_store::postgres::{Migrated, PG_SCHEMA_VERSION, migrate};

fn scratch(tag: &str) -> ScratchDb {
    ScratchDb::new(tag).unwrap_or_else(|e| panic!("{e}"))
}

/// A migrated scratch database and a store on it.
fn store(tag: &str) -> (ScratchDb, PgStore) {
    let db = scratch(tag);
    migrate(db.url()).unwrap();
    let store = PgStore::connect(db.url()).unwrap();
    (db, store)
}

#[tokio::test]
async fn postgres_store_conforms() {
    let dbs = Mutex::new(Vec::new());
    store_conformance::run(|| {
        // A fresh database per call: every store the suite asks for starts empty.
        let (db, store) = store("conformance");
        dbs.lock().unwrap().push(db);
        store
    })
    .await
    .unwrap();
    assert!(dbs.lock().unwrap().len() >= 6);
}

#[test]
fn migrations_run_from_an_empty_database_and_again_change_nothing() {
    let db = scratch("migrate");
    // Not migrated: refused, saying what to do, and nothing is created.
    let refused = PgStore::connect(db.url()).unwrap_err().to_string();
    assert!(refused.contains("stepwise migrate --db"), "{refused}");
    assert!(!refused.contains('\n'), "{refused}");
    assert_eq!(
        db.query("SELECT count(*) FROM pg_namespace WHERE nspname = 'stepwise'")
            .unwrap(),
        vec![vec![Some("0".to_owned())]]
    );
    assert_eq!(
        migrate(db.url()).unwrap(),
        Migrated {
            from: 0,
            to: PG_SCHEMA_VERSION
        }
    );
    let tables = db
        .query(
            "SELECT string_agg(tablename, ',' ORDER BY tablename) FROM pg_tables
             WHERE schemaname = 'stepwise'",
        )
        .unwrap();
    assert_eq!(
        tables[0][0].as_deref(),
        Some("events,idempotency,jobs,lease_grants,leases,migrations,runs,snapshots,workers")
    );
    // Re-run: nothing to do, nothing changed, data kept.
    let store = PgStore::connect(db.url()).unwrap();
    let run = RunId("run_kept".into());
    block_on(store.append(&run, &sample_log(&run)[..3], None)).unwrap();
    assert_eq!(
        migrate(db.url()).unwrap(),
        Migrated {
            from: PG_SCHEMA_VERSION,
            to: PG_SCHEMA_VERSION
        }
    );
    assert_eq!(
        db.query("SELECT count(*) FROM stepwise.migrations")
            .unwrap(),
        vec![vec![Some(PG_SCHEMA_VERSION.to_string())]]
    );
    assert_eq!(block_on(store.events(&run)).unwrap().len(), 3);
}

#[test]
fn two_migrations_at_once_are_serialised() {
    let db = scratch("migrate_race");
    let url = db.url().to_owned();
    let results: Vec<Migrated> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..3).map(|_| s.spawn(|| migrate(&url).unwrap())).collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(
        results.iter().filter(|m| m.from == 0).count(),
        1,
        "{results:?}"
    );
    PgStore::connect(db.url()).unwrap();
}

#[test]
fn a_newer_schema_is_refused_and_left_alone() {
    let db = scratch("newer");
    migrate(db.url()).unwrap();
    db.execute("INSERT INTO stepwise.migrations (version, name) VALUES (99, 'from the future')")
        .unwrap();
    for message in [
        PgStore::connect(db.url()).unwrap_err().to_string(),
        migrate(db.url()).unwrap_err().to_string(),
    ] {
        assert!(message.contains("newer Stepwise"), "{message}");
        assert!(message.contains("schema version 99"), "{message}");
    }
    assert_eq!(
        db.query("SELECT max(version) FROM stepwise.migrations")
            .unwrap(),
        vec![vec![Some("99".to_owned())]]
    );
}

#[test]
fn an_unreachable_server_and_a_bad_url_are_one_line_errors_without_the_password() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("postgres://me:s3cret@127.0.0.1:{port}/nowhere?connect_timeout=2");
    let message = PgStore::connect(&url).unwrap_err().to_string();
    assert!(
        message.contains("cannot connect to postgres://me:***@127.0.0.1"),
        "{message}"
    );
    assert!(
        !message.contains("s3cret") && !message.contains('\n'),
        "{message}"
    );
    let bad = PgStore::connect("postgres://me:s3cret@127.0.0.1:notaport/x")
        .unwrap_err()
        .to_string();
    assert!(bad.contains("not a PostgreSQL URL"), "{bad}");
    assert!(!bad.contains("s3cret"), "{bad}");
}

#[tokio::test]
async fn events_keep_the_fence_they_were_appended_under_and_grants_are_logged() {
    let (db, store) = store("fences");
    let run = RunId("run_fenced".into());
    let log = sample_log(&run);
    let a = store.acquire(&run, "w1", 60_000).await.unwrap();
    store.append(&run, &log[..3], Some(a.fence)).await.unwrap();
    store.release(&a).await.unwrap();
    let b = store.acquire(&run, "w2", 60_000).await.unwrap();
    store.append(&run, &log[3..5], Some(b.fence)).await.unwrap();
    assert!(matches!(
        store.append(&run, &log[5..6], Some(a.fence)).await,
        Err(StoreError::Fenced { .. })
    ));
    let rows = db
        .query(
            "SELECT string_agg(seq || ':' || fence, ',' ORDER BY seq) FROM stepwise.events
             WHERE run_id = 'run_fenced'",
        )
        .unwrap();
    assert_eq!(
        rows[0][0].as_deref(),
        Some(format!("1:{a},2:{a},3:{a},4:{b},5:{b}", a = a.fence, b = b.fence).as_str())
    );
    let grants = db
        .query(
            "SELECT string_agg(fence || '=' || holder, ',' ORDER BY fence) FROM stepwise.lease_grants",
        )
        .unwrap();
    assert_eq!(
        grants[0][0].as_deref(),
        Some(format!("{}=w1,{}=w2", a.fence, b.fence).as_str())
    );
}

/// A stale holder appending while another takes the lease over, many times
/// over: an append either lands before the takeover's fence exists, or is
/// refused. Never after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_takeover_and_a_stale_append_race_and_the_append_never_lands_after() {
    let (db, store) = store("race");
    let store = Arc::new(store);
    for i in 0..40 {
        let run = RunId(format!("run_race_{i}"));
        let log = sample_log(&run);
        let old = store.acquire(&run, "old", 1).await.unwrap();
        store
            .append(&run, &log[..2], Some(old.fence))
            .await
            .unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        let (s1, s2) = (Arc::clone(&store), Arc::clone(&store));
        let (r1, r2) = (run.clone(), run.clone());
        let late = log[2..3].to_vec();
        let append = tokio::spawn(async move { s1.append(&r1, &late, Some(old.fence)).await });
        let take = tokio::spawn(async move { s2.acquire(&r2, "new", 60_000).await });
        let appended = append.await.unwrap();
        let new = take.await.unwrap().unwrap();
        assert!(new.fence > old.fence);
        assert!(
            matches!(appended, Ok(()) | Err(StoreError::Fenced { .. })),
            "{appended:?}"
        );
    }
    // From the log: no event was appended under a fence after the next
    // fence was granted.
    let late = db
        .query(
            "SELECT count(*) FROM stepwise.events e JOIN stepwise.lease_grants g
               ON g.run_id = e.run_id AND g.fence > e.fence
             WHERE e.appended_at >= g.granted_at",
        )
        .unwrap();
    assert_eq!(late, vec![vec![Some("0".to_owned())]]);
    for i in 0..40 {
        let run = RunId(format!("run_race_{i}"));
        let events = store.events(&run).await.unwrap();
        assert_eq!(
            store.state(&run).await.unwrap(),
            RunState::from_events(&events).unwrap()
        );
    }
}

#[tokio::test]
async fn connections_cut_by_the_server_are_replaced() {
    let (db, store) = store("cut");
    let run = RunId("run_cut".into());
    let log = sample_log(&run);
    store.append(&run, &log[..2], None).await.unwrap();
    db.execute_on_server(&format!(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
         WHERE datname = current_database() AND pid <> pg_backend_pid()
            OR datname = '{}' AND application_name = 'stepwise'",
        db.url().rsplit('/').next().unwrap()
    ))
    .unwrap();
    // At most the first operation after the cut sees it; then the store
    // works on a new connection, and nothing it had recorded is lost.
    let mut results = Vec::new();
    for _ in 0..3 {
        results.push(store.events(&run).await.map(|e| e.len()));
    }
    assert_eq!(results.last(), Some(&Ok(2)), "{results:?}");
    store.append(&run, &log[2..4], None).await.unwrap();
    assert_eq!(store.events(&run).await.unwrap(), log[..4].to_vec());
}

/// A worker stopped in the middle of an append holds its run's lease row
/// locked (`FOR SHARE`, until it wakes or its connection dies). Another
/// worker's claim passes that run by instead of waiting behind the lock —
/// even with one free slot, the frozen run at the head of the queue does
/// not use it up — and takes it once the lock is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_passes_by_a_run_whose_lease_row_a_stopped_writer_holds() {
    let (db, store) = store("claim_locked");
    let (frozen, other) = (RunId("run_frozen".into()), RunId("run_other".into()));
    store
        .enqueue(&frozen, &serde_json::json!({}))
        .await
        .unwrap();
    // Claimed by a worker whose lease runs out at once, then mid-append.
    let first = store.claim("stopped", 1, 1).await.unwrap();
    assert_eq!(first.len(), 1);
    assert_eq!(first[0].run, frozen);
    store.enqueue(&other, &serde_json::json!({})).await.unwrap();
    let (client, connection) = tokio_postgres::connect(db.url(), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client.batch_execute("BEGIN").await.unwrap();
    client
        .query(
            "SELECT fence FROM stepwise.leases WHERE run_id = 'run_frozen' FOR SHARE",
            &[],
        )
        .await
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;

    let claimed = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        store.claim("steady", 1, 60_000),
    )
    .await
    .expect("the claim waited behind the stopped writer's lock")
    .unwrap();
    let runs: Vec<&RunId> = claimed.iter().map(|j| &j.run).collect();
    assert_eq!(runs, [&other]);
    // Nothing of the frozen run changed: still the stopped worker's claim.
    assert_eq!(
        db.query("SELECT claimed_by FROM stepwise.jobs WHERE run_id = 'run_frozen'")
            .unwrap(),
        vec![vec![Some("stopped".to_owned())]]
    );

    client.batch_execute("COMMIT").await.unwrap();
    let taken = store.claim("steady", 2, 60_000).await.unwrap();
    assert_eq!(taken.len(), 1);
    assert_eq!(taken[0].run, frozen);
    assert!(taken[0].lease.fence > first[0].lease.fence);
}

/// A fenced log says whether a side-effect call may still go out: yes
/// while its lease holds; no once the lease has run out, nor once another
/// holder took it over (a worker frozen past its lease).
#[tokio::test]
async fn a_fenced_log_refuses_side_effects_once_its_lease_lapsed_or_moved() {
    use stepwise_core::IdempotencyLog;
    let (_db, store) = store("check_held");
    let store = Arc::new(store);
    let run = RunId("run_held".into());
    store.enqueue(&run, &serde_json::json!({})).await.unwrap();
    let jobs = store.claim("first", 1, 400).await.unwrap();
    let lease = jobs[0].lease.clone();
    let log = store.fenced_log(&run, lease.fence);
    log.check_held().await.unwrap();
    // Lapsed: nobody took it over yet, and still no call may go out.
    tokio::time::sleep(std::time::Duration::from_millis(600)).await;
    assert!(matches!(
        log.check_held().await,
        Err(StoreError::Fenced { .. })
    ));
    // Taken over: the old fence never holds again; the new one does.
    let taken = store.acquire(&run, "second", 60_000).await.unwrap();
    assert!(taken.fence > lease.fence);
    assert!(matches!(
        log.check_held().await,
        Err(StoreError::Fenced { .. })
    ));
    store
        .fenced_log(&run, taken.fence)
        .check_held()
        .await
        .unwrap();
}

#[test]
fn a_run_is_deleted_whole_under_its_lease_and_others_stay() {
    let (db, store) = store("delete");
    let (gone, kept) = (RunId("run_gone".into()), RunId("run_kept".into()));
    let other = block_on(async {
        for run in [&gone, &kept] {
            store.append(run, &sample_log(run), None).await.unwrap();
        }
        store.acquire(&gone, "other:2", 60_000).await.unwrap()
    });
    assert!(matches!(
        store.delete_run(&gone, other.fence + 1),
        Err(StoreError::Fenced { .. })
    ));
    store.delete_run(&gone, other.fence).unwrap();
    for table in ["runs", "events", "snapshots", "leases", "lease_grants"] {
        let rows = db
            .query(&format!(
                "SELECT count(*)::text FROM stepwise.{table} WHERE run_id = 'run_gone'"
            ))
            .unwrap();
        assert_eq!(rows[0][0].as_deref(), Some("0"), "{table}");
    }
    block_on(async {
        assert!(matches!(
            store.state(&gone).await,
            Err(StoreError::NotFound(_))
        ));
        let left: Vec<String> = store
            .list_runs()
            .await
            .unwrap()
            .into_iter()
            .map(|s| s.run_id.0)
            .collect();
        assert_eq!(left, ["run_kept"]);
    });
    assert!(matches!(
        store.delete_run(&gone, other.fence),
        Err(StoreError::NotFound(_))
    ));
}
