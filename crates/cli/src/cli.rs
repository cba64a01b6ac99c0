//! The command line, as clap types.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use stepwise_core::RunStatus;
use stepwise_core::strategy::{DEFAULT_STRATEGY, StrategyRegistry};

use crate::error::ErrorKind::{
    AwaitingApproval, Cancelled, Failed, Interrupted, NeedsReview, Usage,
};
use crate::error::{exit_codes, exit_codes_help};

/// Stepwise: a plan-and-execute runtime for LLM agents.
///
/// Stepwise turns a goal into a validated plan of tool-call steps, runs it
/// (independent steps in parallel), checks every result, replans only what
/// is missing, and writes a cited brief that names its gaps instead of
/// guessing. Every decision is an event in a durable log, so a run can be
/// watched, approved, resumed after a crash, compared with other strategies
/// and replayed offline.
#[derive(Debug, Parser)]
#[command(name = "stepwise", version, after_help = exit_codes_help())]
pub(crate) struct Cli {
    /// The run database: an SQLite file, or a PostgreSQL database as a URL
    /// (postgres://USER:PASSWORD@HOST:PORT/DB, migrated with `stepwise
    /// migrate`). Default: $XDG_DATA_HOME/stepwise/stepwise.db
    /// (~/.local/share/stepwise/stepwise.db).
    #[arg(long, global = true, value_name = "PATH|URL", env = "STEPWISE_DB")]
    pub(crate) db: Option<PathBuf>,

    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Runs an MCP server and ends it when the stepwise process that started
    /// it dies (internal: stepwise starts its stdio servers through it).
    #[command(name = "mcp-guard", hide = true)]
    McpGuard {
        /// The server's command and its arguments.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
        argv: Vec<std::ffi::OsString>,
    },
    /// Run a goal over a folder of notes, offline: plan, search, assess,
    /// replan, and write a cited brief that names its gaps.
    ///
    /// The brief (Markdown, or the full result with --json) goes to stdout;
    /// live progress goes to stderr. The run's status is the exit status.
    #[command(after_help = exit_codes(&[Failed, Usage, NeedsReview, AwaitingApproval, Cancelled, Interrupted]))]
    Run(Box<RunArgs>),
    /// Continue a run: after a crash, or from a breakpoint once a person has
    /// acted (approve, reject, or new bounds such as --max-replans).
    #[command(after_help = exit_codes(&[Failed, Usage, NeedsReview, AwaitingApproval, Cancelled, Interrupted]))]
    Resume(ResumeArgs),
    /// List runs: id, goal, status, start, steps done/total, replans,
    /// tokens (filtered with --status, --since, --goal, --limit); or delete
    /// them (`runs delete`, `runs prune`).
    Runs(RunsArgs),
    /// Run health over the run database: runs by final status, the
    /// closed-loop rate (ok without a person), the recovered rate (ok after
    /// a pause or a crash, and what it took), duration (mean, p95), model
    /// calls, tokens and replans per run; all runs, by strategy, by model.
    #[command(after_help = exit_codes(&[Failed, Usage]))]
    Stats(StatsArgs),
    /// Show one run: its plan (or its events, or a Mermaid DAG).
    Show(ShowArgs),
    /// Approve what a paused run waits for: its plan version, or side-effect
    /// steps with the exact arguments they asked for.
    Approve(ApproveArgs),
    /// Refuse what a paused run waits for; the run stops for review.
    #[command(after_help = exit_codes(&[Failed, Usage, NeedsReview]))]
    Reject(RejectArgs),
    /// Cancel a run that is not being worked on.
    Cancel(CancelArgs),
    /// Serve the HTTP API (`/v1/...`, see docs/server.md) over this run
    /// database: submit, list, watch (SSE), approve, resume and cancel runs.
    ///
    /// Prints the address it listens on, then serves until SIGTERM or
    /// Ctrl-C; runs in flight then stop at their last checkpoint and are
    /// resumed when it starts again.
    #[command(after_help = exit_codes(&[Failed, Usage]))]
    Serve(ServeArgs),
    /// Run a recorded run again against its recorded model responses (zero
    /// network calls) and check it reaches the same output.
    #[command(after_help = exit_codes(&[Failed, Usage]))]
    Replay(ReplayArgs),
    /// Check plan files and print the plan format.
    #[command(subcommand)]
    Plan(PlanCommand),
    /// List the tools a run can call: the built-in ones and those of the MCP
    /// servers in stepwise.toml (started to ask them), with their source,
    /// side-effect class and, with --json, their schemas.
    #[command(after_help = exit_codes(&[Failed, Usage]))]
    Tools(ToolsArgs),
    /// List the strategies `run --strategy` and `bench` accept.
    Strategies(StrategiesArgs),
    /// Run every task of a suite with several strategies and compare them:
    /// success on each task's checks, role and model calls, tokens, tool
    /// calls, replans, wall time, final status.
    ///
    /// Runs are kept in memory, never in the run database. The table (or
    /// --json / --csv) goes to stdout, a line per finished run to stderr.
    /// The bench succeeds whenever it ran, whatever the results; it fails
    /// only when a run broke down.
    #[command(after_help = exit_codes(&[Failed, Usage]))]
    Bench(BenchArgs),
    /// Create or upgrade the run database's schema: for PostgreSQL
    /// (`--db postgres://…`), run once before anything else, and again after
    /// upgrading Stepwise; an SQLite file is upgraded when opened anyway.
    /// Running it again changes nothing.
    #[command(after_help = exit_codes(&[Usage]))]
    Migrate,
    /// Work on the runs of a PostgreSQL database's queue (`run --detach`):
    /// claim queued runs and those whose worker died, run or resume them,
    /// heartbeat their leases. Start as many as you like, on any machines.
    #[command(after_help = exit_codes(&[Failed, Usage]))]
    Worker(WorkerArgs),
    /// List the workers of a PostgreSQL database: id, host, state, runs
    /// held, last heartbeat; and the queue's counts.
    #[command(after_help = exit_codes(&[Failed, Usage]))]
    Workers(WorkersArgs),
    /// Write a commented stepwise.toml: every setting, turned off, with
    /// what it does and its default. Never overwrites an existing file.
    #[command(after_help = exit_codes(&[Failed, Usage]))]
    Init(InitArgs),
    /// Print a shell completion script, e.g. `stepwise completions bash >
    /// ~/.local/share/bash-completion/completions/stepwise`.
    Completions(CompletionsArgs),
    /// Print the manual page (roff), e.g. `stepwise man | man -l -`.
    Man,
    /// Serve Stepwise as an MCP server over stdio, for MCP clients (Claude
    /// Desktop, IDE agents, the MCP Inspector): tools run_goal, get_run,
    /// list_runs, approve_step, reject_step and cancel_run on this run
    /// database.
    #[command(after_help = exit_codes(&[Failed, Usage]))]
    Mcp,
}

