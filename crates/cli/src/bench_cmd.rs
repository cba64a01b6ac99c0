//! `stepwise bench`: every task of a suite run with each strategy, side by
//! side — seed 002's unfinished experiment. Each run is checked against its
//! task's own checks (citations, facts, gaps, status) and measured (role and
//! model calls, tokens, tool calls, replans, wall time).
//!
//! Runs are kept in memory (the engine's own state, no store), so a bench
//! never writes to the run database. The suite format is documented in
//! docs/bench.md.
//!
//! Exit status: 0 the bench ran (whatever its results), 2 usage error (a
//! missing or malformed suite, a missing notes folder, a bad model spec),
//! 1 a run broke down inside the engine.

use std::collections::BTreeMap;
use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, anyhow};
use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use stepwise_core::{
    Constraints, Driver, Engine, EventKind, RunConfig, RunState, RunStatus, StopCondition,
    Strategy, ToolRegistry,
};
use stepwise_tools::notes::Corpus;

use crate::cli::BenchArgs;
use crate::config::{Config, ModelChoice};
use crate::input::read_constraints;
use crate::output::{self, plural};
use crate::run_cmd::UsageError;
use crate::{db, session, strategies_cmd};

fn usage(err: anyhow::Error) -> anyhow::Error {
    anyhow::Error::new(UsageError(err))
}

// ---------------------------------------------------------------- the suite

/// A suite file as written (TOML).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SuiteFile {
    /// What the suite is for (repeated in the JSON output).
    #[serde(default)]
    description: Option<String>,
    /// `[[task]]` tables.
    #[serde(default, rename = "task")]
    tasks: Vec<TaskFile>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TaskFile {
    id: String,
    goal: String,
    /// Relative to the suite file.
    notes: PathBuf,
    /// A table of constraints, or the path of a JSON constraints file
    /// (relative to the suite file).
    #[serde(default)]
    constraints: Option<Value>,
    #[serde(default)]
    checks: ChecksFile,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ChecksFile {
    #[serde(default)]
    required_citations: Vec<String>,
    #[serde(default)]
    required_facts: Vec<String>,
    #[serde(default)]
    expected_gaps: Vec<String>,
    #[serde(default)]
    forbidden_facts: Vec<String>,
    #[serde(default)]
    min_status: MinStatus,
}

/// The least a run must reach: `ok` > a resumable breakpoint
/// (`needs_review`, `awaiting_approval`) > anything (`any`).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum MinStatus {
    /// The run ended `ok`.
    #[default]
    Ok,
    /// `ok`, or stopped at a breakpoint a person can resume from.
    NeedsReview,
    /// Same rank as `needs_review`.
    AwaitingApproval,
    /// No requirement on the status.
    Any,
}

impl MinStatus {
    fn rank(self) -> u8 {
        match self {
            Self::Ok => 2,
            Self::NeedsReview | Self::AwaitingApproval => 1,
            Self::Any => 0,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::NeedsReview => "needs_review",
            Self::AwaitingApproval => "awaiting_approval",
            Self::Any => "any",
        }
    }
}

/// The rank of a status against [`MinStatus`].
fn status_rank(status: RunStatus) -> u8 {
    match status {
        RunStatus::Ok => 2,
        RunStatus::NeedsReview | RunStatus::AwaitingApproval => 1,
        RunStatus::Failed | RunStatus::Cancelled | RunStatus::Running => 0,
    }
}

/// Whether a run closed its loop: it ended `ok` or at a resumable breakpoint,
/// rather than failing, being cancelled or being left running.
fn closed_loop(status: RunStatus) -> bool {
    status_rank(status) >= 1
}

/// Something the report must (or must not) contain: text, matched ignoring
/// case, or a regular expression (written `re:PATTERN`), matched as written.
#[derive(Debug, Clone)]
pub(crate) enum Fact {
    Text(String),
    Pattern(Regex),
}

impl Fact {
    fn parse(text: &str) -> anyhow::Result<Fact> {
        match text.strip_prefix("re:") {
            Some(pattern) => Regex::new(pattern)
                .map(Fact::Pattern)
                .map_err(|e| anyhow!("{text:?} is not a valid regular expression: {e}")),
            None if text.trim().is_empty() => Err(anyhow!("an empty fact matches every report")),
            None => Ok(Fact::Text(text.to_owned())),
        }
    }

