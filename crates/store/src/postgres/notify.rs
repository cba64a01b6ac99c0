//! Waking workers when the queue changes, rather than at their next poll:
//! [`PgStore::queue_wakeups`] listens on the channel `stepwise_jobs` over a
//! connection of its own, and every write that gives a worker something to
//! do — a run enqueued or requeued, a run given back, a cancel asked for —
//! sends a notification in its transaction (PostgreSQL delivers it at
//! commit, and not at all on a rollback). Workers still poll: a lease that
//! runs out sends nothing, and a notification can be missed while the
//! listening connection is being replaced; this only shortens the wait.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;
use tokio_postgres::{AsyncMessage, NoTls};

use super::PgStore;

/// The statement that wakes the workers (inside the writer's transaction).
pub(super) const NOTIFY: &str = "SELECT pg_notify('stepwise_jobs', '')";

/// How long to wait before listening again after the connection was lost.
const RETRY: Duration = Duration::from_secs(1);

impl PgStore {
    /// A [`Notify`] that is woken (`notify_one`: a wake-up with no one
    /// waiting is kept for the next wait) whenever the queue may have
    /// something new: a run enqueued, requeued or given back, or a cancel
    /// asked for. Also woken each time the listening connection is
    /// (re)established, for what was sent while it was down. Lives as long
    /// as the store.
    pub fn queue_wakeups(&self) -> Arc<Notify> {
        let wake = Arc::new(Notify::new());
        let config = self.inner.pool.config().clone();
        let woken = Arc::clone(&wake);
        self.handle.spawn(async move {
            loop {
                if let Ok((client, mut connection)) = config.connect(NoTls).await {
                    let forward = Arc::clone(&woken);
                    let messages = tokio::spawn(async move {
                        while let Some(Ok(message)) =
                            futures::future::poll_fn(|cx| connection.poll_message(cx)).await
                        {
                            if let AsyncMessage::Notification(_) = message {
                                forward.notify_one();
                            }
                        }
                    });
                    if client.batch_execute("LISTEN stepwise_jobs").await.is_ok() {
                        woken.notify_one();
                    }
                    // Until the connection ends (the server restarted, a cut).
                    let _ = messages.await;
                    drop(client);
                }
                tokio::time::sleep(RETRY).await;
            }
        });
        wake
    }
}
