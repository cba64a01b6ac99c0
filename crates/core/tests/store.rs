//! The store conformance suite against the in-memory store (the SQLite store
//! runs the same suite in `stepwise-store`).
#![allow(clippy::unwrap_used)]

use stepwise_core::MemoryStore;
use stepwise_core::testing::store_conformance;

#[tokio::test]
async fn the_memory_store_passes_the_conformance_suite() {
    store_conformance::run(MemoryStore::new).await.unwrap();
}
