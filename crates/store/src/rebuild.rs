//! A run's state rebuilt from what a store reads: its snapshot and its log.
//! Shared by the SQLite and the PostgreSQL stores, so both check the log
//! against the run's row and fold the events after the snapshot the same way.

use stepwise_core::{Event, RunId, RunState, StoreError};

use crate::Tail;
use crate::codec::from_json;
use crate::error::Fail;

/// A run's snapshot as read.
pub(crate) struct Snapshot {
    state: RunState,
    /// The last event folded into it.
    pub(crate) seq: u64,
    /// Its size, in bytes of JSON.
    bytes: usize,
}

impl Snapshot {
    /// Reads a snapshot's JSON, then its `seq` (in that order: the first
    /// error is the one reported).
    pub(crate) fn read<E: From<Fail>>(
        text: &str,
        seq: impl FnOnce() -> Result<u64, E>,
    ) -> Result<Self, E> {
        let state = from_json::<RunState>(text, "snapshot")?;
        Ok(Self {
            state,
            seq: seq()?,
            bytes: text.len(),
        })
    }
}

/// The run's state: its snapshot (none: an empty state), with the history
/// put back from the whole log `events` and the events after the snapshot
/// folded onto it; and where the snapshot stands. `last_seq` is what the
/// run's row says the log holds; `bytes`, the size of the events after the
/// snapshot.
pub(crate) fn rebuild(
    run: &RunId,
    last_seq: u64,
    snapshot: Option<Snapshot>,
    mut events: Vec<Event>,
    bytes: usize,
) -> Result<(RunState, Tail), Fail> {
    let (mut state, snapshot_seq, snapshot_bytes) = match snapshot {
        Some(s) => (s.state, s.seq, s.bytes),
        None => (RunState::default(), 0, 0),
    };
    let logged = events.len();
    if u64::try_from(logged).ok() != Some(last_seq) {
        return Err(Fail::Data(format!(
            "run {run}: the log has {logged} events but the run row says {last_seq}"
        )));
    }
    let folded = usize::try_from(snapshot_seq)
        .ok()
        .filter(|n| *n <= logged)
        .ok_or_else(|| {
            Fail::Data(format!(
                "run {run}: the snapshot is at event {snapshot_seq} but the log has {logged} events"
            ))
        })?;
    let after = events.split_off(folded);
    state.execution_history = events;
    for event in &after {
        state.apply(event).map_err(|source| StoreError::Invalid {
            run: run.clone(),
            source,
        })?;
    }
    let tail = Tail {
        snapshot_seq,
        snapshot_bytes,
        bytes,
    };
    Ok((state, tail))
}