#[derive(Debug, Args)]
pub(crate) struct CompletionsArgs {
    /// The shell: bash, zsh, fish or powershell.
    #[arg(value_enum, value_name = "SHELL")]
    pub(crate) shell: Shell,
}

/// The shells `completions` writes for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Shell {
    Bash,
    Zsh,
    Fish,
    Powershell,
}

#[derive(Debug, Args)]
pub(crate) struct InitArgs {
    /// The folder to write stepwise.toml in (default: the current one).
    #[arg(value_name = "DIR")]
    pub(crate) dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct WorkerArgs {
    /// Most runs worked on at once.
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = at_least_one)]
    pub(crate) concurrency: usize,

    /// How long a claimed run's lease lasts without a heartbeat (renewed
    /// every third of it); a dead worker's runs are taken over after it.
    #[arg(long, value_name = "MS", default_value_t = 30_000, value_parser = clap::value_parser!(u64).range(100..))]
    pub(crate) lease_ms: u64,

    /// How often to look for runs to claim when there is room, and for
    /// cancels clients asked of the runs in hand.
    #[arg(long, value_name = "MS", default_value_t = 500)]
    pub(crate) poll_ms: u64,

    /// Exit once the queue is empty: nothing queued, nothing claimed by any
    /// worker (runs of a dead worker are waited for and taken over).
    #[arg(long)]
    pub(crate) drain: bool,

    /// On SIGTERM or Ctrl-C, how long the runs in hand may go on before
    /// they are stopped and given back to the queue.
    #[arg(long, value_name = "MS", default_value_t = 10_000)]
    pub(crate) grace_ms: u64,

    /// No progress lines on stderr.
    #[arg(long, short)]
    pub(crate) quiet: bool,

    #[command(flatten)]
    pub(crate) trace: TraceArgs,
}

