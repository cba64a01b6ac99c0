//! `stepwise worker --db postgres://…`: claims queued and orphaned runs
//! from the database's queue and works on them, up to `--concurrency` at
//! once; and `stepwise workers`, the workers a database has seen.
//!
//! A worker is stateless: everything it knows about a run is in the
//! database. It claims jobs (`FOR UPDATE SKIP LOCKED`, each with its run's
//! lease and a new fence), starts a queued run or resumes a claimed one
//! from its log exactly as `stepwise resume` would, and heartbeats every
//! lease it holds a third of the lease's life. Every event it appends, and
//! every side-effect record, carries the lease's fence and is checked
//! against it inside the database's transaction: a worker that was paused
//! past its lease (SIGSTOP, a GC pause, a network partition) and wakes up
//! cannot write a single event. Its append fails with `Fenced`, and it
//! abandons the run and says so. A run whose worker died is claimed by
//! another once the lease has expired.
//!
//! A client's cancel (`POST /v1/runs/{id}/cancel` on `stepwise serve` over
//! the same database) rides in the run's job and wakes the worker (a
//! NOTIFY), which reads it, stops the run and records `run_cancelled` under
//! its lease.
//!
//! SIGTERM or Ctrl-C: stop claiming, let the runs in hand go on for
//! `--grace-ms`, then stop the rest and give them back to the queue (their
//! log is durable: the next worker resumes them). `--drain`: exit once
//! nothing is left in the queue.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use anyhow::{Context, anyhow};
use futures::future::BoxFuture;
use serde_json::Value;
use stepwise_core::event::{BatchSink, SinkError};
use stepwise_core::{Event, EventKind, Lease, RunId, RunLease, RunStatus, Store, StoreError};
use stepwise_server::{DeliveredApproval, Resume};
use stepwise_store::PgStore;
use stepwise_store::postgres::queue::Job;
use tokio::task::JoinSet;

use crate::cli::{ApproveMode, WorkerArgs};
use crate::cmd::pickup::{self, Pickup, Recorded};
use crate::cmd::wiring::{SharedServers, Wiring};
use crate::config::Config;
use crate::db::{self, url_of};
use crate::error::{CliError, CliResult};
use crate::output;
use crate::session::Host;

/// The approval mode a detached run was queued with.
fn approve_mode(name: &str) -> ApproveMode {
    if name == "auto" {
        ApproveMode::Auto
    } else {
        ApproveMode::Never
    }
}

/// Writes events to the store fenced by the run's lease, and remembers
/// whether an append was refused as fenced (the engine only sees a message).
struct Fenced {
    store: Arc<PgStore>,
    fence: u64,
    lost: Arc<AtomicBool>,
}

impl BatchSink for Fenced {
    fn record_batch<'a>(
        &'a self,
        run: &'a RunId,
        events: &'a [Event],
    ) -> BoxFuture<'a, Result<(), SinkError>> {
        Box::pin(async move {
            let result = self.store.append(run, events, Some(self.fence)).await;
            if matches!(result, Err(StoreError::Fenced { .. })) {
                self.lost.store(true, Ordering::SeqCst);
            }
            result.map_err(|e| SinkError {
                seq: events.first().map_or(0, |e| e.seq),
                message: e.to_string(),
            })
        })
    }
}

/// How a claimed run ended for this worker.
enum Outcome {
    /// Finished or paused for a person: the job is done.
    Done(RunStatus),
    /// Paused for a person, and the job already marked done.
    Settled(RunStatus),
    /// The lease was taken over: abandoned, nothing more written.
    Fenced,
    /// Could not go on here (e.g. the database went away): given back.
    GaveBack(String),
}

/// The runs in hand: their leases, as the heartbeat last renewed them.
type Held = Arc<Mutex<HashMap<RunId, Lease>>>;

struct Ctx {
    store: Arc<PgStore>,
    id: String,
    quiet: bool,
    lease_ms: u64,
    /// The MCP servers this worker's runs share (one set per configuration).
    mcp: SharedServers,
}

impl Ctx {
    fn say(&self, line: &str) {
        if !self.quiet {
            output::note(&format!("worker {}: {line}", self.id));
        }
    }
}

