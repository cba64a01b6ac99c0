//! The event log and the snapshots: [`Store`] for [`PgStore`].

use std::sync::Arc;

use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use stepwise_core::{Event, RunId, RunState, RunStatus, RunSummary, Store, StoreError};
use tokio_postgres::Transaction;
use tokio_postgres::types::ToSql;

use super::error::{Fail, UNIQUE_VIOLATION};
use super::{Cached, Inner, PgStore};
use crate::Tail;
use crate::codec::{from_json, status_from_sql, to_json};
use crate::rebuild::{Snapshot, rebuild};
use crate::state_cache::append_start;

pub(super) fn to_i64(n: u64, what: &str) -> Result<i64, Fail> {
    i64::try_from(n).map_err(|_| Fail::Data(format!("{what} {n} is too large to store")))
}

pub(super) fn to_u64(n: i64, what: &str) -> Result<u64, Fail> {
    u64::try_from(n).map_err(|_| Fail::Data(format!("{what} is negative ({n})")))
}

/// Refuses a write under `fence` unless that fence holds the run's lease
/// right now (as in SQLite: expiry alone does not refuse, a takeover does).
/// Locks the lease row until the transaction ends, so no takeover can
/// commit in between.
pub(super) async fn check_fence(tx: &Transaction<'_>, run: &RunId, fence: u64) -> Result<(), Fail> {
    let row = tx
        .query_opt(
            "SELECT fence, holder IS NOT NULL FROM stepwise.leases WHERE run_id = $1 FOR SHARE",
            &[&run.as_str()],
        )
        .await?;
    match row {
        Some(r) if to_u64(r.get(0), "lease fence")? == fence && r.get::<_, bool>(1) => Ok(()),
        _ => Err(StoreError::Fenced {
            run: run.clone(),
            fence,
        }
        .into()),
    }
}

async fn append(
    inner: &Inner,
    run: &RunId,
    events: &[Event],
    fence: Option<u64>,
) -> Result<Cached, Fail> {
    let cached = inner.states.take(run);
    let mut conn = inner.pool.get().await?;
    let tx = conn.transaction().await?;
    if let Some(fence) = fence {
        check_fence(&tx, run, fence).await?;
    }
    let head = tx
        .query_opt(
            "SELECT last_seq, updated_at FROM stepwise.runs WHERE run_id = $1 FOR UPDATE",
            &[&run.as_str()],
        )
        .await?
        .map(|r| Ok::<_, Fail>((to_u64(r.get(0), "last_seq")?, r.get::<_, DateTime<Utc>>(1))))
        .transpose()?;
    let (mut state, mut tail) = match append_start(run, events, head, cached)? {
        Some(start) => start,
        None => load_state(&tx, run).await?,
    };
    let first_seq = events.first().map_or(0, |e| e.seq);
    // The events table holds the history; the fold kept beside it needs
    // none (the snapshot is written without it).
    state.forget_history();
    let insert = tx
        .prepare(
            "INSERT INTO stepwise.events (run_id, seq, at, kind, body, fence)
             VALUES ($1, $2, $3, $4, $5::text::json, $6)",
        )
        .await?;
    let fence = fence.map(|f| to_i64(f, "fence")).transpose()?;
    for event in events {
        state
            .apply_forgetting(event)
            .map_err(|source| StoreError::Invalid {
                run: run.clone(),
                source,
            })?;
        let body = to_json(event, "event")?;
        tail.bytes = tail.bytes.saturating_add(body.len());
        let seq = to_i64(event.seq, "event seq")?;
        let inserted = tx
            .execute(
                &insert,
                &[
                    &run.as_str(),
                    &seq,
                    &event.at,
                    &event.kind.name(),
                    &body,
                    &fence,
                ],
            )
            .await;
        match inserted {
            // A writer that created the same run at the same moment.
            Err(e)
                if e.code().map(tokio_postgres::error::SqlState::code)
                    == Some(UNIQUE_VIOLATION) =>
            {
                return Err(StoreError::Conflict {
                    run: run.clone(),
                    last_seq: event.seq,
                    first_seq,
                }
                .into());
            }
            other => {
                other?;
            }
        }
    }
    let (last_seq, updated_at) = save_summary(&tx, run, &state).await?;
    if state.status != RunStatus::Running || tail.due(last_seq) {
        tail = save_snapshot(&tx, run, &mut state, last_seq).await?;
    }
    tx.commit().await?;
    Ok(Cached {
        last_seq,
        updated_at,
        state,
        tail,
    })
}

