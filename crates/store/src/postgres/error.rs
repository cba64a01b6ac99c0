//! Errors inside a PostgreSQL operation, before they name the database:
//! they become a [`StoreError`] at the boundary, one line naming the
//! database (never its password).

use stepwise_core::StoreError;

#[derive(Debug)]
pub(crate) enum Fail {
    /// The database could not be reached or a new connection refused.
    Connect(tokio_postgres::Error),
    /// A statement failed.
    Sql(tokio_postgres::Error),
    /// A value could not be encoded or decoded.
    Data(String),
    /// Already a typed outcome (conflict, fenced, not found, ...).
    Store(StoreError),
}

impl From<tokio_postgres::Error> for Fail {
    fn from(e: tokio_postgres::Error) -> Self {
        Self::Sql(e)
    }
}

impl From<StoreError> for Fail {
    fn from(e: StoreError) -> Self {
        Self::Store(e)
    }
}

impl From<crate::error::Fail> for Fail {
    fn from(e: crate::error::Fail) -> Self {
        match e {
            crate::error::Fail::Store(e) => Self::Store(e),
            crate::error::Fail::Data(message) => Self::Data(message),
            crate::error::Fail::Sql(e) => Self::Data(e.to_string()),
        }
    }
}

/// SQLSTATE of a unique violation.
pub(crate) const UNIQUE_VIOLATION: &str = "23505";

impl Fail {
    /// The typed error, its message naming the database `db`.
    pub(crate) fn into_store(self, db: &str) -> StoreError {
        match self {
            Self::Store(e) => e,
            Self::Data(message) => StoreError::Unavailable(format!("{db}: {message}")),
            Self::Connect(e) => StoreError::Unavailable(format!(
                "cannot connect to {db}: {}",
                one_line(&describe(&e))
            )),
            Self::Sql(e) if lost(&e) => StoreError::Unavailable(format!(
                "lost the connection to {db}: {}",
                one_line(&describe(&e))
            )),
            Self::Sql(e) => StoreError::Unavailable(format!("{db}: {}", one_line(&describe(&e)))),
        }
    }
}

/// Whether the connection broke (closed, or an I/O error), as opposed to a
/// statement the server or the client refused.
fn lost(e: &tokio_postgres::Error) -> bool {
    if e.is_closed() {
        return true;
    }
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        if cause.is::<std::io::Error>() {
            return true;
        }
        source = cause.source();
    }
    false
}

/// The server's message and code, or the client's error with its cause.
fn describe(e: &tokio_postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        return format!("{} ({})", db.message(), db.code().code());
    }
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