    fn found_in(&self, report: &str) -> bool {
        match self {
            Fact::Text(text) => contains_ignoring_case(report, text),
            Fact::Pattern(re) => re.is_match(report),
        }
    }
}

impl fmt::Display for Fact {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fact::Text(text) => write!(f, "{text:?}"),
            Fact::Pattern(re) => write!(f, "re:{}", re.as_str()),
        }
    }
}

fn contains_ignoring_case(haystack: &str, needle: &str) -> bool {
    haystack.to_lowercase().contains(&needle.to_lowercase())
}

/// A task's own checks; a run succeeds when every one holds.
#[derive(Debug, Clone, Default)]
pub(crate) struct Checks {
    pub(crate) required_citations: Vec<String>,
    pub(crate) required_facts: Vec<Fact>,
    pub(crate) expected_gaps: Vec<String>,
    pub(crate) forbidden_facts: Vec<Fact>,
    pub(crate) min_status: MinStatus,
}

impl Checks {
    /// What failed, one line each (empty: the run succeeded).
    pub(crate) fn failures(&self, state: &RunState) -> Vec<String> {
        let mut out = Vec::new();
        if status_rank(state.status) < self.min_status.rank() {
            out.push(format!(
                "status {}, expected at least {}",
                state.status.as_str(),
                self.min_status.name()
            ));
        }
        for id in &self.required_citations {
            if !state.evidence.iter().any(|e| &e.source_id == id) {
                out.push(format!("not cited: {id}"));
            }
        }
        let report = state.final_report.as_deref().unwrap_or_default();
        for fact in &self.required_facts {
            if !fact.found_in(report) {
                out.push(format!("missing fact: {fact}"));
            }
        }
        for fact in &self.forbidden_facts {
            if fact.found_in(report) {
                out.push(format!("forbidden fact: {fact}"));
            }
        }
        for gap in &self.expected_gaps {
            if !state
                .knowledge_gaps
                .iter()
                .any(|g| contains_ignoring_case(g, gap))
            {
                out.push(format!("no gap mentions {gap:?}"));
            }
        }
        out
    }
}

/// One task of a suite, resolved.
#[derive(Debug, Clone)]
pub(crate) struct Task {
    pub(crate) id: String,
    pub(crate) goal: String,
    pub(crate) notes: PathBuf,
    pub(crate) constraints: Constraints,
    pub(crate) checks: Checks,
}

/// A suite, read and checked: every problem is reported before anything runs.
#[derive(Debug)]
pub(crate) struct Suite {
    pub(crate) description: Option<String>,
    pub(crate) tasks: Vec<Task>,
}

impl Suite {
    /// Reads a suite file; any problem is a usage error naming the file and task.
    pub(crate) fn load(path: &Path) -> anyhow::Result<Suite> {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| {
            let e = e.to_string();
            let e = e.split(" (os error ").next().unwrap_or_default();
            usage(anyhow!(
                "cannot read suite {name}: {e} (pass a suite file; the default, examples/bench/suite.toml, is relative to the repository root)"
            ))
        })?;
        Suite::parse(&text, path).map_err(|e| usage(anyhow!("suite {name}: {e:#}")))
    }

    fn parse(text: &str, path: &Path) -> anyhow::Result<Suite> {
        let file: SuiteFile =
            toml::from_str(text).map_err(|e| anyhow!("not a valid suite: {e}"))?;
        if file.tasks.is_empty() {
            return Err(anyhow!("no tasks (add [[task]] tables)"));
        }
        let base = path.parent().unwrap_or(Path::new("."));
        let mut tasks = Vec::with_capacity(file.tasks.len());
        for (i, task) in file.tasks.into_iter().enumerate() {
            let label = if task.id.trim().is_empty() {
                format!("task #{}", i + 1)
            } else {
                format!("task {:?}", task.id)
            };
            let task = Task::resolve(task, base).with_context(|| label.clone())?;
            if tasks.iter().any(|t: &Task| t.id == task.id) {
                return Err(anyhow!("{label}: the id is used twice"));
            }
            tasks.push(task);
        }
        Ok(Suite {
            description: file.description,
            tasks,
        })
    }
}

