//! The event log and the snapshots: [`Store`] for [`SqliteStore`].
//!
//! An append is one `BEGIN IMMEDIATE` transaction: fence check, sequence
//! check, fold, insert, summary, and (when due) a new snapshot — all or
//! nothing. So at every commit the snapshot is the fold of the log up to its
//! `seq`, and the run's state is that snapshot plus the fold of the events
//! after it, even across a crash mid-append.

use chrono::Utc;
use futures::future::BoxFuture;
use rusqlite::{Connection, OptionalExtension};
use stepwise_core::{Event, RunId, RunState, RunStatus, RunSummary, Store, StoreError};

use crate::codec::{
    from_json, status_from_sql, time_from_sql, time_to_sql, to_json, u32_from_sql, u64_from_sql,
    u64_to_sql, usize_from_sql, usize_to_sql,
};
use crate::error::Fail;
use crate::lease::{check_fence, held_now};
use crate::rebuild::{Snapshot, rebuild};
use crate::state_cache::append_start;
use crate::{Cached, SqliteStore, Tail};

impl SqliteStore {
    fn append_now(
        &self,
        run: &RunId,
        events: &[Event],
        fence: Option<u64>,
    ) -> Result<(), StoreError> {
        // The state folded at this run's last append, if this store made it;
        // used only if the file still ends where that append left it.
        let cached = self.states.take(run);
        let folded = self.write(|tx| {
            if let Some(fence) = fence {
                check_fence(tx, run, fence)?;
            }
            let head = head(tx, run)?;
            let (mut state, mut tail) = match append_start(run, events, head, cached)? {
                Some(start) => start,
                None => load_state(tx, run)?,
            };
            // The events table holds the history; the fold kept beside it
            // needs none (the snapshot is written without it).
            state.forget_history();
            let mut insert = tx.prepare_cached(
                "INSERT INTO events (run_id, seq, at, kind, body) VALUES (?1, ?2, ?3, ?4, ?5)",
            )?;
            for event in events {
                state
                    .apply_forgetting(event)
                    .map_err(|source| StoreError::Invalid {
                        run: run.clone(),
                        source,
                    })?;
                let body = to_json(event, "event")?;
                tail.bytes = tail.bytes.saturating_add(body.len());
                insert.execute((
                    run.as_str(),
                    u64_to_sql(event.seq, "event seq")?,
                    time_to_sql(event.at),
                    event.kind.name(),
                    body,
                ))?;
            }
            let (last_seq, updated_at) = save_summary(tx, run, &state)?;
            // A run that stops running (finished, or paused for a person)
            // always gets a fresh snapshot, so loading it folds nothing.
            if state.status != RunStatus::Running || tail.due(last_seq) {
                tail = save_snapshot(tx, run, &mut state, last_seq)?;
            }
            Ok(Cached {
                last_seq,
                updated_at,
                state,
                tail,
            })
        })?;
        self.states.put(run, folded);
        Ok(())
    }

    fn events_now(&self, run: &RunId) -> Result<Vec<Event>, StoreError> {
        self.read(|tx| {
            if last_seq(tx, run)?.is_none() {
                return Err(StoreError::NotFound(run.clone()).into());
            }
            load_events(tx, run)
        })
    }

    fn events_since_now(
        &self,
        run: &RunId,
        after: u64,
        limit: usize,
    ) -> Result<Vec<Event>, StoreError> {
        self.read(|tx| {
            if last_seq(tx, run)?.is_none() {
                return Err(StoreError::NotFound(run.clone()).into());
            }
            let mut stmt = tx.prepare_cached(
                "SELECT body FROM events WHERE run_id = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3",
            )?;
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            let mut rows = stmt.query(rusqlite::params![
                run.as_str(),
                u64_to_sql(after, "event seq").unwrap_or(i64::MAX),
                limit
            ])?;
            let mut events = Vec::new();
            while let Some(row) = rows.next()? {
                let body = row
                    .get_ref(0)?
                    .as_str()
                    .map_err(|e| Fail::Data(format!("unreadable event: {e}")))?;
                events.push(from_json(body, "event")?);
            }
            Ok(events)
        })
    }

