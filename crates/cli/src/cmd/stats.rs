//! `stepwise stats`: run health over the run database (seed 003's
//! metrics), from each run's log: see `stepwise_core::stats` for what
//! counts as closed-loop and recovered. Only reads.

use std::path::PathBuf;

use anyhow::Context;
use chrono::Utc;
use stepwise_core::RunStatus;
use stepwise_core::stats::{Figures, RunFacts, Stats, stats as figures_of};

use crate::cli::StatsArgs;
use crate::db;
use crate::error::CliResult;
use crate::filters;
use crate::output;
use crate::render::table::Table;

/// `stepwise stats [--since DURATION] [--strategy NAME] [--json]`.
pub(crate) fn stats(args: &StatsArgs, flag: Option<&PathBuf>) -> CliResult {
    let facts = match db::open_existing(flag)? {
        Some(store) => db::block_on(async {
            let since = args.since.map(|age| filters::ago(Utc::now(), age));
            let mut summaries = store.list_runs().await.context("cannot list the runs")?;
            summaries.retain(|s| since.is_none_or(|t| s.started_at >= t));
            let mut facts = Vec::with_capacity(summaries.len());
            for summary in summaries {
                let state = db::load(store.as_ref(), summary.run_id.as_str()).await?;
                let run = RunFacts::of(&state);
                if args.strategy.is_empty() || args.strategy.contains(&run.strategy) {
                    facts.push(run);
                }
            }
            CliResult::Ok(facts)
        })??,
        None => Vec::new(),
    };
    let stats = figures_of(&facts);
    let text = if args.json {
        let mut json = serde_json::to_string_pretty(&stats).context("cannot encode the figures")?;
        json.push('\n');
        json
    } else if facts.is_empty() {
        format!("no runs to count in {}\n", db::describe(flag))
    } else {
        render(&stats)
    };
    output::stdout(&text)?;
    Ok(())
}

/// The figures as a table: all runs, then each strategy and each model.
fn render(stats: &Stats) -> String {
    let mut table = Table::new(&[
        "RUNS OF",
        "RUNS",
        "OK",
        "REVIEW",
        "FAILED",
        "OTHER",
        "CLOSED LOOP",
        "RECOVERED",
        "MEAN",
        "P95",
        "CALLS/RUN",
        "TOKENS/RUN",
        "REPLANS/RUN",
    ])
    .right(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    let mut row = |name: String, f: &Figures| {
        let count = |status: RunStatus| f.by_status.get(status.as_str()).copied().unwrap_or(0);
        let named = count(RunStatus::Ok) + count(RunStatus::NeedsReview) + count(RunStatus::Failed);
        table.row([
            name,
            f.runs.to_string(),
            count(RunStatus::Ok).to_string(),
            count(RunStatus::NeedsReview).to_string(),
            count(RunStatus::Failed).to_string(),
            (f.runs - named).to_string(),
            format!("{} ({})", f.closed_loop, percent(f.closed_loop_rate)),
            format!("{} ({})", f.recovered, percent(f.recovered_rate)),
            duration(f.duration_mean_ms),
            duration(f.duration_p95_ms),
            format!("{:.1}", f.model_calls_per_run),
            format!("{:.0}", f.tokens_per_run),
            format!("{:.2}", f.replans_per_run),
        ]);
    };
    row("all".to_owned(), &stats.all);
    for (name, f) in &stats.by_strategy {
        row(format!("strategy {name}"), f);
    }
    for (name, f) in &stats.by_model {
        row(format!("model {name}"), f);
    }
    let mut text = table.render();
    let a = &stats.all;
    if a.recovered > 0 {
        text.push_str(&format!(
            "\nrecovering took {:.1} resume(s) and {:.1} decision(s) by a person per recovered run\n",
            a.resumes_per_recovered, a.decisions_per_recovered
        ));
    }
    text.push_str(
        "\nclosed loop: ok with no pause and no decision by a person; recovered: ok after a pause or a crash; OTHER: running, awaiting approval or cancelled\n",
    );
    text
}

/// "42%".
fn percent(rate: f64) -> String {
    format!("{:.0}%", rate * 100.0)
}

/// "850 ms", "12.3 s", "4.2 min", or "-".
fn duration(ms: Option<u64>) -> String {
    match ms {
        None => "-".to_owned(),
        Some(ms) if ms < 1000 => format!("{ms} ms"),
        Some(ms) if ms < 120_000 => format!("{:.1} s", ms as f64 / 1000.0),
        Some(ms) => format!("{:.1} min", ms as f64 / 60_000.0),
    }
}
