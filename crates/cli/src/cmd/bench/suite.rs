//! A bench suite: the TOML file of tasks (see docs/bench.md), each with
//! its goal, notes folder, constraints and checks, read and checked whole
//! before anything runs; and the checks a finished run is held to.

use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{Context, anyhow};
use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use stepwise_core::decision::Route;
use stepwise_core::{Constraints, RunState, RunStatus};

use crate::error::{CliError, CliResult};
use crate::input::read_constraints;

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
    /// Where seed 000's tree should send the task (`react`,
    /// `plan-execute-batched`, `plan-execute-sequential`): the `router`
    /// strategy's runs are scored against it.
    #[serde(default)]
    expected_route: Option<Route>,
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
pub(super) fn closed_loop(status: RunStatus) -> bool {
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
    pub(crate) expected_route: Option<Route>,
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
    pub(crate) fn load(path: &Path) -> CliResult<Suite> {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| {
            let e = e.to_string();
            let e = e.split(" (os error ").next().unwrap_or_default();
            CliError::usage(anyhow!(
                "cannot read suite {name}: {e} (pass a suite file; the default, examples/bench/suite.toml, is relative to the repository root)"
            ))
        })?;
        Suite::parse(&text, path).map_err(|e| CliError::usage(anyhow!("suite {name}: {e:#}")))
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
            expected_route: file.expected_route,
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
}