    fn state_now(&self, run: &RunId) -> Result<RunState, StoreError> {
        self.read(|tx| load_state(tx, run).map(|(state, _)| state))
    }

    fn list_runs_now(&self) -> Result<Vec<RunSummary>, StoreError> {
        self.read(|tx| {
            let mut stmt = tx.prepare(
                "SELECT r.run_id, r.goal, r.status, r.started_at, r.updated_at, r.steps_done,
                        r.steps_total, r.replans, r.tokens, r.last_seq, l.holder, l.until
                 FROM runs r LEFT JOIN leases l ON l.run_id = r.run_id
                 ORDER BY r.started_at DESC, r.run_id DESC",
            )?;
            let mut rows = stmt.query([])?;
            let now = Utc::now();
            let mut out = Vec::new();
            while let Some(row) = rows.next()? {
                out.push(RunSummary {
                    run_id: RunId(row.get(0)?),
                    goal: row.get(1)?,
                    status: status_from_sql(&row.get::<_, String>(2)?)?,
                    started_at: time_from_sql(&row.get::<_, String>(3)?)?,
                    updated_at: time_from_sql(&row.get::<_, String>(4)?)?,
                    steps_done: usize_from_sql(row.get(5)?, "steps_done")?,
                    steps_total: usize_from_sql(row.get(6)?, "steps_total")?,
                    replans: u32_from_sql(row.get(7)?, "replans")?,
                    tokens: u64_from_sql(row.get(8)?, "tokens")?,
                    last_seq: u64_from_sql(row.get(9)?, "last_seq")?,
                    held_by: held_now(
                        row.get(10)?,
                        row.get::<_, Option<String>>(11)?
                            .as_deref()
                            .map(time_from_sql)
                            .transpose()?,
                        now,
                    ),
                });
            }
            Ok(out)
        })
    }
}

/// The run's last sequence number and `updated_at`, or `None` if there is no such run.
fn head(conn: &Connection, run: &RunId) -> Result<Option<(u64, String)>, Fail> {
    conn.prepare_cached("SELECT last_seq, updated_at FROM runs WHERE run_id = ?1")?
        .query_row([run.as_str()], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
        })
        .optional()?
        .map(|(n, at)| Ok((u64_from_sql(n, "last_seq")?, at)))
        .transpose()
}

/// The run's last sequence number, or `None` if there is no such run.
fn last_seq(conn: &Connection, run: &RunId) -> Result<Option<u64>, Fail> {
    conn.prepare_cached("SELECT last_seq FROM runs WHERE run_id = ?1")?
        .query_row([run.as_str()], |r| r.get::<_, i64>(0))
        .optional()?
        .map(|n| u64_from_sql(n, "last_seq"))
        .transpose()
}

fn load_events(conn: &Connection, run: &RunId) -> Result<Vec<Event>, Fail> {
    Ok(read_log(conn, run, u64::MAX)?.0)
}

/// Every event of the run, in order, and the size in bytes of the JSON of
/// those with a `seq` above `after`.
fn read_log(conn: &Connection, run: &RunId, after: u64) -> Result<(Vec<Event>, usize), Fail> {
    let mut stmt =
        conn.prepare_cached("SELECT seq, body FROM events WHERE run_id = ?1 ORDER BY seq")?;
    let mut rows = stmt.query([run.as_str()])?;
    let mut events = Vec::new();
    let mut bytes = 0usize;
    while let Some(row) = rows.next()? {
        let body = row
            .get_ref(1)?
            .as_str()
            .map_err(|e| Fail::Data(format!("unreadable event: {e}")))?;
        if u64_from_sql(row.get(0)?, "event seq")? > after {
            bytes = bytes.saturating_add(body.len());
        }
        events.push(from_json(body, "event")?);
    }
    Ok((events, bytes))
}

