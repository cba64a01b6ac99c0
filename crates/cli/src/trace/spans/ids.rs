//! Trace and span ids: hashes of the run id (and of the event that opened
//! the span), so every process that traces a run gives the same ids.

use opentelemetry::trace::{SpanId, TraceId};
use sha2::{Digest, Sha256};

/// The run's trace id: the first 16 bytes of SHA-256(run id).
pub(crate) fn trace_id(run: &str) -> TraceId {
    let digest = Sha256::digest(run.as_bytes());
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    TraceId::from_bytes(bytes)
}

/// A span's id: 8 bytes of SHA-256(run id, what opened the span).
pub(super) fn span_id(run: &str, key: &str) -> SpanId {
    let digest = Sha256::new()
        .chain_update(run.as_bytes())
        .chain_update([0])
        .chain_update(key.as_bytes())
        .finalize();
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&digest[..8]);
    if bytes == [0; 8] {
        bytes[7] = 1; // the all-zero id is invalid
    }
    SpanId::from_bytes(bytes)
}