impl Task {
    fn resolve(file: TaskFile, base: &Path) -> anyhow::Result<Task> {
        if file.id.trim().is_empty() {
            return Err(anyhow!("`id` is empty"));
        }
        let constraints = match file.constraints {
            None => Constraints::default(),
            Some(Value::String(p)) => {
                let path = base.join(p);
                read_constraints(&path.display().to_string())?
            }
            Some(value @ Value::Object(_)) => {
                let constraints: Constraints =
                    serde_json::from_value(value).context("invalid constraints")?;
                crate::input::check_keys("`constraints`", &constraints)?;
                constraints
            }
            Some(_) => {
                return Err(anyhow!(
                    "`constraints` must be a table or the path of a JSON file"
                ));
            }
        };
        let facts = |list: Vec<String>, what: &str| -> anyhow::Result<Vec<Fact>> {
            list.iter()
                .map(|f| Fact::parse(f).with_context(|| what.to_owned()))
                .collect()
        };
        let c = file.checks;
        Ok(Task {
            id: file.id,
            goal: file.goal,
            notes: base.join(file.notes),
            constraints,
            checks: Checks {
                required_facts: facts(c.required_facts, "required_facts")?,
                forbidden_facts: facts(c.forbidden_facts, "forbidden_facts")?,
                required_citations: c.required_citations,
                expected_gaps: c.expected_gaps,
                min_status: c.min_status,
            },
        })
    }
}

// ---------------------------------------------------------------- the runs

/// One strategy on one task.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct RunRow {
    pub(crate) strategy: String,
    pub(crate) task: String,
    /// Every check of the task held.
    pub(crate) success: bool,
    /// The checks that did not.
    pub(crate) failed_checks: Vec<String>,
    pub(crate) status: RunStatus,
    /// How the run was driven: `graph` (replanning or not), `verified`,
    /// `react` or `react-isolated` — for `router`, the route it took.
    pub(crate) driver: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) stop_condition: Option<StopCondition>,
    /// Ended `ok` or at a resumable breakpoint.
    pub(crate) closed_loop: bool,
    /// Role decisions on record (see [`role_calls`]).
    pub(crate) role_calls: u64,
    pub(crate) model_calls: u64,
    pub(crate) input_tokens: u64,
    pub(crate) output_tokens: u64,
    pub(crate) tool_calls: u64,
    pub(crate) replans: u32,
    /// Measured around the run, in milliseconds.
    pub(crate) wall_ms: u64,
    /// Note ids the accepted evidence cites.
    pub(crate) citations: Vec<String>,
    /// Knowledge gaps left open.
    pub(crate) gaps: usize,
}

/// Role decisions a run's log records, whether a model or the offline roles
/// made them: `plan_created` (planner), `plan_repaired` (repairer),
/// `assessed` (assessor), `replanned` (replanner), `verified` (verifier),
/// `synthesized` (synthesizer, or the ReAct actor's answer), `step_added`
/// (the ReAct actor's tool call), `step_summarized` (summarizer) and
/// `strategy_chosen` when the strategy is `router` (the router's
/// classification). Not counted: automatic plan approval, tool calls (their
/// own column), and a role call that failed (the run ends `failed`).
pub(crate) fn role_calls(state: &RunState) -> u64 {
    let n = state
        .execution_history
        .iter()
        .filter(|e| match &e.kind {
            EventKind::PlanCreated { .. }
            | EventKind::PlanRepaired { .. }
            | EventKind::Assessed { .. }
            | EventKind::Replanned { .. }
            | EventKind::Verified { .. }
            | EventKind::Synthesized { .. }
            | EventKind::StepAdded { .. }
            | EventKind::StepSummarized { .. } => true,
            EventKind::StrategyChosen { strategy, .. } => strategy == "router",
            // A partial brief was written by the synthesizer (or is the actor's answer).
            EventKind::NeedsReview { brief, .. } => brief.is_some(),
            _ => false,
        })
        .count();
    u64::try_from(n).unwrap_or(u64::MAX)
}

/// A short name for how a run was driven (`-` if it ended before choosing).
fn driver_name(driver: Option<Driver>) -> String {
    match driver {
        None => "-",
        Some(Driver::Graph {
            verify: Some(_), ..
        }) => "verified",
        Some(Driver::Graph {
            replanning: true, ..
        }) => "graph",
        Some(Driver::Graph {
            replanning: false, ..
        }) => "graph-no-replan",
        Some(Driver::React {
            isolated: false, ..
        }) => "react",
        Some(Driver::React { isolated: true, .. }) => "react-isolated",
    }
    .to_owned()
}

