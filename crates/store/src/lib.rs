//! # stepwise-store
//!
//! Two stores, both passing `stepwise_core::testing::store_conformance`:
//! [`SqliteStore`] (below), and, with the `postgres` feature, `PgStore`
//! for scale-out (see the `postgres` module).
//!
//! [`SqliteStore`]: Stepwise's embedded default store. One SQLite file holds
//! every run's event log, a snapshot of each run's folded state, the run
//! leases and the idempotency records of side-effect calls. It implements
//! [`Store`](stepwise_core::Store), [`RunLease`](stepwise_core::RunLease) and
//! [`IdempotencyLog`](stepwise_core::IdempotencyLog) and passes
//! `stepwise_core::testing::store_conformance`.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! use stepwise_core::Store;
//! let dir = tempfile::tempdir().unwrap();
//! let store = stepwise_store::SqliteStore::open(&dir.path().join("runs/stepwise.db")).unwrap();
//! assert!(store.list_runs().await.unwrap().is_empty());
//! # });
//! ```
//!
//! ## Durability
//! The file runs with `journal_mode=WAL` and `synchronous=FULL`: every commit
//! is fsynced before `append` returns, so an event the engine was told is
//! recorded survives `kill -9` **and** power loss (WAL's default `NORMAL`
//! would survive a crash of the process but could lose the last commits on
//! power loss). `busy_timeout=5000`: a second process waits up to 5 s for the
//! write lock instead of failing at once.
//!
//! [`SqliteStore::open_with`] and [`Durability::Normal`] choose
//! `synchronous=NORMAL` instead: commits are fsynced only at WAL checkpoints,
//! so a run survives `kill -9` but may lose its last events on power loss or
//! an OS crash. It is not the default and nothing in Stepwise picks it; it
//! exists for users who accept that trade, and to compare with runtimes that
//! use it (see docs/benchmarks.md).
//!
//! ## Snapshots
//! A run's snapshot is its folded `RunState`, as JSON without its history,
//! taken at some event of its log (`snapshots.seq`). The run's state is that
//! snapshot, the history read back from the log, and the fold of the events
//! after `seq` (the tail). An append writes its events and the run's summary
//! row; it rewrites the snapshot only
//! - when the run is no longer `running` after it (finished, or paused for a
//!   person), so a run at rest always has a snapshot of its last event; or
//! - when the tail has at least [`SNAPSHOT_MIN_EVENTS`] events and weighs at
//!   least as much as the snapshot (bytes of JSON).
//!
//! So a snapshot of S bytes is rewritten once per S bytes of new events: an
//! append costs the same whatever the size of its run, and loading a run
//! folds a tail no larger than its snapshot. Each append, snapshot included,
//! is one transaction: at every commit the snapshot is the fold of the log up
//! to its `seq`, and snapshot plus tail is the fold of the whole log.
//!
//! ## The state cache
//! An append must fold its events onto the run's state. Rather than read the
//! snapshot and every event back from the file each time, the store keeps
//! the state it folded at its last append to a run, keyed by the run's
//! `last_seq` and `updated_at` (the last event's time) as the file has them.
//! The key is read from the file inside the append's write transaction; if
//! another connection has appended since, or the append fails, the state is
//! rebuilt from the file (snapshot plus tail). The cache is bounded: a run leaves it when
//! it stops running, and it holds at most [`STATE_CACHE_RUNS`] runs.
//!
//! ## Why the async methods are synchronous inside
//! The store is embedded and a write is one small transaction (well under a
//! millisecond plus one fsync), and each run has a single writer (its lease
//! holder). So each trait method locks a `Mutex<rusqlite::Connection>`, does
//! its work when first polled and completes at once — no thread pool hop, no
//! async driver, and the engine's "write before the next step" ordering is
//! trivially kept. A slow disk stalls the calling task for an fsync; that is
//! the price of durability and is the same with a blocking pool.
//!
//! ## Schema (version 2, in `PRAGMA user_version`)
//! The file is marked with `PRAGMA application_id = 0x53545057` ("STPW").
//! Timestamps are RFC 3339 UTC text with nine fractional digits, so they sort
//! as text and read back exactly.
//!
//! | table | columns | notes |
//! | --- | --- | --- |
//! | `runs` | `run_id` PK, `goal`, `status`, `started_at`, `updated_at`, `last_seq`, `steps_done`, `steps_total`, `replans`, `tokens` | the run's summary, written at every append: it serves `list_runs` without parsing JSON; index on (`started_at` desc, `run_id` desc) |
//! | `snapshots` | `run_id` PK, `seq`, `state` | `state` is the folded `RunState` as JSON **without** `execution_history` (the events table holds the history once), as of event `seq`; see "Snapshots". No row until the first snapshot |
//! | `events` | (`run_id`, `seq`) PK, `at`, `kind`, `body` | `body` is the whole `Event` as JSON; `kind` and `at` are copies for people querying the file; `WITHOUT ROWID`, so a run's log is stored in order |
//! | `leases` | `run_id` PK, `holder`, `fence`, `until` | `holder`/`until` are NULL once released; the row (and its `fence`) is kept so the fence keeps growing across release and re-acquire, until `delete_run` deletes the run |
//! | `idempotency` | `key` PK, `run_id`, `step`, `args_hash`, `outcome` (JSON, NULL until complete), `begun_at`, `completed_at` | index on `run_id` |
//! | `meta` | `key` PK, `value` | `created_at`, `created_by`, `opened_at` (rewritten at every open: the write that proves the file is writable) |
//!
//! Migrations are a list of steps, step *i* taking the schema from version
//! *i* to *i + 1*; `open` runs the missing ones in one transaction. A file
//! with a newer version than this build knows is refused and left untouched.
//! Version 2 moved the snapshot out of the `runs` row, which version 1
//! rewrote, snapshot and all, at every append: a version 1 file's snapshots
//! become `snapshots` rows at each run's `last_seq`.
//!
//! ## Bad files
//! `open` fails with `StoreError::Unavailable` and a one-line message naming
//! the file, and writes nothing to it, when the file is not SQLite or is
//! corrupt, is SQLite but not Stepwise's, was written by a newer Stepwise, or
//! cannot be written (read-only file, directory or filesystem).
//!
//! ## Fault injection (a testing aid)
//! With the environment variable `STEPWISE_FAILPOINT=abort-after-writes=N`
//! (N ≥ 1) when a store is opened, the process calls
//! `std::process::abort()` right after the N-th committed write transaction
//! of the process (appends, lease acquire/renew/release, idempotency
//! begin/complete; `open`'s own writes do not count). Crash tests use it to
//! stop a run at an exact point, as `kill -9` would. Any other value makes
//! `open` fail, so a mistyped failpoint cannot silently test nothing.

