//! `stepwise`: the command-line surface of Stepwise.
//!
//! Structured output (plans, diagnostics, JSON) goes to stdout; errors go to
//! stderr as one `error: ...` line. The exit codes are in [`error`], the
//! one place they are mapped, and `stepwise --help` lists them.
//!
//! The binary is glue, in ripgrep's shape:
//! - [`cli`]: the flags, as clap types; [`cmd`]: one module per subcommand;
//! - [`session`]: the run's recorded settings, the one engine builder
//!   (`run`, `resume`, `replay`, `bench`) and the lease-holding session;
//! - [`render`]: the text every command shares; [`progress`]: the live display;
//! - [`mcp`]: a run's MCP servers (started, logged, stopped);
//! - [`error`]: exit codes; [`config`]: the model and prices; [`db`]: the run
//!   database; [`input`]: JSON inputs; [`review`]: fixes and hints for a
//!   person; [`output`]: writing to the terminal.
//!
//! Cargo features (`postgres`, `serve`, `mcp`, `otel`; crates/cli/Cargo.toml)
//! leave parts out: their modules and the dispatch below are gated, and
//! what a build lacks fails naming the feature (`error::not_built`).

mod cli;
mod cmd;
mod config;
mod db;
mod error;
mod filters;
mod finish;
mod guard;
mod host;
mod input;
mod loading;
mod mcp;
mod output;
mod progress;
mod render;
mod review;
mod session;
#[cfg(feature = "otel")]
mod trace;
/// Stand-ins for a build without traces: asking for them is refused.
#[cfg(not(feature = "otel"))]
#[path = "trace_off.rs"]
mod trace;

use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Command, PlanCommand, RunsCommand};
use crate::error::CliResult;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match dispatch(&cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            if let Some(message) = err.message() {
                output::error(message);
            }
            err.exit_code()
        }
    }
}

/// Runs the subcommand.
fn dispatch(cli: &Cli) -> CliResult {
    let db = cli.db.as_ref();
    // Stdio MCP servers are started through this program's guard, which
    // ends them if this process dies without stopping them.
    #[cfg(feature = "mcp")]
    stepwise_mcp::set_guard(guard::mcp_guard_argv());
    // Traces of the commands that drive runs, flushed when `_flush` drops.
    let trace = match &cli.command {
        Command::Run(args) => Some(&args.trace),
        Command::Resume(args) => Some(&args.trace),
        Command::Serve(args) => Some(&args.trace),
        Command::Worker(args) => Some(&args.trace),
        _ => None,
    };
    let _flush = match trace {
        Some(trace) => trace::init(trace.trace_content)?,
        None => None,
    };
    match &cli.command {
        Command::Run(args) => cmd::run::run(args, db),
        Command::Resume(args) => cmd::resume::resume(args, db),
        Command::Stats(args) => cmd::stats::stats(args, db),
        Command::Runs(args) => match &args.action {
            None => cmd::runs::runs(args, db),
            Some(_) if let Some(flag) = cmd::runs::listing_flag(args) => {
                Err(error::CliError::usage(anyhow::anyhow!(
                    "{flag} lists runs; give it to `stepwise runs`, not to `runs delete` or `runs prune`"
                )))
            }
            Some(RunsCommand::Delete(args)) => cmd::prune::delete(args, db),
            Some(RunsCommand::Prune(args)) => cmd::prune::prune(args, db),
        },
        Command::Show(args) => cmd::show::show(args, db),
        Command::Approve(args) => cmd::approve::approve(args, db),
        Command::Reject(args) => cmd::reject::reject(args, db),
        Command::Cancel(args) => cmd::cancel::cancel(args, db),
        Command::Replay(args) => cmd::replay::replay(args, db),
        #[cfg(feature = "serve")]
        Command::Serve(args) => cmd::serve::serve(args, db),
        Command::Plan(PlanCommand::Validate(args)) => cmd::plan::validate(args),
        Command::Plan(PlanCommand::Schema) => cmd::plan::schema(),
        Command::Tools(args) => cmd::tools::list(args),
        Command::Strategies(args) => cmd::strategies::list(args),
        Command::Bench(args) => cmd::bench::bench(args),
        Command::Migrate => cmd::migrate::migrate(db),
        Command::Init(args) => cmd::init::init(args),
        Command::Completions(args) => cmd::docs::completions(args.shell),
        Command::Man => cmd::docs::man(),
        #[cfg(feature = "serve")]
        Command::Worker(args) => cmd::worker::worker(args, db),
        #[cfg(feature = "postgres")]
        Command::Workers(args) => cmd::workers::workers(args, db),
        #[cfg(feature = "mcp")]
        Command::McpGuard { argv } => guard::mcp_guard(argv),
        #[cfg(feature = "mcp")]
        Command::Mcp => cmd::mcp::mcp(db),
        // Left out of this build: refused, naming the feature to enable.
        #[cfg(not(feature = "serve"))]
        Command::Serve(_) | Command::Worker(_) => Err(error::not_built("serve")),
        #[cfg(not(feature = "postgres"))]
        Command::Workers(_) => Err(error::not_built("postgres")),
        #[cfg(not(feature = "mcp"))]
        Command::McpGuard { .. } | Command::Mcp => Err(error::not_built("mcp")),
    }
}
