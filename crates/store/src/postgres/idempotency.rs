//! Side-effect call records: [`IdempotencyLog`] for [`PgStore`], and the
//! fenced variants a worker uses ([`PgStore::fenced_log`]): a worker that
//! lost its lease can neither start nor complete a side effect's record.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;
use stepwise_core::{IdempotencyLog, IdempotencyRecord, RunId, StepId, StoreError};

use super::error::Fail;
use super::log::{check_fence, to_i64};
use super::{Inner, PgStore};
use crate::codec::{from_json, to_json};

async fn begin(inner: &Inner, record: &IdempotencyRecord, fence: Option<u64>) -> Result<(), Fail> {
    let mut conn = inner.pool.get().await?;
    let tx = conn.transaction().await?;
    if let Some(fence) = fence {
        check_fence(&tx, &record.run, fence).await?;
    }
    let outcome = record
        .outcome
        .as_ref()
        .map(|o| to_json(o, "idempotency outcome"))
        .transpose()?;
    // A repeated begin (a resume) keeps the first record and its outcome.
    tx.execute(
        "INSERT INTO stepwise.idempotency (key, run_id, step, args_hash, outcome)
         VALUES ($1, $2, $3, $4, $5::text::json)
         ON CONFLICT (key) DO NOTHING",
        &[
            &record.key,
            &record.run.as_str(),
            &record.step.as_str(),
            &record.args_hash,
            &outcome,
        ],
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

async fn complete(
    inner: &Inner,
    key: &str,
    outcome: &Value,
    fence: Option<(&RunId, u64)>,
) -> Result<(), Fail> {
    let mut conn = inner.pool.get().await?;
    let tx = conn.transaction().await?;
    if let Some((run, fence)) = fence {
        check_fence(&tx, run, fence).await?;
    }
    let changed = tx
        .execute(
            "UPDATE stepwise.idempotency SET outcome = $2::text::json, completed_at = clock_timestamp()
             WHERE key = $1",
            &[&key, &to_json(outcome, "idempotency outcome")?],
        )
        .await?;
    if changed == 0 {
        return Err(
            StoreError::Unavailable(format!("no idempotency record {key} to complete")).into(),
        );
    }
    tx.commit().await?;
    Ok(())
}

async fn get(inner: &Inner, key: &str) -> Result<Option<IdempotencyRecord>, Fail> {
    let conn = inner.pool.get().await?;
    let row = conn
        .query_opt(
            "SELECT run_id, step, args_hash, outcome::text FROM stepwise.idempotency WHERE key = $1",
            &[&key],
        )
        .await?;
    row.map(|r| {
        Ok(IdempotencyRecord {
            key: key.to_owned(),
            run: RunId(r.get(0)),
            step: StepId(r.get(1)),
            args_hash: r.get(2),
            outcome: r
                .get::<_, Option<&str>>(3)
                .map(|o| from_json(o, "idempotency outcome"))
                .transpose()?,
        })
    })
    .transpose()
}

impl PgStore {
    fn begin_with(
        &self,
        record: &IdempotencyRecord,
        fence: Option<u64>,
    ) -> BoxFuture<'static, Result<(), StoreError>> {
        let record = record.clone();
        self.spawn(move |inner: Arc<Inner>| async move {
            begin(&inner, &record, fence)
                .await
                .map_err(|e| e.into_store(&inner.name))?;
            inner.committed();
            Ok(())
        })
    }

    fn complete_with(
        &self,
        key: &str,
        outcome: &Value,
        fence: Option<(RunId, u64)>,
    ) -> BoxFuture<'static, Result<(), StoreError>> {
        let (key, outcome) = (key.to_owned(), outcome.clone());
        self.spawn(move |inner: Arc<Inner>| async move {
            let fence = fence.as_ref().map(|(run, f)| (run, *f));
            complete(&inner, &key, &outcome, fence)
                .await
                .map_err(|e| e.into_store(&inner.name))?;
            inner.committed();
            Ok(())
        })
    }

    /// The idempotency log of one run as its lease holder writes it: every
    /// `begin` and `complete` checks `fence` in its transaction, as appends
    /// do, and fails with `StoreError::Fenced` once the lease was taken over.
    pub fn fenced_log(self: &Arc<Self>, run: &RunId, fence: u64) -> FencedLog {
        FencedLog {
            store: Arc::clone(self),
            run: run.clone(),
            fence,
        }
    }
}

/// See [`PgStore::fenced_log`].
#[derive(Debug, Clone)]
pub struct FencedLog {
    store: Arc<PgStore>,
    run: RunId,
    fence: u64,
}

impl FencedLog {
    /// `Fenced` unless this log's lease still holds: same fence, a holder,
    /// and not run out (by the database's clock).
    async fn held(inner: &Inner, run: &RunId, fence: u64) -> Result<(), Fail> {
        let conn = inner.pool.get().await?;
        let row = conn
            .query_opt(
                "SELECT 1 FROM stepwise.leases WHERE run_id = $1 AND fence = $2
                   AND holder IS NOT NULL AND until > clock_timestamp()",
                &[&run.as_str(), &to_i64(fence, "lease fence")?],
            )
            .await?;
        match row {
            Some(_) => Ok(()),
            None => Err(StoreError::Fenced {
                run: run.clone(),
                fence,
            }
            .into()),
        }
    }
}

impl IdempotencyLog for FencedLog {
    fn check_held(&self) -> BoxFuture<'_, Result<(), StoreError>> {
        let (run, fence) = (self.run.clone(), self.fence);
        self.store.spawn(move |inner: Arc<Inner>| async move {
            Self::held(&inner, &run, fence)
                .await
                .map_err(|e| e.into_store(&inner.name))
        })
    }

    fn begin<'a>(&'a self, record: &'a IdempotencyRecord) -> BoxFuture<'a, Result<(), StoreError>> {
        if record.run != self.run {
            let run = record.run.clone();
            let fence = self.fence;
            return Box::pin(async move { Err(StoreError::Fenced { run, fence }) });
        }
        self.store.begin_with(record, Some(self.fence))
    }

    fn complete<'a>(
        &'a self,
        key: &'a str,
        outcome: &'a Value,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        self.store
            .complete_with(key, outcome, Some((self.run.clone(), self.fence)))
    }

    fn get<'a>(
        &'a self,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<IdempotencyRecord>, StoreError>> {
        self.store.get(key)
    }
}

impl IdempotencyLog for PgStore {
    fn begin<'a>(&'a self, record: &'a IdempotencyRecord) -> BoxFuture<'a, Result<(), StoreError>> {
        self.begin_with(record, None)
    }

    fn complete<'a>(
        &'a self,
        key: &'a str,
        outcome: &'a Value,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        self.complete_with(key, outcome, None)
    }

    fn get<'a>(
        &'a self,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<IdempotencyRecord>, StoreError>> {
        let key = key.to_owned();
        self.spawn(move |inner: Arc<Inner>| async move {
            get(&inner, &key)
                .await
                .map_err(|e| e.into_store(&inner.name))
        })
    }
}
