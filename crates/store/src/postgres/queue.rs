//! The run queue and the workers that claim from it.
//!
//! `stepwise run --detach` [enqueues](PgStore::enqueue) a run: a `jobs` row
//! whose `spec` holds what a worker needs to start it. A worker
//! [claims](PgStore::claim) jobs that are not done and whose run's lease is
//! free or expired — queued ones, and orphans whose worker died or stopped
//! renewing — with `FOR UPDATE SKIP LOCKED`, so workers never wait for each
//! other and never claim the same job, and takes each run's lease (a new
//! fence) in the same transaction. It renews its leases in one statement
//! per heartbeat, and when a run ends (or pauses for a person) it marks the
//! job done and releases the lease, fenced: a worker that lost the run
//! changes nothing. `stepwise serve` [requeues](PgStore::requeue) a run a
//! person resumed, and asks the worker holding a run to cancel it
//! ([`PgStore::request_cancel`], read back with [`PgStore::cancels`]).

use std::sync::Arc;

use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use serde_json::Value;
use stepwise_core::{Lease, RunId, StoreError};
use tokio_postgres::Transaction;

use super::error::Fail;
use super::lease::{grant, ttl};
use super::log::{check_fence, to_i64, to_u64};
use super::notify::NOTIFY;
use super::{Inner, PgStore};
use crate::codec::{from_json, to_json};

/// A claimed job: the run, what it was enqueued with, and its lease.
#[derive(Debug, Clone)]
pub struct Job {
    /// The run.
    pub run: RunId,
    /// What `enqueue` was given.
    pub spec: Value,
    /// The run's lease, taken by the claim.
    pub lease: Lease,
    /// How many times the job was claimed, this claim included.
    pub claims: u32,
}

/// One line of `stepwise workers`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct WorkerInfo {
    /// The worker's id (its lease holder name, `host:pid`).
    pub id: String,
    /// Its host.
    pub host: String,
    /// Its process id.
    pub pid: i64,
    /// Runs it works on at once, at most.
    pub concurrency: i32,
    /// `running`, `draining` or `stopped`.
    pub state: String,
    /// When it started.
    pub started_at: DateTime<Utc>,
    /// Its last heartbeat.
    pub heartbeat_at: DateTime<Utc>,
    /// Runs whose lease it holds now (unexpired).
    pub runs_held: i64,
}

/// How many jobs are in each state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct QueueCounts {
    /// Waiting for a worker.
    pub queued: u64,
    /// Claimed by a worker (live or not).
    pub claimed: u64,
    /// Finished, or paused for a person.
    pub done: u64,
}

async fn enqueue(inner: &Inner, run: &RunId, spec: &Value) -> Result<(), Fail> {
    let mut conn = inner.pool.get().await?;
    let tx = conn.transaction().await?;
    let inserted = tx
        .execute(
            "INSERT INTO stepwise.jobs (run_id, spec) VALUES ($1, $2::text::json)
             ON CONFLICT (run_id) DO NOTHING",
            &[&run.as_str(), &to_json(spec, "job spec")?],
        )
        .await?;
    if inserted == 0 {
        return Err(Fail::Data(format!("run {run} is already in the queue")));
    }
    tx.execute(NOTIFY, &[]).await?;
    tx.commit().await?;
    Ok(())
}

async fn requeue(inner: &Inner, run: &RunId, spec: &Value) -> Result<bool, Fail> {
    let mut conn = inner.pool.get().await?;
    let tx = conn.transaction().await?;
    let changed = tx
        .execute(
            "INSERT INTO stepwise.jobs (run_id, spec) VALUES ($1, $2::text::json)
             ON CONFLICT (run_id) DO UPDATE SET spec = excluded.spec, state = 'queued',
                 enqueued_at = clock_timestamp(), claimed_by = NULL, claimed_at = NULL,
                 finished_at = NULL
             WHERE stepwise.jobs.state = 'done'",
            &[&run.as_str(), &to_json(spec, "job spec")?],
        )
        .await?;
    if changed == 0 {
        let holder = tx
            .query_opt(
                "SELECT holder, until FROM stepwise.leases
                 WHERE run_id = $1 AND holder IS NOT NULL AND until > clock_timestamp()",
                &[&run.as_str()],
            )
            .await?;
        if let Some(row) = holder {
            return Err(Fail::Store(StoreError::Leased {
                run: run.clone(),
                holder: row.get(0),
                until: row.get(1),
            }));
        }
        return Ok(false);
    }
    tx.execute(NOTIFY, &[]).await?;
    tx.commit().await?;
    Ok(true)
}