#[derive(Debug, Args)]
pub(crate) struct WorkersArgs {
    /// Print the workers and the queue's counts as JSON.
    #[arg(long)]
    pub(crate) json: bool,
    /// A worker whose last heartbeat is older than this is `stale` (it may
    /// be stopped or cut off); ten times older, or its process gone from
    /// this machine, `gone`. The default is the workers' default lease.
    #[arg(long, value_name = "MS", default_value_t = 30_000)]
    pub(crate) stale_after_ms: u64,
    /// Remove the rows of workers that are `stopped` or `gone` (never of a
    /// worker with a recent heartbeat), and say how many.
    #[arg(long)]
    pub(crate) prune: bool,
}

#[derive(Debug, Subcommand)]
pub(crate) enum PlanCommand {
    /// Validate a plan file against a tool catalogue; report every problem at once.
    ///
    /// A valid plan is success; an invalid one fails, with every problem
    /// printed; an unreadable or non-JSON plan, tools or constraints file is
    /// a usage error.
    #[command(after_help = exit_codes(&[Failed, Usage]))]
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
    /// or `{"tools": [...]}`) instead of the tools a run can call (the
    /// built-in ones and those of the MCP servers in stepwise.toml).
    #[arg(long, value_name = "FILE")]
    pub(crate) tools: Option<PathBuf>,

    /// Also validate against this MCP server's tools (see `run --mcp`).
    #[arg(long, value_name = "NAME=COMMAND", conflicts_with = "tools")]
    pub(crate) mcp: Vec<String>,

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

    /// The workspace a run of the plan would get (`run --workspace`):
    /// without it, a valid plan that calls write_file is reported with the
    /// flag its run will need.
    #[arg(long, value_name = "DIR")]
    pub(crate) workspace: Option<PathBuf>,
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
    /// comparison_dimensions, allowed_tools, forbid_side_effects, deadline,
    /// max_steps, max_replans, token_budget): a JSON file, or inline JSON
    /// starting with `{`. Other keys are refused.
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

    /// How to run the goal (see `stepwise strategies`): plan-execute,
    /// plan-solve, verified, react, react-isolated or router.
    #[arg(long, value_name = "NAME", default_value = DEFAULT_STRATEGY, value_parser = strategy_name)]
    pub(crate) strategy: String,

    #[command(flatten)]
    pub(crate) output: OutputArgs,

    #[command(flatten)]
    pub(crate) trace: TraceArgs,

    /// Approval of side-effect steps: `never` (pause at awaiting_approval for
    /// `stepwise approve`), `auto` (approve each up front, recorded as by
    /// auto), `ask` (prompt on the terminal).
    #[arg(long, value_enum, default_value_t = ApproveMode::Never)]
    pub(crate) approve: ApproveMode,

    /// Review the plan before it runs (approved the same way as side-effect steps).
    #[arg(long)]
    pub(crate) review: bool,

    /// Folder the `write_file` tool may write in (the tool is off without it).
    #[arg(long, value_name = "DIR")]
    pub(crate) workspace: Option<PathBuf>,

    /// Run this plan (a plan file, see `stepwise plan schema`) instead of
    /// planning. It is used as written: an invalid plan stops for review
    /// (exit 3) with every problem and its fix, unless --repair is given.
    #[arg(long, value_name = "FILE")]
    pub(crate) plan: Option<PathBuf>,

    /// Let stepwise repair an invalid --plan (removing or changing steps)
    /// instead of stopping; the output says what the repair changed.
    #[arg(long, requires = "plan")]
    pub(crate) repair: bool,

    /// Who judges a finished step's acceptance criteria: `auto` (the engine
    /// checks typed criteria itself, the assessor judges text ones), `rules`
    /// (typed checks only; no assessor call, text criteria named as not
    /// judged) or `model` (the assessor, every step).
    #[arg(long, value_enum, default_value_t = AssessArg::Auto)]
    pub(crate) assess: AssessArg,

