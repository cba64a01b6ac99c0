//! [`PgStore`]: the PostgreSQL store, for scale-out — several `stepwise
//! worker` processes, on several machines, working on the runs of one
//! database (feature `postgres`).
//!
//! It implements [`Store`](stepwise_core::Store),
//! [`RunLease`](stepwise_core::RunLease) and
//! [`IdempotencyLog`](stepwise_core::IdempotencyLog) exactly as
//! [`SqliteStore`](crate::SqliteStore) does, passes the same
//! `stepwise_core::testing::store_conformance`, and adds the run queue the
//! workers claim from (see [`queue`]).
//!
//! ## Durability and fencing
//! Every append is one transaction: it locks the run's lease row (`FOR
//! SHARE`) and checks the fence there, locks the run's row (`FOR UPDATE`) and
//! checks the sequence, folds the events, inserts them, writes the summary
//! and (when due) the snapshot, and commits. A lease acquisition updates
//! that same lease row, so an append and a takeover are serialised by
//! PostgreSQL's row lock: an append either commits before the new fence
//! exists, or sees it and fails with `StoreError::Fenced`. Every connection
//! runs with `synchronous_commit = on`, whatever the server's default: an
//! append returns once its commit is flushed to the write-ahead log, so an
//! event the engine was told is recorded survives a crash of the server.
//!
//! Lease times are the database's clock (`clock_timestamp()`), never a
//! worker's: workers on machines whose clocks disagree still agree on when
//! a lease runs out.
//!
//! ## Snapshots and the state cache
//! As in the SQLite store (see the crate docs): a snapshot of the folded
//! state is rewritten when the run stops running or once the events after
//! it outweigh it, and the store keeps the state it folded at its last
//! append to a run, used only if the run's row still has the `last_seq` and
//! `updated_at` that append wrote.
//!
//! ## Its own runtime
//! A `PgStore` runs its connections on a small tokio runtime of its own (one
//! thread, `stepwise-pg`), and each trait method sends its work there. So a
//! caller may await it from any runtime — a current-thread one that a
//! command builds and drops, a test's, a worker's multi-thread one — and
//! [`PgStore::connect`] and [`migrate`] are plain blocking calls, like
//! `SqliteStore::open`.
//!
//! ## Schema
//! Everything lives in the schema `stepwise` of the database the URL names,
//! so Stepwise can share a database with other applications. Migrations are
//! numbered steps recorded in `stepwise.migrations`; [`migrate`] applies the
//! missing ones in one transaction under an advisory lock (two migrators at
//! once are serialised), and `connect` refuses a database that is not
//! migrated to exactly this build's [`PG_SCHEMA_VERSION`] with a one-line
//! error saying what to do.
//!
//! | table | what |
//! | --- | --- |
//! | `runs` | the run's summary (as in SQLite), written at every append |
//! | `events` | (`run_id`, `seq`) PK, `at`, `kind`, `body` (the whole event, `json`), `fence` (the lease fence the append carried, NULL without one), `appended_at` (the database's clock at the append) |
//! | `snapshots` | `run_id` PK, `seq`, `state` (`json`, without the history) |
//! | `leases` | `run_id` PK, `holder`, `fence`, `until`; released leases keep their row and fence |
//! | `lease_grants` | (`run_id`, `fence`) PK, `holder`, `granted_at`: every acquisition, so who wrote which events can be checked from the log |
//! | `idempotency` | `key` PK, `run_id`, `step`, `args_hash`, `outcome` (`json`), `begun_at`, `completed_at` |
//! | `jobs` | the run queue: `run_id` PK, `spec` (what the worker needs to start it), `state` (`queued`, `claimed`, `done`), `enqueued_at`, `claimed_by`, `claimed_at`, `claims`, `finished_at` |
//! | `workers` | `id` PK, `host`, `pid`, `concurrency`, `started_at`, `heartbeat_at`, `state` (`running`, `draining`, `stopped`), `stopped_at` |
//! | `migrations` | `version` PK, `name`, `applied_at` |

mod delete;
mod error;
mod idempotency;
mod lease;
mod log;
mod migrate;
mod notify;
mod pool;
pub mod queue;
pub mod testing;

use std::future::Future;
use std::str::FromStr;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use stepwise_core::StoreError;

use crate::failpoint::{self, Failpoint};
use crate::state_cache::StateCache;

pub use self::idempotency::FencedLog;
pub use self::migrate::{Migrated, PG_SCHEMA_VERSION, migrate};
use self::pool::Pool;

/// Whether a `--db` value names a PostgreSQL database rather than a file.
pub fn is_url(db: &str) -> bool {
    db.starts_with("postgres://") || db.starts_with("postgresql://")
}

/// How the PostgreSQL store caches states: with `updated_at` as read.
type Cached = crate::state_cache::Cached<DateTime<Utc>>;

/// What the store's tasks share.
#[derive(Debug)]
struct Inner {
    pool: Pool,
    /// The URL without its password: how messages name the database.
    name: String,
    states: StateCache<DateTime<Utc>>,
    failpoint: Option<Failpoint>,
}