/// Writes the run's row; returns the `last_seq` and `updated_at` it has now.
async fn save_summary(
    tx: &Transaction<'_>,
    run: &RunId,
    state: &RunState,
) -> Result<(u64, DateTime<Utc>), Fail> {
    let s = RunSummary::of(state);
    let count = |n: usize, what: &str| {
        i64::try_from(n).map_err(|_| Fail::Data(format!("{what} {n} is too large to store")))
    };
    let params: [&(dyn ToSql + Sync); 10] = [
        &run.as_str(),
        &s.goal,
        &s.status.as_str(),
        &s.started_at,
        &s.updated_at,
        &to_i64(s.last_seq, "last_seq")?,
        &count(s.steps_done, "steps_done")?,
        &count(s.steps_total, "steps_total")?,
        &i64::from(s.replans),
        &to_i64(s.tokens, "tokens")?,
    ];
    let row = tx
        .query_one(
            "INSERT INTO stepwise.runs (run_id, goal, status, started_at, updated_at, last_seq,
                                        steps_done, steps_total, replans, tokens)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
             ON CONFLICT (run_id) DO UPDATE SET
                 goal = excluded.goal, status = excluded.status,
                 updated_at = excluded.updated_at, last_seq = excluded.last_seq,
                 steps_done = excluded.steps_done, steps_total = excluded.steps_total,
                 replans = excluded.replans, tokens = excluded.tokens
             RETURNING updated_at",
            &params,
        )
        .await?;
    Ok((s.last_seq, row.get(0)))
}

async fn save_snapshot(
    tx: &Transaction<'_>,
    run: &RunId,
    state: &mut RunState,
    last_seq: u64,
) -> Result<Tail, Fail> {
    let history = std::mem::take(&mut state.execution_history);
    let snapshot = to_json(&*state, "snapshot");
    state.execution_history = history;
    let snapshot = snapshot?;
    tx.execute(
        "INSERT INTO stepwise.snapshots (run_id, seq, state) VALUES ($1, $2, $3::text::json)
         ON CONFLICT (run_id) DO UPDATE SET seq = excluded.seq, state = excluded.state",
        &[&run.as_str(), &to_i64(last_seq, "last_seq")?, &snapshot],
    )
    .await?;
    Ok(Tail {
        snapshot_seq: last_seq,
        snapshot_bytes: snapshot.len(),
        bytes: 0,
    })
}

async fn last_seq(
    client: &impl tokio_postgres::GenericClient,
    run: &RunId,
) -> Result<Option<u64>, Fail> {
    client
        .query_opt(
            "SELECT last_seq FROM stepwise.runs WHERE run_id = $1",
            &[&run.as_str()],
        )
        .await?
        .map(|r| to_u64(r.get(0), "last_seq"))
        .transpose()
}

/// Every event of the run in order, and the bytes of those after `after`.
async fn read_log(
    client: &impl tokio_postgres::GenericClient,
    run: &RunId,
    after: u64,
) -> Result<(Vec<Event>, usize), Fail> {
    let rows = client
        .query(
            "SELECT seq, body::text FROM stepwise.events WHERE run_id = $1 ORDER BY seq",
            &[&run.as_str()],
        )
        .await?;
    let mut events = Vec::with_capacity(rows.len());
    let mut bytes = 0usize;
    for row in rows {
        let body: &str = row.get(1);
        if to_u64(row.get(0), "event seq")? > after {
            bytes = bytes.saturating_add(body.len());
        }
        events.push(from_json(body, "event")?);
    }
    Ok((events, bytes))
}

/// The run's state: its snapshot, its history from the log, the events
/// after the snapshot folded on; and where the snapshot stands.
async fn load_state(
    client: &impl tokio_postgres::GenericClient,
    run: &RunId,
) -> Result<(RunState, Tail), Fail> {
    let last = last_seq(client, run)
        .await?
        .ok_or_else(|| StoreError::NotFound(run.clone()))?;
    let snapshot = client
        .query_opt(
            "SELECT seq, state::text FROM stepwise.snapshots WHERE run_id = $1",
            &[&run.as_str()],
        )
        .await?;
    let snapshot = snapshot
        .map(|row| {
            let text: &str = row.get(1);
            Snapshot::read(text, || to_u64(row.get(0), "snapshot seq"))
        })
        .transpose()?;
    let snapshot_seq = snapshot.as_ref().map_or(0, |s| s.seq);
    let (events, bytes) = read_log(client, run, snapshot_seq).await?;
    Ok(rebuild(run, last, snapshot, events, bytes)?)
}