impl RunRow {
    fn new(strategy: &str, task: &Task, state: &RunState, wall_ms: u64) -> Self {
        let failed_checks = task.checks.failures(state);
        let mut citations: Vec<String> =
            state.evidence.iter().map(|e| e.source_id.clone()).collect();
        citations.sort();
        citations.dedup();
        RunRow {
            strategy: strategy.to_owned(),
            task: task.id.clone(),
            success: failed_checks.is_empty(),
            failed_checks,
            status: state.status,
            driver: driver_name(state.driver),
            stop_condition: state.stop_condition,
            closed_loop: closed_loop(state.status),
            role_calls: role_calls(state),
            model_calls: state.usage.llm_calls,
            input_tokens: state.usage.input_tokens,
            output_tokens: state.usage.output_tokens,
            tool_calls: state.usage.tool_calls,
            replans: state.replan_count,
            wall_ms,
            citations,
            gaps: state.knowledge_gaps.len(),
        }
    }
}

/// One strategy over the whole suite.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Summary {
    pub(crate) strategy: String,
    pub(crate) runs: usize,
    pub(crate) successes: usize,
    pub(crate) success_rate: f64,
    /// Runs that ended `ok` or at a resumable breakpoint.
    pub(crate) closed_loop: usize,
    pub(crate) closed_loop_rate: f64,
    pub(crate) role_calls: u64,
    pub(crate) model_calls: u64,
    pub(crate) input_tokens: u64,
    pub(crate) output_tokens: u64,
    pub(crate) tool_calls: u64,
    pub(crate) replans: u64,
    pub(crate) wall_ms: u64,
}

fn rate(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// A summary per strategy, in the order the strategies first appear.
pub(crate) fn summarize(rows: &[RunRow]) -> Vec<Summary> {
    let mut order: Vec<&str> = Vec::new();
    for row in rows {
        if !order.contains(&row.strategy.as_str()) {
            order.push(&row.strategy);
        }
    }
    order
        .into_iter()
        .map(|name| {
            let mine: Vec<&RunRow> = rows.iter().filter(|r| r.strategy == name).collect();
            let successes = mine.iter().filter(|r| r.success).count();
            let closed = mine.iter().filter(|r| r.closed_loop).count();
            Summary {
                strategy: name.to_owned(),
                runs: mine.len(),
                successes,
                success_rate: rate(successes, mine.len()),
                closed_loop: closed,
                closed_loop_rate: rate(closed, mine.len()),
                role_calls: mine.iter().map(|r| r.role_calls).sum(),
                model_calls: mine.iter().map(|r| r.model_calls).sum(),
                input_tokens: mine.iter().map(|r| r.input_tokens).sum(),
                output_tokens: mine.iter().map(|r| r.output_tokens).sum(),
                tool_calls: mine.iter().map(|r| r.tool_calls).sum(),
                replans: mine.iter().map(|r| u64::from(r.replans)).sum(),
                wall_ms: mine.iter().map(|r| r.wall_ms).sum(),
            }
        })
        .collect()
}

/// Runs one task with one strategy, in memory.
async fn run_one(
    strategy: &Arc<dyn Strategy>,
    task: &Task,
    corpus: &Arc<Corpus>,
    model: Option<&ModelChoice>,
) -> anyhow::Result<(RunState, u64)> {
    let mut tools = ToolRegistry::new();
    stepwise_tools::register_notes_tools(&mut tools, Arc::clone(corpus));
    let roles = session::roles(model, None, Arc::clone(corpus), false)?;
    let engine = Engine::new(roles, tools, RunConfig::default())
        .context("the built-in tools are misconfigured")?
        .with_strategy(Arc::clone(strategy));
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

fn progress_line(n: usize, total: usize, row: &RunRow) -> String {
    let verdict = if row.success {
        "pass".to_owned()
    } else {
        format!("FAIL ({})", row.failed_checks.join("; "))
    };
    format!(
        "[{n}/{total}] {} · {}: {} · {verdict} · {} · {} · {} ms",
        row.strategy,
        row.task,
        row.status.as_str(),
        plural(
            usize::try_from(row.tool_calls).unwrap_or(usize::MAX),
            "tool call"
        ),
        plural(
            usize::try_from(row.role_calls).unwrap_or(usize::MAX),
            "role call"
        ),
        row.wall_ms
    )
}

/// `stepwise bench`.
pub(crate) fn bench(args: &BenchArgs) -> anyhow::Result<ExitCode> {
    let suite = Suite::load(&args.suite)?;
    let strategies: Vec<Arc<dyn Strategy>> = if args.strategies.is_empty() {
        strategies_cmd::builtin()
    } else {
        let mut names: Vec<&str> = Vec::new();
        for name in &args.strategies {
            if !names.contains(&name.as_str()) {
                names.push(name);
            }
        }
        names
            .into_iter()
            .map(session::strategy)
            .collect::<anyhow::Result<_>>()?
    };
    let cwd = std::env::current_dir()
        .map_err(|e| usage(anyhow!("cannot read the current directory: {e}")))?;
    let config = Config::load(&cwd)?;
    let spec = config.model_spec(args.model.as_deref());
    let model = config.model(&spec, &cwd)?;
    // Every notes folder is loaded (and checked) before the first run.
    let mut corpora: BTreeMap<PathBuf, Arc<Corpus>> = BTreeMap::new();
    for task in &suite.tasks {
        if !corpora.contains_key(&task.notes) {
            let corpus = session::load_corpus(&task.notes, args.quiet)
                .with_context(|| format!("task {:?}", task.id))
                .map_err(|e| usage(anyhow!("suite {}: {e:#}", args.suite.display())))?;
            corpora.insert(task.notes.clone(), Arc::new(corpus));
        }
    }
    let total = strategies.len() * suite.tasks.len();
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
                let (state, wall_ms) = run_one(strategy, task, corpus, model.as_ref()).await?;
                let row = RunRow::new(strategy.name(), task, &state, wall_ms);
                if !args.quiet {
                    progress(&progress_line(rows.len() + 1, total, &row));
                }
                rows.push(row);
            }
        }
        Ok::<_, anyhow::Error>(rows)
    })??;
    let summary = summarize(&rows);
    let text = if args.json {
        let value = serde_json::json!({
            "suite": args.suite.display().to_string(),
            "description": suite.description,
            "model": spec,
            "strategies": strategies.iter().map(|s| s.name()).collect::<Vec<_>>(),
            "tasks": suite.tasks.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(),
            "runs": rows,
            "summary": summary,
        });
        let mut json = serde_json::to_string_pretty(&value).context("cannot encode the bench")?;
        json.push('\n');
        json
    } else if args.csv {
        csv(&rows)
    } else {
        tables(&rows, &summary)
    };
    output::stdout(&text)?;
    Ok(ExitCode::SUCCESS)
}

