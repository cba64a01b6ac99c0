#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    missing_docs,
    dead_code
)]
#[path = "../../core/benches/common/mod.rs"]
mod common;
use common::{engine_and_planner, sequential};
use std::sync::Arc;
use std::time::Instant;
use stepwise_core::{Constraints, StoreSink};
use stepwise_store::{Durability, SqliteStore};

fn cpu() -> f64 {
    let s = std::fs::read_to_string("/proc/self/stat").unwrap();
    let rest = &s[s.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split(' ').collect();
    (f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap()) / 100.0
}

#[test]
#[ignore]
fn probe() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = std::path::PathBuf::from("/tmp/probe");
    for n in [10usize, 100, 1000, 10, 100, 1000, 10, 100, 1000] {
        let path = dir.join(format!("p-{n}.db"));
        let _ = std::fs::remove_file(&path);
        let store = Arc::new(SqliteStore::open_with(&path, Durability::Normal).unwrap());
        let (e, planner) = engine_and_planner(sequential(n), None, 4);
        let e = Arc::new(e.with_sink(Arc::new(StoreSink::new(store, None))));
        let runs = (6000 / n).max(6) as u64;
        planner.prepare(runs);
        let c0 = cpu();
        let t = rt.block_on(async move {
            tokio::spawn(async move {
                let start = Instant::now();
                for _ in 0..runs {
                    e.run("bench", Constraints::default()).await.unwrap();
                }
                start.elapsed()
            })
            .await
            .unwrap()
        });
        let c = cpu() - c0;
        let steps = runs as f64 * n as f64;
        println!(
            "n={n} runs={runs} {:.1} us/step wall, {:.1} us/step cpu",
            t.as_secs_f64() * 1e6 / steps,
            c * 1e6 / steps
        );
    }
}
