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
    /// Run a goal over a folder of notes, offline: plan, search, assess,
    /// replan, and write a cited brief that names its gaps.
    ///
    /// The brief (Markdown, or the full result with --json) goes to stdout;
    /// live progress goes to stderr. Exit status: 0 ok, 3 needs review,
    /// 1 failed, 2 usage error.
    Run(RunArgs),
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
    /// overrides `max_steps` in the constraints. Default 20, the bound
    /// `stepwise run` uses.
    #[arg(long, value_name = "N", value_parser = at_least_one)]
    pub(crate) max_steps: Option<usize>,

    /// Run constraints (e.g. `allowed_tools`, `forbid_side_effects`,
    /// `max_steps`): a JSON file, or inline JSON starting with `{`.
    #[arg(long, value_name = "FILE_OR_JSON")]
    pub(crate) constraints: Option<String>,
}

#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// What the run should achieve, e.g. "Should support adopt RAG or fine-tuning?".
    #[arg(value_name = "GOAL")]
    pub(crate) goal: String,

    /// Folder of notes: .md and .txt files (one note each) and .jsonl files
    /// (one {"id", "title", "text"} per line).
    #[arg(long, value_name = "DIR")]
    pub(crate) notes: PathBuf,

    /// Constraints (audience, length, required_sections,
    /// comparison_dimensions, allowed_tools, max_steps, max_replans): a JSON
    /// file, or inline JSON starting with `{`.
    #[arg(long, value_name = "FILE_OR_JSON")]
    pub(crate) constraints: Option<String>,

    /// Most steps the run may take (overrides the constraints).
    #[arg(long, value_name = "N", value_parser = at_least_one)]
    pub(crate) max_steps: Option<usize>,

    /// Most replans (overrides the constraints).
    #[arg(long, value_name = "N")]
    pub(crate) max_replans: Option<u32>,

    /// Most steps running at once.
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = at_least_one)]
    pub(crate) concurrency: usize,

    /// Print the full result as JSON (status, report, plan, step results,
    /// gaps, evidence, usage, history) instead of Markdown.
    #[arg(long)]
    pub(crate) json: bool,

    /// Write the output to this file instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub(crate) out: Option<PathBuf>,

    /// No progress on stderr.
    #[arg(long, short)]
    pub(crate) quiet: bool,
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
