//! Opening a file: recognise what it is before touching it, then set the
//! durability pragmas and run the missing schema migrations.
//!
//! The order matters. Everything that could refuse the file (not SQLite,
//! corrupt, someone else's database, a newer schema) is decided by reads
//! alone, so a refused file keeps every byte. Only then do we switch to WAL
//! and write — and we always write (the `meta.opened_at` row), so a file we
//! cannot write to fails here, at `open`, not at a run's first event.

use std::path::Path;
use std::time::Duration;

use chrono::Utc;
use rusqlite::{Connection, ErrorCode, OpenFlags, TransactionBehavior};
use stepwise_core::StoreError;

use crate::Durability;
use crate::codec::time_to_sql;
use crate::error::{Fail, describe};

/// The schema version this build writes and understands.
pub const SCHEMA_VERSION: u32 = 2;

/// `PRAGMA application_id`: "STPW", marks the file as Stepwise's.
const APPLICATION_ID: i32 = 0x5354_5057;

/// How long a connection waits for another's lock before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_millis(5000);

/// `MIGRATIONS[i]` takes the schema from version `i` to `i + 1`. Add steps at
/// the end; never edit a released one.
const MIGRATIONS: &[&str] = &[V1, V2];

/// Version 1, as released: in a file of its own, so a test that builds a
/// version-1 file can include these very statements instead of a copy.
const V1: &str = include_str!("schema-v1.sql");

/// Version 2: the snapshot leaves the `runs` row for a table of its own,
/// where it records the event it was taken at (`seq`). An append then
/// updates the small summary row and rewrites the snapshot only now and
/// then (see the crate docs, "Snapshots"). SQLite encodes a whole row again
/// when any of its columns changes, so a snapshot kept in `runs` would cost
/// its full size at every append. A version 1 snapshot was taken at the
/// run's last event.
const V2: &str = "
CREATE TABLE snapshots (
    run_id TEXT PRIMARY KEY,
    seq    INTEGER NOT NULL,
    state  TEXT NOT NULL
) STRICT;
INSERT INTO snapshots (run_id, seq, state) SELECT run_id, last_seq, snapshot FROM runs;
ALTER TABLE runs DROP COLUMN snapshot;
";

/// Tables a Stepwise database of the current version must have.
const TABLES: &[&str] = &[
    "runs",
    "events",
    "snapshots",
    "leases",
    "idempotency",
    "meta",
];

/// Opens the file at `path` (named `db` in messages), creating it and its
/// parent directories if missing.
pub(crate) fn open_file(
    path: &Path,
    db: &str,
    durability: Durability,
) -> Result<Connection, StoreError> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| {
            let why = if parent.exists() && !parent.is_dir() {
                "it exists and is not a directory".to_owned()
            } else {
                e.to_string()
            };
            StoreError::Unavailable(format!(
                "cannot create the directory {} for {db}: {why}",
                parent.display()
            ))
        })?;
    }
    // No SQLITE_OPEN_URI: the path is a file name, never a `file:` URI.
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let mut conn = Connection::open_with_flags(path, flags)
        .map_err(|e| StoreError::Unavailable(explain(db, Some(path), &e)))?;
    prepare(&mut conn, db, Some(path), durability)?;
    Ok(conn)
}

/// A fresh database in memory, with the same schema.
pub(crate) fn open_memory(db: &str) -> Result<Connection, StoreError> {
    let mut conn =
        Connection::open_in_memory().map_err(|e| StoreError::Unavailable(describe(db, &e)))?;
    prepare(&mut conn, db, None, Durability::Full)?;
    Ok(conn)
}

/// What the file holds, read without writing.
#[derive(Debug)]
struct Found {
    application_id: i32,
    user_version: i64,
    tables: Vec<String>,
}

fn inspect(conn: &Connection) -> rusqlite::Result<Found> {
    let application_id = conn.query_row("PRAGMA application_id", [], |r| r.get(0))?;
    let user_version = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    let mut stmt = conn.prepare(
        "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name",
    )?;
    let tables = stmt
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<Vec<String>>>()?;
    Ok(Found {
        application_id,
        user_version,
        tables,
    })
}

/// The schema version to migrate from, or why the file is refused.
fn classify(found: &Found, db: &str) -> Result<u32, String> {
    let ours = found.application_id == APPLICATION_ID
        || (found.application_id == 0
            && ["runs", "events"]
                .iter()
                .all(|t| found.tables.iter().any(|x| x == t)));
    let empty = found.tables.is_empty();
    if !ours {
        if empty && found.application_id == 0 && found.user_version == 0 {
            return Ok(0);
        }
        return Err(format!(
            "{db} is a SQLite database but not a Stepwise one (tables: {}); choose another path",
            if empty {
                "none".to_owned()
            } else {
                found.tables.join(", ")
            }
        ));
    }
    let version = u32::try_from(found.user_version).map_err(|_| {
        format!(
            "{db} is not a Stepwise database or is corrupt: schema version {}",
            found.user_version
        )
    })?;
    if version > SCHEMA_VERSION {
        return Err(format!(
            "{db} was written by a newer Stepwise (schema {version}; this build knows up to {SCHEMA_VERSION}); upgrade Stepwise to open it"
        ));
    }
    if version == 0 && !empty {
        return Err(format!(
            "{db} is not a Stepwise database or is corrupt: it has tables but no schema version"
        ));
    }
    if version == SCHEMA_VERSION
        && let Some(missing) = TABLES
            .iter()
            .find(|t| !found.tables.iter().any(|x| x == *t))
    {
        return Err(format!(
            "{db} is not a Stepwise database or is corrupt: table {missing} is missing"
        ));
    }
    Ok(version)
}