/// Works on a claimed run until it ends, is lost, or pauses with no
/// approval waiting for it. An approval a person gave while the run was
/// still running (which `stepwise serve` hands to this worker through the
/// run's job) is recorded under the lease once the run pauses, checked as
/// any approval of a paused run is, and the run goes on in the same claim.
async fn work_through(ctx: Arc<Ctx>, job: Job) -> anyhow::Result<Outcome> {
    let mut outcome = work(Arc::clone(&ctx), job.clone(), None).await?;
    loop {
        if !matches!(outcome, Outcome::Done(RunStatus::AwaitingApproval)) {
            return Ok(outcome);
        }
        let asked = match ctx.store.pause(&job.lease).await {
            Ok(asked) if asked.is_empty() => {
                return Ok(Outcome::Settled(RunStatus::AwaitingApproval));
            }
            Ok(asked) => asked,
            Err(StoreError::Fenced { .. }) => return Ok(Outcome::Fenced),
            Err(e) => return Ok(Outcome::GaveBack(e.to_string())),
        };
        let recorded = record_approvals(&ctx, &job.lease, &asked).await;
        let recorded = match recorded {
            Ok(by) => ctx
                .store
                .approvals_applied(&job.lease, asked.len())
                .await
                .map(|()| by),
            Err(e) => Err(e),
        };
        outcome = match recorded {
            Ok(Some(by)) => {
                let resume = Resume {
                    by,
                    ..Resume::default()
                };
                work(Arc::clone(&ctx), job.clone(), Some(resume)).await?
            }
            // Nothing applied: pause again (and settle the job).
            Ok(None) => Outcome::Done(RunStatus::AwaitingApproval),
            Err(StoreError::Fenced { .. }) => return Ok(Outcome::Fenced),
            Err(e) => return Ok(Outcome::GaveBack(e.to_string())),
        };
    }
}

/// Records the approvals delivered to a paused run, each checked against
/// what the run waits for now (one that no longer matches is dropped, and
/// said); returns who gave the last one recorded, if any was.
async fn record_approvals(
    ctx: &Ctx,
    lease: &Lease,
    asked: &[Value],
) -> Result<Option<String>, StoreError> {
    let run = &lease.run;
    let mut by = None;
    for value in asked {
        let approval = match serde_json::from_value::<DeliveredApproval>(value.clone()) {
            Ok(approval) => approval,
            Err(e) => {
                ctx.say(&format!("run {run}: dropped an unreadable approval ({e})"));
                continue;
            }
        };
        let state = ctx.store.state(run).await?;
        match approval.events(&state) {
            Ok(kinds) => {
                let events = state.next_events(kinds);
                ctx.store.append(run, &events, Some(lease.fence)).await?;
                ctx.say(&format!(
                    "run {run}: recorded the approval {} gave while it ran; going on",
                    approval.by
                ));
                by = Some(approval.by);
            }
            Err(why) => ctx.say(&format!(
                "run {run}: dropped the approval {} gave while it ran: {why}",
                approval.by
            )),
        }
    }
    Ok(by)
}

