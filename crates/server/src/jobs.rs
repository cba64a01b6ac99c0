//! The runs this server works on: at most `max_running` at once, the others
//! waiting in order (`queued`), each with a signal to stop it (a client's
//! cancel, or the server shutting down). A person's change to a run that
//! nobody works on (approve, reject, cancel) also claims the run here, so
//! it can never race this server's own work on it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use stepwise_core::{RunId, RunStatus};
use tokio::sync::{Notify, Semaphore, watch};

use crate::Shared;
use crate::act;
use crate::error::{ApiError, ErrorCode};
use crate::hub::HubSink;
use crate::launcher::{Resume, Stop, StopSignal, Work};

/// Where a run stands in this server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Waiting for a slot.
    Queued,
    /// Being worked on.
    Running,
    /// A person's change is being recorded.
    Acting,
}

struct Entry {
    phase: Phase,
    stop: Option<watch::Sender<Option<Stop>>>,
    done: watch::Receiver<bool>,
}

/// The queue and the runs in flight.
pub(crate) struct Jobs {
    permits: Arc<Semaphore>,
    entries: Mutex<HashMap<RunId, Entry>>,
    max_queued: usize,
    /// Queue places held for runs being recorded ([`Slot`]); changed only
    /// with `entries` locked, so a check and its reservation are one step.
    reserved: AtomicUsize,
    closed: AtomicBool,
    tasks: AtomicUsize,
    idle: Notify,
}

