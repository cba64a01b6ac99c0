//! The run database: where it lives (an SQLite file, or a PostgreSQL
//! database named by a `postgres://` URL), opening it, and who we are when
//! we take a run's lease.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::anyhow;
use stepwise_core::{IdempotencyLog, Lease, RunId, RunLease, RunState, Store, StoreError};
#[cfg(feature = "postgres")]
use stepwise_store::PgStore;
use stepwise_store::SqliteStore;
#[cfg(feature = "postgres")]
use stepwise_store::postgres::{is_url, redact};

use crate::error::{CliError, CliResult};

/// What the commands need of a run database, whichever kind it is.
pub(crate) trait RunStore: Store + RunLease + IdempotencyLog {
    /// The database's file, for SQLite (MCP logs go beside it).
    fn file(&self) -> Option<&Path>;

    /// The idempotency log a run's lease holder writes to: on PostgreSQL
    /// every record checks the lease's fence, as appends do.
    fn fenced_log(self: Arc<Self>, run: &RunId, fence: u64) -> Arc<dyn IdempotencyLog>;

    /// Deletes everything of a run whose lease `fence` holds.
    fn delete_run(&self, run: &RunId, fence: u64) -> anyhow::Result<()>;
}

impl RunStore for SqliteStore {
    fn file(&self) -> Option<&Path> {
        self.path()
    }

    fn fenced_log(self: Arc<Self>, _run: &RunId, _fence: u64) -> Arc<dyn IdempotencyLog> {
        self
    }

    fn delete_run(&self, run: &RunId, fence: u64) -> anyhow::Result<()> {
        Ok(SqliteStore::delete_run(self, run, fence)?)
    }
}

#[cfg(feature = "postgres")]
impl RunStore for PgStore {
    fn file(&self) -> Option<&Path> {
        None
    }

    fn fenced_log(self: Arc<Self>, run: &RunId, fence: u64) -> Arc<dyn IdempotencyLog> {
        Arc::new(PgStore::fenced_log(&self, run, fence))
    }

    fn delete_run(&self, run: &RunId, fence: u64) -> anyhow::Result<()> {
        Ok(PgStore::delete_run(self, run, fence)?)
    }
}

/// An open run database.
pub(crate) type Db = Arc<dyn RunStore>;

/// The `--db` value as a PostgreSQL URL, if it is one.
pub(crate) fn url(flag: Option<&PathBuf>) -> Option<String> {
    let text = flag?.to_str()?;
    is_url(text).then(|| text.to_owned())
}

/// A build without PostgreSQL still knows a URL, to refuse it by name
/// rather than take it for a file.
#[cfg(not(feature = "postgres"))]
fn is_url(db: &str) -> bool {
    db.starts_with("postgres://") || db.starts_with("postgresql://")
}

/// A build without PostgreSQL names a URL by its scheme alone (it may hold
/// a password, and nothing here parses it).
#[cfg(not(feature = "postgres"))]
fn redact(url: &str) -> String {
    let scheme = url.split_once("://").map_or("postgres", |(s, _)| s);
    format!("{scheme}://…")
}

/// The PostgreSQL URL of `--db`, or a usage error.
#[cfg(feature = "postgres")]
pub(crate) fn url_of(
    flag: Option<&PathBuf>,
    command: &str,
) -> Result<String, crate::error::CliError> {
    url(flag).ok_or_else(|| {
        crate::error::CliError::usage(anyhow!(
            "`stepwise {command}` needs a PostgreSQL database: --db postgres://USER@HOST/DB (or STEPWISE_DB); workers share runs through it"
        ))
    })
}

/// How messages name the database: its file, or its URL without a password.
pub(crate) fn describe(flag: Option<&PathBuf>) -> String {
    match url(flag) {
        Some(url) => redact(&url),
        None => path(flag).display().to_string(),
    }
}

/// How long a lease lasts without renewal; a live process renews it often.
pub(crate) const LEASE_TTL_MS: u64 = 30_000;

/// `--db`, else `$STEPWISE_DB` (both via clap), else the platform data
/// directory (for a URL, see [`url`]).
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

/// Opens the database; any problem is a usage error naming it.
pub(crate) fn open(flag: Option<&PathBuf>) -> CliResult<Db> {
    #[cfg(feature = "postgres")]
    if let Some(url) = url(flag) {
        return open_postgres(&url).map(|store| store as Db);
    }
    #[cfg(not(feature = "postgres"))]
    if url(flag).is_some() {
        return Err(crate::error::not_built("postgres"));
    }
    let path = path(flag);
    SqliteStore::open(&path)
        .map(|store| Arc::new(store) as Db)
        .map_err(|e| CliError::usage(anyhow!(e)))
}

/// Connects to a PostgreSQL database (migrated: see `stepwise migrate`);
/// any problem is a usage error naming it.
#[cfg(feature = "postgres")]
pub(crate) fn open_postgres(url: &str) -> CliResult<Arc<PgStore>> {
    PgStore::connect(url)
        .map(Arc::new)
        .map_err(|e| CliError::usage(anyhow!(e)))
}