impl Inner {
    /// After a committed write: the failpoint, if one is set.
    fn committed(&self) {
        failpoint::after_commit(self.failpoint);
    }
}

/// The PostgreSQL store (see the module docs).
#[derive(Debug)]
pub struct PgStore {
    inner: Arc<Inner>,
    runtime: Option<tokio::runtime::Runtime>,
    handle: tokio::runtime::Handle,
}

impl Drop for PgStore {
    fn drop(&mut self) {
        // Not `drop(runtime)`: that blocks, and panics inside a runtime.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// The store's runtime: one thread runs every connection.
fn runtime() -> Result<tokio::runtime::Runtime, StoreError> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("stepwise-pg")
        .enable_all()
        .build()
        .map_err(|e| StoreError::Unavailable(format!("cannot start the PostgreSQL runtime: {e}")))
}

/// Runs `f` on a thread of its own: for blocking on a runtime of ours from
/// a thread that may already be inside one (where `block_on` would panic).
pub(crate) fn off_thread<T: Send>(
    what: &str,
    f: impl FnOnce() -> T + Send,
) -> Result<T, StoreError> {
    std::thread::scope(|s| s.spawn(f).join())
        .map_err(|_| StoreError::Unavailable(format!("{what}: the database thread panicked")))
}

/// The URL parsed, and how messages name it (no password).
fn parse(url: &str) -> Result<(tokio_postgres::Config, String), StoreError> {
    let config = tokio_postgres::Config::from_str(url).map_err(|e| {
        StoreError::Unavailable(format!(
            "{} is not a PostgreSQL URL Stepwise can use: {e}",
            redact(url)
        ))
    })?;
    Ok((config, redact(url)))
}

/// `url` with any password replaced by `***`.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let (authority, tail) = rest
        .find(['/', '?'])
        .map_or((rest, ""), |i| (&rest[..i], &rest[i..]));
    let authority = match authority.rsplit_once('@') {
        Some((user, host)) => match user.split_once(':') {
            Some((name, _)) => format!("{name}:***@{host}"),
            None => authority.to_owned(),
        },
        None => authority.to_owned(),
    };
    let tail = tail
        .split('&')
        .map(|part| match part.split_once("password=") {
            Some((before, _)) => format!("{before}password=***"),
            None => part.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("&");
    format!("{scheme}://{authority}{tail}")
}

impl PgStore {
    /// Connects to the database at `url` (`postgres://user:pass@host:port/db`,
    /// or any form libpq accepts) and checks that it is migrated to this
    /// build's schema. Blocks until it knows.
    ///
    /// Fails with a one-line `StoreError::Unavailable` naming the database
    /// (without its password) when it cannot be reached, has no Stepwise
    /// schema or an older one (run `stepwise migrate`), or a newer one.
    pub fn connect(url: &str) -> Result<Self, StoreError> {
        Self::connect_with(url, pool::DEFAULT_MAX)
    }

    /// [`connect`](Self::connect), with at most `connections` connections
    /// open at once (a worker running N runs wants about N + 2).
    pub fn connect_with(url: &str, connections: usize) -> Result<Self, StoreError> {
        let (config, name) = parse(url)?;
        let failpoint = failpoint::from_env().map_err(StoreError::Unavailable)?;
        let runtime = runtime()?;
        let handle = runtime.handle().clone();
        let store = Self {
            inner: Arc::new(Inner {
                pool: Pool::new(config, connections.max(1)),
                name,
                states: StateCache::default(),
                failpoint,
            }),
            runtime: Some(runtime),
            handle,
        };
        store.wait(|inner| async move { migrate::check(&inner).await })?;
        Ok(store)
    }

    /// The database, as messages name it (the URL without its password).
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// Runs `work` on the store's runtime and awaits it from any runtime.
    fn spawn<T, F, Fut>(&self, work: F) -> BoxFuture<'static, Result<T, StoreError>>
    where
        T: Send + 'static,
        F: FnOnce(Arc<Inner>) -> Fut,
        Fut: Future<Output = Result<T, StoreError>> + Send + 'static,
    {
        let task = self.handle.spawn(work(Arc::clone(&self.inner)));
        let name = self.inner.name.clone();
        Box::pin(async move {
            task.await.map_err(|e| {
                StoreError::Unavailable(format!("{name}: the database task stopped: {e}"))
            })?
        })
    }

    /// Runs `work` on the store's runtime and blocks the calling thread for
    /// its result (fine inside another runtime too: the work runs on ours).
    fn wait<T, F, Fut>(&self, work: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(Arc<Inner>) -> Fut,
        Fut: Future<Output = Result<T, StoreError>> + Send + 'static,
    {
        let (tx, rx) = std::sync::mpsc::channel();
        let fut = work(Arc::clone(&self.inner));
        self.handle.spawn(async move {
            let _ = tx.send(fut.await);
        });
        rx.recv().map_err(|_| {
            StoreError::Unavailable(format!("{}: the database task stopped", self.inner.name))
        })?
    }
}
