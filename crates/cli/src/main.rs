//! `stepwise`: the command-line surface of Stepwise.
//!
//! Structured output (plans, diagnostics, JSON) goes to stdout; errors go to
//! stderr as one `error: ...` line. Exit codes: 0 success, 1 the input was
//! checked and found wanting (e.g. an invalid plan) or a run failed, 2 usage
//! errors (bad flags, unreadable or non-JSON files, a missing notes folder,
//! an unusable database, an unknown run), 3 a run stopped for review, 4 a run
//! waits for an approval, 5 a run was cancelled.

mod act_cmd;
mod bench_cmd;
mod cli;
mod config;
mod db;
mod input;
mod output;
mod plan_cmd;
mod progress;
mod replay_cmd;
mod review;
mod run_cmd;
mod runs_cmd;
mod session;
mod strategies_cmd;
mod tools_cmd;

use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Command, PlanCommand};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let is_run = matches!(
        cli.command,
        Command::Run(_) | Command::Resume(_) | Command::Replay(_) | Command::Bench(_)
    );
    let db = cli.db.as_ref();
    let result = match &cli.command {
        Command::Run(args) => run_cmd::run(args, db),
        Command::Resume(args) => run_cmd::resume(args, db),
        Command::Runs(args) => runs_cmd::runs(args, db),
        Command::Show(args) => runs_cmd::show(args, db),
        Command::Approve(args) => act_cmd::approve(args, db),
        Command::Reject(args) => act_cmd::reject(args, db),
        Command::Cancel(args) => act_cmd::cancel(args, db),
        Command::Replay(args) => replay_cmd::replay(args, db),
        Command::Plan(PlanCommand::Validate(args)) => plan_cmd::validate(args),
        Command::Plan(PlanCommand::Schema) => plan_cmd::schema(),
        Command::Tools(args) => tools_cmd::list(args),
        Command::Strategies(args) => strategies_cmd::list(args),
        Command::Bench(args) => bench_cmd::bench(args),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            output::error(&err);
            // Problems with what the user gave us are usage errors; a run
            // that broke down after it started is a plain failure.
            let usage = !is_run || err.downcast_ref::<run_cmd::UsageError>().is_some();
            ExitCode::from(if usage { output::USAGE_ERROR } else { 1 })
        }
    }
}
