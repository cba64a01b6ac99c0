//! Issue shape (4), memory side: R concurrent runs of a sequential 5-step
//! plan with 10 ms steps, in one process, and its peak RSS. Criterion cannot
//! measure memory, so this is a plain program (`harness = false`): it runs
//! itself once per R, so every R starts from a fresh process, and each child
//! prints runs per second, the peak RSS (`VmHWM`) and
//! `(peak RSS − baseline RSS) ÷ R`, the memory of one in-flight run.
//!
//! Each R runs twice: with the history kept in memory (the default) and
//! without (`RunConfig::keep_history` off, what a host whose store holds
//! the log runs).
//!
//! `cargo bench -p stepwise-core --bench rss` (all of 100, 1,000, 10,000), or
//! `STEPWISE_RSS_RUNS=10000 STEPWISE_RSS_HISTORY=forget cargo bench -p
//! stepwise-core --bench rss` for one.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::panic
)]

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{check, engine, runtime, sequential};
use stepwise_core::{Constraints, RunStatus};

const ENV: &str = "STEPWISE_RSS_RUNS";
/// `forget`: runs with `RunConfig::keep_history` off (default `keep`).
const HISTORY: &str = "STEPWISE_RSS_HISTORY";

/// A field of /proc/self/status, in KiB.
fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/self/status"))
}

fn child(r: usize, keep_history: bool) {
    let rt = runtime();
    let e = Arc::new(engine(
        sequential(5),
        Some(Duration::from_millis(10)),
        4,
        keep_history,
    ));
    let run_all = |r: usize| {
        let e = Arc::clone(&e);
        rt.block_on(async move {
            let runs: Vec<_> = (0..r)
                .map(|_| {
                    let e = Arc::clone(&e);
                    tokio::spawn(async move {
                        let state = e.run("bench", Constraints::default()).await.unwrap();
                        check(&state, 5);
                        state.status
                    })
                })
                .collect();
            for run in runs {
                assert_eq!(run.await.unwrap(), RunStatus::Ok);
            }
        });
    };
    // What a run's future holds inline (the rest of its memory is on the heap).
    let future = std::mem::size_of_val(&e.run("bench", Constraints::default()));
    // Warm up the runtime's threads and the allocator with a few runs.
    run_all(r.min(10));
    let baseline = status_kib("VmRSS");
    let start = Instant::now();
    run_all(r);
    let wall = start.elapsed().as_secs_f64();
    let peak = status_kib("VmHWM");
    let per_run = (peak.saturating_sub(baseline)) as f64 / r as f64;
    let history = if keep_history { "kept" } else { "not kept" };
    println!(
        "R = {r:>6}, history {history:<8}: {wall_ms:>8.1} ms, {rps:>8.0} runs/s, baseline RSS {baseline} KiB, \
         peak RSS {peak} KiB, {per_run:.2} KiB per in-flight run, a run's future {future} B",
        wall_ms = wall * 1e3,
        rps = r as f64 / wall,
    );
}

fn main() {
    let keep = std::env::var(HISTORY).map_or(true, |v| v != "forget");
    if let Ok(r) = std::env::var(ENV) {
        child(
            r.parse().expect("STEPWISE_RSS_RUNS is a number of runs"),
            keep,
        );
        return;
    }
    let me = std::env::current_exe().unwrap();
    for r in [100, 1_000, 10_000] {
        for history in ["keep", "forget"] {
            let status = std::process::Command::new(&me)
                .env(ENV, r.to_string())
                .env(HISTORY, history)
                .status()
                .unwrap();
            assert!(status.success(), "the run with R = {r} failed");
        }
    }
}
