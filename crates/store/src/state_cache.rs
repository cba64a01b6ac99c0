//! The state cache both stores keep: a running run's state as folded at its
//! last append, reused by the next append while the run's row still ends
//! where that append left it (see the crate docs, "The state cache").

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use stepwise_core::store::expect_next;
use stepwise_core::{Event, RunId, RunState, RunStatus, StoreError};

use crate::{STATE_CACHE_RUNS, Tail};

/// A run's state as folded at its last append, with the `last_seq` and
/// `updated_at` its row got from that append (`At`: how the store keeps
/// times).
#[derive(Debug)]
pub(crate) struct Cached<At> {
    pub(crate) last_seq: u64,
    pub(crate) updated_at: At,
    pub(crate) state: RunState,
    pub(crate) tail: Tail,
}

/// Folded states of running runs, at most [`STATE_CACHE_RUNS`] of them.
#[derive(Debug)]
pub(crate) struct StateCache<At>(Mutex<HashMap<RunId, Cached<At>>>);

impl<At> Default for StateCache<At> {
    fn default() -> Self {
        Self(Mutex::new(HashMap::new()))
    }
}

impl<At> StateCache<At> {
    /// The cached state of `run`, taken out of the cache (an append puts it
    /// back once it has committed).
    pub(crate) fn take(&self, run: &RunId) -> Option<Cached<At>> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(run)
    }

    /// Caches a run's state after a committed append, while it is running.
    pub(crate) fn put(&self, run: &RunId, cached: Cached<At>) {
        if cached.state.status != RunStatus::Running {
            return;
        }
        let mut states = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if states.len() >= STATE_CACHE_RUNS
            && !states.contains_key(run)
            && let Some(other) = states.keys().next().cloned()
        {
            states.remove(&other);
        }
        states.insert(run.clone(), cached);
    }
}

/// Where an append of `events` starts, given the run's row (`head`: its
/// `last_seq` and `updated_at`, none for a new run) and what the cache held:
/// a conflict unless the events follow the log's last one; the state and
/// tail to fold them onto; or `None` when the cached state is missing or
/// stale and the state must be read from the store.
pub(crate) fn append_start<At: PartialEq>(
    run: &RunId,
    events: &[Event],
    head: Option<(u64, At)>,
    cached: Option<Cached<At>>,
) -> Result<Option<(RunState, Tail)>, StoreError> {
    expect_next(run, head.as_ref().map_or(0, |(seq, _)| *seq), events)?;
    Ok(match (head, cached) {
        (None, _) => Some((RunState::default(), Tail::default())),
        (Some((seq, at)), Some(c)) if c.last_seq == seq && c.updated_at == at => {
            Some((c.state, c.tail))
        }
        (Some(_), _) => None,
    })
}
