//! The checks of one step on its own: its fields, id, dependencies,
//! preconditions and acceptance criteria.

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::ids::StepId;
use crate::step_status::StepStatus;

use super::checker::{Checker, StepFacts, kind};
use super::diagnostics::DiagnosticCode;
use super::schema::{a_type, simple_type, walk_output};
use crate::plan::Precondition;
use crate::plan::args::parse_output_path;
use crate::plan::criteria::Check;

const STEP_FIELDS: [&str; 10] = [
    "id",
    "description",
    "tool",
    "args",
    "depends_on",
    "preconditions",
    "acceptance_criteria",
    "status",
    "attempts",
    "agent",
];

/// Whether `s` is a usable step id (one a `$reference` can name).
pub fn is_valid_step_id(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_alphabetic() || c == '_')
        && chars.all(|c| c.is_alphanumeric() || c == '_' || c == '-')
}
impl Checker<'_> {
    /// First pass over one step: fields, tool, arguments.
    pub(super) fn check_step<'v>(&mut self, index: usize, value: &'v Value) -> StepFacts<'v> {
        let mut facts = StepFacts {
            index,
            id: None,
            deps: Vec::new(),
            status: StepStatus::Pending,
            agent: None,
            ref_sources: Vec::new(),
            tool: None,
        };
        let Value::Object(obj) = value else {
            self.step_diag(
                DiagnosticCode::InvalidField,
                &facts,
                format!("/steps/{index}"),
                format!("a step must be an object, not {}", kind(value)),
            );
            return facts;
        };
        if let Some(id) = self.required_string(obj, "id", &facts) {
            if is_valid_step_id(id) {
                facts.id = Some(StepId::new(id));
            } else {
                self.step_diag(
                    DiagnosticCode::InvalidField,
                    &facts,
                    format!("/steps/{index}/id"),
                    format!("id {id:?} must start with a letter or `_` and use only letters, digits, `_` or `-`"),
                );
            }
        }
        for key in obj.keys().filter(|k| !STEP_FIELDS.contains(&k.as_str())) {
            self.step_diag(
                DiagnosticCode::UnknownField,
                &facts,
                format!("/steps/{index}/{key}"),
                format!("unknown field `{key}` (known: {})", STEP_FIELDS.join(", ")),
            );
        }
        self.required_string(obj, "description", &facts);
        if let Some(agent) = obj.get("agent") {
            match serde_json::from_value::<crate::plan::AgentType>(agent.clone()) {
                Ok(a) => facts.agent = Some(a),
                Err(_) => self.step_diag(
                    DiagnosticCode::InvalidField,
                    &facts,
                    format!("/steps/{index}/agent"),
                    format!("`agent` {agent} is not one of gathering, analysis, output"),
                ),
            }
        }
        if let Some(status) = obj.get("status") {
            match serde_json::from_value::<StepStatus>(status.clone()) {
                Ok(s) => facts.status = s,
                Err(_) => self.step_diag(
                    DiagnosticCode::InvalidField,
                    &facts,
                    format!("/steps/{index}/status"),
                    format!("`status` {status} is not one of pending, running, succeeded, failed, retrying, terminated, skipped"),
                ),
            }
        }
        if let Some(attempts) = obj
            .get("attempts")
            .filter(|a| a.as_u64().is_none_or(|n| u32::try_from(n).is_err()))
        {
            self.step_diag(
                DiagnosticCode::InvalidField,
                &facts,
                format!("/steps/{index}/attempts"),
                format!(
                    "`attempts` must be a non-negative integer (at most {}), not {attempts}",
                    u32::MAX
                ),
            );
        }
        // Well-formed typed checks, with their index: checked against the
        // tool's output schema once the tool is known.
        let mut checks: Vec<(usize, Check)> = Vec::new();
        match obj.get("acceptance_criteria") {
            None | Some(Value::Null) => self.step_diag(
                DiagnosticCode::MissingField,
                &facts,
                format!("/steps/{index}/acceptance_criteria"),
                "`acceptance_criteria` is missing: say what the result must show".to_owned(),
            ),
            // A step that already ran was judged: ReAct's calls, kept in the
            // plan after the router's escalation, have no criteria.
            Some(Value::Array(items)) if items.is_empty() && facts.status.is_final() => {}
            Some(Value::Array(items)) if items.is_empty() => self.step_diag(
                DiagnosticCode::InvalidField,
                &facts,
                format!("/steps/{index}/acceptance_criteria"),
                "`acceptance_criteria` is empty: give at least one".to_owned(),
            ),
            Some(Value::Array(items)) => {
                for (i, item) in items.iter().enumerate() {
                    let (check, problem) = criterion(item);
                    if let Some(problem) = problem {
                        self.step_diag(
                            DiagnosticCode::InvalidField,
                            &facts,
                            format!("/steps/{index}/acceptance_criteria/{i}"),
                            format!("`acceptance_criteria[{i}]` {problem}"),
                        );
                    }
                    checks.extend(check.map(|c| (i, c)));
                }
            }
            Some(other) => self.step_diag(
                DiagnosticCode::InvalidField,
                &facts,
                format!("/steps/{index}/acceptance_criteria"),
                format!("`acceptance_criteria` must be a list, not {}", kind(other)),
            ),
        }
        facts.deps = self
            .string_list(obj, "depends_on", &facts)
            .into_iter()
            .map(StepId::new)
            .collect();
        self.check_preconditions(obj, &mut facts);
        let tool = self.required_string(obj, "tool", &facts);
        let args = match obj.get("args") {
            None | Some(Value::Null) => None,
            Some(args @ Value::Object(_)) => {
                facts
                    .ref_sources
                    .push((format!("/steps/{index}/args"), args));
                Some(args)
            }
            Some(other) => {
                self.step_diag(
                    DiagnosticCode::InvalidField,
                    &facts,
                    format!("/steps/{index}/args"),
                    format!("`args` must be an object, not {}", kind(other)),
                );
                None
            }
        };
        if let Some(tool) = tool {
            self.check_tool(tool, args, facts.status, &facts);
            if self.limits.tools.spec(tool).is_some() {
                facts.tool = Some(tool.to_owned());
                self.check_criteria_paths(&checks, tool, &facts);
            }
        }
        facts
    }

    /// A typed acceptance check reads a path of the step's own output: when
    /// the tool publishes an output schema, a path it cannot have (or a
    /// check on the wrong type) is caught here, before the step runs and
    /// fails its check for a reason no retry or replan can change.
    fn check_criteria_paths(
        &mut self,
        checks: &[(usize, Check)],
        tool: &str,
        facts: &StepFacts<'_>,
    ) {
        let Some(schema) = self
            .limits
            .tools
            .spec(tool)
            .and_then(|s| s.output_schema.as_ref())
        else {
            return;
        };
        if facts.status.is_final() {
            return; // it ran: its result was judged
        }
        let mut problems = Vec::new();
        for (i, check) in checks {
            let (path, wants) = match check {
                Check::MinResults { path, .. } => (path, Some("array")),
                Check::Matches { path, .. } => (path, Some("string")),
                Check::NonEmpty { path }
                | Check::FieldPresent { path }
                | Check::JsonSchema { path, .. } => (path, None),
            };
            let Ok(segments) = parse_output_path(path) else {
                continue; // reported with the check's other problems
            };
            let why = match walk_output(schema, &segments) {
                Err(why) => why,
                Ok(found) => match (wants, found.and_then(simple_type)) {
                    (Some(wanted), Some(given)) if given != wanted => format!(
                        "says `{path}` is {}, and this check needs {}",
                        a_type(given),
                        a_type(wanted)
                    ),
                    _ => continue,
                },
            };
            problems.push((
                format!("/steps/{}/acceptance_criteria/{i}", facts.index),
                format!(
                    "`acceptance_criteria[{i}]` checks `{path}`, but {tool}'s output schema {why}"
                ),
            ));
        }
        for (path, message) in problems {
            self.step_diag(DiagnosticCode::OutputSchemaMismatch, facts, path, message);
        }
    }

    fn check_preconditions<'v>(&mut self, obj: &'v Map<String, Value>, facts: &mut StepFacts<'v>) {
        let index = facts.index;
        match obj.get("preconditions") {
            None | Some(Value::Null) => {}
            Some(Value::Array(items)) => {
                for (i, item) in items.iter().enumerate() {
                    match serde_json::from_value::<Precondition>(item.clone()) {
                        Ok(_) => {
                            if let Some(r) = item.get("ref") {
                                facts.ref_sources.push((format!("/steps/{index}/preconditions/{i}/ref"), r));
                            }
                        }
                        Err(e) => self.step_diag(
                            DiagnosticCode::InvalidField,
                            facts,
                            format!("/steps/{index}/preconditions/{i}"),
                            format!(
                                "precondition {i} is not valid ({e}); expected e.g. {{\"check\": \"non_empty\", \"ref\": \"${{step_1.output.items}}\"}} with check exists, non_empty or equals"
                            ),
                        ),
                    }
                }
            }
            Some(other) => self.step_diag(
                DiagnosticCode::InvalidField,
                facts,
                format!("/steps/{index}/preconditions"),
                format!("`preconditions` must be an array, not {}", kind(other)),
            ),
        }
    }
}

/// One acceptance criterion, read once: the typed check it is, if it is
/// one, and what is wrong with it, if anything (it must be non-empty text or
/// a well-formed typed check).
fn criterion(item: &Value) -> (Option<Check>, Option<String>) {
    match item {
        Value::String(s) if !s.trim().is_empty() => (None, None),
        Value::Object(_) => match Check::deserialize(item) {
            Ok(check) => {
                let problem = check.problem();
                (Some(check), problem)
            }
            Err(e) => (
                None,
                Some(format!(
                    "is not a check the engine knows ({e}); the checks are min_results, non_empty, field_present, matches and json_schema"
                )),
            ),
        },
        other => (
            None,
            Some(format!(
                "must be non-empty text or a typed check, not {}",
                kind(other)
            )),
        ),
    }
}