mod codec;
mod delete;
mod error;
mod failpoint;
mod idempotency;
mod lease;
mod log;
mod open;
#[cfg(feature = "postgres")]
pub mod postgres;
mod rebuild;
mod state_cache;

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

use rusqlite::{Connection, Transaction, TransactionBehavior};
use stepwise_core::StoreError;

use crate::error::Fail;
use crate::failpoint::Failpoint;
use crate::state_cache::StateCache;

pub use crate::failpoint::FAILPOINT_ENV;
pub use crate::open::SCHEMA_VERSION;
#[cfg(feature = "postgres")]
pub use crate::postgres::PgStore;

/// Most runs whose folded state the store keeps between appends.
pub const STATE_CACHE_RUNS: usize = 256;

/// Fewest events after a running run's snapshot before an append rewrites
/// it (see the crate docs, "Snapshots").
pub const SNAPSHOT_MIN_EVENTS: u64 = 64;

/// How hard a commit is pushed to disk: SQLite's `synchronous` setting (the
/// journal is always WAL). See the crate docs, "Durability".
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Durability {
    /// `synchronous=FULL`, the default: every commit is fsynced before
    /// `append` returns, so a recorded event survives power loss.
    #[default]
    Full,
    /// `synchronous=NORMAL`: commits are fsynced at WAL checkpoints only. A
    /// recorded event survives a crash of the process, but the last ones may
    /// be lost on power loss or an OS crash. Never the default.
    Normal,
}

/// How the SQLite store caches states: with `updated_at` as written.
pub(crate) type Cached = state_cache::Cached<String>;