    /// The model behind the roles: `offline` (default; no model),
    /// `openai:MODEL`, `anthropic:MODEL`, `ollama:MODEL` or `script:FILE`.
    /// Also from STEPWISE_MODEL or `model` in stepwise.toml.
    #[arg(long, value_name = "SPEC")]
    pub(crate) model: Option<String>,

    /// Folder of prompt templates overriding the built-in ones (see docs/models.md).
    #[arg(long, value_name = "DIR")]
    pub(crate) prompts: Option<PathBuf>,

    /// Also use the tools of this MCP server, for this run (repeatable):
    /// `NAME=COMMAND ARGS…` (a stdio server, e.g. `fs="npx -y
    /// @modelcontextprotocol/server-filesystem ./data"`) or `NAME=URL`
    /// (streamable HTTP). Its tools are named `NAME.tool`; servers
    /// configured in stepwise.toml (`[mcp.servers.NAME]`) are used too.
    #[arg(long, value_name = "NAME=COMMAND")]
    pub(crate) mcp: Vec<String>,

    /// Put the run in the queue of the PostgreSQL database (--db
    /// postgres://…) for a `stepwise worker` instead of running it here;
    /// prints its id. `--approve ask` cannot be detached.
    #[arg(long)]
    pub(crate) detach: bool,

    /// Use this run id (for scripts and tests); default: a fresh one.
    #[arg(long, value_name = "ID", hide = true)]
    pub(crate) run_id: Option<String>,
}

/// Who judges acceptance criteria (`--assess`).
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    clap::ValueEnum,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub(crate) enum AssessArg {
    /// The engine for typed criteria, the assessor for text.
    #[default]
    Auto,
    /// Typed checks only.
    Rules,
    /// The assessor for every step.
    Model,
}

impl From<AssessArg> for stepwise_core::AssessMode {
    fn from(a: AssessArg) -> Self {
        match a {
            AssessArg::Auto => Self::Auto,
            AssessArg::Rules => Self::Rules,
            AssessArg::Model => Self::Model,
        }
    }
}

/// How side-effect steps (and, with --review, plans) get approved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ApproveMode {
    /// Pause for `stepwise approve`.
    Never,
    /// Approve up front.
    Auto,
    /// Ask on the terminal.
    Ask,
}

/// Trace options of the commands that drive runs (`run`, `resume`, `serve`,
/// `worker`). Traces are exported when `OTEL_EXPORTER_OTLP_ENDPOINT` (or
/// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set; see docs/tracing.md.
#[derive(Debug, Clone, Args)]
pub(crate) struct TraceArgs {
    /// Put prompts, answers, the goal, tool arguments and results in the
    /// exported spans (each cut to 8 KiB). Off by default: spans then carry
    /// names, ids, models, token counts and timings, never note text.
    #[arg(long, env = "STEPWISE_TRACE_CONTENT")]
    pub(crate) trace_content: bool,
}

/// Output options shared by `run` and `resume`.
#[derive(Debug, Clone, Args)]
pub(crate) struct OutputArgs {
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
pub(crate) struct ResumeArgs {
    /// The run id (see `stepwise runs`).
    #[arg(value_name = "RUN")]
    pub(crate) run: String,

    /// Raise the replan bound (e.g. a run stopped at max_replans).
    #[arg(long, value_name = "N")]
    pub(crate) max_replans: Option<u32>,

    /// Raise the step bound.
    #[arg(long, value_name = "N", value_parser = at_least_one)]
    pub(crate) max_steps: Option<usize>,

    /// Approval of side-effect steps from here on (see `run --approve`).
    #[arg(long, value_enum, default_value_t = ApproveMode::Never)]
    pub(crate) approve: ApproveMode,

    #[command(flatten)]
    pub(crate) output: OutputArgs,

