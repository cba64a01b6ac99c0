//! `stepwise bench`: every task of a suite run with each strategy, side by
//! side — seed 002's unfinished experiment. Each run is checked against its
//! task's own checks (citations, facts, gaps, status) and measured (role and
//! model calls, tokens, tool calls, replans, wall time).
//!
//! Runs are kept in memory (the engine's own state, no store), so a bench
//! never writes to the run database. The suite format is documented in
//! docs/bench.md. Exit 0 whenever the bench ran, whatever its results: the
//! results are the output.

mod instability;
mod report;
mod suite;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, anyhow};
use stepwise_core::plan::diff::diff;
use stepwise_core::{RunState, Strategy};
use stepwise_tools::notes::Corpus;

use self::report::{RunRow, csv, routing_accuracy, summarize, tables};
use self::suite::{Suite, Task};
use crate::cli::BenchArgs;
use crate::config::{Config, ModelChoice};
use crate::error::{CliError, CliResult};
use crate::output;
use crate::render::{duration, plural, plural_u64};
use crate::session::{self, EngineBuilder};
use crate::{cmd, db};

/// Runs one task with one strategy, in memory.
async fn run_one(
    strategy: &Arc<dyn Strategy>,
    task: &Task,
    corpus: &Arc<Corpus>,
    model: Option<&ModelChoice>,
) -> anyhow::Result<(RunState, u64)> {
    let engine = EngineBuilder::new(Arc::clone(corpus), Arc::clone(strategy))
        .model(model.cloned())
        .build()
        .map_err(CliError::into_anyhow)?;
    let started = Instant::now();
    let state = engine
        .run(&task.goal, task.constraints.clone())
        .await
        .map_err(|e| anyhow!("task {} with {}: {e}", task.id, strategy.name()))?;
    let wall_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    Ok((state, wall_ms))
}

/// A line on stderr; a closed stderr is not an error.
fn progress(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// `[2/8] plan-solve · pilot: ok · pass · 3 tool calls · 4 role calls · 12 ms`.
fn progress_line(n: usize, total: usize, row: &RunRow) -> String {
    let verdict = if row.success {
        "pass".to_owned()
    } else {
        format!("FAIL ({})", row.failed_checks.join("; "))
    };
    format!(
        "[{n}/{total}] {} · {}: {} · {verdict} · {} · {} · {}",
        row.strategy,
        row.task,
        row.status.as_str(),
        plural_u64(row.tool_calls, "tool call"),
        plural_u64(row.role_calls, "role call"),
        duration(row.wall_ms)
    )
}

/// The strategies asked for, each once, in the order given (all built-in
/// ones when none is).
fn strategies(names: &[String]) -> CliResult<Vec<Arc<dyn Strategy>>> {
    if names.is_empty() {
        return Ok(cmd::strategies::builtin());
    }
    let mut unique: Vec<&str> = Vec::new();
    for name in names {
        if !unique.contains(&name.as_str()) {
            unique.push(name);
        }
    }
    unique.into_iter().map(session::strategy).collect()
}

/// `stepwise bench [SUITE]`.
pub(crate) fn bench(args: &BenchArgs) -> CliResult {
    let suite = Suite::load(&args.suite)?;
    let strategies = strategies(&args.strategies)?;
    let cwd = std::env::current_dir()
        .map_err(|e| CliError::usage(anyhow!("cannot read the current directory: {e}")))?;
    let config = Config::load(&cwd)?;
    let spec = config.model_spec(args.model.as_deref());
    let model = config.model(&spec, &cwd)?;
    // Every notes folder is loaded (and checked) once, before the first run.
    let mut corpora: BTreeMap<PathBuf, Arc<Corpus>> = BTreeMap::new();
    for task in &suite.tasks {
        if !corpora.contains_key(&task.notes) {
            let corpus = session::load_corpus(&task.notes, args.quiet)
                .map_err(|e| e.context(format!("task {:?}", task.id)))
                .map_err(|e| CliError::usage(anyhow!("suite {}: {e:#}", args.suite.display())))?;
            corpora.insert(task.notes.clone(), Arc::new(corpus));
        }
    }
    let repeat = args.repeat;
    let total = strategies.len() * suite.tasks.len() * repeat;
    if !args.quiet {
        let n = strategies.len();
        output::note(&format!(
            "bench: {} × {n} {} = {} (model: {spec}; runs kept in memory)",
            plural(suite.tasks.len(), "task"),
            if n == 1 { "strategy" } else { "strategies" },
            plural(total, "run"),
        ));
    }
    let rows = db::block_on(async {
        let mut rows = Vec::with_capacity(total);
        for strategy in &strategies {
            for task in &suite.tasks {
                let corpus = corpora
                    .get(&task.notes)
                    .ok_or_else(|| anyhow!("notes of task {} not loaded", task.id))?;
                let mut first = None;
                for n in 1..=repeat {
                    let (state, wall_ms) = run_one(strategy, task, corpus, model.as_ref()).await?;
                    let mut row = RunRow::new(strategy.name(), task, &state, wall_ms);
                    let plan = instability::first_plan(&state);
                    row.repeat = n;
                    match &first {
                        None => first = Some(plan),
                        Some(first) => row.plan_changes = Some(diff(first, &plan).distance()),
                    }
                    if !args.quiet {
                        progress(&progress_line(rows.len() + 1, total, &row));
                    }
                    rows.push(row);
                }
            }
        }
        Ok::<_, anyhow::Error>(rows)
    })??;
    let summary = summarize(&rows);
    let routing = routing_accuracy(&rows);
    let unstable = instability::instability(&rows);
    let text = if args.json {
        let value = serde_json::json!({
            "suite": args.suite.display().to_string(),
            "description": suite.description,
            "model": spec,
            "strategies": strategies.iter().map(|s| s.name()).collect::<Vec<_>>(),
            "tasks": suite.tasks.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(),
            "runs": rows,
            "summary": summary,
            "routing": routing,
            "instability": unstable,
        });
        let mut json = serde_json::to_string_pretty(&value).context("cannot encode the bench")?;
        json.push('\n');
        json
    } else if args.csv {
        csv(&rows).context("cannot write the CSV")?
    } else {
        tables(&rows, &summary, &routing) + &instability::table(&unstable)
    };
    output::stdout(&text)?;
    Ok(())
}
