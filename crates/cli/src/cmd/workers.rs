//! `stepwise workers`: the workers a PostgreSQL database has seen, each in
//! the state its heartbeat shows, and the queue's counts; `--prune` forgets
//! the stopped and the gone.

use std::path::PathBuf;

use anyhow::{Context, anyhow};
use stepwise_core::StoreError;

use crate::cli::WorkersArgs;
use crate::db::{self, url_of};
use crate::error::CliResult;
use crate::output;
use crate::render::table::Table;

/// What `stepwise workers` says a worker is: as it recorded itself
/// (`running`, `draining`, `stopped`), unless its heartbeat says otherwise —
/// `stale` when older than `stale_ms` (stopped, frozen or cut off; its runs
/// go to others once their leases run out), `gone` when ten times older or
/// its process is no longer on this machine.
fn seen_state(
    w: &stepwise_store::postgres::queue::WorkerInfo,
    now: chrono::DateTime<chrono::Utc>,
    stale_ms: u64,
) -> &'static str {
    let recorded = match w.state.as_str() {
        "stopped" => return "stopped",
        "draining" => "draining",
        _ => "running",
    };
    let age =
        u64::try_from(now.signed_duration_since(w.heartbeat_at).num_milliseconds()).unwrap_or(0);
    if db::holder_is_dead(&w.id) || age > stale_ms.saturating_mul(10) {
        "gone"
    } else if age > stale_ms {
        "stale"
    } else {
        recorded
    }
}

/// `stepwise workers`: every worker the database has seen.
pub(crate) fn workers(args: &WorkersArgs, flag: Option<&PathBuf>) -> CliResult {
    let url = url_of(flag, "workers")?;
    let store = db::open_postgres(&url)?;
    let now = chrono::Utc::now();
    let (mut workers, counts, pruned) = db::block_on(async {
        let mut workers = store.workers().await?;
        for w in &mut workers {
            w.state = seen_state(w, now, args.stale_after_ms).to_owned();
        }
        let mut pruned = None;
        if args.prune {
            let ids: Vec<String> = workers
                .iter()
                .filter(|w| matches!(w.state.as_str(), "stopped" | "gone"))
                .map(|w| w.id.clone())
                .collect();
            pruned = Some(store.forget_workers(ids.clone()).await?);
            workers.retain(|w| !ids.contains(&w.id));
        }
        let counts = store.queue_counts().await?;
        Ok::<_, StoreError>((workers, counts, pruned))
    })?
    .map_err(|e| anyhow!(e))?;
    if let Some(n) = pruned {
        output::note(&format!("removed {n} stopped or gone worker(s)"));
    }
    workers.sort_by_key(|w| std::cmp::Reverse(w.heartbeat_at));
    if args.json {
        let json = serde_json::json!({"workers": workers, "queue": counts});
        let mut text = serde_json::to_string_pretty(&json).context("cannot encode the workers")?;
        text.push('\n');
        output::stdout(&text)?;
        return Ok(());
    }
    let mut table = Table::new(&[
        "WORKER",
        "HOST",
        "PID",
        "STATE",
        "RUNS HELD",
        "LAST HEARTBEAT",
        "STARTED (UTC)",
    ]);
    for w in &workers {
        let age = (now - w.heartbeat_at).num_milliseconds().max(0);
        table.row([
            w.id.clone(),
            w.host.clone(),
            w.pid.to_string(),
            w.state.clone(),
            format!("{}/{}", w.runs_held, w.concurrency),
            format!("{:.1} s ago", age as f64 / 1000.0),
            w.started_at.format("%Y-%m-%d %H:%M:%S").to_string(),
        ]);
    }
    let mut text = if workers.is_empty() {
        "no workers yet\n".to_owned()
    } else {
        table.render()
    };
    text.push_str(&format!(
        "queue: {} queued, {} claimed, {} done\n",
        counts.queued, counts.claimed, counts.done
    ));
    output::stdout(&text)?;
    Ok(())
}
