//! How values are written to columns: timestamps as fixed-width RFC 3339 text
//! (sorts as text, reads back to the nanosecond), counters as SQLite's signed
//! 64-bit integers (checked, never wrapped), JSON as text.

use chrono::{DateTime, SecondsFormat, Utc};
use serde::Serialize;
use serde::de::DeserializeOwned;
use stepwise_core::RunStatus;

use crate::error::Fail;

/// `2025-01-02T03:04:05.123456789Z`.
pub(crate) fn time_to_sql(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Nanos, true)
}

pub(crate) fn time_from_sql(s: &str) -> Result<DateTime<Utc>, Fail> {
    DateTime::parse_from_rfc3339(s)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|e| Fail::Data(format!("unreadable timestamp {s:?}: {e}")))
}

pub(crate) fn u64_to_sql(n: u64, what: &str) -> Result<i64, Fail> {
    i64::try_from(n).map_err(|_| Fail::Data(format!("{what} {n} is too large to store")))
}

pub(crate) fn usize_to_sql(n: usize, what: &str) -> Result<i64, Fail> {
    i64::try_from(n).map_err(|_| Fail::Data(format!("{what} {n} is too large to store")))
}

pub(crate) fn u64_from_sql(n: i64, what: &str) -> Result<u64, Fail> {
    u64::try_from(n).map_err(|_| Fail::Data(format!("{what} is negative ({n})")))
}

pub(crate) fn usize_from_sql(n: i64, what: &str) -> Result<usize, Fail> {
    usize::try_from(n).map_err(|_| Fail::Data(format!("{what} is out of range ({n})")))
}

pub(crate) fn u32_from_sql(n: i64, what: &str) -> Result<u32, Fail> {
    u32::try_from(n).map_err(|_| Fail::Data(format!("{what} is out of range ({n})")))
}

pub(crate) fn to_json<T: Serialize>(value: &T, what: &str) -> Result<String, Fail> {
    serde_json::to_string(value).map_err(|e| Fail::Data(format!("cannot encode {what}: {e}")))
}

pub(crate) fn from_json<T: DeserializeOwned>(text: &str, what: &str) -> Result<T, Fail> {
    serde_json::from_str(text).map_err(|e| Fail::Data(format!("unreadable {what}: {e}")))
}

pub(crate) fn status_from_sql(s: &str) -> Result<RunStatus, Fail> {
    RunStatus::ALL
        .into_iter()
        .find(|status| status.as_str() == s)
        .ok_or_else(|| Fail::Data(format!("unknown run status {s:?}")))
}

/// When a lease taken at `now` for `ttl_ms` runs out. Capped at a century,
/// so an absurd TTL cannot overflow the clock or the fixed-width text.
pub(crate) fn expiry(now: DateTime<Utc>, ttl_ms: u64) -> DateTime<Utc> {
    const CENTURY_MS: u64 = 100 * 366 * 24 * 3600 * 1000;
    let ms = i64::try_from(ttl_ms.min(CENTURY_MS)).unwrap_or(0);
    now + chrono::Duration::milliseconds(ms)
}
