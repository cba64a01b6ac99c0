//! `stepwise`: the command-line surface of Stepwise.
//!
//! Structured output (plans, diagnostics, JSON) goes to stdout; errors go to
//! stderr as one `error: ...` line. Exit codes: 0 success, 1 the input was
//! checked and found wanting (e.g. an invalid plan), 2 usage errors (bad
//! flags, unreadable or non-JSON files).

mod cli;
mod input;
mod output;
mod plan_cmd;
mod tools_cmd;

use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Command, PlanCommand};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Plan(PlanCommand::Validate(args)) => plan_cmd::validate(&args),
        Command::Plan(PlanCommand::Schema) => plan_cmd::schema(),
        Command::Tools(args) => tools_cmd::list(&args),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            output::error(&err);
            ExitCode::from(output::USAGE_ERROR)
        }
    }
}
