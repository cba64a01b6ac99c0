//! Side-effect call records: [`IdempotencyLog`] for [`SqliteStore`].
//!
//! `begin` is written (and fsynced) before the call starts and `complete`
//! after it ends, so after a crash a resume can tell "done" (outcome set),
//! "maybe in flight" (row without outcome) and "never started" (no row).

use chrono::Utc;
use futures::future::BoxFuture;
use rusqlite::OptionalExtension;
use serde_json::Value;
use stepwise_core::{IdempotencyLog, IdempotencyRecord, RunId, StepId, StoreError};

use crate::SqliteStore;
use crate::codec::{from_json, time_to_sql, to_json};

impl SqliteStore {
    fn begin_now(&self, record: &IdempotencyRecord) -> Result<(), StoreError> {
        self.write(|tx| {
            let outcome = record
                .outcome
                .as_ref()
                .map(|o| to_json(o, "idempotency outcome"))
                .transpose()?;
            // A repeated begin (a resume) keeps the first record and its outcome.
            tx.execute(
                "INSERT INTO idempotency (key, run_id, step, args_hash, outcome, begun_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                 ON CONFLICT (key) DO NOTHING",
                (
                    &record.key,
                    record.run.as_str(),
                    record.step.as_str(),
                    &record.args_hash,
                    outcome,
                    time_to_sql(Utc::now()),
                ),
            )?;
            Ok(())
        })
    }

    fn complete_now(&self, key: &str, outcome: &Value) -> Result<(), StoreError> {
        self.write(|tx| {
            let changed = tx.execute(
                "UPDATE idempotency SET outcome = ?2, completed_at = ?3 WHERE key = ?1",
                (
                    key,
                    to_json(outcome, "idempotency outcome")?,
                    time_to_sql(Utc::now()),
                ),
            )?;
            if changed == 0 {
                return Err(StoreError::Unavailable(format!(
                    "no idempotency record {key} to complete"
                ))
                .into());
            }
            Ok(())
        })
    }

    fn get_now(&self, key: &str) -> Result<Option<IdempotencyRecord>, StoreError> {
        self.read(|tx| {
            let raw = tx
                .query_row(
                    "SELECT run_id, step, args_hash, outcome FROM idempotency WHERE key = ?1",
                    [key],
                    |r| {
                        Ok((
                            r.get::<_, String>(0)?,
                            r.get::<_, String>(1)?,
                            r.get::<_, String>(2)?,
                            r.get::<_, Option<String>>(3)?,
                        ))
                    },
                )
                .optional()?;
            raw.map(|(run, step, args_hash, outcome)| {
                Ok(IdempotencyRecord {
                    key: key.to_owned(),
                    run: RunId(run),
                    step: StepId(step),
                    args_hash,
                    outcome: outcome
                        .as_deref()
                        .map(|o| from_json(o, "idempotency outcome"))
                        .transpose()?,
                })
            })
            .transpose()
        })
    }
}

impl IdempotencyLog for SqliteStore {
    fn begin<'a>(&'a self, record: &'a IdempotencyRecord) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move { self.begin_now(record) })
    }

    fn complete<'a>(
        &'a self,
        key: &'a str,
        outcome: &'a Value,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move { self.complete_now(key, outcome) })
    }

    fn get<'a>(
        &'a self,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<IdempotencyRecord>, StoreError>> {
        Box::pin(async move { self.get_now(key) })
    }
}
