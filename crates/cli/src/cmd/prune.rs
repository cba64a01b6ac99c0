//! `stepwise runs delete RUN…` and `stepwise runs prune --older-than D`:
//! removing runs from the database. A run is deleted only by the holder of
//! its lease (taken as `cancel` takes it, see [`super::act`]), so a process
//! working on it refuses the delete; a `running` run is never deleted,
//! even one whose process died (resume or cancel it first).

use std::path::PathBuf;

use anyhow::{Context, anyhow};
use chrono::Utc;
use stepwise_core::{RunStatus, RunSummary};

use crate::cli::{DeleteArgs, PruneArgs};
use crate::db::{self, Db};
use crate::error::{CliError, CliResult};
use crate::filters;
use crate::output;

/// `stepwise runs delete RUN…`: all of them or none.
pub(crate) fn delete(args: &DeleteArgs, flag: Option<&PathBuf>) -> CliResult {
    let store = open(flag)?;
    let runs = list(&store)?;
    let mut unknown = Vec::new();
    let mut refused = Vec::new();
    for id in &args.runs {
        match runs.iter().find(|s| s.run_id.as_str() == id) {
            None => unknown.push(id.as_str()),
            Some(run) => {
                if let Some(why) = busy(run) {
                    refused.push(format!("{id} ({why})"));
                }
            }
        }
    }
    if !unknown.is_empty() {
        return Err(CliError::usage(anyhow!(
            "no run with id {} in {} (see `stepwise runs`); nothing deleted",
            unknown.join(", "),
            db::describe(flag)
        )));
    }
    if !refused.is_empty() {
        return Err(CliError::failed(anyhow!(
            "not deleting {}; nothing deleted",
            refused.join(", ")
        )));
    }
    for id in &args.runs {
        delete_one(&store, id)?;
    }
    output::stdout(&format!(
        "deleted {} ({})\n",
        count(args.runs.len()),
        args.runs.join(", ")
    ))?;
    Ok(())
}

/// `stepwise runs prune --older-than D [--status S] [--yes]`.
pub(crate) fn prune(args: &PruneArgs, flag: Option<&PathBuf>) -> CliResult {
    if args.status.contains(&RunStatus::Running) {
        return Err(CliError::usage(anyhow!(
            "--status running: running runs are never pruned (cancel them first)"
        )));
    }
    let Some(store) = db::open_existing(flag)? else {
        output::stdout(&format!("no runs to prune in {}\n", db::describe(flag)))?;
        return Ok(());
    };
    let before = filters::ago(Utc::now(), args.older_than);
    let chosen: Vec<String> = list(&store)?
        .into_iter()
        .filter(|s| s.updated_at < before)
        .filter(|s| args.status.is_empty() || args.status.contains(&s.status))
        .filter(|s| busy(s).is_none())
        .map(|s| s.run_id.0)
        .collect();
    if chosen.is_empty() {
        output::stdout("no runs to prune\n")?;
        return Ok(());
    }
    if !args.yes {
        output::stdout(&format!(
            "would delete {}: {}\n(run again with --yes to delete them)\n",
            count(chosen.len()),
            chosen.join(", ")
        ))?;
        return Ok(());
    }
    // A run picked up since the listing is skipped, not a failure.
    let mut deleted = 0;
    for id in &chosen {
        match delete_one(&store, id) {
            Ok(()) => deleted += 1,
            Err(e) => output::note(&format!("skipped run {id}: {e}")),
        }
    }
    output::stdout(&format!("deleted {}\n", count(deleted)))?;
    Ok(())
}

/// The run database; an SQLite file that does not exist has no runs to
/// delete.
fn open(flag: Option<&PathBuf>) -> CliResult<Db> {
    db::open_existing(flag)?.ok_or_else(|| {
        CliError::usage(anyhow!(
            "there is no run database at {} (pass --db or set STEPWISE_DB); nothing deleted",
            db::describe(flag)
        ))
    })
}

fn list(store: &Db) -> anyhow::Result<Vec<RunSummary>> {
    db::block_on(store.list_runs())?.context("cannot list the runs")
}

/// Why a run may not be deleted now, if it may not.
fn busy(run: &RunSummary) -> Option<String> {
    if run.status == RunStatus::Running {
        return Some("it is running; cancel it first".to_owned());
    }
    match &run.held_by {
        Some(holder) if !db::holder_is_dead(holder) => Some(format!("{holder} is working on it")),
        _ => None,
    }
}

/// Takes the run's lease (a live holder refuses), checks it is not running
/// under that lease, and deletes it; the lease goes with it.
fn delete_one(store: &Db, id: &str) -> CliResult {
    db::block_on(async {
        // The full id first (a prefix names one run), then its lease.
        let run = db::load(store.as_ref(), id).await?.run_id;
        let id = run.as_str();
        let lease = db::take_lease(store.as_ref(), &run)
            .await
            .map_err(CliError::from)?;
        let state = db::load(store.as_ref(), id).await;
        let result = match state {
            Ok(state) if state.status == RunStatus::Running => Err(CliError::failed(anyhow!(
                "run {id} is running; cancel it first"
            ))),
            Ok(_) => store.delete_run(&run, lease.fence).map_err(CliError::from),
            Err(e) => Err(e),
        };
        if result.is_err() {
            let _ = store.release(&lease).await;
        }
        result
    })?
}

/// "1 run", "3 runs".
fn count(n: usize) -> String {
    if n == 1 {
        "1 run".to_owned()
    } else {
        format!("{n} runs")
    }
}
