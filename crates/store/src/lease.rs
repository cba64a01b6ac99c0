//! Run leases with fencing: [`RunLease`] for [`SqliteStore`].
//!
//! A `leases` row is deleted only with its run (`delete_run`): releasing clears `holder` and `until` but
//! keeps `fence`, so the next acquisition gets a larger fence than any
//! handed out before and a stale holder's appends stay refused. Every change
//! runs under `BEGIN IMMEDIATE`, so two processes racing for a lease are
//! serialised by SQLite's write lock: exactly one sees it free.

use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use rusqlite::{Connection, OptionalExtension};
use stepwise_core::{Lease, RunId, RunLease, StoreError};

use crate::SqliteStore;
use crate::codec::{expiry, time_from_sql, time_to_sql, u64_from_sql, u64_to_sql};
use crate::error::Fail;

/// A `leases` row.
#[derive(Debug)]
struct Row {
    holder: Option<String>,
    fence: u64,
    until: Option<DateTime<Utc>>,
}

fn row(conn: &Connection, run: &RunId) -> Result<Option<Row>, Fail> {
    let raw = conn
        .prepare_cached("SELECT holder, fence, until FROM leases WHERE run_id = ?1")?
        .query_row([run.as_str()], |r| {
            Ok((
                r.get::<_, Option<String>>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, Option<String>>(2)?,
            ))
        })
        .optional()?;
    raw.map(|(holder, fence, until)| {
        Ok(Row {
            holder,
            fence: u64_from_sql(fence, "lease fence")?,
            until: until.as_deref().map(time_from_sql).transpose()?,
        })
    })
    .transpose()
}

/// Refuses a write under `fence` unless that fence holds the run's lease
/// right now: it is the latest one handed out and it was not released.
/// Expiry alone does not refuse: until someone else acquires the run, the
/// late holder is still its only writer, and the takeover bumps the fence.
pub(crate) fn check_fence(conn: &Connection, run: &RunId, fence: u64) -> Result<(), Fail> {
    match row(conn, run)? {
        Some(r) if r.fence == fence && r.holder.is_some() => Ok(()),
        _ => Err(StoreError::Fenced {
            run: run.clone(),
            fence,
        }
        .into()),
    }
}

/// A lease's holder, if the lease has not run out by `now`.
pub(crate) fn held_now(
    holder: Option<String>,
    until: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Option<String> {
    holder.filter(|_| until.is_some_and(|until| until > now))
}

impl SqliteStore {
    fn acquire_now(&self, run: &RunId, holder: &str, ttl_ms: u64) -> Result<Lease, StoreError> {
        self.write(|tx| {
            let now = Utc::now();
            let current = row(tx, run)?;
            if let Some(Row {
                holder: Some(other),
                until: Some(until),
                ..
            }) = &current
                && other != holder
                && *until > now
            {
                return Err(StoreError::Leased {
                    run: run.clone(),
                    holder: other.clone(),
                    until: *until,
                }
                .into());
            }
            let fence = current.map_or(0, |r| r.fence) + 1;
            let until = expiry(now, ttl_ms);
            tx.execute(
                "INSERT INTO leases (run_id, holder, fence, until) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (run_id) DO UPDATE SET
                     holder = excluded.holder, fence = excluded.fence, until = excluded.until",
                (
                    run.as_str(),
                    holder,
                    u64_to_sql(fence, "lease fence")?,
                    time_to_sql(until),
                ),
            )?;
            Ok(Lease {
                run: run.clone(),
                holder: holder.to_owned(),
                fence,
                until,
            })
        })
    }

    fn renew_now(&self, lease: &Lease, ttl_ms: u64) -> Result<Lease, StoreError> {
        self.write(|tx| {
            let holder = match row(tx, &lease.run)? {
                Some(Row {
                    holder: Some(holder),
                    fence,
                    ..
                }) if fence == lease.fence => holder,
                _ => {
                    return Err(StoreError::Fenced {
                        run: lease.run.clone(),
                        fence: lease.fence,
                    }
                    .into());
                }
            };
            let until = expiry(Utc::now(), ttl_ms);
            tx.execute(
                "UPDATE leases SET until = ?2 WHERE run_id = ?1",
                (lease.run.as_str(), time_to_sql(until)),
            )?;
            Ok(Lease {
                run: lease.run.clone(),
                holder,
                fence: lease.fence,
                until,
            })
        })
    }

    fn break_now(&self, run: &RunId, holder: &str) -> Result<bool, StoreError> {
        self.write(|tx| {
            // Only that holder's lease; the fence stays, so the holder (if it
            // were somehow alive) is refused from now on.
            let changed = tx.execute(
                "UPDATE leases SET holder = NULL, until = NULL WHERE run_id = ?1 AND holder = ?2",
                (run.as_str(), holder),
            )?;
            Ok(changed > 0)
        })
    }

    fn release_now(&self, lease: &Lease) -> Result<(), StoreError> {
        self.write(|tx| {
            // Only the current holder's release counts; a stale one is a no-op.
            tx.execute(
                "UPDATE leases SET holder = NULL, until = NULL
                 WHERE run_id = ?1 AND fence = ?2 AND holder IS NOT NULL",
                (lease.run.as_str(), u64_to_sql(lease.fence, "lease fence")?),
            )?;
            Ok(())
        })
    }
}

impl RunLease for SqliteStore {
    fn acquire<'a>(
        &'a self,
        run: &'a RunId,
        holder: &'a str,
        ttl_ms: u64,
    ) -> BoxFuture<'a, Result<Lease, StoreError>> {
        Box::pin(async move { self.acquire_now(run, holder, ttl_ms) })
    }

    fn renew<'a>(
        &'a self,
        lease: &'a Lease,
        ttl_ms: u64,
    ) -> BoxFuture<'a, Result<Lease, StoreError>> {
        Box::pin(async move { self.renew_now(lease, ttl_ms) })
    }

    fn release<'a>(&'a self, lease: &'a Lease) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move { self.release_now(lease) })
    }

    fn break_lease<'a>(
        &'a self,
        run: &'a RunId,
        holder: &'a str,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move { self.break_now(run, holder) })
    }
}