/// Reads in one `REPEATABLE READ` transaction: one consistent view.
async fn read_state(inner: &Inner, run: &RunId) -> Result<RunState, Fail> {
    let mut conn = inner.pool.get().await?;
    let tx = conn
        .build_transaction()
        .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .await?;
    let (state, _) = load_state(&tx, run).await?;
    tx.commit().await?;
    Ok(state)
}

async fn read_events(inner: &Inner, run: &RunId) -> Result<Vec<Event>, Fail> {
    let mut conn = inner.pool.get().await?;
    let tx = conn
        .build_transaction()
        .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .await?;
    if last_seq(&tx, run).await?.is_none() {
        return Err(StoreError::NotFound(run.clone()).into());
    }
    let (events, _) = read_log(&tx, run, u64::MAX).await?;
    tx.commit().await?;
    Ok(events)
}

async fn list(inner: &Inner) -> Result<Vec<RunSummary>, Fail> {
    let conn = inner.pool.get().await?;
    let rows = conn
        .query(
            "SELECT r.run_id, r.goal, r.status, r.started_at, r.updated_at, r.steps_done,
                    r.steps_total, r.replans, r.tokens, r.last_seq, l.holder, l.until
             FROM stepwise.runs r LEFT JOIN stepwise.leases l ON l.run_id = r.run_id
             ORDER BY r.started_at DESC, r.run_id DESC",
            &[],
        )
        .await?;
    let now = chrono::Utc::now();
    let range = |n: i64, what: &str| Fail::Data(format!("{what} is out of range ({n})"));
    rows.iter()
        .map(|r| {
            let steps_done: i64 = r.get(5);
            let steps_total: i64 = r.get(6);
            let replans: i64 = r.get(7);
            Ok(RunSummary {
                run_id: RunId(r.get(0)),
                goal: r.get(1),
                status: status_from_sql(r.get(2))?,
                started_at: r.get(3),
                updated_at: r.get(4),
                steps_done: usize::try_from(steps_done)
                    .map_err(|_| range(steps_done, "steps_done"))?,
                steps_total: usize::try_from(steps_total)
                    .map_err(|_| range(steps_total, "steps_total"))?,
                replans: u32::try_from(replans).map_err(|_| range(replans, "replans"))?,
                tokens: to_u64(r.get(8), "tokens")?,
                last_seq: to_u64(r.get(9), "last_seq")?,
                held_by: crate::lease::held_now(r.get(10), r.get(11), now),
            })
        })
        .collect()
}

impl Store for PgStore {
    fn append<'a>(
        &'a self,
        run: &'a RunId,
        events: &'a [Event],
        fence: Option<u64>,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        let (run, events) = (run.clone(), events.to_vec());
        self.spawn(move |inner: Arc<Inner>| async move {
            let result = append(&inner, &run, &events, fence).await;
            match result {
                Ok(cached) => {
                    inner.states.put(&run, cached);
                    inner.committed();
                    Ok(())
                }
                Err(e) => Err(e.into_store(&inner.name)),
            }
        })
    }

    fn events<'a>(&'a self, run: &'a RunId) -> BoxFuture<'a, Result<Vec<Event>, StoreError>> {
        let run = run.clone();
        self.spawn(move |inner: Arc<Inner>| async move {
            read_events(&inner, &run)
                .await
                .map_err(|e| e.into_store(&inner.name))
        })
    }

    fn state<'a>(&'a self, run: &'a RunId) -> BoxFuture<'a, Result<RunState, StoreError>> {
        let run = run.clone();
        self.spawn(move |inner: Arc<Inner>| async move {
            read_state(&inner, &run)
                .await
                .map_err(|e| e.into_store(&inner.name))
        })
    }

    fn list_runs(&self) -> BoxFuture<'_, Result<Vec<RunSummary>, StoreError>> {
        self.spawn(move |inner: Arc<Inner>| async move {
            list(&inner).await.map_err(|e| e.into_store(&inner.name))
        })
    }
}