async fn request_cancel(inner: &Inner, run: &RunId, reason: &str) -> Result<Option<String>, Fail> {
    let mut conn = inner.pool.get().await?;
    let tx = conn.transaction().await?;
    let row = tx
        .query_opt(
            "UPDATE stepwise.jobs SET spec = (spec::jsonb || jsonb_build_object('cancel', $2::text))::json
             WHERE run_id = $1 AND state = 'claimed' RETURNING claimed_by",
            &[&run.as_str(), &reason],
        )
        .await?;
    tx.execute(NOTIFY, &[]).await?;
    tx.commit().await?;
    Ok(row.and_then(|r| r.get(0)))
}

async fn cancels(inner: &Inner, worker: &str) -> Result<Vec<(RunId, String)>, Fail> {
    let conn = inner.pool.get().await?;
    let rows = conn
        .query(
            "SELECT run_id, spec->>'cancel' FROM stepwise.jobs
             WHERE claimed_by = $1 AND state = 'claimed' AND spec->>'cancel' IS NOT NULL",
            &[&worker],
        )
        .await?;
    Ok(rows.iter().map(|r| (RunId(r.get(0)), r.get(1))).collect())
}

async fn deliver(inner: &Inner, run: &RunId, request: &Value) -> Result<Option<String>, Fail> {
    let conn = inner.pool.get().await?;
    let row = conn
        .query_opt(
            "UPDATE stepwise.jobs SET spec = jsonb_set(spec::jsonb, '{approvals}',
                 coalesce(spec::jsonb->'approvals', '[]'::jsonb) || jsonb_build_array($2::text::jsonb))::json
             WHERE run_id = $1 AND state = 'claimed' RETURNING claimed_by",
            &[&run.as_str(), &to_json(request, "approval")?],
        )
        .await?;
    Ok(row.and_then(|r| r.get(0)))
}

/// The approvals delivered to the job held under `lease`; when there are
/// none, marks the job done and releases the lease in the same
/// transaction, so an approval can never arrive in between and be lost.
async fn pause(inner: &Inner, lease: &Lease) -> Result<Vec<Value>, Fail> {
    let mut conn = inner.pool.get().await?;
    let tx = conn.transaction().await?;
    check_fence(&tx, &lease.run, lease.fence).await?;
    let row = tx
        .query_opt(
            "SELECT (spec::jsonb->'approvals')::text FROM stepwise.jobs WHERE run_id = $1 FOR UPDATE",
            &[&lease.run.as_str()],
        )
        .await?;
    let asked: Vec<Value> = match row.and_then(|r| r.get::<_, Option<String>>(0)) {
        Some(text) => from_json(&text, "delivered approvals")?,
        None => Vec::new(),
    };
    if !asked.is_empty() {
        return Ok(asked);
    }
    finish_in(&tx, lease, "done").await?;
    tx.commit().await?;
    Ok(Vec::new())
}

/// Takes the first `n` delivered approvals off the job held under `lease`
/// (those applied; any delivered since stay).
async fn applied(inner: &Inner, lease: &Lease, n: usize) -> Result<(), Fail> {
    let mut conn = inner.pool.get().await?;
    let tx = conn.transaction().await?;
    check_fence(&tx, &lease.run, lease.fence).await?;
    tx.execute(
        "UPDATE stepwise.jobs SET spec = jsonb_set(spec::jsonb, '{approvals}', coalesce(
             (SELECT jsonb_agg(a ORDER BY i) FROM jsonb_array_elements(spec::jsonb->'approvals')
                  WITH ORDINALITY AS t(a, i) WHERE i > $2), '[]'::jsonb))::json
         WHERE run_id = $1",
        &[&lease.run.as_str(), &to_i64(n as u64, "approvals")?],
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

async fn waiting(inner: &Inner) -> Result<Vec<RunId>, Fail> {
    let conn = inner.pool.get().await?;
    let rows = conn
        .query(
            "SELECT j.run_id FROM stepwise.jobs j
             LEFT JOIN stepwise.leases l ON l.run_id = j.run_id
             WHERE j.state <> 'done' AND (l.holder IS NULL OR l.until <= clock_timestamp())",
            &[],
        )
        .await?;
    Ok(rows.iter().map(|r| RunId(r.get(0))).collect())
}

