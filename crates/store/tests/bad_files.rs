//! Files `open` must refuse — with a one-line message naming the file — and
//! leave exactly as they were.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout
)]

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

/// Set in a child process to the test it runs without root's powers (see
/// [`unprivileged`]).
#[cfg(unix)]
const CHILD_TEST: &str = "STEPWISE_TEST_UNPRIVILEGED";
/// What the child prints once its checks passed, then its uid.
#[cfg(unix)]
const CHECKED_AS: &str = "unprivileged checks passed as uid ";
/// `nobody`'s uid and gid on Linux.
#[cfg(unix)]
const NOBODY: u32 = 65534;

/// This process's effective uid: the owner of a file it creates.
#[cfg(unix)]
fn effective_uid() -> u32 {
    use std::os::unix::fs::MetadataExt;
    let file = tempfile::NamedTempFile::new().unwrap();
    file.as_file().metadata().unwrap().uid()
}

/// Runs `checks` where permission bits bind: root (as CI runs) writes
/// through them, so the test `test` runs again in a child process of this
/// binary, as `nobody` if this process is root, else as this user. The test
/// fails unless the child ran `checks` to their end under a non-zero uid.
#[cfg(unix)]
fn unprivileged(test: &str, checks: impl FnOnce()) {
    use std::os::unix::process::CommandExt;
    if std::env::var_os(CHILD_TEST).is_some_and(|t| t == test) {
        let uid = effective_uid();
        assert_ne!(uid, 0, "the checks need a user that permission bits bind");
        checks();
        println!("{CHECKED_AS}{uid}");
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let mut exe = std::env::current_exe().unwrap();
    let root = effective_uid() == 0;
    // Nobody may not reach the build folder (under /root, say): a copy of
    // the binary in a folder of its own that everyone may enter.
    let copy = tempfile::tempdir().unwrap();
    if root {
        std::fs::set_permissions(copy.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let to = copy.path().join(exe.file_name().unwrap());
        std::fs::copy(&exe, &to).unwrap();
        exe = to;
    }
    let mut child = Command::new(&exe);
    child
        .args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env(CHILD_TEST, test)
        .current_dir("/");
    if root {
        child.uid(NOBODY).gid(NOBODY);
    }
    let out = child
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", exe.display()));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let uid = stdout
        .lines()
        .find_map(|l| l.split_once(CHECKED_AS).map(|(_, uid)| uid))
        .and_then(|uid| uid.trim().parse::<u32>().ok());
    assert!(
        out.status.success() && uid.is_some_and(|uid| uid != 0),
        "the child did not pass the checks as a user other than root: {}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Gives `path` the permission `mode`, and back `0o755` on drop (so a
/// read-only temp dir can be removed).
#[cfg(unix)]
struct Mode(PathBuf);

#[cfg(unix)]
impl Mode {
    fn set(path: &Path, mode: u32) -> Self {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
        Self(path.to_path_buf())
    }
}

#[cfg(unix)]
impl Drop for Mode {
    fn drop(&mut self) {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(&self.0, std::fs::Permissions::from_mode(0o755));
    }
}

#[cfg(unix)]
#[test]
fn a_read_only_file_is_refused_at_open() {
    unprivileged("a_read_only_file_is_refused_at_open", || {
        let dir = tempfile::tempdir().unwrap();
        let path = stepwise_db(dir.path());
        let _mode = Mode::set(&path, 0o444);
        assert!(!writable_anyway(&path), "mode 0444 did not stop writes");
        let bytes = std::fs::read(&path).unwrap();
        let message = refused(&path);
        assert!(
            message.starts_with(&format!("cannot write to {}: read-only", path.display())),
            "{message}"
        );
        assert_eq!(std::fs::read(&path).unwrap(), bytes);
    });
}

#[cfg(unix)]
#[test]
fn a_read_only_directory_is_refused_at_open() {
    unprivileged("a_read_only_directory_is_refused_at_open", || {
        let dir = tempfile::tempdir().unwrap();
        let path = stepwise_db(dir.path());
        let bytes = std::fs::read(&path).unwrap();
        let _mode = Mode::set(dir.path(), 0o555);
        assert!(
            std::fs::write(dir.path().join("probe"), b"").is_err(),
            "mode 0555 did not stop new files"
        );
        read_only_directory_is_refused(dir.path(), &path, &bytes);
    });
}

/// `dir` (holding the Stepwise database `path`, whose content is `bytes`)
/// takes no new file: a new database cannot be created in it, and an
/// existing one cannot get its WAL files, so it cannot be written.
fn read_only_directory_is_refused(dir: &Path, path: &Path, bytes: &[u8]) {
    let read_only_dir = format!("read-only directory {}", dir.display());
    let new = dir.join("new.db");
    let message = refused(&new);
    assert!(message.starts_with("cannot write to"), "{message}");
    assert!(message.contains(&read_only_dir), "{message}");
    assert!(!new.exists());
    let message = refused(path);
    assert!(message.starts_with("cannot write to"), "{message}");
    assert!(message.contains(&read_only_dir), "{message}");
    assert_eq!(std::fs::read(path).unwrap(), bytes);
}

/// Sets the immutable attribute (`chattr +i`), which even root cannot write
/// through, and clears it on drop so the temp dir can be removed.
struct Immutable(PathBuf);

impl Immutable {
    /// Panics if the attribute cannot be set: `chattr` missing, no
    /// CAP_LINUX_IMMUTABLE (a container's root lacks it), or a filesystem
    /// without the attribute (tmpfs).
    fn set(path: &Path) -> Self {
        let status = Command::new("chattr").arg("+i").arg(path).status();
        assert!(
            status.as_ref().is_ok_and(|s| s.success()),
            "cannot set the immutable attribute on {} ({status:?}): this test needs chattr, \
             CAP_LINUX_IMMUTABLE and a filesystem that has the attribute",
            path.display()
        );
        Self(path.to_path_buf())
    }
}

impl Drop for Immutable {
    fn drop(&mut self) {
        let _ = Command::new("chattr").arg("-i").arg(&self.0).status();
    }
}

/// A temp dir on the target's filesystem (`/tmp` may be a tmpfs, which has
/// no immutable attribute).
fn tempdir_on_disk() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

// The immutable attribute needs a capability a container's root lacks (so
// CI cannot run these), and binds root: the read-only tests above cover the
// same refusals for every user; these show that root gets them too.

#[test]
#[ignore = "needs root with CAP_LINUX_IMMUTABLE, chattr and a filesystem with the attribute"]
fn an_immutable_file_is_refused_at_open_even_for_root() {
    let dir = tempdir_on_disk();
    let path = stepwise_db(dir.path());
    let bytes = std::fs::read(&path).unwrap();
    let _guard = Immutable::set(&path);
    assert!(!writable_anyway(&path), "chattr +i did not stop writes");
    let message = refused(&path);
    assert!(
        message.starts_with(&format!("cannot write to {}: read-only", path.display())),
        "{message}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
}

#[test]
#[ignore = "needs root with CAP_LINUX_IMMUTABLE, chattr and a filesystem with the attribute"]
fn an_immutable_directory_is_refused_at_open_even_for_root() {
    let dir = tempdir_on_disk();
    let path = stepwise_db(dir.path());
    let bytes = std::fs::read(&path).unwrap();
    let _guard = Immutable::set(dir.path());
    read_only_directory_is_refused(dir.path(), &path, &bytes);
}