/// Starts or resumes the claimed run, to its end or a pause; `again` is a
/// resume this worker decided on (after recording delivered approvals).
async fn work(ctx: Arc<Ctx>, job: Job, again: Option<Resume>) -> anyhow::Result<Outcome> {
    let store = Arc::clone(&ctx.store);
    let run = job.run.clone();
    let lease = job.lease.clone();
    let existing = match store.state(&run).await {
        Ok(state) => Some(state),
        Err(StoreError::NotFound(_)) => None,
        Err(e) => return Ok(Outcome::GaveBack(e.to_string())),
    };
    let spec: Option<pickup::Detached> = serde_json::from_value(job.spec.clone()).ok();
    // A run the server recorded carries only a person's resume, if any.
    let asked: Option<Resume> = match &spec {
        _ if again.is_some() => again,
        Some(_) => None,
        None => serde_json::from_value::<Recorded>(job.spec.clone())
            .ok()
            .and_then(|r| r.resume)
            .map(Into::into),
    };
    let (mut host, approve) = match (&existing, &spec) {
        (Some(state), _)
            if state.status.has_ended()
                || (state.status != RunStatus::Running && asked.is_none()) =>
        {
            // It ended or paused before the last worker could say so.
            return Ok(Outcome::Done(state.status));
        }
        (Some(state), spec) => (
            Host::of(state)?,
            match spec {
                Some(s) => approve_mode(&s.approve),
                None => pickup::approve_mode(state, asked.as_ref().and_then(|r| r.approve)),
            },
        ),
        (None, Some(spec)) => {
            let mut host: Host =
                serde_json::from_value(spec.host.clone()).context("the queued run's settings")?;
            host.strategy.clone_from(&spec.strategy);
            (host, approve_mode(&spec.approve))
        }
        (None, None) => {
            anyhow::bail!("run {run} was queued without what a worker needs to start it")
        }
    };
    if host.strategy.is_empty() {
        host.strategy = stepwise_core::strategy::DEFAULT_STRATEGY.to_owned();
    }
    let loaded = crate::session::load_notes(&host.notes, true).map_err(CliError::into_anyhow)?;
    let picked = existing
        .as_ref()
        .map(|state| pickup::pickup(state, &host, &loaded, asked, &ctx.id));
    if let (Some(state), Some(Pickup::Unchanged)) = (&existing, &picked) {
        return Ok(Outcome::Done(state.status)); // resuming would only repeat itself
    }
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let config = Config::load(&cwd).map_err(CliError::into_anyhow)?;
    let lost = Arc::new(AtomicBool::new(false));
    let prior = existing
        .as_ref()
        .map_or(&[][..], |s| &s.execution_history[..]);
    let wired = Wiring {
        config: &config,
        cwd: &cwd,
        host: &host,
        corpus: Arc::new(loaded.corpus),
        approve,
        mcp_log: None,
        shared: Some(&ctx.mcp),
        idempotency: Arc::new(store.fenced_log(&run, lease.fence)),
        sinks: vec![Arc::new(Fenced {
            store: Arc::clone(&store),
            fence: lease.fence,
            lost: Arc::clone(&lost),
        })],
    }
    .wire(&run, prior)
    .await;
    let wired = match wired {
        Ok(wired) => wired,
        // Its tools (an MCP server) could not be started: retried with a
        // backoff, then recorded as failed, never dropped.
        Err(e) => return setup_failed(&ctx, &job, existing, spec, &format!("{e:#}")).await,
    };
    let result = match (existing, spec) {
        (Some(state), _) => match picked {
            Some(Pickup::Resume(options)) => wired.drive(state, Some(options)).await,
            _ => wired.drive(state, None).await,
        },
        (None, Some(spec)) => {
            wired
                .engine()
                .start(run.clone(), &spec.goal, spec.constraints, spec.host)
                .await
        }
        (None, None) => {
            wired.shutdown().await;
            anyhow::bail!("run {run} was queued without what a worker needs to start it")
        }
    };
    wired.shutdown().await;
    match result {
        Ok(state) => Ok(Outcome::Done(state.status)),
        Err(e) => {
            // Fenced, or lost for another reason? The lease says.
            if lost.load(Ordering::SeqCst)
                || matches!(
                    store.renew(&lease, ctx.lease_ms).await,
                    Err(StoreError::Fenced { .. })
                )
            {
                return Ok(Outcome::Fenced);
            }
            Ok(Outcome::GaveBack(e.to_string()))
        }
    }
}

/// Claims a run whose tools fail to start gets before it is recorded failed.
const SETUP_TRIES: u32 = 5;

