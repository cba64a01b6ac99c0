//! Run leases with fencing: [`RunLease`] for [`PgStore`].
//!
//! As in SQLite, a `leases` row is deleted only with its run: releasing clears `holder`
//! and `until` and keeps `fence`, so every acquisition gets a larger fence
//! than any handed out before. Each acquisition is also written to
//! `lease_grants`, in the same transaction. Times are the database's clock.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use stepwise_core::{Lease, RunId, RunLease, StoreError};
use tokio_postgres::GenericClient;

use super::error::Fail;
use super::log::{to_i64, to_u64};
use super::{Inner, PgStore};

/// A TTL in milliseconds as SQL takes it, capped at a century (as SQLite's).
pub(super) fn ttl(ms: u64) -> i64 {
    const CENTURY_MS: u64 = 100 * 366 * 24 * 3600 * 1000;
    i64::try_from(ms.min(CENTURY_MS)).unwrap_or(0)
}

/// Takes the lease of `run` for `holder` if it is free, expired or already
/// `holder`'s, inside `client`'s transaction; `None` if someone else holds it.
pub(super) async fn grant(
    client: &impl GenericClient,
    run: &str,
    holder: &str,
    ttl_ms: u64,
) -> Result<Option<Lease>, Fail> {
    let row = client
        .query_opt(
            "INSERT INTO stepwise.leases AS l (run_id, holder, fence, until)
             VALUES ($1, $2, 1, clock_timestamp() + $3::bigint * interval '1 millisecond')
             ON CONFLICT (run_id) DO UPDATE SET
                 holder = excluded.holder, fence = l.fence + 1, until = excluded.until
             WHERE l.holder IS NULL OR l.holder = excluded.holder OR l.until <= clock_timestamp()
             RETURNING fence, until",
            &[&run, &holder, &ttl(ttl_ms)],
        )
        .await?;
    let Some(row) = row else {
        return Ok(None);
    };
    let fence: i64 = row.get(0);
    client
        .execute(
            "INSERT INTO stepwise.lease_grants (run_id, fence, holder) VALUES ($1, $2, $3)",
            &[&run, &fence, &holder],
        )
        .await?;
    Ok(Some(Lease {
        run: RunId(run.to_owned()),
        holder: holder.to_owned(),
        fence: to_u64(fence, "lease fence")?,
        until: row.get(1),
    }))
}

async fn acquire(inner: &Inner, run: &RunId, holder: &str, ttl_ms: u64) -> Result<Lease, Fail> {
    let mut conn = inner.pool.get().await?;
    let tx = conn.transaction().await?;
    if let Some(lease) = grant(&tx, run.as_str(), holder, ttl_ms).await? {
        tx.commit().await?;
        return Ok(lease);
    }
    let row = tx
        .query_one(
            "SELECT holder, until FROM stepwise.leases WHERE run_id = $1",
            &[&run.as_str()],
        )
        .await?;
    Err(StoreError::Leased {
        run: run.clone(),
        holder: row.get::<_, Option<String>>(0).unwrap_or_default(),
        until: row
            .get::<_, Option<DateTime<Utc>>>(1)
            .unwrap_or_else(Utc::now),
    }
    .into())
}

async fn renew(inner: &Inner, lease: &Lease, ttl_ms: u64) -> Result<Lease, Fail> {
    let conn = inner.pool.get().await?;
    let row = conn
        .query_opt(
            "UPDATE stepwise.leases SET until = clock_timestamp() + $3::bigint * interval '1 millisecond'
             WHERE run_id = $1 AND fence = $2 AND holder IS NOT NULL
             RETURNING holder, until",
            &[
                &lease.run.as_str(),
                &to_i64(lease.fence, "lease fence")?,
                &ttl(ttl_ms),
            ],
        )
        .await?;
    match row {
        Some(row) => Ok(Lease {
            run: lease.run.clone(),
            holder: row.get(0),
            fence: lease.fence,
            until: row.get(1),
        }),
        None => Err(StoreError::Fenced {
            run: lease.run.clone(),
            fence: lease.fence,
        }
        .into()),
    }
}

async fn release(inner: &Inner, lease: &Lease) -> Result<(), Fail> {
    let conn = inner.pool.get().await?;
    conn.execute(
        "UPDATE stepwise.leases SET holder = NULL, until = NULL
         WHERE run_id = $1 AND fence = $2 AND holder IS NOT NULL",
        &[&lease.run.as_str(), &to_i64(lease.fence, "lease fence")?],
    )
    .await?;
    Ok(())
}

async fn break_lease(inner: &Inner, run: &RunId, holder: &str) -> Result<bool, Fail> {
    let conn = inner.pool.get().await?;
    let changed = conn
        .execute(
            "UPDATE stepwise.leases SET holder = NULL, until = NULL
             WHERE run_id = $1 AND holder = $2",
            &[&run.as_str(), &holder],
        )
        .await?;
    Ok(changed > 0)
}

impl RunLease for PgStore {
    fn acquire<'a>(
        &'a self,
        run: &'a RunId,
        holder: &'a str,
        ttl_ms: u64,
    ) -> BoxFuture<'a, Result<Lease, StoreError>> {
        let (run, holder) = (run.clone(), holder.to_owned());
        self.spawn(move |inner: Arc<Inner>| async move {
            let lease = acquire(&inner, &run, &holder, ttl_ms)
                .await
                .map_err(|e| e.into_store(&inner.name))?;
            inner.committed();
            Ok(lease)
        })
    }

    fn renew<'a>(
        &'a self,
        lease: &'a Lease,
        ttl_ms: u64,
    ) -> BoxFuture<'a, Result<Lease, StoreError>> {
        let lease = lease.clone();
        self.spawn(move |inner: Arc<Inner>| async move {
            let lease = renew(&inner, &lease, ttl_ms)
                .await
                .map_err(|e| e.into_store(&inner.name))?;
            inner.committed();
            Ok(lease)
        })
    }

    fn release<'a>(&'a self, lease: &'a Lease) -> BoxFuture<'a, Result<(), StoreError>> {
        let lease = lease.clone();
        self.spawn(move |inner: Arc<Inner>| async move {
            release(&inner, &lease)
                .await
                .map_err(|e| e.into_store(&inner.name))?;
            inner.committed();
            Ok(())
        })
    }

    fn break_lease<'a>(
        &'a self,
        run: &'a RunId,
        holder: &'a str,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        let (run, holder) = (run.clone(), holder.to_owned());
        self.spawn(move |inner: Arc<Inner>| async move {
            let broke = break_lease(&inner, &run, &holder)
                .await
                .map_err(|e| e.into_store(&inner.name))?;
            inner.committed();
            Ok(broke)
        })
    }
}