// ---------------------------------------------------------------- output

/// The CSV header (one row per run follows).
pub(crate) const CSV_HEADER: &str = "strategy,task,success,status,driver,stop_condition,closed_loop,role_calls,model_calls,input_tokens,output_tokens,tool_calls,replans,wall_ms,failed_checks";

fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_owned()
    }
}

fn csv(rows: &[RunRow]) -> String {
    let mut text = format!("{CSV_HEADER}\n");
    for r in rows {
        let cells = [
            csv_field(&r.strategy),
            csv_field(&r.task),
            r.success.to_string(),
            r.status.as_str().to_owned(),
            r.driver.clone(),
            r.stop_condition.map(|c| c.to_string()).unwrap_or_default(),
            r.closed_loop.to_string(),
            r.role_calls.to_string(),
            r.model_calls.to_string(),
            r.input_tokens.to_string(),
            r.output_tokens.to_string(),
            r.tool_calls.to_string(),
            r.replans.to_string(),
            r.wall_ms.to_string(),
            csv_field(&r.failed_checks.join("; ")),
        ];
        text.push_str(&cells.join(","));
        text.push('\n');
    }
    text
}

/// Columns padded to their widest cell; `numeric` columns aligned right.
fn render(headers: &[&str], numeric: &[bool], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |cells: &[String]| {
        let mut text = String::new();
        for (i, cell) in cells.iter().enumerate() {
            let width = widths.get(i).copied().unwrap_or(0);
            let pad = width.saturating_sub(cell.chars().count());
            if i > 0 {
                text.push_str("  ");
            }
            if numeric.get(i).copied().unwrap_or(false) {
                text.extend(std::iter::repeat_n(' ', pad));
                text.push_str(cell);
            } else {
                text.push_str(cell);
                if i + 1 < cells.len() {
                    text.extend(std::iter::repeat_n(' ', pad));
                }
            }
        }
        text.push('\n');
        text
    };
    let head: Vec<String> = headers.iter().map(|h| (*h).to_owned()).collect();
    let mut text = line(&head);
    for row in rows {
        text.push_str(&line(row));
    }
    text
}

