//! Issue shape (1) with the SQLite store: a sequential plan of N no-op steps,
//! every event written to a `SqliteStore` file (WAL) before the engine acts
//! on it, with `synchronous=FULL` (`full`, the default) and with the opt-in
//! `synchronous=NORMAL` (`normal`, LangGraph's SQLite setting). Run with
//! `cargo bench -p stepwise-store --bench sqlite`; see docs/benchmarks.md.
//!
//! The store file lives in a temporary directory under `$TMPDIR` (or
//! `/tmp`): put that on the disk you mean to measure. Every run of a shape
//! goes into one file, as a long-lived store would hold them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

#[path = "../../core/benches/common/mod.rs"]
mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{check, engine_and_planner, runtime, sequential};
use criterion::{BenchmarkId, Criterion, SamplingMode, Throughput};
use stepwise_core::{Constraints, StoreSink};
use stepwise_store::{Durability, SqliteStore};

/// Per-call (elapsed ÷ iterations) timings, by N.
static TIMINGS: Mutex<Vec<(&str, usize, Vec<f64>)>> = Mutex::new(Vec::new());

fn note(mode: &'static str, n: usize, elapsed: Duration, iters: u64) {
    let per_iter = elapsed.as_secs_f64() / iters as f64;
    let mut t = TIMINGS.lock().unwrap();
    match t.iter_mut().find(|(m, p, _)| *m == mode && *p == n) {
        Some((_, _, v)) => v.push(per_iter),
        None => t.push((mode, n, vec![per_iter])),
    }
}

fn bench_sqlite(c: &mut Criterion) {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let mut group = c.benchmark_group("sqlite_sequential");
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(4));
    for (mode, durability) in [("full", Durability::Full), ("normal", Durability::Normal)] {
        for n in [10, 100, 1000] {
            bench_one(&mut group, &rt, dir.path(), mode, durability, n);
        }
    }
    group.finish();
}

fn bench_one(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    rt: &tokio::runtime::Runtime,
    dir: &std::path::Path,
    mode: &'static str,
    durability: Durability,
    n: usize,
) {
    {
        let path = dir.join(format!("{mode}-{n}.db"));
        let store = Arc::new(SqliteStore::open_with(&path, durability).unwrap());
        let (e, planner) = engine_and_planner(sequential(n), None, 4);
        let e = Arc::new(e.with_sink(Arc::new(StoreSink::new(store, None))));
        group.throughput(Throughput::Elements(n as u64));
        group.bench_with_input(BenchmarkId::new(mode, n), &n, |b, &n| {
            b.to_async(rt).iter_custom(|iters| {
                planner.prepare(iters);
                let e = Arc::clone(&e);
                async move {
                    // On a worker thread, as in the engine benches.
                    tokio::spawn(async move {
                        let start = Instant::now();
                        for _ in 0..iters {
                            let state = e.run("bench", Constraints::default()).await.unwrap();
                            check(&state, n);
                        }
                        let elapsed = start.elapsed();
                        note(mode, n, elapsed, iters);
                        elapsed
                    })
                    .await
                    .unwrap()
                }
            });
        });
    }
}

fn summary() {
    let t = TIMINGS.lock().unwrap();
    if t.is_empty() {
        return;
    }
    println!("\nsummary (medians of the measurement samples)");
    for (mode, n, v) in t.iter() {
        // The last 10 calls are criterion's samples, after its warm-up.
        let mut v = v[v.len().saturating_sub(10)..].to_vec();
        v.sort_by(f64::total_cmp);
        let m = v[v.len() / 2];
        println!(
            "  sqlite_sequential/{mode:<6} {n:>6}: {:.1} µs/step",
            m * 1e6 / *n as f64
        );
    }
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    bench_sqlite(&mut c);
    c.final_summary();
    summary();
}
