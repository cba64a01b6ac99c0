//! What the store tests share.
#![allow(dead_code, clippy::unwrap_used)]

/// Runs a future to its end on a runtime of its own (with timers).
pub(crate) fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}
