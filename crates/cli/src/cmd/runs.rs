//! `stepwise runs`: every run in the database, newest first. Only reads;
//! never creates a database that does not exist yet.

use std::path::PathBuf;

use anyhow::Context;
use chrono::Utc;
use stepwise_core::RunSummary;

use crate::cli::RunsArgs;
use crate::db;
use crate::error::CliResult;
use crate::filters::{self, Filter};
use crate::output;
use crate::render::clip;
use crate::render::table::Table;

/// Longest goal `stepwise runs` prints, in characters.
const GOAL_WIDTH: usize = 60;

/// `stepwise runs [--json] [--status S] [--since DURATION] [--goal TEXT] [--limit N]`.
pub(crate) fn runs(args: &RunsArgs, flag: Option<&PathBuf>) -> CliResult {
    let mut summaries = match db::open_existing(flag)? {
        Some(store) => db::block_on(store.list_runs())?.context("cannot list the runs")?,
        None => Vec::new(),
    };
    let filter = Filter {
        statuses: args.status.clone(),
        since: args.since.map(|age| filters::ago(Utc::now(), age)),
        goal: args.goal.clone(),
    };
    let filtered = !args.status.is_empty() || args.since.is_some() || args.goal.is_some();
    let any = !summaries.is_empty();
    summaries.retain(|s| filter.keeps(s));
    if let Some(limit) = args.limit {
        summaries.truncate(limit);
    }
    if args.json {
        let mut json =
            serde_json::to_string_pretty(&summaries).context("cannot encode the runs")?;
        json.push('\n');
        output::stdout(&json)?;
    } else if summaries.is_empty() && any && filtered {
        output::stdout(&format!("no runs match in {}\n", db::describe(flag)))?;
    } else if summaries.is_empty() {
        output::stdout(&format!("no runs yet in {}\n", db::describe(flag)))?;
    } else {
        output::stdout(&runs_table(&summaries))?;
    }
    Ok(())
}

/// The first listing flag given, if any (they mean nothing to `delete`
/// and `prune`, which have flags of their own).
pub(crate) fn listing_flag(args: &RunsArgs) -> Option<&'static str> {
    [
        (args.json, "--json"),
        (!args.status.is_empty(), "--status"),
        (args.since.is_some(), "--since"),
        (args.goal.is_some(), "--goal"),
        (args.limit.is_some(), "--limit"),
    ]
    .into_iter()
    .find_map(|(given, flag)| given.then_some(flag))
}

/// The table of `stepwise runs`.
fn runs_table(summaries: &[RunSummary]) -> String {
    let mut table = Table::new(&[
        "RUN",
        "STATUS",
        "STARTED (UTC)",
        "STEPS",
        "REPLANS",
        "TOKENS",
        "HELD BY",
        "GOAL",
    ]);
    for s in summaries {
        table.row([
            s.run_id.to_string(),
            s.status.as_str().to_owned(),
            s.started_at.format("%Y-%m-%d %H:%M").to_string(),
            format!("{}/{}", s.steps_done, s.steps_total),
            s.replans.to_string(),
            s.tokens.to_string(),
            s.held_by.clone().unwrap_or_else(|| "-".to_owned()),
            clip(&s.goal, GOAL_WIDTH),
        ]);
    }
    table.render()
}
