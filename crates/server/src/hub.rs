//! Wake-ups for the event streams: when a run this server works on records
//! events, its streams are told to read the log again. The events
//! themselves always come from the store (the log is the source of truth);
//! a wake-up only says "there is more". Streams of runs worked on elsewhere
//! (a `stepwise` command) look at the log every `poll_ms` instead.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use futures::future::BoxFuture;
use stepwise_core::event::SinkError;
use stepwise_core::{BatchSink, Event, RunId};
use tokio::sync::watch;

use crate::metrics::Metrics;

/// One wake-up channel per run that a stream follows.
#[derive(Debug, Default)]
pub(crate) struct Hub {
    runs: Mutex<HashMap<RunId, watch::Sender<u64>>>,
}

impl Hub {
    /// A receiver that changes whenever `run` records events.
    pub(crate) fn subscribe(&self, run: &RunId) -> watch::Receiver<u64> {
        let mut runs = self.runs.lock().unwrap_or_else(PoisonError::into_inner);
        runs.entry(run.clone())
            .or_insert_with(|| watch::channel(0).0)
            .subscribe()
    }

    /// `run` recorded events up to `seq`.
    pub(crate) fn notify(&self, run: &RunId, seq: u64) {
        let mut runs = self.runs.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(tx) = runs.get(run) {
            if tx.receiver_count() == 0 {
                runs.remove(run);
            } else {
                tx.send_replace(seq);
            }
        }
        // Forget runs nobody follows any more.
        runs.retain(|_, tx| tx.receiver_count() > 0);
    }
}

/// The sink a launcher adds after the store's: wakes the run's streams and
/// counts what the run did for `/metrics`. Never fails (the events are on
/// record already).
#[derive(Debug)]
pub(crate) struct HubSink {
    pub(crate) hub: Arc<Hub>,
    pub(crate) metrics: Arc<Metrics>,
}

impl BatchSink for HubSink {
    fn record_batch<'a>(
        &'a self,
        run: &'a RunId,
        events: &'a [Event],
    ) -> BoxFuture<'a, Result<(), SinkError>> {
        Box::pin(async move {
            self.metrics.observe(run, events);
            if let Some(last) = events.last() {
                self.hub.notify(run, last.seq);
            }
            Ok(())
        })
    }
}
