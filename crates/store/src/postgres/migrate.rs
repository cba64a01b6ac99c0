//! The schema and its migrations (see the module docs, "Schema").

use std::sync::Arc;

use stepwise_core::StoreError;

use super::error::Fail;
use super::{Inner, parse, runtime};

/// The schema version this build writes and understands.
pub const PG_SCHEMA_VERSION: u32 = 1;

/// The advisory lock migrators take ("STPW"), so two at once are serialised.
const MIGRATION_LOCK: i64 = 0x5354_5057;

/// `MIGRATIONS[i]` takes the schema from version `i` to `i + 1`, with its
/// name. Add steps at the end; never edit a released one.
const MIGRATIONS: &[(&str, &str)] = &[("runs, events, leases, idempotency, queue", V1)];

const V1: &str = "
CREATE TABLE stepwise.runs (
    run_id      text PRIMARY KEY,
    goal        text NOT NULL,
    status      text NOT NULL,
    started_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL,
    last_seq    bigint NOT NULL,
    steps_done  bigint NOT NULL,
    steps_total bigint NOT NULL,
    replans     bigint NOT NULL,
    tokens      bigint NOT NULL
);
CREATE INDEX runs_newest_first ON stepwise.runs (started_at DESC, run_id DESC);
CREATE TABLE stepwise.events (
    run_id      text NOT NULL,
    seq         bigint NOT NULL,
    at          timestamptz NOT NULL,
    kind        text NOT NULL,
    body        json NOT NULL,
    fence       bigint,
    appended_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (run_id, seq)
);
CREATE TABLE stepwise.snapshots (
    run_id text PRIMARY KEY,
    seq    bigint NOT NULL,
    state  json NOT NULL
);
CREATE TABLE stepwise.leases (
    run_id text PRIMARY KEY,
    holder text,
    fence  bigint NOT NULL,
    until  timestamptz
);
CREATE TABLE stepwise.lease_grants (
    run_id     text NOT NULL,
    fence      bigint NOT NULL,
    holder     text NOT NULL,
    granted_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (run_id, fence)
);
CREATE TABLE stepwise.idempotency (
    key          text PRIMARY KEY,
    run_id       text NOT NULL,
    step         text NOT NULL,
    args_hash    text NOT NULL,
    outcome      json,
    begun_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
    completed_at timestamptz
);
CREATE INDEX idempotency_by_run ON stepwise.idempotency (run_id);
CREATE TABLE stepwise.jobs (
    run_id      text PRIMARY KEY,
    spec        json NOT NULL,
    state       text NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'claimed', 'done')),
    enqueued_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    claimed_by  text,
    claimed_at  timestamptz,
    claims      integer NOT NULL DEFAULT 0,
    finished_at timestamptz
);
CREATE INDEX jobs_open ON stepwise.jobs (enqueued_at) WHERE state <> 'done';
CREATE TABLE stepwise.workers (
    id           text PRIMARY KEY,
    host         text NOT NULL,
    pid          bigint NOT NULL,
    concurrency  integer NOT NULL,
    started_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    heartbeat_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    state        text NOT NULL CHECK (state IN ('running', 'draining', 'stopped')),
    stopped_at   timestamptz
);
";

/// What [`migrate`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Migrated {
    /// The schema version before (0: no Stepwise schema).
    pub from: u32,
    /// The schema version now ([`PG_SCHEMA_VERSION`]).
    pub to: u32,
}

/// Brings the database at `url` to this build's schema: creates the
/// `stepwise` schema and runs the missing migrations, in one transaction
/// under an advisory lock. Running it again changes nothing. A database
/// migrated by a newer Stepwise is refused and left as it is.
pub fn migrate(url: &str) -> Result<Migrated, StoreError> {
    let (config, name) = parse(url)?;
    let runtime = runtime()?;
    let pool = super::Pool::new(config, 1);
    let work = async {
        let mut conn = pool.get().await?;
        let tx = conn.transaction().await?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
            .await?;
        tx.batch_execute(
            "CREATE SCHEMA IF NOT EXISTS stepwise;
             CREATE TABLE IF NOT EXISTS stepwise.migrations (
                 version    integer PRIMARY KEY,
                 name       text NOT NULL,
                 applied_at timestamptz NOT NULL DEFAULT clock_timestamp()
             )",
        )
        .await?;
        let from = version(&tx).await?;
        newer(from, &name)?;
        for (i, (step, sql)) in MIGRATIONS.iter().enumerate().skip(from as usize) {
            let to = i32::try_from(i + 1).map_err(|_| Fail::Data("too many migrations".into()))?;
            tx.batch_execute(sql).await?;
            tx.execute(
                "INSERT INTO stepwise.migrations (version, name) VALUES ($1, $2)",
                &[&to, step],
            )
            .await?;
        }
        tx.commit().await?;
        Ok(Migrated {
            from,
            to: PG_SCHEMA_VERSION,
        })
    };
    let result = super::off_thread(&name, || runtime.block_on(work))?;
    drop(pool);
    runtime.shutdown_background();
    result.map_err(|e: Fail| e.into_store(&name))
}

/// The recorded schema version (0 without a migrations table).
async fn version(client: &impl tokio_postgres::GenericClient) -> Result<u32, Fail> {
    let exists: bool = client
        .query_one("SELECT to_regclass('stepwise.migrations') IS NOT NULL", &[])
        .await?
        .get(0);
    if !exists {
        return Ok(0);
    }
    let max: Option<i32> = client
        .query_one("SELECT max(version) FROM stepwise.migrations", &[])
        .await?
        .get(0);
    Ok(max.map_or(0, |v| u32::try_from(v).unwrap_or(0)))
}

fn newer(version: u32, name: &str) -> Result<(), Fail> {
    if version > PG_SCHEMA_VERSION {
        return Err(StoreError::Unavailable(format!(
            "{name} was migrated by a newer Stepwise (schema version {version}; this one knows {PG_SCHEMA_VERSION}): use that Stepwise, or a database of its own"
        ))
        .into());
    }
    Ok(())
}

/// Refuses a database not at exactly [`PG_SCHEMA_VERSION`], saying what to do.
pub(super) async fn check(inner: &Arc<Inner>) -> Result<(), StoreError> {
    let name = &inner.name;
    let result = async {
        let conn = inner.pool.get().await?;
        let version = version(&*conn).await?;
        newer(version, name)?;
        if version == 0 {
            return Err(StoreError::Unavailable(format!(
                "{name} has no Stepwise schema yet: run `stepwise migrate --db {name}` once (it creates the schema `stepwise`)"
            ))
            .into());
        }
        if version < PG_SCHEMA_VERSION {
            return Err(StoreError::Unavailable(format!(
                "{name} has Stepwise schema version {version} and this Stepwise needs {PG_SCHEMA_VERSION}: run `stepwise migrate --db {name}`"
            ))
            .into());
        }
        Ok(())
    }
    .await;
    result.map_err(|e: Fail| e.into_store(name))
}