    #[command(flatten)]
    pub(crate) trace: TraceArgs,
}

#[derive(Debug, Args)]
pub(crate) struct ReplayArgs {
    /// The run id.
    #[arg(value_name = "RUN")]
    pub(crate) run: String,
    /// Print the comparison as JSON.
    #[arg(long)]
    pub(crate) json: bool,
    /// No progress on stderr.
    #[arg(long, short)]
    pub(crate) quiet: bool,
}

/// `runs`' own flags list runs: with `delete` or `prune` they are refused
/// (`cmd::runs::listing_flag`), by hand because clap's
/// `args_conflicts_with_subcommands` would refuse the global `--db` too.
#[derive(Debug, Args)]
pub(crate) struct RunsArgs {
    #[command(subcommand)]
    pub(crate) action: Option<RunsCommand>,
    /// Print the runs as JSON.
    #[arg(long)]
    pub(crate) json: bool,
    /// Only runs with this status (repeatable, or a comma list): running,
    /// ok, needs_review, failed, awaiting_approval, cancelled.
    #[arg(long, value_name = "S", value_delimiter = ',', value_parser = crate::filters::status)]
    pub(crate) status: Vec<RunStatus>,
    /// Only runs started within this long (e.g. 30m, 2h, 7d).
    #[arg(long, value_name = "DURATION", value_parser = crate::filters::duration)]
    pub(crate) since: Option<chrono::Duration>,
    /// Only runs whose goal contains this text (ignoring case).
    #[arg(long, value_name = "TEXT")]
    pub(crate) goal: Option<String>,
    /// At most this many runs (the newest).
    #[arg(long, value_name = "N", value_parser = at_least_one)]
    pub(crate) limit: Option<usize>,
}

#[derive(Debug, Args)]
pub(crate) struct StatsArgs {
    /// Print the figures as JSON.
    #[arg(long)]
    pub(crate) json: bool,
    /// Only runs started within this long (e.g. 30m, 2h, 7d).
    #[arg(long, value_name = "DURATION", value_parser = crate::filters::duration)]
    pub(crate) since: Option<chrono::Duration>,
    /// Only runs of this strategy (repeatable, or a comma list).
    #[arg(long, value_name = "NAME", value_delimiter = ',')]
    pub(crate) strategy: Vec<String>,
}

#[derive(Debug, Subcommand)]
pub(crate) enum RunsCommand {
    /// Delete runs: their events, snapshot, idempotency records and lease.
    /// A running run, or one a live process holds, is refused (and then
    /// nothing is deleted).
    #[command(after_help = exit_codes(&[Failed, Usage]))]
    Delete(DeleteArgs),
    /// Delete the runs not changed for a while (never a running or held
    /// one). Without --yes, only prints what it would delete.
    #[command(after_help = exit_codes(&[Failed, Usage]))]
    Prune(PruneArgs),
}

#[derive(Debug, Args)]
pub(crate) struct DeleteArgs {
    /// The run ids.
    #[arg(value_name = "RUN", required = true)]
    pub(crate) runs: Vec<String>,
}

#[derive(Debug, Args)]
pub(crate) struct PruneArgs {
    /// Runs whose last change is older than this (e.g. 7d, 12h).
    #[arg(long, value_name = "DURATION", value_parser = crate::filters::duration)]
    pub(crate) older_than: chrono::Duration,
    /// Only runs with this status (repeatable, or a comma list; not running).
    #[arg(long, value_name = "S", value_delimiter = ',', value_parser = crate::filters::status)]
    pub(crate) status: Vec<RunStatus>,
    /// Delete them; without it, print how many and which, and delete nothing.
    #[arg(long)]
    pub(crate) yes: bool,
}

#[derive(Debug, Args)]
pub(crate) struct ShowArgs {
    /// The run id.
    #[arg(value_name = "RUN")]
    pub(crate) run: String,
    /// List every event.
    #[arg(long)]
    pub(crate) events: bool,
    /// Print the run's state (seed 001's final output) as JSON.
    #[arg(long, conflicts_with = "mermaid")]
    pub(crate) json: bool,
    /// Print the plan as a Mermaid flowchart with step statuses.
    #[arg(long)]
    pub(crate) mermaid: bool,
    /// What changed between two plan versions (`V1..V2`; alone, the last
    /// two): steps added, removed, retooled, reargued, rewired.
    #[arg(long, value_name = "V1..V2", num_args = 0..=1, default_missing_value = "", conflicts_with_all = ["mermaid", "events"])]
    pub(crate) diff: Option<String>,
}

#[derive(Debug, Args)]
pub(crate) struct ApproveArgs {
    /// The run id.
    #[arg(value_name = "RUN")]
    pub(crate) run: String,
    /// Approve only this step (default: everything the run waits for).
    #[arg(long, value_name = "ID")]
    pub(crate) step: Option<String>,
}

#[derive(Debug, Args)]
pub(crate) struct RejectArgs {
    /// The run id.
    #[arg(value_name = "RUN")]
    pub(crate) run: String,
    /// Why (recorded).
    #[arg(long, value_name = "TEXT")]
    pub(crate) reason: String,
}

#[derive(Debug, Args)]
pub(crate) struct CancelArgs {
    /// The run id.
    #[arg(value_name = "RUN")]
    pub(crate) run: String,
    /// Why (recorded).
    #[arg(long, value_name = "TEXT", default_value = "cancelled by a person")]
    pub(crate) reason: String,
}

#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// Address and port to listen on (port 0: any free port). Default:
    /// `[serve] listen` in stepwise.toml, else 127.0.0.1:8472.
    #[arg(long, value_name = "ADDR")]
    pub(crate) listen: Option<String>,
    /// Serve without bearer tokens (every request acts for tenant `local`);
    /// refused unless the address is a loopback one.
    #[arg(long)]
    pub(crate) insecure_no_auth: bool,

