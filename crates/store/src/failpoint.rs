//! Fault injection for crash tests: `STEPWISE_FAILPOINT=abort-after-writes=N`
//! makes the process abort right after its N-th committed write transaction,
//! the way `kill -9` or a power cut would stop it — but at an exact,
//! repeatable point. Read once when a store is opened.

use std::sync::atomic::{AtomicU64, Ordering};

/// The environment variable that sets a failpoint.
pub const FAILPOINT_ENV: &str = "STEPWISE_FAILPOINT";

/// A configured fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Failpoint {
    /// Abort right after the N-th committed write of the process (N ≥ 1).
    AbortAfterWrites(u64),
}

/// Committed write transactions of this process, across every store.
static WRITES: AtomicU64 = AtomicU64::new(0);

/// Parses a failpoint; an empty value means none. Anything unrecognised is an
/// error, so a typo cannot make a crash test pass without crashing.
pub(crate) fn parse(value: &str) -> Result<Option<Failpoint>, String> {
    let value = value.trim();
    if value.is_empty() {
        return Ok(None);
    }
    let refuse = || {
        format!(
            "{FAILPOINT_ENV}={value:?} is not understood; expected abort-after-writes=N with N ≥ 1"
        )
    };
    let n = value
        .strip_prefix("abort-after-writes=")
        .ok_or_else(refuse)?
        .parse::<u64>()
        .map_err(|_| refuse())?;
    if n == 0 {
        return Err(refuse());
    }
    Ok(Some(Failpoint::AbortAfterWrites(n)))
}

/// The failpoint set in the environment, if any.
pub(crate) fn from_env() -> Result<Option<Failpoint>, String> {
    match std::env::var(FAILPOINT_ENV) {
        Ok(value) => parse(&value),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(_)) => {
            Err(format!("{FAILPOINT_ENV} is not valid UTF-8"))
        }
    }
}

/// Counts a committed write, and aborts the process if it was the one the
/// failpoint names.
pub(crate) fn after_commit(failpoint: Option<Failpoint>) {
    let n = WRITES.fetch_add(1, Ordering::SeqCst) + 1;
    if failpoint == Some(Failpoint::AbortAfterWrites(n)) {
        std::process::abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_abort_after_writes() {
        assert_eq!(
            parse("abort-after-writes=3"),
            Ok(Some(Failpoint::AbortAfterWrites(3)))
        );
        assert_eq!(
            parse(" abort-after-writes=1 "),
            Ok(Some(Failpoint::AbortAfterWrites(1)))
        );
    }

    #[test]
    fn empty_means_none() {
        assert_eq!(parse(""), Ok(None));
        assert_eq!(parse("  "), Ok(None));
    }

    #[test]
    fn refuses_anything_else() {
        for bad in [
            "abort-after-writes=0",
            "abort-after-writes=",
            "abort-after-writes=-1",
            "abort-after-writes=x",
            "abort-after-write=3",
            "abort",
            "3",
        ] {
            let err = parse(bad).err();
            assert!(
                err.as_deref()
                    .is_some_and(|e| e.contains("abort-after-writes=N")),
                "{bad}: {err:?}"
            );
        }
    }

    #[test]
    fn no_failpoint_never_aborts() {
        for _ in 0..3 {
            after_commit(None);
        }
        assert!(WRITES.load(Ordering::SeqCst) >= 3);
    }
}