fn percent(part: usize, whole: usize) -> String {
    format!("{part}/{whole} {:.0}%", rate(part, whole) * 100.0)
}

/// The runs table, the per-strategy summary, and the checks that failed.
fn tables(rows: &[RunRow], summary: &[Summary]) -> String {
    const RUN_HEADERS: [&str; 12] = [
        "STRATEGY",
        "TASK",
        "SUCCESS",
        "STATUS",
        "STOP",
        "ROLE CALLS",
        "MODEL CALLS",
        "TOKENS IN",
        "TOKENS OUT",
        "TOOL CALLS",
        "REPLANS",
        "WALL MS",
    ];
    const RUN_NUMERIC: [bool; 12] = [
        false, false, false, false, false, true, true, true, true, true, true, true,
    ];
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.strategy.clone(),
                r.task.clone(),
                if r.success { "pass" } else { "FAIL" }.to_owned(),
                r.status.as_str().to_owned(),
                r.stop_condition
                    .map_or_else(|| "-".to_owned(), |c| c.to_string()),
                r.role_calls.to_string(),
                r.model_calls.to_string(),
                r.input_tokens.to_string(),
                r.output_tokens.to_string(),
                r.tool_calls.to_string(),
                r.replans.to_string(),
                r.wall_ms.to_string(),
            ]
        })
        .collect();
    let mut text = render(&RUN_HEADERS, &RUN_NUMERIC, &cells);

    const SUM_HEADERS: [&str; 11] = [
        "STRATEGY",
        "RUNS",
        "SUCCESS",
        "CLOSED LOOP",
        "ROLE CALLS",
        "MODEL CALLS",
        "TOKENS IN",
        "TOKENS OUT",
        "TOOL CALLS",
        "REPLANS",
        "WALL MS",
    ];
    const SUM_NUMERIC: [bool; 11] = [
        false, true, true, true, true, true, true, true, true, true, true,
    ];
    let cells: Vec<Vec<String>> = summary
        .iter()
        .map(|s| {
            vec![
                s.strategy.clone(),
                s.runs.to_string(),
                percent(s.successes, s.runs),
                percent(s.closed_loop, s.runs),
                s.role_calls.to_string(),
                s.model_calls.to_string(),
                s.input_tokens.to_string(),
                s.output_tokens.to_string(),
                s.tool_calls.to_string(),
                s.replans.to_string(),
                s.wall_ms.to_string(),
            ]
        })
        .collect();
    text.push('\n');
    text.push_str(&render(&SUM_HEADERS, &SUM_NUMERIC, &cells));

    let failed: Vec<&RunRow> = rows.iter().filter(|r| !r.success).collect();
    if !failed.is_empty() {
        text.push_str("\nfailed checks:\n");
        for r in failed {
            text.push_str(&format!(
                "  {} · {}: {}\n",
                r.strategy,
                r.task,
                r.failed_checks.join("; ")
            ));
        }
    }
    text
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn parse(text: &str) -> anyhow::Result<Suite> {
        Suite::parse(text, Path::new("/suites/suite.toml"))
    }

    #[test]
    fn a_task_resolves_notes_constraints_and_checks() {
        let suite = parse(
            r#"
            [[task]]
            id = "a"
            goal = "What was the resolution rate?"
            notes = "../notes"
            constraints = { comparison_dimensions = ["cost"], max_steps = 4, token_budget = 100 }
            [task.checks]
            required_citations = ["pilot"]
            required_facts = ["41%", "re:\\$0\\.19"]
            expected_gaps = ["skills"]
            min_status = "needs_review"
            "#,
        )
        .unwrap();
        let task = &suite.tasks[0];
        assert_eq!(task.notes, Path::new("/suites/../notes"));
        assert_eq!(task.constraints.max_steps, Some(4));
        assert_eq!(task.constraints.token_budget, Some(100));
        assert_eq!(task.constraints.comparison_dimensions, ["cost"]);
        assert_eq!(task.checks.required_facts.len(), 2);
        assert_eq!(task.checks.min_status, MinStatus::NeedsReview);
    }

    #[test]
    fn malformed_suites_are_refused_with_the_reason() {
        let err = |text: &str| format!("{:#}", parse(text).unwrap_err());
        assert!(err("").contains("no tasks"));
        assert!(err("[[task]]\nid = \"a\"\n").contains("missing field `goal`"));
        assert!(
            err("[[task]]\nid = \"a\"\ngoal = \"g\"\nnotes = \"n\"\nchecks = { typo = 1 }\n")
                .contains("unknown field `typo`")
        );
        let twice = "[[task]]\nid = \"a\"\ngoal = \"g\"\nnotes = \"n\"\n".repeat(2);
        assert!(err(&twice).contains("used twice"));
        let bad_re = "[[task]]\nid = \"a\"\ngoal = \"g\"\nnotes = \"n\"\n[task.checks]\nrequired_facts = [\"re:(\"]\n";
        assert!(err(bad_re).contains("not a valid regular expression"));
        let bad_constraints = "[[task]]\nid = \"a\"\ngoal = \"g\"\nnotes = \"n\"\nconstraints = { max_steps = \"x\" }\n";
        assert!(err(bad_constraints).contains("invalid constraints"));
        assert!(
            err("[[task]]\nid = \"a\"\ngoal = \"g\"\nnotes = \"n\"\nconstraints = 3\n")
                .contains("must be a table")
        );
    }

    #[test]
    fn checks_report_each_failure() {
        let mut state = RunState::default();
        state.status = RunStatus::NeedsReview;
        state.final_report = Some("Resolution was 41% [pilot].".to_owned());
        state.knowledge_gaps = vec!["No evidence in the notes for: team skills".to_owned()];
        let checks = Checks {
            required_citations: vec!["pilot".to_owned()],
            required_facts: vec![Fact::parse("resolution WAS 41%").unwrap()],
            expected_gaps: vec!["TEAM SKILLS".to_owned(), "budget".to_owned()],
            forbidden_facts: vec![Fact::parse(r"re:\d+%").unwrap()],
            min_status: MinStatus::Ok,
        };
        assert_eq!(
            checks.failures(&state),
            [
                "status needs_review, expected at least ok",
                "not cited: pilot",
                "forbidden fact: re:\\d+%",
                "no gap mentions \"budget\"",
            ]
        );
        state.status = RunStatus::Ok;
        let lenient = Checks {
            min_status: MinStatus::NeedsReview,
            ..Checks::default()
        };
        assert!(lenient.failures(&state).is_empty());
        state.status = RunStatus::Failed;
        assert_eq!(lenient.failures(&state).len(), 1);
    }

    fn row(strategy: &str, success: bool, status: RunStatus, tools: u64) -> RunRow {
        RunRow {
            strategy: strategy.to_owned(),
            task: "t".to_owned(),
            success,
            failed_checks: if success {
                vec![]
            } else {
                vec!["not cited: x".to_owned()]
            },
            status,
            driver: "graph".to_owned(),
            stop_condition: None,
            closed_loop: closed_loop(status),
            role_calls: 2,
            model_calls: 0,
            input_tokens: 0,
            output_tokens: 0,
            tool_calls: tools,
            replans: 1,
            wall_ms: 3,
            citations: vec![],
            gaps: 0,
        }
    }

    #[test]
    fn the_summary_counts_closed_loops_and_successes() {
        let rows = [
            row("a", true, RunStatus::Ok, 3),
            row("a", false, RunStatus::NeedsReview, 4),
            row("a", false, RunStatus::Failed, 1),
            row("b", true, RunStatus::AwaitingApproval, 2),
        ];
        let s = summarize(&rows);
        assert_eq!(s.len(), 2);
        assert_eq!((s[0].runs, s[0].successes, s[0].closed_loop), (3, 1, 2));
        assert_eq!((s[0].tool_calls, s[0].replans, s[0].role_calls), (8, 3, 6));
        assert!((s[0].closed_loop_rate - 2.0 / 3.0).abs() < 1e-9);
        assert_eq!((s[1].runs, s[1].closed_loop), (1, 1));
        let text = tables(&rows, &s);
        assert!(text.contains("2/3 67%"), "{text}");
        assert!(
            text.contains("failed checks:\n  a · t: not cited: x\n"),
            "{text}"
        );
        let csv = csv(&rows);
        assert!(csv.starts_with(CSV_HEADER));
        assert_eq!(csv.lines().count(), 5);
    }

    #[test]
    fn csv_fields_are_quoted_when_needed() {
        assert_eq!(csv_field("plain"), "plain");
        assert_eq!(csv_field("a, b"), "\"a, b\"");
        assert_eq!(csv_field("say \"x\""), "\"say \"\"x\"\"\"");
    }
}