    #[command(flatten)]
    pub(crate) trace: TraceArgs,
}

#[derive(Debug, Args)]
pub(crate) struct ToolsArgs {
    /// Print the tools' full specs (with argument and output schemas, source
    /// and side-effect class) as JSON.
    #[arg(long)]
    pub(crate) json: bool,

    /// Also list the tools of this MCP server (see `run --mcp`); those
    /// configured in stepwise.toml are always listed.
    #[arg(long, value_name = "NAME=COMMAND")]
    pub(crate) mcp: Vec<String>,
}

#[derive(Debug, Args)]
pub(crate) struct StrategiesArgs {
    /// Print the strategies as JSON (`name`, `description`, `default`).
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct BenchArgs {
    /// The suite: a TOML file of tasks (see docs/bench.md).
    #[arg(value_name = "SUITE", default_value = "examples/bench/suite.toml")]
    pub(crate) suite: PathBuf,

    /// Strategies to compare, comma-separated (default: every built-in one).
    #[arg(long, value_name = "A,B,…", value_delimiter = ',', value_parser = strategy_name)]
    pub(crate) strategies: Vec<String>,

    /// Print the runs and the per-strategy summary as JSON.
    #[arg(long, conflicts_with = "csv")]
    pub(crate) json: bool,

    /// Print one CSV row per run.
    #[arg(long)]
    pub(crate) csv: bool,

    /// The model behind the roles (see `run --model`); default offline.
    #[arg(long, value_name = "SPEC")]
    pub(crate) model: Option<String>,

    /// Run each task this many times per strategy and report plan
    /// instability: how often a repeat's first plan differs in structure
    /// from the first repeat's.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = at_least_one)]
    pub(crate) repeat: usize,

    /// No progress on stderr.
    #[arg(long, short)]
    pub(crate) quiet: bool,
}

/// The name of a built-in strategy.
fn strategy_name(s: &str) -> Result<String, String> {
    let registry = StrategyRegistry::builtin();
    if registry.get(s).is_some() {
        Ok(s.to_owned())
    } else {
        Err(format!(
            "unknown strategy; expected one of: {}",
            registry.names().join(", ")
        ))
    }
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

    #[test]
    fn help_says_what_stepwise_is_and_lists_every_exit_code() {
        let help = Cli::command().render_long_help().to_string();
        assert!(
            help.contains("Stepwise turns a goal into a validated plan"),
            "{help}"
        );
        assert!(help.contains("\n  0  success\n"), "{help}");
        for kind in crate::error::ErrorKind::ALL {
            let line = format!("\n  {}  {}\n", kind.code(), kind.meaning());
            assert!(help.contains(&line), "{kind:?} missing from:\n{help}");
        }
        let short = Cli::command().render_help().to_string();
        assert!(short.contains("Exit status:"), "{short}");
    }
}