/// A claimed run's tools could not be started (an MCP server too slow or
/// gone): a failure that may pass, so the run is given back after a
/// growing wait (0.5 s, 1 s, 2 s, 4 s, held under the lease) until its
/// [`SETUP_TRIES`]th claim; then it is recorded failed with the reason —
/// with its `run_started` if it never started — so the id `run --detach`
/// printed always leads to a run.
async fn setup_failed(
    ctx: &Ctx,
    job: &Job,
    existing: Option<stepwise_core::RunState>,
    spec: Option<pickup::Detached>,
    why: &str,
) -> anyhow::Result<Outcome> {
    let run = &job.run;
    if job.claims < SETUP_TRIES {
        let wait = Duration::from_millis(500 << job.claims.saturating_sub(1).min(4));
        ctx.say(&format!(
            "run {run}: its tools did not start (try {} of {SETUP_TRIES}): {why}; trying again in {} ms",
            job.claims,
            wait.as_millis()
        ));
        tokio::time::sleep(wait).await;
        return Ok(Outcome::GaveBack(format!("its tools did not start: {why}")));
    }
    let error = format!("its tools could not be started in {SETUP_TRIES} tries: {why}");
    let mut kinds = Vec::new();
    let state = match (existing, spec) {
        (Some(state), _) => state,
        (None, Some(spec)) => {
            kinds.push(stepwise_core::RunConfig::default().started_event(
                run.clone(),
                &spec.goal,
                spec.constraints,
                spec.host,
                &spec.strategy,
            ));
            stepwise_core::RunState::default()
        }
        (None, None) => {
            anyhow::bail!("run {run} was queued without what a worker needs to start it")
        }
    };
    kinds.push(stepwise_core::EventKind::RunFailed {
        error: error.clone(),
        usage: stepwise_core::Usage::default(),
    });
    let events = state.next_events(kinds);
    match ctx.store.append(run, &events, Some(job.lease.fence)).await {
        Ok(()) => {
            ctx.say(&format!("run {run}: recorded failed: {error}"));
            Ok(Outcome::Done(RunStatus::Failed))
        }
        Err(StoreError::Fenced { .. }) => Ok(Outcome::Fenced),
        Err(e) => Ok(Outcome::GaveBack(e.to_string())),
    }
}

/// Marks a finished run's job done once the database answers again: once
/// a second, for two minutes. Taken over meanwhile (fenced), the new holder
/// finds the run ended and marks it done itself.
async fn mark_done_later(ctx: Arc<Ctx>, lease: Lease, status: RunStatus) {
    let run = &lease.run;
    for _ in 0..120 {
        tokio::time::sleep(Duration::from_secs(1)).await;
        match ctx.store.finish(&lease).await {
            Ok(()) => {
                ctx.say(&format!("run {run} {}; marked done", status.as_str()));
                return;
            }
            Err(StoreError::Fenced { .. }) => return,
            Err(_) => {}
        }
    }
    ctx.say(&format!(
        "run {run}: could not mark its job done for two minutes; the next worker to claim it will"
    ));
}

/// After a run's task ended: settle its job.
async fn settle(ctx: &Arc<Ctx>, held: &Held, run: &RunId, outcome: anyhow::Result<Outcome>) {
    let lease = held
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .remove(run);
    let Some(lease) = lease else {
        // The heartbeat found it taken over, and said so.
        return;
    };
    match outcome {
        Ok(Outcome::Settled(status)) => ctx.say(&format!("run {run} {}", status.as_str())),
        Ok(Outcome::Done(status)) => match ctx.store.finish(&lease).await {
            Ok(()) => ctx.say(&format!("run {run} {}", status.as_str())),
            Err(StoreError::Fenced { .. }) => ctx.say(&format!(
                "run {run}: fenced out (another worker took its lease over); abandoned it"
            )),
            Err(e) => {
                // The database went away (a restart): the run ended on
                // record; keep trying to mark its job done rather than
                // leave it claimed until its lease runs out.
                ctx.say(&format!(
                    "run {run} {} but not marked done yet ({e}); retrying",
                    status.as_str()
                ));
                tokio::spawn(mark_done_later(Arc::clone(ctx), lease, status));
            }
        },
        Ok(Outcome::Fenced) => ctx.say(&format!(
            "run {run}: fenced out (another worker took its lease over); abandoned it, wrote nothing more"
        )),
        Ok(Outcome::GaveBack(why)) => {
            let _ = ctx.store.give_back(&lease).await;
            ctx.say(&format!("run {run}: gave it back to the queue ({why})"));
        }
        Err(e) => {
            // A run this worker cannot work on (its notes are gone, …):
            // taken off the queue rather than claimed again forever.
            let _ = ctx.store.finish(&lease).await;
            ctx.say(&format!("run {run}: cannot work on it: {e:#}"));
        }
    }
}

