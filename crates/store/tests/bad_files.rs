//! Files `open` must refuse — with a one-line message naming the file — and
//! leave exactly as they were.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;

use stepwise_core::StoreError;
use stepwise_store::SqliteStore;

fn refused(path: &Path) -> String {
    match SqliteStore::open(path) {
        Err(StoreError::Unavailable(message)) => {
            assert!(!message.contains('\n'), "one line: {message}");
            assert!(
                message.contains(&path.display().to_string()),
                "names the file: {message}"
            );
            message
        }
        other => panic!("expected Unavailable, got {other:?}"),
    }
}

/// A valid, closed Stepwise database.
fn stepwise_db(dir: &Path) -> PathBuf {
    let path = dir.join("stepwise.db");
    drop(SqliteStore::open(&path).unwrap());
    path
}

/// Deterministic noise (no RNG dependency needed).
fn noise(len: usize) -> Vec<u8> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

#[test]
fn random_bytes_are_refused_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("junk.db");
    let bytes = noise(1024);
    std::fs::write(&path, &bytes).unwrap();
    let message = refused(&path);
    assert!(
        message.contains("is not a Stepwise database or is corrupt: "),
        "{message}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
}

#[test]
fn a_damaged_schema_page_is_refused_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let path = stepwise_db(dir.path());
    let mut bytes = std::fs::read(&path).unwrap();
    // Keep the 100-byte header (so it still looks like SQLite), trash the
    // rest of page 1: the schema table.
    let end = bytes.len().min(4096);
    bytes[100..end].copy_from_slice(&noise(end - 100));
    std::fs::write(&path, &bytes).unwrap();
    let message = refused(&path);
    assert!(
        message.contains("is not a Stepwise database or is corrupt"),
        "{message}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
}

#[test]
fn a_newer_schema_is_refused_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let path = stepwise_db(dir.path());
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.pragma_update(None, "user_version", 7).unwrap();
    }
    let bytes = std::fs::read(&path).unwrap();
    let message = refused(&path);
    assert_eq!(
        message,
        format!(
            "{} was written by a newer Stepwise (schema 7; this build knows up to {}); upgrade Stepwise to open it",
            path.display(),
            stepwise_store::SCHEMA_VERSION
        )
    );
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
}

#[test]
fn someone_elses_sqlite_database_is_refused_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("photos.db");
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch("CREATE TABLE photos (id INTEGER PRIMARY KEY, name TEXT);")
            .unwrap();
    }
    let bytes = std::fs::read(&path).unwrap();
    let message = refused(&path);
    assert!(
        message.contains("is a SQLite database but not a Stepwise one (tables: photos)"),
        "{message}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
}

#[test]
fn an_empty_file_becomes_a_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("empty.db");
    std::fs::write(&path, b"").unwrap();
    SqliteStore::open(&path).unwrap();
    assert!(std::fs::metadata(&path).unwrap().len() > 0);
}

#[test]
fn a_path_under_a_regular_file_cannot_be_created() {
    // Fails for root too: no permission bit is involved, a file is not a directory.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("plain");
    std::fs::write(&file, b"x").unwrap();
    let message = refused(&file.join("sub/stepwise.db"));
    assert!(
        message.starts_with("cannot create the directory"),
        "{message}"
    );
    let message = refused(Path::new("/dev/null/stepwise.db"));
    assert!(
        message.starts_with("cannot create the directory"),
        "{message}"
    );
}

#[test]
fn a_directory_is_not_a_database() {
    let dir = tempfile::tempdir().unwrap();
    let message = refused(dir.path());
    assert!(message.starts_with("cannot open"), "{message}");
}

/// Whether this process can write `path` despite its permission bits (root
/// with CAP_DAC_OVERRIDE can).
fn writable_anyway(path: &Path) -> bool {
    std::fs::OpenOptions::new().append(true).open(path).is_ok()
}

#[cfg(unix)]
#[test]
fn a_read_only_file_is_refused_at_open() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = stepwise_db(dir.path());
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
    if writable_anyway(&path) {
        // Running as root: mode 0444 does not stop root, so SQLite really can
        // write and `open` rightly succeeds. The immutable-attribute test
        // below covers the read-only path for root.
        SqliteStore::open(&path).unwrap();
        return;
    }
    let bytes = std::fs::read(&path).unwrap();
    let message = refused(&path);
    assert!(message.starts_with("cannot write to"), "{message}");
    assert!(message.contains("read-only"), "{message}");
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
}

/// Sets the immutable attribute (`chattr +i`), which even root cannot write
/// through, and clears it on drop so the temp dir can be removed.
struct Immutable(PathBuf);

impl Immutable {
    fn set(path: &Path) -> Option<Self> {
        let ok = Command::new("chattr")
            .arg("+i")
            .arg(path)
            .status()
            .is_ok_and(|s| s.success());
        // `chattr` missing, no CAP_LINUX_IMMUTABLE, or a filesystem without
        // the attribute (tmpfs): the caller skips.
        ok.then(|| Self(path.to_path_buf()))
    }
}

impl Drop for Immutable {
    fn drop(&mut self) {
        let _ = Command::new("chattr").arg("-i").arg(&self.0).status();
    }
}

#[test]
fn an_immutable_file_is_refused_at_open_even_for_root() {
    let dir = tempfile::tempdir().unwrap();
    let path = stepwise_db(dir.path());
    let bytes = std::fs::read(&path).unwrap();
    let Some(_guard) = Immutable::set(&path) else {
        eprintln!(
            "skipped: cannot set the immutable attribute here (no chattr, capability or support)"
        );
        return;
    };
    assert!(!writable_anyway(&path), "chattr +i did not stop writes");
    let message = refused(&path);
    assert!(
        message.starts_with(&format!("cannot write to {}: read-only", path.display())),
        "{message}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
}

#[test]
fn an_immutable_directory_is_refused_at_open_even_for_root() {
    let dir = tempfile::tempdir().unwrap();
    let path = stepwise_db(dir.path());
    let bytes = std::fs::read(&path).unwrap();
    let Some(_guard) = Immutable::set(dir.path()) else {
        eprintln!(
            "skipped: cannot set the immutable attribute here (no chattr, capability or support)"
        );
        return;
    };
    let read_only_dir = format!("read-only directory {}", dir.path().display());
    // A new database cannot be created in it...
    let new = dir.path().join("new.db");
    let message = refused(&new);
    assert!(message.starts_with("cannot write to"), "{message}");
    assert!(message.contains(&read_only_dir), "{message}");
    assert!(!new.exists());
    // ...and an existing one cannot get its WAL files, so it cannot be written.
    let message = refused(&path);
    assert!(message.starts_with("cannot write to"), "{message}");
    assert!(message.contains(&read_only_dir), "{message}");
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
}