async fn claim(inner: &Inner, worker: &str, n: usize, ttl_ms: u64) -> Result<Vec<Job>, Fail> {
    let mut conn = inner.pool.get().await?;
    let tx = conn.transaction().await?;
    let mut jobs = Vec::with_capacity(n);
    // Runs passed by (lease row locked, or taken meanwhile) do not count
    // against `n`: the next candidates are read past them, so one run frozen
    // at the head of the queue never stops a worker with one free slot.
    let mut passed: Vec<String> = Vec::new();
    while jobs.len() < n {
        let limit = i64::try_from(n - jobs.len()).unwrap_or(i64::MAX);
        let rows = tx
            .query(
                "SELECT j.run_id, j.spec::text FROM stepwise.jobs j
                 LEFT JOIN stepwise.leases l ON l.run_id = j.run_id
                 WHERE j.state <> 'done'
                   AND (l.holder IS NULL OR l.until <= clock_timestamp())
                   AND NOT (j.run_id = ANY($2))
                 ORDER BY j.enqueued_at, j.run_id
                 LIMIT $1
                 FOR UPDATE OF j SKIP LOCKED",
                &[&limit, &passed],
            )
            .await?;
        if rows.is_empty() {
            break;
        }
        for row in rows {
            let run: String = row.get(0);
            if !lease_row_free(&tx, &run).await? {
                passed.push(run);
                continue;
            }
            // Someone (a `stepwise resume`) may have taken the lease since the
            // join read it; the grant re-checks under the row's lock.
            let Some(lease) = grant(&tx, &run, worker, ttl_ms).await? else {
                passed.push(run);
                continue;
            };
            let claims: i32 = tx
                .query_one(
                    "UPDATE stepwise.jobs SET state = 'claimed', claimed_by = $2,
                            claimed_at = clock_timestamp(), claims = claims + 1
                     WHERE run_id = $1 RETURNING claims",
                    &[&run, &worker],
                )
                .await?
                .get(0);
            jobs.push(Job {
                run: RunId(run),
                spec: from_json(row.get(1), "job spec")?,
                lease,
                claims: u32::try_from(claims).unwrap_or(0),
            });
        }
    }
    tx.commit().await?;
    Ok(jobs)
}

/// Locks the run's lease row for the claim unless another transaction has
/// it locked — a worker stopped (SIGSTOP, a partition) in the middle of an
/// append holds it until it wakes or its connection dies — so a claim
/// passes such a run by instead of waiting behind it; `true` too when the
/// run has no lease row yet.
async fn lease_row_free(tx: &Transaction<'_>, run: &str) -> Result<bool, Fail> {
    let locked = tx
        .query_opt(
            "SELECT 1 FROM stepwise.leases WHERE run_id = $1 FOR UPDATE SKIP LOCKED",
            &[&run],
        )
        .await?;
    if locked.is_some() {
        return Ok(true);
    }
    let exists = tx
        .query_opt("SELECT 1 FROM stepwise.leases WHERE run_id = $1", &[&run])
        .await?;
    Ok(exists.is_none())
}

/// Ends a claim held under `lease`: the job becomes `state` (`done`, or
/// `queued` to give it back) and the lease is released — only if the lease
/// still holds (else `Fenced`, and nothing changes).
async fn settle(inner: &Inner, lease: &Lease, state: &str) -> Result<(), Fail> {
    let mut conn = inner.pool.get().await?;
    let tx = conn.transaction().await?;
    check_fence(&tx, &lease.run, lease.fence).await?;
    finish_in(&tx, lease, state).await?;
    if state == "queued" {
        tx.execute(NOTIFY, &[]).await?;
    }
    tx.commit().await?;
    Ok(())
}

/// Within a transaction that checked the fence: the job becomes `state`
/// and the lease is released.
async fn finish_in(tx: &Transaction<'_>, lease: &Lease, state: &str) -> Result<(), Fail> {
    tx.execute(
        "UPDATE stepwise.jobs SET state = $2,
                finished_at = CASE WHEN $2 = 'done' THEN clock_timestamp() END
         WHERE run_id = $1",
        &[&lease.run.as_str(), &state],
    )
    .await?;
    tx.execute(
        "UPDATE stepwise.leases SET holder = NULL, until = NULL WHERE run_id = $1 AND fence = $2",
        &[&lease.run.as_str(), &to_i64(lease.fence, "lease fence")?],
    )
    .await?;
    Ok(())
}