/// `stepwise worker`.
pub(crate) fn worker(args: &WorkerArgs, flag: Option<&PathBuf>) -> CliResult {
    let url = url_of(flag, "worker")?;
    let store = PgStore::connect_with(&url, args.concurrency + 3)
        .map(Arc::new)
        .map_err(|e| CliError::usage(anyhow!(e)))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| anyhow!("cannot start the async runtime: {e}"))?;
    runtime.block_on(serve(args, store))?;
    Ok(())
}

async fn serve(args: &WorkerArgs, store: Arc<PgStore>) -> anyhow::Result<()> {
    let id = db::holder();
    let host = db::host();
    store
        .register_worker(&id, &host, std::process::id(), args.concurrency)
        .await?;
    let ctx = Arc::new(Ctx {
        store: Arc::clone(&store),
        id: id.clone(),
        quiet: args.quiet,
        lease_ms: args.lease_ms,
        mcp: SharedServers::default(),
    });
    ctx.say(&format!(
        "started on {} (concurrency {}, lease {} ms)",
        store.name(),
        args.concurrency,
        args.lease_ms
    ));
    let held: Held = Arc::new(Mutex::new(HashMap::new()));
    let mut tasks: JoinSet<(RunId, anyhow::Result<Outcome>)> = JoinSet::new();
    let mut aborts: HashMap<RunId, tokio::task::AbortHandle> = HashMap::new();
    let beat = Duration::from_millis((args.lease_ms / 3).max(1));
    let poll = Duration::from_millis(args.poll_ms.max(1));
    let mut next_beat = tokio::time::Instant::now() + beat;
    // Woken when the queue gets something (a NOTIFY), so a run submitted to
    // idle workers is claimed at once rather than at the next poll.
    let wake = store.queue_wakeups();
    let stop = crate::mcp::interrupt();
    tokio::pin!(stop);
    let mut stopping: Option<tokio::time::Instant> = None;
    loop {
        // Claim while there is room.
        if stopping.is_none() && tasks.len() < args.concurrency {
            match store
                .claim(&id, args.concurrency - tasks.len(), args.lease_ms)
                .await
            {
                Ok(jobs) => {
                    for job in jobs {
                        ctx.say(&format!(
                            "claimed run {} (fence {}, claim {})",
                            job.run, job.lease.fence, job.claims
                        ));
                        held.lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .insert(job.run.clone(), job.lease.clone());
                        let run = job.run.clone();
                        let ctx = Arc::clone(&ctx);
                        let handle = tasks.spawn(async move {
                            let run = job.run.clone();
                            (run, work_through(ctx, job).await)
                        });
                        aborts.insert(run, handle);
                    }
                }
                Err(e) => ctx.say(&format!("cannot claim runs: {e}")),
            }
        }
        if args.drain && tasks.is_empty() && stopping.is_none() {
            match store.queue_counts().await {
                Ok(c) if c.queued == 0 && c.claimed == 0 => {
                    ctx.say("the queue is empty; stopping (--drain)");
                    break;
                }
                _ => {}
            }
        }
        if stopping.is_some() && tasks.is_empty() {
            break;
        }
        let wait = poll.min(next_beat.saturating_duration_since(tokio::time::Instant::now()));
        tokio::select! {
            done = tasks.join_next(), if !tasks.is_empty() => {
                if let Some(Ok((run, outcome))) = done {
                    aborts.remove(&run);
                    settle(&ctx, &held, &run, outcome).await;
                }
            }
            () = tokio::time::sleep(wait) => {}
            () = wake.notified() => {}
            () = &mut stop, if stopping.is_none() => {
                ctx.say(&format!("stopping: no new runs; {} in hand get {} ms to finish", tasks.len(), args.grace_ms));
                let _ = store.set_worker_state(&id, "draining").await;
                stopping = Some(tokio::time::Instant::now() + Duration::from_millis(args.grace_ms));
            }
        }
        if tokio::time::Instant::now() >= next_beat {
            next_beat = tokio::time::Instant::now() + beat;
            heartbeat(&ctx, &held, &aborts, args.lease_ms).await;
        }
        // Whenever it wakes: a cancel request's NOTIFY, or at the latest `--poll-ms`.
        if !aborts.is_empty() {
            cancel_requested(&ctx, &held, &mut aborts).await;
        }
        if let Some(deadline) = stopping
            && tokio::time::Instant::now() >= deadline
            && !tasks.is_empty()
        {
            // Past the grace period: stop what is left, and give it back.
            tasks.abort_all();
            while tasks.join_next().await.is_some() {}
            let leases: Vec<Lease> = held
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .drain()
                .map(|(_, l)| l)
                .collect();
            for lease in leases {
                let _ = store.give_back(&lease).await;
                ctx.say(&format!(
                    "run {}: stopped mid-run and gave it back to the queue (its log is durable)",
                    lease.run
                ));
            }
            break;
        }
    }
    ctx.mcp.shutdown().await;
    let _ = store.set_worker_state(&id, "stopped").await;
    ctx.say("stopped");
    Ok(())
}

