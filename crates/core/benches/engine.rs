//! Engine benchmarks with instant scripted roles, so only the engine is
//! measured (issue shapes 1–4, in memory). Run with
//! `cargo bench -p stepwise-core --bench engine`; see docs/benchmarks.md.
//!
//! Besides criterion's own report, a summary at the end gives each shape's
//! figure in the unit: µs per step, wall time ÷ critical path, runs
//! per second (medians over criterion's samples).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{check, engine_and_planner, fan_out, layered, runtime, sequential};
use criterion::{BenchmarkId, Criterion, SamplingMode, Throughput};
use stepwise_core::{Constraints, MemoryStore, RunStatus, StoreSink};

/// Per-call (elapsed ÷ iterations) timings, by shape and parameter.
static TIMINGS: Mutex<Vec<(String, usize, Vec<f64>)>> = Mutex::new(Vec::new());

fn note(shape: &str, param: usize, elapsed: Duration, iters: u64) {
    let per_iter = elapsed.as_secs_f64() / iters as f64;
    let mut t = TIMINGS.lock().unwrap();
    match t.iter_mut().find(|(s, p, _)| s == shape && *p == param) {
        Some((_, _, v)) => v.push(per_iter),
        None => t.push((shape.to_owned(), param, vec![per_iter])),
    }
}

/// Median of the last 10 calls: criterion's measurement samples (every
/// group takes at least 10), after its warm-up calls.
fn median(v: &[f64]) -> f64 {
    let mut v = v[v.len().saturating_sub(10)..].to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

const STEP_LATENCY: Duration = Duration::from_millis(50);

/// Runs `f` as a task on the runtime's workers, the way a server runs its
/// runs, rather than on the benchmark's own thread (`block_on`): there, every
/// step task the engine spawns would wake a parked worker and every
/// completion would wake the benchmark thread back, and the figure would be
/// two futex round trips per step rather than the engine.
async fn on_worker<T: Send + 'static>(f: impl Future<Output = T> + Send + 'static) -> T {
    tokio::spawn(f).await.unwrap()
}

/// (1) A sequential plan of N no-op steps, without a store and with the
/// in-memory store (a fresh one per run, built outside the timing).
fn bench_sequential(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("sequential");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    for n in [10, 100, 1000] {
        group.throughput(Throughput::Elements(n as u64));
        let (plain, planner) = engine_and_planner(sequential(n), None, 4);
        let plain = Arc::new(plain);
        group.bench_with_input(BenchmarkId::new("no_store", n), &n, |b, &n| {
            b.to_async(&rt).iter_custom(|iters| {
                planner.prepare(iters);
                let plain = Arc::clone(&plain);
                // On a worker thread, as a server runs its runs (see on_worker).
                on_worker(async move {
                    let start = Instant::now();
                    for _ in 0..iters {
                        let state = plain.run("bench", Constraints::default()).await.unwrap();
                        check(&state, n);
                    }
                    let elapsed = start.elapsed();
                    note("sequential/no_store", n, elapsed, iters);
                    elapsed
                })
            });
        });
        group.bench_with_input(BenchmarkId::new("memory_store", n), &n, |b, &n| {
            b.to_async(&rt).iter_custom(|iters| {
                on_worker(async move {
                    let mut elapsed = Duration::ZERO;
                    for _ in 0..iters {
                        let store = Arc::new(MemoryStore::new());
                        let (e, planner) = engine_and_planner(sequential(n), None, 4);
                        planner.prepare(1);
                        let e = e.with_sink(Arc::new(StoreSink::new(store, None)));
                        let start = Instant::now();
                        let state = e.run("bench", Constraints::default()).await.unwrap();
                        elapsed += start.elapsed();
                        check(&state, n);
                    }
                    note("sequential/memory_store", n, elapsed, iters);
                    elapsed
                })
            });
        });
    }
    group.finish();
}

/// Runs `plan` `iters` times, timing each run.
fn bench_dag(c: &mut Criterion, name: &str, shapes: &[(usize, Vec<stepwise_core::Step>)]) {
    let rt = runtime();
    let mut group = c.benchmark_group(name);
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2));
    for (param, plan) in shapes {
        let n = plan.len();
        let (e, planner) = engine_and_planner(plan.clone(), Some(STEP_LATENCY), n);
        let e = Arc::new(e);
        group.bench_with_input(BenchmarkId::from_parameter(param), param, |b, &param| {
            b.to_async(&rt).iter_custom(|iters| {
                planner.prepare(iters);
                let (e, key) = (Arc::clone(&e), name.to_owned());
                on_worker(async move {
                    let start = Instant::now();
                    for _ in 0..iters {
                        let state = e.run("bench", Constraints::default()).await.unwrap();
                        check(&state, n);
                    }
                    let elapsed = start.elapsed();
                    note(&key, param, elapsed, iters);
                    elapsed
                })
            });
        });
    }
    group.finish();
}