/// Renews every lease in `leases` still held, and the worker's heartbeat;
/// returns the leases renewed (the others were taken over).
async fn heartbeat(
    inner: &Inner,
    worker: &str,
    leases: &[Lease],
    ttl_ms: u64,
) -> Result<Vec<Lease>, Fail> {
    let conn = inner.pool.get().await?;
    conn.execute(
        "UPDATE stepwise.workers SET heartbeat_at = clock_timestamp() WHERE id = $1",
        &[&worker],
    )
    .await?;
    if leases.is_empty() {
        return Ok(Vec::new());
    }
    let runs: Vec<&str> = leases.iter().map(|l| l.run.as_str()).collect();
    let fences = leases
        .iter()
        .map(|l| to_i64(l.fence, "lease fence"))
        .collect::<Result<Vec<_>, _>>()?;
    let rows = conn
        .query(
            "UPDATE stepwise.leases l SET until = clock_timestamp() + $3::bigint * interval '1 millisecond'
             FROM unnest($1::text[], $2::bigint[]) AS held(run_id, fence)
             WHERE l.run_id = held.run_id AND l.fence = held.fence AND l.holder IS NOT NULL
             RETURNING l.run_id, l.fence, l.holder, l.until",
            &[&runs, &fences, &ttl(ttl_ms)],
        )
        .await?;
    rows.iter()
        .map(|r| {
            Ok(Lease {
                run: RunId(r.get(0)),
                fence: to_u64(r.get(1), "lease fence")?,
                holder: r.get(2),
                until: r.get(3),
            })
        })
        .collect()
}

async fn register(
    inner: &Inner,
    id: &str,
    host: &str,
    pid: u32,
    concurrency: usize,
) -> Result<(), Fail> {
    let conn = inner.pool.get().await?;
    conn.execute(
        "INSERT INTO stepwise.workers (id, host, pid, concurrency, state)
         VALUES ($1, $2, $3, $4, 'running')
         ON CONFLICT (id) DO UPDATE SET host = excluded.host, pid = excluded.pid,
             concurrency = excluded.concurrency, state = 'running',
             started_at = clock_timestamp(), heartbeat_at = clock_timestamp(), stopped_at = NULL",
        &[
            &id,
            &host,
            &i64::from(pid),
            &i32::try_from(concurrency).unwrap_or(i32::MAX),
        ],
    )
    .await?;
    Ok(())
}

async fn set_state(inner: &Inner, id: &str, state: &str) -> Result<(), Fail> {
    let conn = inner.pool.get().await?;
    conn.execute(
        "UPDATE stepwise.workers SET state = $2, heartbeat_at = clock_timestamp(),
                stopped_at = CASE WHEN $2 = 'stopped' THEN clock_timestamp() END
         WHERE id = $1",
        &[&id, &state],
    )
    .await?;
    Ok(())
}

async fn workers(inner: &Inner) -> Result<Vec<WorkerInfo>, Fail> {
    let conn = inner.pool.get().await?;
    let rows = conn
        .query(
            "SELECT w.id, w.host, w.pid, w.concurrency, w.state, w.started_at, w.heartbeat_at,
                    (SELECT count(*) FROM stepwise.leases l
                     WHERE l.holder = w.id AND l.until > clock_timestamp())
             FROM stepwise.workers w ORDER BY w.started_at DESC, w.id",
            &[],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| WorkerInfo {
            id: r.get(0),
            host: r.get(1),
            pid: r.get(2),
            concurrency: r.get(3),
            state: r.get(4),
            started_at: r.get(5),
            heartbeat_at: r.get(6),
            runs_held: r.get(7),
        })
        .collect())
}

async fn counts(inner: &Inner) -> Result<QueueCounts, Fail> {
    let conn = inner.pool.get().await?;
    let rows = conn
        .query(
            "SELECT state, count(*) FROM stepwise.jobs GROUP BY state",
            &[],
        )
        .await?;
    let mut counts = QueueCounts::default();
    for row in rows {
        let n = to_u64(row.get(1), "job count")?;
        match row.get::<_, &str>(0) {
            "queued" => counts.queued = n,
            "claimed" => counts.claimed = n,
            _ => counts.done = n,
        }
    }
    Ok(counts)
}