/// Why SQLite could not open a file: to create it, or (in WAL mode) its
/// `-wal` and `-shm` files beside it, the directory must be writable — worth
/// saying, since SQLite's "unable to open database file" does not. (A `-wal`
/// file refused by permission bits comes back as "readonly database", one
/// refused by `chattr +i` as "unable to open".)
fn explain(db: &str, path: Option<&Path>, e: &rusqlite::Error) -> String {
    let dir = path
        .filter(|_| {
            matches!(
                e.sqlite_error_code(),
                Some(ErrorCode::CannotOpen | ErrorCode::ReadOnly)
            )
        })
        .and_then(Path::parent);
    match dir {
        Some(dir) if !directory_accepts_files(dir) => format!(
            "cannot write to {db}: read-only directory {} (SQLite must create its -wal and -shm files there)",
            dir.display()
        ),
        _ => describe(db, e),
    }
}

/// Whether a new file can be created in `dir` (tried, then removed): the
/// only reliable test, as root ignores permission bits but not `chattr +i`
/// or a read-only mount. Used only to explain a failure already seen.
fn directory_accepts_files(dir: &Path) -> bool {
    let probe = dir.join(format!(".stepwise-probe-{}", std::process::id()));
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
    {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            true
        }
        Err(e) => e.kind() == std::io::ErrorKind::AlreadyExists,
    }
}

fn prepare(
    conn: &mut Connection,
    db: &str,
    path: Option<&Path>,
    durability: Durability,
) -> Result<(), StoreError> {
    let unavailable = |e: rusqlite::Error| StoreError::Unavailable(explain(db, path, &e));
    conn.busy_timeout(BUSY_TIMEOUT).map_err(unavailable)?;
    // Reads only, up to the verdict.
    let found = inspect(conn).map_err(unavailable)?;
    classify(&found, db).map_err(StoreError::Unavailable)?;
    if conn.is_readonly(rusqlite::MAIN_DB).map_err(unavailable)? {
        return Err(StoreError::Unavailable(format!(
            "cannot write to {db}: read-only file (SQLite could open it only for reading: permissions, an immutable attribute or a read-only filesystem)"
        )));
    }
    let mode: String = conn
        .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
        .map_err(unavailable)?;
    if path.is_some() && !mode.eq_ignore_ascii_case("wal") {
        return Err(StoreError::Unavailable(format!(
            "cannot write to {db}: could not switch it to WAL journaling (it stays in {mode} mode); is the file or its directory read-only?"
        )));
    }
    // FULL: fsync at every commit, so a committed event survives power loss.
    // NORMAL (only if asked for): fsync at checkpoints.
    let synchronous = match durability {
        Durability::Full => "FULL",
        Durability::Normal => "NORMAL",
    };
    conn.pragma_update(None, "synchronous", synchronous)
        .map_err(unavailable)?;
    migrate(conn, db).map_err(|e| match e {
        Fail::Sql(e) => StoreError::Unavailable(explain(db, path, &e)),
        other => other.into_store(db),
    })
}

/// Brings the schema to [`SCHEMA_VERSION`] and records the open, in one
/// write transaction. The version is read again under the write lock: another
/// process may have migrated (or upgraded) the file since `inspect`.
fn migrate(conn: &mut Connection, db: &str) -> Result<(), Fail> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let found = inspect(&tx)?;
    let from = classify(&found, db).map_err(|m| Fail::Store(StoreError::Unavailable(m)))?;
    let now = time_to_sql(Utc::now());
    for (version, step) in MIGRATIONS.iter().enumerate().skip(from as usize) {
        tx.execute_batch(step)?;
        tx.execute_batch(&format!("PRAGMA user_version = {}", version + 1))?;
    }
    if from == 0 {
        tx.execute_batch(&format!("PRAGMA application_id = {APPLICATION_ID}"))?;
        tx.execute(
            "INSERT INTO meta (key, value) VALUES ('created_at', ?1), ('created_by', ?2)",
            (&now, concat!("stepwise-store ", env!("CARGO_PKG_VERSION"))),
        )?;
    }
    tx.execute(
        "INSERT INTO meta (key, value) VALUES ('opened_at', ?1)
         ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        [&now],
    )?;
    tx.commit()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(application_id: i32, user_version: i64, tables: &[&str]) -> Found {
        Found {
            application_id,
            user_version,
            tables: tables.iter().map(|t| (*t).to_owned()).collect(),
        }
    }

    #[test]
    fn classifies_files() {
        assert_eq!(classify(&found(0, 0, &[]), "f"), Ok(0));
        assert_eq!(classify(&found(APPLICATION_ID, 2, TABLES), "f"), Ok(2));
        // An older version is migrated, whatever tables it had then.
        let v1 = ["events", "idempotency", "leases", "meta", "runs"];
        assert_eq!(classify(&found(APPLICATION_ID, 1, &v1), "f"), Ok(1));
        let newer = classify(&found(APPLICATION_ID, 7, TABLES), "f");
        assert_eq!(
            newer,
            Err("f was written by a newer Stepwise (schema 7; this build knows up to 2); upgrade Stepwise to open it".to_owned())
        );
        let foreign = classify(&found(0, 0, &["photos"]), "f");
        assert!(foreign.is_err_and(|e| e.contains("is a SQLite database but not a Stepwise one")));
        let other_app = classify(&found(42, 3, &[]), "f");
        assert!(other_app.is_err_and(|e| e.contains("not a Stepwise one")));
        let missing = classify(&found(APPLICATION_ID, 2, &["runs", "events"]), "f");
        assert!(missing.is_err_and(|e| e.contains("table snapshots is missing")));
    }
}
