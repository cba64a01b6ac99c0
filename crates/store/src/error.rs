//! Internal error plumbing. SQL and data errors are raised without knowing
//! the file; they become a [`StoreError`] at the boundary, where the message
//! gets the file's name — a person reading "database is locked" needs to know
//! which database.

use rusqlite::ErrorCode;
use stepwise_core::StoreError;

/// An error inside a store operation, before it names the file.
#[derive(Debug)]
pub(crate) enum Fail {
    /// SQLite refused.
    Sql(rusqlite::Error),
    /// A value could not be encoded or decoded (JSON, time, integer range).
    Data(String),
    /// Already a typed outcome (conflict, fenced, not found, ...).
    Store(StoreError),
}

impl From<rusqlite::Error> for Fail {
    fn from(e: rusqlite::Error) -> Self {
        Self::Sql(e)
    }
}

impl From<StoreError> for Fail {
    fn from(e: StoreError) -> Self {
        Self::Store(e)
    }
}

impl Fail {
    /// The typed error, its message naming the database `db`.
    pub(crate) fn into_store(self, db: &str) -> StoreError {
        match self {
            Self::Store(e) => e,
            Self::Data(message) => StoreError::Unavailable(format!("{db}: {message}")),
            Self::Sql(e) => StoreError::Unavailable(describe(db, &e)),
        }
    }
}

/// One line for a person: what is wrong with `db`, by SQLite's error class.
pub(crate) fn describe(db: &str, e: &rusqlite::Error) -> String {
    // rusqlite may end an open error with the path; the message names it already.
    let text = e.to_string();
    let detail = text.strip_suffix(&format!(": {db}")).unwrap_or(&text);
    match e.sqlite_error_code() {
        Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => {
            format!("{db} is not a Stepwise database or is corrupt: {detail}")
        }
        Some(ErrorCode::ReadOnly) => format!("cannot write to {db}: read-only ({detail})"),
        Some(ErrorCode::PermissionDenied) => {
            format!("cannot write to {db}: permission denied ({detail})")
        }
        Some(ErrorCode::CannotOpen) => format!("cannot open {db}: {detail}"),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => {
            format!("{db} is busy: another connection held its lock for over 5 s ({detail})")
        }
        Some(ErrorCode::DiskFull) => format!("cannot write to {db}: the disk is full"),
        Some(ErrorCode::SystemIoFailure) => format!("cannot read or write {db}: {detail}"),
        _ => format!("{db}: {detail}"),
    }
}