impl PgStore {
    /// Puts a run in the queue, with what a worker needs to start it. A run
    /// already in the queue is refused.
    pub fn enqueue(&self, run: &RunId, spec: &Value) -> BoxFuture<'static, Result<(), StoreError>> {
        let (run, spec) = (run.clone(), spec.clone());
        self.spawn(move |inner: Arc<Inner>| async move {
            enqueue(&inner, &run, &spec)
                .await
                .map_err(|e| e.into_store(&inner.name))?;
            inner.committed();
            Ok(())
        })
    }

    /// Puts a run back in the queue with a new `spec` (a person's resume of
    /// a run a worker finished or paused): a done job becomes queued again;
    /// a run not in the queue yet is added. `false` if it is already in the
    /// queue (nothing changes); `Leased`, naming the worker, if one holds it.
    pub fn requeue(
        &self,
        run: &RunId,
        spec: &Value,
    ) -> BoxFuture<'static, Result<bool, StoreError>> {
        let (run, spec) = (run.clone(), spec.clone());
        self.spawn(move |inner: Arc<Inner>| async move {
            let queued = requeue(&inner, &run, &spec)
                .await
                .map_err(|e| e.into_store(&inner.name))?;
            inner.committed();
            Ok(queued)
        })
    }

    /// Asks the worker that claimed `run` to cancel it (the request rides in
    /// the job's spec, under `cancel`; the worker's heartbeat reads it).
    /// Returns that worker, or `None` if no worker has the run claimed.
    pub fn request_cancel(
        &self,
        run: &RunId,
        reason: &str,
    ) -> BoxFuture<'static, Result<Option<String>, StoreError>> {
        let (run, reason) = (run.clone(), reason.to_owned());
        self.spawn(move |inner: Arc<Inner>| async move {
            let holder = request_cancel(&inner, &run, &reason)
                .await
                .map_err(|e| e.into_store(&inner.name))?;
            inner.committed();
            Ok(holder)
        })
    }

    /// The cancels clients asked for of runs `worker` has claimed, with their reasons.
    pub fn cancels(
        &self,
        worker: &str,
    ) -> BoxFuture<'static, Result<Vec<(RunId, String)>, StoreError>> {
        let worker = worker.to_owned();
        self.spawn(move |inner: Arc<Inner>| async move {
            cancels(&inner, &worker)
                .await
                .map_err(|e| e.into_store(&inner.name))
        })
    }

    /// Hands a person's approval of a run a worker is working on to that
    /// worker: it rides in the run's job (under `approvals`) until the run
    /// pauses, when the worker records it under its lease and goes on (see
    /// [`PgStore::pause`]). Returns the worker, or `None` if no worker has
    /// the run claimed (then record the approval as for a run at rest).
    pub fn deliver_approval(
        &self,
        run: &RunId,
        request: &Value,
    ) -> BoxFuture<'static, Result<Option<String>, StoreError>> {
        let (run, request) = (run.clone(), request.clone());
        self.spawn(move |inner: Arc<Inner>| async move {
            let holder = deliver(&inner, &run, &request)
                .await
                .map_err(|e| e.into_store(&inner.name))?;
            inner.committed();
            Ok(holder)
        })
    }

    /// The run under `lease` paused for a person: the approvals delivered
    /// to its job ([`PgStore::deliver_approval`]), oldest first; when there
    /// are none, the job is done and the lease released (as
    /// [`PgStore::finish`]), in one transaction with the look, so an
    /// approval delivered meanwhile is either returned or refused to its
    /// sender. `Fenced` if the lease was taken over.
    pub fn pause(&self, lease: &Lease) -> BoxFuture<'static, Result<Vec<Value>, StoreError>> {
        let lease = lease.clone();
        self.spawn(move |inner: Arc<Inner>| async move {
            let asked = pause(&inner, &lease)
                .await
                .map_err(|e| e.into_store(&inner.name))?;
            inner.committed();
            Ok(asked)
        })
    }

    /// The first `n` approvals [`PgStore::pause`] returned are on record:
    /// off the job. `Fenced` if the lease was taken over.
    pub fn approvals_applied(
        &self,
        lease: &Lease,
        n: usize,
    ) -> BoxFuture<'static, Result<(), StoreError>> {
        let lease = lease.clone();
        self.spawn(move |inner: Arc<Inner>| async move {
            applied(&inner, &lease, n)
                .await
                .map_err(|e| e.into_store(&inner.name))?;
            inner.committed();
            Ok(())
        })
    }

    /// The runs whose job waits for a worker: not done, and nobody holds
    /// the run's lease (queued, or orphaned by a worker that died).
    pub fn waiting(&self) -> BoxFuture<'static, Result<Vec<RunId>, StoreError>> {
        self.spawn(move |inner: Arc<Inner>| async move {
            waiting(&inner).await.map_err(|e| e.into_store(&inner.name))
        })
    }

    /// Claims up to `n` jobs for `worker` — queued ones, and those whose
    /// run's lease is free or expired — oldest first, each with its run's
    /// lease for `ttl_ms`. Never waits for another worker's claim.
    pub fn claim(
        &self,
        worker: &str,
        n: usize,
        ttl_ms: u64,
    ) -> BoxFuture<'static, Result<Vec<Job>, StoreError>> {
        let worker = worker.to_owned();
        self.spawn(move |inner: Arc<Inner>| async move {
            let jobs = claim(&inner, &worker, n, ttl_ms)
                .await
                .map_err(|e| e.into_store(&inner.name))?;
            inner.committed();
            Ok(jobs)
        })
    }

    /// The run under `lease` is done (it ended, or waits for a person): the
    /// job is marked done and the lease released. `Fenced` if the lease was
    /// taken over (nothing changes).
    pub fn finish(&self, lease: &Lease) -> BoxFuture<'static, Result<(), StoreError>> {
        self.settle(lease, "done")
    }

    /// Gives a claimed run back to the queue (e.g. on shutdown): released,
    /// for any worker to claim at once. `Fenced` if it was taken over.
    pub fn give_back(&self, lease: &Lease) -> BoxFuture<'static, Result<(), StoreError>> {
        self.settle(lease, "queued")
    }

    fn settle(
        &self,
        lease: &Lease,
        state: &'static str,
    ) -> BoxFuture<'static, Result<(), StoreError>> {
        let lease = lease.clone();
        self.spawn(move |inner: Arc<Inner>| async move {
            settle(&inner, &lease, state)
                .await
                .map_err(|e| e.into_store(&inner.name))?;
            inner.committed();
            Ok(())
        })
    }

    /// Renews `worker`'s heartbeat and every lease of `leases` it still
    /// holds; returns those renewed (any other was taken over).
    pub fn heartbeat(
        &self,
        worker: &str,
        leases: &[Lease],
        ttl_ms: u64,
    ) -> BoxFuture<'static, Result<Vec<Lease>, StoreError>> {
        let (worker, leases) = (worker.to_owned(), leases.to_vec());
        self.spawn(move |inner: Arc<Inner>| async move {
            let renewed = heartbeat(&inner, &worker, &leases, ttl_ms)
                .await
                .map_err(|e| e.into_store(&inner.name))?;
            inner.committed();
            Ok(renewed)
        })
    }

    /// Records a worker as running (again, if it ran before).
    pub fn register_worker(
        &self,
        id: &str,
        host: &str,
        pid: u32,
        concurrency: usize,
    ) -> BoxFuture<'static, Result<(), StoreError>> {
        let (id, host) = (id.to_owned(), host.to_owned());
        self.spawn(move |inner: Arc<Inner>| async move {
            register(&inner, &id, &host, pid, concurrency)
                .await
                .map_err(|e| e.into_store(&inner.name))
        })
    }

    /// Records a worker's state: `running`, `draining` or `stopped`.
    pub fn set_worker_state(
        &self,
        id: &str,
        state: &'static str,
    ) -> BoxFuture<'static, Result<(), StoreError>> {
        let id = id.to_owned();
        self.spawn(move |inner: Arc<Inner>| async move {
            set_state(&inner, &id, state)
                .await
                .map_err(|e| e.into_store(&inner.name))
        })
    }

    /// Every worker that ever registered, newest first.
    pub fn workers(&self) -> BoxFuture<'static, Result<Vec<WorkerInfo>, StoreError>> {
        self.spawn(move |inner: Arc<Inner>| async move {
            workers(&inner).await.map_err(|e| e.into_store(&inner.name))
        })
    }

    /// Removes the rows of the workers `ids` (`stepwise workers --prune`);
    /// returns how many were removed.
    pub fn forget_workers(&self, ids: Vec<String>) -> BoxFuture<'static, Result<u64, StoreError>> {
        self.spawn(move |inner: Arc<Inner>| async move {
            let run = async {
                let conn = inner.pool.get().await?;
                let n = conn
                    .execute("DELETE FROM stepwise.workers WHERE id = ANY($1)", &[&ids])
                    .await?;
                Ok::<u64, Fail>(n)
            };
            run.await.map_err(|e| e.into_store(&inner.name))
        })
    }

    /// How many jobs are queued, claimed and done.
    pub fn queue_counts(&self) -> BoxFuture<'static, Result<QueueCounts, StoreError>> {
        self.spawn(move |inner: Arc<Inner>| async move {
            counts(&inner).await.map_err(|e| e.into_store(&inner.name))
        })
    }
}