/// Cancels the runs in hand a client asked to cancel (`POST
/// /v1/runs/{id}/cancel` on a server over the same database): stops the
/// run at once, as the server stops one of its own (its steps in flight
/// are abandoned; every transition so far is on record), records
/// `run_cancelled` under the lease, and marks the job done.
async fn cancel_requested(
    ctx: &Ctx,
    held: &Held,
    aborts: &mut HashMap<RunId, tokio::task::AbortHandle>,
) {
    let asked = match ctx.store.cancels(&ctx.id).await {
        Ok(asked) => asked,
        Err(e) => {
            ctx.say(&format!("cannot read cancel requests: {e}"));
            return;
        }
    };
    for (run, reason) in asked {
        let lease = held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&run);
        let Some(lease) = lease else {
            continue;
        };
        if let Some(abort) = aborts.remove(&run) {
            abort.abort();
        }
        match record_cancel(ctx, &lease, reason).await {
            Ok(()) => {
                let _ = ctx.store.finish(&lease).await;
                ctx.say(&format!("run {run} cancelled (a client asked)"));
            }
            Err(e) => {
                let _ = ctx.store.give_back(&lease).await;
                ctx.say(&format!(
                    "run {run}: cannot record its cancel ({e}); gave it back"
                ));
            }
        }
    }
}

/// Appends `run_cancelled` under `lease` unless the run ended. A write of
/// the stopped run still in flight may take the next seq first: then read
/// the log again.
async fn record_cancel(ctx: &Ctx, lease: &Lease, reason: String) -> Result<(), StoreError> {
    let mut tries = 0;
    loop {
        let state = ctx.store.state(&lease.run).await?;
        if state.status.has_ended() {
            return Ok(());
        }
        let events = state.next_events([EventKind::RunCancelled {
            reason: reason.clone(),
        }]);
        match ctx
            .store
            .append(&lease.run, &events, Some(lease.fence))
            .await
        {
            Err(StoreError::Conflict { .. }) if tries < 20 => {
                tries += 1;
                tokio::time::sleep(Duration::from_millis(25)).await;
            }
            other => return other,
        }
    }
}

/// Renews every lease in hand; a run whose lease was taken over is stopped
/// at once (it could not write anyway) and said to be abandoned.
async fn heartbeat(
    ctx: &Ctx,
    held: &Held,
    aborts: &HashMap<RunId, tokio::task::AbortHandle>,
    ttl_ms: u64,
) {
    let leases: Vec<Lease> = held
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .values()
        .cloned()
        .collect();
    let renewed = match ctx.store.heartbeat(&ctx.id, &leases, ttl_ms).await {
        Ok(renewed) => renewed,
        Err(e) => {
            // Unreachable for now: the leases run out by themselves if it lasts.
            ctx.say(&format!("heartbeat failed: {e}"));
            return;
        }
    };
    let mut held = held.lock().unwrap_or_else(PoisonError::into_inner);
    for lease in leases {
        match renewed.iter().find(|l| l.run == lease.run) {
            Some(new) => {
                held.insert(lease.run.clone(), new.clone());
            }
            None => {
                held.remove(&lease.run);
                if let Some(abort) = aborts.get(&lease.run) {
                    abort.abort();
                }
                ctx.say(&format!(
                    "run {}: fenced out (another worker took its lease over); abandoned it",
                    lease.run
                ));
            }
        }
    }
}