/// Where a run's snapshot stands against its log: what decides when an
/// append rewrites it (see the crate docs, "Snapshots").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Tail {
    /// The last event folded into the snapshot (0: no snapshot yet).
    pub(crate) snapshot_seq: u64,
    /// The snapshot's size, in bytes of JSON.
    pub(crate) snapshot_bytes: usize,
    /// The size of the events after it, in bytes of JSON.
    pub(crate) bytes: usize,
}

impl Tail {
    /// Whether a running run whose log ends at `last_seq` should have its
    /// snapshot rewritten: the events after it are at least
    /// [`SNAPSHOT_MIN_EVENTS`] and weigh at least as much as it does.
    pub(crate) fn due(&self, last_seq: u64) -> bool {
        last_seq.saturating_sub(self.snapshot_seq) >= SNAPSHOT_MIN_EVENTS
            && self.bytes >= self.snapshot_bytes
    }
}

/// The SQLite store: one file (or memory), one connection.
///
/// Several `SqliteStore`s — in one process or several — may open the same
/// file; SQLite's locking serialises their writes and leases keep one writer
/// per run.
#[derive(Debug)]
pub struct SqliteStore {
    conn: Mutex<Connection>,
    /// Folded states of running runs (see the crate docs, "The state cache").
    states: StateCache<String>,
    /// How messages name the database: its path, or `:memory:`.
    db: String,
    path: Option<PathBuf>,
    failpoint: Option<Failpoint>,
}

impl SqliteStore {
    /// Opens (or creates, with its parent directories) the store at `path`,
    /// and brings its schema up to date.
    ///
    /// Fails, leaving the file as it was, if it is not a Stepwise database,
    /// is corrupt, was written by a newer Stepwise, or cannot be written.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        Self::open_with(path, Durability::Full)
    }

    /// [`open`](Self::open) with a chosen [`Durability`].
    pub fn open_with(path: &Path, durability: Durability) -> Result<Self, StoreError> {
        let db = path.display().to_string();
        let failpoint = failpoint::from_env().map_err(StoreError::Unavailable)?;
        let conn = open::open_file(path, &db, durability)?;
        Ok(Self {
            conn: Mutex::new(conn),
            states: StateCache::default(),
            db,
            path: Some(path.to_path_buf()),
            failpoint,
        })
    }

    /// A fresh store in memory, gone when dropped: for tests.
    pub fn in_memory() -> Result<Self, StoreError> {
        let db = ":memory:".to_owned();
        let failpoint = failpoint::from_env().map_err(StoreError::Unavailable)?;
        let conn = open::open_memory(&db)?;
        Ok(Self {
            conn: Mutex::new(conn),
            states: StateCache::default(),
            db,
            path: None,
            failpoint,
        })
    }

    /// The file, or `None` in memory.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The connection. A panic while it was held cannot have left a
    /// transaction half-done (rusqlite rolls back on drop), so a poisoned
    /// lock is safe to take over.
    fn lock(&self) -> MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `f` in one `BEGIN IMMEDIATE` transaction (the write lock is taken
    /// up front, so a concurrent writer waits instead of failing mid-way) and
    /// commits it if `f` succeeds; rolls back otherwise.
    fn write<T>(
        &self,
        f: impl FnOnce(&Transaction<'_>) -> Result<T, Fail>,
    ) -> Result<T, StoreError> {
        let mut conn = self.lock();
        let result = (|| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let value = f(&tx)?;
            tx.commit()?;
            Ok(value)
        })();
        drop(conn);
        let value = result.map_err(|e: Fail| e.into_store(&self.db))?;
        failpoint::after_commit(self.failpoint);
        Ok(value)
    }

    /// Runs `f` in one read transaction, so it sees a single consistent
    /// version of the file even while another process writes.
    fn read<T>(
        &self,
        f: impl FnOnce(&Transaction<'_>) -> Result<T, Fail>,
    ) -> Result<T, StoreError> {
        let mut conn = self.lock();
        let result = (|| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Deferred)?;
            let value = f(&tx)?;
            tx.commit()?;
            Ok(value)
        })();
        result.map_err(|e: Fail| e.into_store(&self.db))
    }
}