impl std::fmt::Debug for Jobs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Jobs")
            .field("tasks", &self.tasks.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

/// A place in the queue, held while a new run is recorded: a submit past
/// `max_queued` is refused before anything is written. Given back when
/// dropped unused (the run could not be recorded).
pub(crate) struct Slot {
    jobs: Arc<Jobs>,
    used: bool,
}

impl Drop for Slot {
    fn drop(&mut self) {
        if !self.used {
            let _entries = self.jobs.lock();
            self.jobs.reserved.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// How a run is let into the queue.
pub(crate) enum Admit {
    /// Within `max_queued`: a resume or another change to a recorded run.
    Queue,
    /// In the place reserved for it when it was recorded.
    Reserved(Slot),
    /// Without a limit: a run this server had accepted before it stopped.
    Recovered,
}

/// Removes an `Acting` claim when dropped.
pub(crate) struct Claim<'a> {
    jobs: &'a Jobs,
    run: RunId,
    done: Option<watch::Sender<bool>>,
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        self.jobs.lock().remove(&self.run);
        if let Some(done) = self.done.take() {
            let _ = done.send(true);
        }
    }
}

impl Jobs {
    pub(crate) fn new(max_running: usize, max_queued: usize) -> Jobs {
        Jobs {
            permits: Arc::new(Semaphore::new(max_running)),
            entries: Mutex::new(HashMap::new()),
            max_queued,
            reserved: AtomicUsize::new(0),
            closed: AtomicBool::new(false),
            tasks: AtomicUsize::new(0),
            idle: Notify::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<RunId, Entry>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Where `run` stands here, if this server has it.
    pub(crate) fn phase(&self, run: &RunId) -> Option<Phase> {
        self.lock().get(run).map(|e| e.phase)
    }

    /// How many runs are queued and running.
    pub(crate) fn counts(&self) -> (u64, u64) {
        let entries = self.lock();
        let count = |p: Phase| entries.values().filter(|e| e.phase == p).count() as u64;
        (count(Phase::Queued), count(Phase::Running))
    }

    /// Whether the server stopped taking work.
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// Claims a run for a person's change; refused while the run is queued,
    /// running or claimed here.
    pub(crate) fn claim(&self, run: &RunId) -> Result<Claim<'_>, ApiError> {
        let mut entries = self.lock();
        if let Some(e) = entries.get(run) {
            return Err(busy(run, e.phase));
        }
        let (done_tx, done) = watch::channel(false);
        entries.insert(
            run.clone(),
            Entry {
                phase: Phase::Acting,
                stop: None,
                done,
            },
        );
        Ok(Claim {
            jobs: self,
            run: run.clone(),
            done: Some(done_tx),
        })
    }

    /// Waits (up to `wait`) for this server's job on `run` to end, for a
    /// run whose record says it is at rest (paused for an approval or a
    /// review). The job records the pause before it winds down (stopping
    /// the run's MCP servers, giving back its lease), so for a moment the
    /// run is still here; a person's change made then must not be refused
    /// as `run_busy`. Returns at once if no job of this server works on it.
    pub(crate) async fn settle(&self, run: &RunId, wait: Duration) -> Result<(), ApiError> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let mut done = match self.lock().get(run) {
                Some(e) if e.phase == Phase::Running => e.done.clone(),
                _ => return Ok(()),
            };
            if tokio::time::timeout_at(deadline, done.wait_for(|d| *d))
                .await
                .is_err()
            {
                return Err(busy(run, Phase::Running));
            }
        }
    }

    /// Reserves a place in the queue for a run about to be recorded;
    /// refused (`queue_full`) when the queue and the places already held
    /// reach `max_queued`.
    pub(crate) fn reserve(self: &Arc<Self>) -> Result<Slot, ApiError> {
        let entries = self.lock();
        if self.is_closed() {
            return Err(shutting_down());
        }
        self.room(&entries)?;
        self.reserved.fetch_add(1, Ordering::SeqCst);
        Ok(Slot {
            jobs: Arc::clone(self),
            used: false,
        })
    }

    /// `queue_full` when the runs queued and the places held reach
    /// `max_queued` (`entries` locked by the caller).
    fn room(&self, entries: &HashMap<RunId, Entry>) -> Result<(), ApiError> {
        let queued = queued(entries) + self.reserved.load(Ordering::SeqCst);
        if queued >= self.max_queued {
            return Err(queue_full(queued));
        }
        Ok(())
    }

    /// Queues work on `run` (a fresh run, a client's resume, or a run to
    /// continue after a restart), as `admit` lets it in.
    pub(crate) fn submit(
        self: &Arc<Self>,
        shared: &Arc<Shared>,
        run: RunId,
        resume: Option<Resume>,
        admit: Admit,
    ) -> Result<(), ApiError> {
        let mut entries = self.lock();
        if self.is_closed() {
            return Err(shutting_down());
        }
        if let Some(e) = entries.get(&run) {
            return Err(busy(&run, e.phase));
        }
        match admit {
            Admit::Queue => self.room(&entries)?,
            Admit::Reserved(mut slot) => {
                // Its place becomes the entry below, in this one step.
                slot.used = true;
                self.reserved.fetch_sub(1, Ordering::SeqCst);
            }
            Admit::Recovered => {}
        }
        let (stop_tx, stop) = StopSignal::new();
        let (done_tx, done) = watch::channel(false);
        entries.insert(
            run.clone(),
            Entry {
                phase: Phase::Queued,
                stop: Some(stop_tx),
                done,
            },
        );
        drop(entries);
        self.tasks.fetch_add(1, Ordering::SeqCst);
        let jobs = Arc::clone(self);
        let shared = Arc::clone(shared);
        tokio::spawn(async move {
            jobs.job(&shared, run, resume, stop).await;
            let _ = done_tx.send(true);
            if jobs.tasks.fetch_sub(1, Ordering::SeqCst) == 1 {
                jobs.idle.notify_waiters();
            }
        });
        Ok(())
    }

    async fn job(
        &self,
        shared: &Arc<Shared>,
        run: RunId,
        resume: Option<Resume>,
        stop: StopSignal,
    ) {
        let mut waiting = stop.clone();
        let permit = tokio::select! {
            biased;
            stop = waiting.stopped() => {
                if let Stop::Cancel { reason } = stop {
                    // Cancelled while queued: nobody works on it, so record it here.
                    if let Err(e) = cancel_at_rest(shared, &run, &reason).await {
                        (shared.log)(&format!("cannot cancel queued run {run}: {}", e.message));
                    }
                }
                None
            }
            permit = Arc::clone(&self.permits).acquire_owned() => permit.ok(),
        };
        if let Some(permit) = permit {
            if let Some(e) = self.lock().get_mut(&run) {
                e.phase = Phase::Running;
            }
            let sink = Arc::new(HubSink {
                hub: Arc::clone(&shared.hub),
                metrics: Arc::clone(&shared.metrics),
            });
            let work = Work {
                run: run.clone(),
                resume,
                stop,
                sink,
            };
            match shared.launcher.work(work).await {
                Ok(status) => {
                    if status == RunStatus::Running {
                        (shared.log)(&format!(
                            "run {run} stopped at its last checkpoint; it is resumed when the server starts again"
                        ));
                    }
                }
                Err(e) => (shared.log)(&format!("run {run}: {e}")),
            }
            drop(permit);
        }
        shared.metrics.forget(&run);
        self.lock().remove(&run);
        // Streams re-read the run's status.
        shared.hub.notify(&run, 0);
    }

    /// Stops work on `run` if this server has it, and waits (up to
    /// `wait`) until it is at rest. Returns whether the server had it.
    pub(crate) async fn cancel(
        &self,
        run: &RunId,
        reason: &str,
        wait: Duration,
    ) -> Result<bool, ApiError> {
        let mut done = {
            let entries = self.lock();
            let Some(entry) = entries.get(run) else {
                return Ok(false);
            };
            match &entry.stop {
                Some(stop) => {
                    stop.send_replace(Some(Stop::Cancel {
                        reason: reason.to_owned(),
                    }));
                }
                None => return Err(busy(run, entry.phase)),
            }
            entry.done.clone()
        };
        match tokio::time::timeout(wait, done.wait_for(|d| *d)).await {
            Ok(_) => Ok(true),
            Err(_) => Err(ApiError::new(
                ErrorCode::Timeout,
                format!("run {run} did not stop within {} s", wait.as_secs()),
            )),
        }
    }

    /// Takes no more work, tells every run to stop at its last checkpoint,
    /// and waits for them (up to `grace`). Returns how many were still
    /// working when the grace ran out.
    pub(crate) async fn shutdown(&self, grace: Duration) -> usize {
        {
            let entries = self.lock();
            self.closed.store(true, Ordering::SeqCst);
            for entry in entries.values() {
                if let Some(stop) = &entry.stop {
                    stop.send_replace(Some(Stop::Shutdown));
                }
            }
        }
        let wait = async {
            loop {
                let idle = self.idle.notified();
                if self.tasks.load(Ordering::SeqCst) == 0 {
                    return;
                }
                idle.await;
            }
        };
        let _ = tokio::time::timeout(grace, wait).await;
        self.tasks.load(Ordering::SeqCst)
    }
}

fn busy(run: &RunId, phase: Phase) -> ApiError {
    let what = match phase {
        Phase::Queued => "is queued",
        Phase::Running => "is being worked on",
        Phase::Acting => "is being changed by another request",
    };
    ApiError::new(
        ErrorCode::RunBusy,
        format!("run {run} {what} in this server; try again once it is at rest"),
    )
}

pub(crate) fn shutting_down() -> ApiError {
    ApiError::new(
        ErrorCode::ShuttingDown,
        "the server is shutting down; runs in flight resume when it starts again",
    )
}

/// Records `run_cancelled` for a run nobody works on (under its lease).
pub(crate) async fn cancel_at_rest(
    shared: &Shared,
    run: &RunId,
    reason: &str,
) -> Result<RunStatus, ApiError> {
    let (state, _) = act::with_lease(shared, run, |state| {
        match stepwise_core::act::cancel(state, reason) {
            // Reported by the status returned.
            Err(stepwise_core::act::ActError::Ended { .. }) => Ok(Vec::new()),
            other => other.map_err(act::act_error),
        }
    })
    .await?;
    Ok(state.status)
}

/// The runs waiting for a slot.
fn queued(entries: &HashMap<RunId, Entry>) -> usize {
    entries
        .values()
        .filter(|e| e.phase == Phase::Queued)
        .count()
}

/// The refusal of a submit past `max_queued` (with `Retry-After`).
fn queue_full(queued: usize) -> ApiError {
    ApiError::new(
        ErrorCode::QueueFull,
        format!("{queued} runs are already waiting for a slot; try again later"),
    )
}
