//! A few connections, kept open between operations: at most `max` at once
//! (a semaphore), idle ones reused, closed ones (the server restarted, a
//! network cut, `pg_terminate_backend`) dropped and replaced by a new
//! connection at the next use. Small on purpose: the store needs nothing a
//! pool crate adds.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_postgres::{Client, Config, NoTls};

use super::error::Fail;

/// Connections a store opens at most, unless told otherwise.
pub(super) const DEFAULT_MAX: usize = 8;

/// How long a new connection may take, unless the URL says.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// What every new connection runs first: commits durable before they
/// return (whatever the server's default), and UTC for anyone reading.
const SESSION_SETUP: &str = "SET synchronous_commit = on; SET TIME ZONE 'UTC'";

#[derive(Debug)]
pub(super) struct Pool {
    config: Config,
    idle: Mutex<Vec<Client>>,
    permits: Arc<Semaphore>,
}

/// A connection taken from the pool; back into it when dropped, unless closed.
pub(super) struct Conn<'a> {
    client: Option<Client>,
    pool: &'a Pool,
    _permit: OwnedSemaphorePermit,
}

impl std::fmt::Debug for Conn<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conn").finish_non_exhaustive()
    }
}

impl std::ops::Deref for Conn<'_> {
    type Target = Client;
    fn deref(&self) -> &Client {
        // Present from creation until drop.
        self.client.as_ref().unwrap_or_else(|| unreachable!())
    }
}

impl std::ops::DerefMut for Conn<'_> {
    fn deref_mut(&mut self) -> &mut Client {
        self.client.as_mut().unwrap_or_else(|| unreachable!())
    }
}

impl Drop for Conn<'_> {
    fn drop(&mut self) {
        if let Some(client) = self.client.take()
            && !client.is_closed()
        {
            self.pool
                .idle
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(client);
        }
    }
}

impl Pool {
    pub(super) fn new(mut config: Config, max: usize) -> Self {
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        if config.get_application_name().is_none() {
            config.application_name("stepwise");
        }
        Self {
            config,
            idle: Mutex::new(Vec::new()),
            permits: Arc::new(Semaphore::new(max)),
        }
    }

    /// What every connection is opened with.
    pub(super) fn config(&self) -> &Config {
        &self.config
    }

    /// A connection: an idle one still open, or a new one. Must be called on
    /// the store's runtime (a new connection's task is spawned there).
    pub(super) async fn get(&self) -> Result<Conn<'_>, Fail> {
        let permit = Arc::clone(&self.permits)
            .acquire_owned()
            .await
            .map_err(|_| Fail::Data("the connection pool is closed".to_owned()))?;
        loop {
            let idle = self
                .idle
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .pop();
            match idle {
                Some(client) if client.is_closed() => {}
                Some(client) => {
                    return Ok(Conn {
                        client: Some(client),
                        pool: self,
                        _permit: permit,
                    });
                }
                None => break,
            }
        }
        let (client, connection) = self.config.connect(NoTls).await.map_err(Fail::Connect)?;
        // Ends when the client is dropped or the server goes away; its error
        // reaches the client's next query.
        tokio::spawn(async move {
            let _ = connection.await;
        });
        client
            .batch_execute(SESSION_SETUP)
            .await
            .map_err(Fail::Connect)?;
        Ok(Conn {
            client: Some(client),
            pool: self,
            _permit: permit,
        })
    }
}
