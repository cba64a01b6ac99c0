//! The command line, as clap types.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// Plan-and-execute runtime for LLM agents.
#[derive(Debug, Parser)]
#[command(name = "stepwise", version, about, long_about = None)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Check plan files and print the plan format.
    #[command(subcommand)]
    Plan(PlanCommand),
    /// List the built-in tools.
    Tools(ToolsArgs),
}

#[derive(Debug, Subcommand)]
pub(crate) enum PlanCommand {
    /// Validate a plan file against a tool catalogue; report every problem at once.
    ///
    /// Exit status: 0 valid, 1 invalid, 2 usage error (bad flags, unreadable
    /// or non-JSON file, bad tools or constraints file).
    Validate(ValidateArgs),
    /// Print the JSON Schema of a plan file.
    Schema,
}

#[derive(Debug, Args)]
pub(crate) struct ValidateArgs {
    /// The plan: a JSON object with a `steps` array, or a bare array of steps
    /// (`-` reads standard input).
    #[arg(value_name = "FILE")]
    pub(crate) file: PathBuf,

    /// Validate against the tools in this JSON file (an array of tool specs,
    /// or `{"tools": [...]}`) instead of the built-in tools.
    #[arg(long, value_name = "FILE")]
    pub(crate) tools: Option<PathBuf>,

    /// Print the diagnostics as a JSON array (empty when the plan is valid).
    #[arg(long)]
    pub(crate) json: bool,

    /// Most steps the plan may have (skipped steps are not counted);
    /// overrides `max_steps` in the constraints.
    #[arg(long, value_name = "N", value_parser = at_least_one)]
    pub(crate) max_steps: Option<usize>,

    /// Run constraints (e.g. `allowed_tools`, `forbid_side_effects`,
    /// `max_steps`): a JSON file, or inline JSON starting with `{`.
    #[arg(long, value_name = "FILE_OR_JSON")]
    pub(crate) constraints: Option<String>,
}

#[derive(Debug, Args)]
pub(crate) struct ToolsArgs {
    /// Print the tools' full specs (with argument schemas) as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

/// A whole number of at least 1.
fn at_least_one(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err("expected a whole number of at least 1".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::Cli;

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }
}