/// The run's state: its snapshot, with the history put back from the log
/// and the events after the snapshot folded onto it; and where the snapshot
/// stands.
fn load_state(conn: &Connection, run: &RunId) -> Result<(RunState, Tail), Fail> {
    let last_seq = last_seq(conn, run)?.ok_or_else(|| StoreError::NotFound(run.clone()))?;
    let snapshot = conn
        .prepare_cached("SELECT seq, state FROM snapshots WHERE run_id = ?1")?
        .query_row([run.as_str()], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
        })
        .optional()?;
    let snapshot = snapshot
        .map(|(seq, text)| Snapshot::read(&text, || u64_from_sql(seq, "snapshot seq")))
        .transpose()?;
    let snapshot_seq = snapshot.as_ref().map_or(0, |s| s.seq);
    let (events, bytes) = read_log(conn, run, snapshot_seq)?;
    rebuild(run, last_seq, snapshot, events, bytes)
}

/// Writes the run's row: the summary columns `list_runs` reads. Returns the
/// `last_seq` and `updated_at` written.
fn save_summary(conn: &Connection, run: &RunId, state: &RunState) -> Result<(u64, String), Fail> {
    let summary = RunSummary::of(state);
    let updated_at = time_to_sql(summary.updated_at);
    // `started_at` (the first event's time) never changes once written, so
    // an update leaves it, and the index on it, alone.
    conn.prepare_cached(
        "INSERT INTO runs (run_id, goal, status, started_at, updated_at, last_seq, steps_done,
                           steps_total, replans, tokens)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
         ON CONFLICT (run_id) DO UPDATE SET
             goal = excluded.goal, status = excluded.status,
             updated_at = excluded.updated_at, last_seq = excluded.last_seq,
             steps_done = excluded.steps_done, steps_total = excluded.steps_total,
             replans = excluded.replans, tokens = excluded.tokens",
    )?
    .execute(rusqlite::params![
        run.as_str(),
        summary.goal,
        summary.status.as_str(),
        time_to_sql(summary.started_at),
        updated_at,
        u64_to_sql(summary.last_seq, "last_seq")?,
        usize_to_sql(summary.steps_done, "steps_done")?,
        usize_to_sql(summary.steps_total, "steps_total")?,
        i64::from(summary.replans),
        u64_to_sql(summary.tokens, "tokens")?,
    ])?;
    Ok((summary.last_seq, updated_at))
}

/// Writes the run's snapshot: its folded state as JSON without its history
/// (the events table has it), taken at `last_seq`, its last event.
fn save_snapshot(
    conn: &Connection,
    run: &RunId,
    state: &mut RunState,
    last_seq: u64,
) -> Result<Tail, Fail> {
    // Serialised without its history, which is put back after.
    let history = std::mem::take(&mut state.execution_history);
    let snapshot = to_json(&*state, "snapshot");
    state.execution_history = history;
    let snapshot = snapshot?;
    conn.prepare_cached(
        "INSERT INTO snapshots (run_id, seq, state) VALUES (?1, ?2, ?3)
         ON CONFLICT (run_id) DO UPDATE SET seq = excluded.seq, state = excluded.state",
    )?
    .execute((run.as_str(), u64_to_sql(last_seq, "last_seq")?, &snapshot))?;
    Ok(Tail {
        snapshot_seq: last_seq,
        snapshot_bytes: snapshot.len(),
        bytes: 0,
    })
}

/// Each method does its (sub-millisecond) work when first polled; see the
/// crate docs for why it is not sent to a thread pool.
impl Store for SqliteStore {
    fn append<'a>(
        &'a self,
        run: &'a RunId,
        events: &'a [Event],
        fence: Option<u64>,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move { self.append_now(run, events, fence) })
    }

    fn events<'a>(&'a self, run: &'a RunId) -> BoxFuture<'a, Result<Vec<Event>, StoreError>> {
        Box::pin(async move { self.events_now(run) })
    }

    fn events_since<'a>(
        &'a self,
        run: &'a RunId,
        after: u64,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<Event>, StoreError>> {
        Box::pin(async move { self.events_since_now(run, after, limit) })
    }

    fn state<'a>(&'a self, run: &'a RunId) -> BoxFuture<'a, Result<RunState, StoreError>> {
        Box::pin(async move { self.state_now(run) })
    }

    fn list_runs(&self) -> BoxFuture<'_, Result<Vec<RunSummary>, StoreError>> {
        Box::pin(async move { self.list_runs_now() })
    }
}