/// The run's state, or a usage error for an unknown id. A run is named by
/// its id or by any prefix of it that no other run's id starts with, as git
/// names commits; the state carries the full id.
pub(crate) async fn load(store: &dyn RunStore, run: &str) -> CliResult<RunState> {
    match store.state(&RunId(run.to_owned())).await {
        Ok(state) => return Ok(state),
        Err(StoreError::NotFound(_)) => {}
        Err(other) => return Err(CliError::failed(other)),
    }
    let runs = store.list_runs().await.map_err(CliError::failed)?;
    let named: Vec<&RunId> = runs
        .iter()
        .map(|s| &s.run_id)
        .filter(|id| !run.is_empty() && id.as_str().starts_with(run))
        .collect();
    match named.as_slice() {
        [one] => store.state(one).await.map_err(CliError::failed),
        [] => Err(CliError::usage(anyhow!(
            "no run with id {run} in this database (see `stepwise runs`, or pass --db)"
        ))),
        many => Err(CliError::usage(anyhow!(
            "{run} names {} runs ({}); give more of the id",
            many.len(),
            many.iter()
                .take(5)
                .map(|id| id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// Who holds a lease: this host and process (`host:pid`).
pub(crate) fn holder() -> String {
    format!("{}:{}", host(), std::process::id())
}

/// This machine, as lease holders name it: the kernel's host name (not
/// `$HOSTNAME`, which shells set but do not export) and the first eight
/// characters of `/etc/machine-id`, so two machines that share a host name
/// are still two (`vm.3d1219c7`). `STEPWISE_HOST` overrides it — a test
/// seam for workers "on other hosts". Read once: every lease taken and
/// every holder judged asks for it.
pub(crate) fn host() -> String {
    static HOST: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    HOST.get_or_init(read_host).clone()
}

fn read_host() -> String {
    if let Some(h) = std::env::var("STEPWISE_HOST")
        .ok()
        .filter(|h| !h.is_empty())
    {
        return h;
    }
    let read = |path: &str| {
        std::fs::read_to_string(path)
            .ok()
            .map(|t| t.trim().to_owned())
            .filter(|t| !t.is_empty())
    };
    let name = read("/proc/sys/kernel/hostname")
        .or_else(|| std::env::var("HOSTNAME").ok().filter(|h| !h.is_empty()))
        .unwrap_or_else(|| "localhost".to_owned());
    match read("/etc/machine-id") {
        Some(id) => format!("{name}.{}", id.chars().take(8).collect::<String>()),
        None => name,
    }
}

/// Who acts, for the record (`approve`, `reject`, `resume`).
pub(crate) fn person() -> String {
    std::env::var("USER")
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| "user".to_owned())
}

/// Renews `lease` every third of its time to live until the task is
/// aborted or the renewal fails (taken over: the holder's next fenced
/// append then fails with `Fenced`).
pub(crate) fn keep_renewed(store: &Db, lease: &Lease) -> tokio::task::JoinHandle<()> {
    let (store, lease) = (Arc::clone(store), lease.clone());
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(std::time::Duration::from_millis(LEASE_TTL_MS / 3)).await;
            if store.renew(&lease, LEASE_TTL_MS).await.is_err() {
                break;
            }
        }
    })
}

/// The process's one-thread runtime, built at its first use and kept: the
/// store's methods are async, and the commands that are not servers (`run`,
/// `show`, `approve`, …) need nothing more. `serve` and `worker` build
/// their own many-thread runtime.
static RUNTIME: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();

/// Runs a future to completion on the process's runtime.
pub(crate) fn block_on<F: std::future::Future>(future: F) -> anyhow::Result<F::Output> {
    let runtime = match RUNTIME.get() {
        Some(runtime) => runtime,
        None => {
            let built = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| anyhow!("cannot start the async runtime: {e}"))?;
            RUNTIME.get_or_init(|| built)
        }
    };
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
    // Only a process of this machine can be looked up here: another host's
    // is never judged, its lease is waited out.
    if self::host() != host || pid == std::process::id() {
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
/// there), so a command that only reads never creates one. A PostgreSQL
/// database is always opened (connecting creates nothing).
pub(crate) fn open_existing(flag: Option<&PathBuf>) -> CliResult<Option<Db>> {
    if url(flag).is_some() || path(flag).exists() {
        open(flag).map(Some)
    } else {
        Ok(None)
    }
}

/// The database and one run's state; an unknown run (or a database that does
/// not exist) is a usage error.
pub(crate) fn open_run(flag: Option<&PathBuf>, run: &str) -> CliResult<(Db, RunState)> {
    let Some(store) = open_existing(flag)? else {
        return Err(CliError::usage(anyhow!(
            "no run with id {run}: there is no database at {} yet (pass --db or set STEPWISE_DB)",
            path(flag).display()
        )));
    };
    let state = block_on(load(store.as_ref(), run))??;
    Ok((store, state))
}

#[cfg(test)]
mod holder_tests {
    use super::*;

    #[test]
    fn holders_name_this_machine_and_only_its_processes_are_judged() {
        let me = holder();
        let (host, pid) = me.rsplit_once(':').unwrap_or_default();
        assert_eq!(host, self::host());
        assert_eq!(pid, std::process::id().to_string());
        if let Ok(name) = std::fs::read_to_string("/proc/sys/kernel/hostname") {
            assert!(host.starts_with(name.trim()), "{host}");
        }
        // A pid no process has, on this machine: dead.
        let gone = format!("{host}:{}", u32::MAX - 1);
        assert!(holder_is_dead(&gone));
        // The same pid on another machine (or this host name with another
        // machine id): never judged from here.
        assert!(!holder_is_dead(&format!("elsewhere:{}", u32::MAX - 1)));
        assert!(!holder_is_dead(&format!("{host}x:{}", u32::MAX - 1)));
        // Itself: alive.
        assert!(!holder_is_dead(&me));
    }
}
