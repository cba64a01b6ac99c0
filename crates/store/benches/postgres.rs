//! Issue shape (1) with the PostgreSQL store: a sequential plan of N no-op
//! steps, every event committed to a `PgStore` (`synchronous_commit = on`,
//! one transaction per append) before the engine acts on it — beside the
//! SQLite bench's `synchronous=FULL` figures. Needs a server: run with
//! `scripts/with-postgres cargo bench -p stepwise-store --bench postgres`
//! (or set `STEPWISE_TEST_PG`); see docs/benchmarks.md.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::panic
)]

#[path = "../../core/benches/common/mod.rs"]
mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{check, engine_and_planner, runtime, sequential};
use criterion::{BenchmarkId, Criterion, SamplingMode, Throughput};
use stepwise_core::{Constraints, StoreSink};
use stepwise_store::PgStore;
use stepwise_store::postgres::migrate;
use stepwise_store::postgres::testing::ScratchDb;

/// Per-call (elapsed ÷ iterations) timings, by N.
static TIMINGS: Mutex<Vec<(usize, Vec<f64>)>> = Mutex::new(Vec::new());

fn note(n: usize, elapsed: Duration, iters: u64) {
    let per_iter = elapsed.as_secs_f64() / iters as f64;
    let mut t = TIMINGS.lock().unwrap();
    match t.iter_mut().find(|(p, _)| *p == n) {
        Some((_, v)) => v.push(per_iter),
        None => t.push((n, vec![per_iter])),
    }
}

fn bench_postgres(c: &mut Criterion) {
    let rt = runtime();
    let db = ScratchDb::new("bench").unwrap_or_else(|e| panic!("{e}"));
    migrate(db.url()).unwrap();
    let store = Arc::new(PgStore::connect(db.url()).unwrap());
    let mut group = c.benchmark_group("postgres_sequential");
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(4));
    for n in [10, 100] {
        let (e, planner) = engine_and_planner(sequential(n), None, 4);
        let e = Arc::new(e.with_sink(Arc::new(StoreSink::new(Arc::clone(&store) as _, None))));
        group.throughput(Throughput::Elements(n as u64));
        group.bench_with_input(BenchmarkId::new("on", n), &n, |b, &n| {
            b.to_async(&rt).iter_custom(|iters| {
                planner.prepare(iters);
                let e = Arc::clone(&e);
                async move {
                    tokio::spawn(async move {
                        let start = Instant::now();
                        for _ in 0..iters {
                            let state = e.run("bench", Constraints::default()).await.unwrap();
                            check(&state, n);
                        }
                        let elapsed = start.elapsed();
                        note(n, elapsed, iters);
                        elapsed
                    })
                    .await
                    .unwrap()
                }
            });
        });
    }
    group.finish();
    drop(store);
    drop(db);
}

fn summary() {
    let t = TIMINGS.lock().unwrap();
    if t.is_empty() {
        return;
    }
    println!("\nsummary (medians of the measurement samples)");
    for (n, v) in t.iter() {
        let mut v = v[v.len().saturating_sub(10)..].to_vec();
        v.sort_by(f64::total_cmp);
        let m = v[v.len() / 2];
        println!(
            "  postgres_sequential/on {n:>6}: {:.1} µs/step",
            m * 1e6 / *n as f64
        );
    }
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    bench_postgres(&mut c);
    c.final_summary();
    summary();
}