/// (2) K independent 50 ms steps, then a join.
fn bench_fan_out(c: &mut Criterion) {
    let shapes: Vec<_> = [8, 64, 512].into_iter().map(|k| (k, fan_out(k))).collect();
    bench_dag(c, "fan_out", &shapes);
}

/// (3) 3 layers of W 50 ms steps, each layer after the whole previous one.
fn bench_layered(c: &mut Criterion) {
    let shapes: Vec<_> = [4, 32].into_iter().map(|w| (w, layered(3, w))).collect();
    bench_dag(c, "layered_3x", &shapes);
}

/// The runtime's floor for shapes (2) and (3), without the engine: `layers`
/// rounds of `width` spawned tasks each sleeping 50 ms, each round joined
/// before the next starts. What tokio's 1 ms timer adds to a 50 ms sleep
/// shows here, and is no part of the engine's overhead.
fn bench_floor(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("tokio_floor");
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2));
    for (layers, width) in [(1, 512), (3, 32)] {
        let name = format!("{layers}x{width}");
        group.bench_function(&name, |b| {
            b.to_async(&rt).iter_custom(|iters| {
                on_worker(async move {
                    let start = Instant::now();
                    for _ in 0..iters {
                        for _ in 0..layers {
                            let tasks: Vec<_> = (0..width)
                                .map(|_| tokio::spawn(tokio::time::sleep(STEP_LATENCY)))
                                .collect();
                            for t in tasks {
                                t.await.unwrap();
                            }
                        }
                    }
                    let elapsed = start.elapsed();
                    note("tokio_floor", layers * 1000 + width, elapsed, iters);
                    elapsed
                })
            });
        });
    }
    group.finish();
}

/// (4) R concurrent runs of a sequential 5-step plan with 10 ms steps, in
/// one process. (Peak RSS: the `rss` bench.)
fn bench_concurrent(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("concurrent_runs");
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(3));
    let (e, planner) = engine_and_planner(sequential(5), Some(Duration::from_millis(10)), 4);
    let e = Arc::new(e);
    for r in [100, 1_000, 10_000] {
        group.throughput(Throughput::Elements(r as u64));
        group.bench_with_input(BenchmarkId::from_parameter(r), &r, |b, &r| {
            b.to_async(&rt).iter_custom(|iters| {
                planner.prepare(iters * r as u64);
                let e = Arc::clone(&e);
                on_worker(async move {
                    let start = Instant::now();
                    for _ in 0..iters {
                        let runs: Vec<_> = (0..r)
                            .map(|_| {
                                let e = Arc::clone(&e);
                                tokio::spawn(async move {
                                    let state =
                                        e.run("bench", Constraints::default()).await.unwrap();
                                    check(&state, 5);
                                    state.status
                                })
                            })
                            .collect();
                        for run in runs {
                            assert_eq!(run.await.unwrap(), RunStatus::Ok);
                        }
                    }
                    let elapsed = start.elapsed();
                    note("concurrent_runs", r, elapsed, iters);
                    elapsed
                })
            });
        });
    }
    group.finish();
}

fn summary() {
    let t = TIMINGS.lock().unwrap();
    if t.is_empty() {
        return;
    }
    println!("\nsummary (medians of the measurement samples)");
    for (shape, param, v) in t.iter() {
        let m = median(v);
        let figure = match shape.as_str() {
            s if s.starts_with("sequential") => {
                format!("{:.2} µs/step", m * 1e6 / *param as f64)
            }
            "fan_out" => format!(
                "{:.1} ms = {:.3} x the 50 ms critical path",
                m * 1e3,
                m / STEP_LATENCY.as_secs_f64()
            ),
            "layered_3x" => format!(
                "{:.1} ms = {:.3} x the 150 ms critical path",
                m * 1e3,
                m / (3.0 * STEP_LATENCY.as_secs_f64())
            ),
            "tokio_floor" => {
                let layers = (*param / 1000) as f64;
                format!(
                    "{:.1} ms = {:.3} x {layers} x 50 ms (tasks {}x{}, no engine)",
                    m * 1e3,
                    m / (layers * STEP_LATENCY.as_secs_f64()),
                    param / 1000,
                    param % 1000
                )
            }
            _ => format!("{:.1} ms = {:.0} runs/s", m * 1e3, *param as f64 / m),
        };
        println!("  {shape:<26} {param:>6}: {figure}");
    }
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    bench_sequential(&mut c);
    bench_fan_out(&mut c);
    bench_layered(&mut c);
    bench_floor(&mut c);
    bench_concurrent(&mut c);
    c.final_summary();
    summary();
}
