//! The run database: where it lives, opening it, and who we are when we take
//! a run's lease.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::anyhow;
use stepwise_core::{Lease, RunId, RunLease, RunState, Store, StoreError};
use stepwise_store::SqliteStore;

use crate::error::{UsageError, usage};

/// How long a lease lasts without renewal; a live process renews it often.
pub(crate) const LEASE_TTL_MS: u64 = 30_000;

/// `--db`, else `$STEPWISE_DB` (both via clap), else the platform data directory.
pub(crate) fn path(flag: Option<&PathBuf>) -> PathBuf {
    if let Some(p) = flag {
        return p.clone();
    }
    let base = std::env::var_os("XDG_DATA_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))
        .or_else(|| std::env::var_os("APPDATA").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("."));
    base.join("stepwise").join("stepwise.db")
}

/// Opens the database; any problem is a usage error naming the file.
pub(crate) fn open(flag: Option<&PathBuf>) -> anyhow::Result<Arc<SqliteStore>> {
    let path = path(flag);
    SqliteStore::open(&path)
        .map(Arc::new)
        .map_err(|e| anyhow::Error::new(UsageError(anyhow!(e))))
}

/// The run's state, or a usage error for an unknown id.
pub(crate) async fn load(store: &SqliteStore, run: &str) -> anyhow::Result<RunState> {
    store
        .state(&RunId(run.to_owned()))
        .await
        .map_err(|e| match e {
            StoreError::NotFound(_) => anyhow::Error::new(UsageError(anyhow!(
                "no run with id {run} in this database (see `stepwise runs`, or pass --db)"
            ))),
            other => anyhow!(other),
        })
}

/// Who holds a lease: this host and process.
pub(crate) fn holder() -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_owned());
    format!("{host}:{}", std::process::id())
}

/// Who acts, for the record (`approve`, `reject`, `resume`).
pub(crate) fn person() -> String {
    std::env::var("USER")
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| "user".to_owned())
}

/// Runs a future to completion on a one-thread runtime (the store's methods
/// are async; the inspection commands need nothing more).
pub(crate) fn block_on<F: std::future::Future>(future: F) -> anyhow::Result<F::Output> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| anyhow!("cannot start the async runtime: {e}"))?;
    Ok(runtime.block_on(future))
}

/// Whether a lease holder (`host:pid`) is a process on this host that has
/// died — its lease can be broken at once instead of waited out.
pub(crate) fn holder_is_dead(holder: &str) -> bool {
    let Some((host, pid)) = holder.rsplit_once(':') else {
        return false;
    };
    let Ok(pid) = pid.parse::<u32>() else {
        return false;
    };
    let me = self::holder();
    if me.rsplit_once(':').map(|(h, _)| h) != Some(host) || pid == std::process::id() {
        return false;
    }
    let proc = std::path::Path::new("/proc");
    if !proc.is_dir() {
        return false; // no way to tell here: wait for the lease to expire
    }
    match std::fs::read_to_string(proc.join(pid.to_string()).join("stat")) {
        // A zombie has exited; it only waits for its parent to reap it.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => true,
    }
}

/// Takes a run's lease, breaking it first if its holder is a dead process
/// on this host; a live holder is a clear error.
pub(crate) async fn take_lease<S: RunLease + ?Sized>(
    store: &S,
    run: &RunId,
) -> anyhow::Result<Lease> {
    match store.acquire(run, &holder(), LEASE_TTL_MS).await {
        Err(StoreError::Leased { holder: other, .. }) if holder_is_dead(&other) => {
            store.break_lease(run, &other).await?;
            crate::output::note(&format!(
                "took over run {run} from {other}, which is no longer running"
            ));
            Ok(store.acquire(run, &holder(), LEASE_TTL_MS).await?)
        }
        Err(StoreError::Leased { holder, until, .. }) => Err(anyhow!(
            "run {run} is being worked on by {holder} (lease until {until}); wait for it to finish or stop that process"
        )),
        other => Ok(other?),
    }
}

/// The database if its file exists (`None`: nothing was ever recorded
/// there), so a command that only reads never creates one.
pub(crate) fn open_existing(flag: Option<&PathBuf>) -> anyhow::Result<Option<Arc<SqliteStore>>> {
    if path(flag).exists() {
        open(flag).map(Some)
    } else {
        Ok(None)
    }
}

/// The database and one run's state; an unknown run (or a database that does
/// not exist) is a usage error.
pub(crate) fn open_run(
    flag: Option<&PathBuf>,
    run: &str,
) -> anyhow::Result<(Arc<SqliteStore>, RunState)> {
    let Some(store) = open_existing(flag)? else {
        return Err(usage(anyhow!(
            "no run with id {run}: there is no database at {} yet (pass --db or set STEPWISE_DB)",
            path(flag).display()
        )));
    };
    let state = block_on(load(&store, run))??;
    Ok((store, state))
}
