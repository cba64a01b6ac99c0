//! The plan validator: reads a plan as raw JSON and reports *every* problem at
//! once, each a [`Diagnostic`] with a stable [`DiagnosticCode`], the step it
//! concerns and a human message. Only a plan with no diagnostics becomes a
//! typed [`Plan`].

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::args::{
    ArgRef, PathSegment, mentions_open, open_hint, parse_output_path, references, whole_reference,
};
use super::criteria::Check;
use super::dag::DepGraph;
use super::{Plan, Precondition, Step};
use crate::goal::Constraints;
use crate::ids::StepId;
use crate::step_status::StepStatus;
use crate::tool::ToolCatalog;

/// What kind of problem a diagnostic reports. The snake_case names are stable
/// and appear in `--json` output.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum DiagnosticCode {
    /// The document is not a plan: neither an object with `steps` nor an array.
    InvalidPlan,
    /// The plan has no steps.
    EmptyPlan,
    /// A required step field is absent.
    MissingField,
    /// A field has the wrong type or an empty value.
    InvalidField,
    /// A step has a field the format does not know (often a typo such as `deps`).
    UnknownField,
    /// Two steps share an id.
    DuplicateStepId,
    /// `depends_on` names a step that does not exist.
    UnknownDependency,
    /// A step depends on itself.
    SelfDependency,
    /// Steps depend on each other in a loop.
    DependencyCycle,
    /// A pending step depends on a step that was terminated or skipped, so it can never run.
    DeadDependency,
    /// `tool` names a tool the catalogue does not have.
    UnknownTool,
    /// The constraints' `allowed_tools` does not include the tool.
    ToolNotAllowed,
    /// A side-effect tool where the constraints forbid side effects.
    SideEffectForbidden,
    /// `args` do not match the tool's JSON Schema.
    ArgsSchemaMismatch,
    /// An argument of a side-effect tool is left open (`{"$open": …}`): its
    /// arguments must all be in the plan, where an approval covers them.
    OpenArgumentSideEffect,
    /// A `$step` reference cannot be parsed.
    MalformedReference,
    /// A reference names a step that does not exist.
    UnknownReference,
    /// A reference names a step that is not a (transitive) dependency.
    ReferenceNotDependency,
    /// A reference reads a field the referenced tool's output schema does
    /// not have, or a value of the wrong type for the argument it fills.
    OutputSchemaMismatch,
    /// More steps than `max_steps`.
    TooManySteps,
}

impl DiagnosticCode {
    /// Every code, in documentation order.
    pub const ALL: [DiagnosticCode; 20] = [
        Self::InvalidPlan,
        Self::EmptyPlan,
        Self::MissingField,
        Self::InvalidField,
        Self::UnknownField,
        Self::DuplicateStepId,
        Self::UnknownDependency,
        Self::SelfDependency,
        Self::DependencyCycle,
        Self::DeadDependency,
        Self::UnknownTool,
        Self::ToolNotAllowed,
        Self::SideEffectForbidden,
        Self::ArgsSchemaMismatch,
        Self::OpenArgumentSideEffect,
        Self::MalformedReference,
        Self::UnknownReference,
        Self::ReferenceNotDependency,
        Self::OutputSchemaMismatch,
        Self::TooManySteps,
    ];

    /// Whether a repairer may fix it. A forbidden side effect is a safety
    /// signal (often injected text asking for an action), so it goes to a person.
    pub fn repairable(self) -> bool {
        !matches!(self, Self::SideEffectForbidden)
    }

    /// The stable snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidPlan => "invalid_plan",
            Self::EmptyPlan => "empty_plan",
            Self::MissingField => "missing_field",
            Self::InvalidField => "invalid_field",
            Self::UnknownField => "unknown_field",
            Self::DuplicateStepId => "duplicate_step_id",
            Self::UnknownDependency => "unknown_dependency",
            Self::SelfDependency => "self_dependency",
            Self::DependencyCycle => "dependency_cycle",
            Self::DeadDependency => "dead_dependency",
            Self::UnknownTool => "unknown_tool",
            Self::ToolNotAllowed => "tool_not_allowed",
            Self::SideEffectForbidden => "side_effect_forbidden",
            Self::ArgsSchemaMismatch => "args_schema_mismatch",
            Self::OpenArgumentSideEffect => "open_argument_side_effect",
            Self::MalformedReference => "malformed_reference",
            Self::UnknownReference => "unknown_reference",
            Self::ReferenceNotDependency => "reference_not_dependency",
            Self::OutputSchemaMismatch => "output_schema_mismatch",
            Self::TooManySteps => "too_many_steps",
        }
    }
}

impl fmt::Display for DiagnosticCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One problem in a plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Diagnostic {
    /// Stable code.
    pub code: DiagnosticCode,
    /// The step concerned, if it has a usable id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<StepId>,
    /// Position of the step in `steps` (0-based), if the problem is in a step.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index: Option<usize>,
    /// JSON Pointer to the offending value, e.g. `/steps/2/args/query`.
    pub path: String,
    /// What is wrong, for a person or a repairer.
    pub message: String,
    /// Whether repair_plan may try to fix it.
    pub repairable: bool,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.step, self.index) {
            (Some(id), _) => write!(f, "[{}] step {id}: {}", self.code, self.message),
            (None, Some(i)) => write!(f, "[{}] step #{}: {}", self.code, i + 1, self.message),
            (None, None) => write!(f, "[{}] {}", self.code, self.message),
        }
    }
}

/// What a plan is validated against.
#[derive(Debug, Clone, Copy)]
pub struct Limits<'a> {
    /// The tools steps may call.
    pub tools: &'a ToolCatalog,
    /// Most steps (not counting skipped ones) a plan may have.
    pub max_steps: Option<usize>,
    /// Allowed tools and the side-effect ban.
    pub constraints: &'a Constraints,
}

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

/// Collects diagnostics for one plan document.
struct Checker<'a> {
    limits: Limits<'a>,
    out: Vec<Diagnostic>,
}

/// What the first pass learned about one step.
struct StepFacts<'v> {
    index: usize,
    id: Option<StepId>,
    deps: Vec<StepId>,
    status: StepStatus,
    /// The step's agent type, if it has a valid one.
    agent: Option<super::AgentType>,
    /// Strings that may hold references: `args` and preconditions' `ref`s.
    ref_sources: Vec<(String, &'v Value)>,
    /// The tool it calls, if the catalogue has it.
    tool: Option<String>,
}

impl Checker<'_> {
    fn push(
        &mut self,
        code: DiagnosticCode,
        step: Option<&StepId>,
        index: Option<usize>,
        path: String,
        message: String,
    ) {
        self.out.push(Diagnostic {
            code,
            step: step.cloned(),
            index,
            path,
            message,
            repairable: code.repairable(),
        });
    }

    fn step_diag(
        &mut self,
        code: DiagnosticCode,
        facts: &StepFacts<'_>,
        path: String,
        message: String,
    ) {
        self.push(code, facts.id.as_ref(), Some(facts.index), path, message);
    }

    /// Required non-empty string field.
    fn required_string<'v>(
        &mut self,
        obj: &'v Map<String, Value>,
        field: &str,
        facts: &StepFacts<'_>,
    ) -> Option<&'v str> {
        let path = || format!("/steps/{}/{field}", facts.index);
        match obj.get(field) {
            None | Some(Value::Null) => {
                self.step_diag(
                    DiagnosticCode::MissingField,
                    facts,
                    path(),
                    format!("`{field}` is missing"),
                );
                None
            }
            Some(Value::String(s)) if !s.trim().is_empty() => Some(s),
            Some(Value::String(_)) => {
                self.step_diag(
                    DiagnosticCode::InvalidField,
                    facts,
                    path(),
                    format!("`{field}` is empty"),
                );
                None
            }
            Some(other) => {
                self.step_diag(
                    DiagnosticCode::InvalidField,
                    facts,
                    path(),
                    format!("`{field}` must be a string, not {}", kind(other)),
                );
                None
            }
        }
    }

    /// Optional array of strings.
    fn string_list(
        &mut self,
        obj: &Map<String, Value>,
        field: &str,
        facts: &StepFacts<'_>,
    ) -> Vec<String> {
        let path = || format!("/steps/{}/{field}", facts.index);
        match obj.get(field) {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => {
                let mut out = Vec::new();
                for (i, item) in items.iter().enumerate() {
                    match item {
                        Value::String(s) if !s.trim().is_empty() => out.push(s.clone()),
                        other => self.step_diag(
                            DiagnosticCode::InvalidField,
                            facts,
                            format!("{}/{i}", path()),
                            format!(
                                "`{field}[{i}]` must be a non-empty string, not {}",
                                kind(other)
                            ),
                        ),
                    }
                }
                out
            }
            Some(other) => {
                self.step_diag(
                    DiagnosticCode::InvalidField,
                    facts,
                    path(),
                    format!("`{field}` must be an array of strings, not {}", kind(other)),
                );
                Vec::new()
            }
        }
    }

    /// First pass over one step: fields, tool, arguments.
    fn check_step<'v>(&mut self, index: usize, value: &'v Value) -> StepFacts<'v> {
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
            match serde_json::from_value::<super::AgentType>(agent.clone()) {
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

    fn check_tool(
        &mut self,
        tool: &str,
        args: Option<&Value>,
        status: StepStatus,
        facts: &StepFacts<'_>,
    ) {
        let path = || format!("/steps/{}/tool", facts.index);
        let Some(spec) = self.limits.tools.spec(tool) else {
            let known: Vec<_> = self.limits.tools.names().collect();
            self.step_diag(
                DiagnosticCode::UnknownTool,
                facts,
                path(),
                format!(
                    "unknown tool {tool:?} (available: {})",
                    if known.is_empty() {
                        "none".to_owned()
                    } else {
                        known.join(", ")
                    }
                ),
            );
            return;
        };
        if let Some(allowed) = &self.limits.constraints.allowed_tools
            && !allowed.iter().any(|a| a == tool)
        {
            self.step_diag(
                DiagnosticCode::ToolNotAllowed,
                facts,
                path(),
                format!(
                    "tool {tool:?} is not in the allowed tools ({})",
                    allowed.join(", ")
                ),
            );
        }
        if let Some(agent) = facts.agent
            && !agent.allows(spec)
        {
            self.step_diag(
                DiagnosticCode::InvalidField,
                facts,
                path(),
                format!(
                    "a {} step may not call {tool:?}, which has side effects (only output steps may)",
                    agent.as_str()
                ),
            );
        }
        if spec.side_effect && self.limits.constraints.forbid_side_effects {
            self.step_diag(
                DiagnosticCode::SideEffectForbidden,
                facts,
                path(),
                format!("tool {tool:?} has side effects, which the constraints forbid"),
            );
        }
        if status == StepStatus::Skipped {
            return;
        }
        let empty = Value::Object(Map::new());
        let args = args.unwrap_or(&empty);
        self.check_open_args(tool, spec.side_effect, args, facts);
        for (pointer, message) in self.limits.tools.check_args(tool, args) {
            self.step_diag(
                DiagnosticCode::ArgsSchemaMismatch,
                facts,
                format!(
                    "/steps/{}/args{}",
                    facts.index,
                    pointer.trim_end_matches('/')
                ),
                format!("args{pointer} do not match {tool}'s schema: {message}"),
            );
        }
    }

    /// Open arguments (`{"$open": "hint"}`): only as the whole value of a
    /// top-level argument, written exactly so, and never for a side-effect
    /// tool (an approval covers exact arguments, so they must be in the plan).
    fn check_open_args(
        &mut self,
        tool: &str,
        side_effect: bool,
        args: &Value,
        facts: &StepFacts<'_>,
    ) {
        let Value::Object(map) = args else { return };
        for (key, value) in map {
            let path = format!("/steps/{}/args/{key}", facts.index);
            if open_hint(value).is_some() {
                if side_effect {
                    self.step_diag(
                        DiagnosticCode::OpenArgumentSideEffect,
                        facts,
                        path,
                        format!(
                            "argument `{key}` of {tool} is open, but {tool} has side effects: \
                             its arguments must all be given in the plan, where the approval \
                             covers them; write the value (or a reference to an earlier result)"
                        ),
                    );
                }
                continue;
            }
            if mentions_open(value) {
                self.step_diag(
                    DiagnosticCode::InvalidField,
                    facts,
                    path,
                    format!(
                        "argument `{key}` is a malformed open argument: write \
                         {{\"$open\": \"what to fill in\"}} (an object with only that key, \
                         its value a string)"
                    ),
                );
                continue;
            }
            if let Some(inner) = nested_open(value, &path) {
                self.step_diag(
                    DiagnosticCode::InvalidField,
                    facts,
                    inner,
                    format!(
                        "`$open` inside argument `{key}`: only a whole top-level argument can \
                         be left open (`\"{key}\": {{\"$open\": \"...\"}}`)"
                    ),
                );
            }
        }
    }

    /// What is wrong with reference `r` to step `target`, given the output
    /// schema of `target`'s tool (nothing, if the tool publishes none).
    fn output_problem(&self, r: &ArgRef, target: &StepFacts<'_>) -> Option<String> {
        let tool = target.tool.as_deref()?;
        let schema = self.limits.tools.spec(tool)?.output_schema.as_ref()?;
        walk_output(schema, &r.path).err().map(|why| {
            format!(
                "refers to {} of {}, but {tool}'s output schema {why}",
                render_path(r),
                r.step
            )
        })
    }

    /// A whole-value reference as a top-level argument (`"q": "${a.output.n}"`)
    /// keeps its JSON type: it must be of the type the argument's schema asks for.
    fn check_reference_types(
        &mut self,
        f: &StepFacts<'_>,
        steps: &BTreeMap<&StepId, &StepFacts<'_>>,
    ) {
        let Some(spec) = f.tool.as_deref().and_then(|t| self.limits.tools.spec(t)) else {
            return;
        };
        let Some(Value::Object(args)) = f
            .ref_sources
            .iter()
            .find(|(p, _)| p.ends_with("/args"))
            .map(|(_, v)| *v)
        else {
            return;
        };
        let mut problems = Vec::new();
        for (key, value) in args {
            let Some(r) = value.as_str().and_then(whole_reference) else {
                continue;
            };
            let Some(wanted) = spec
                .args_schema
                .get("properties")
                .and_then(|p| p.get(key))
                .and_then(simple_type)
            else {
                continue;
            };
            let Some(target) = steps.get(&r.step) else {
                continue;
            };
            let Some(schema) = target
                .tool
                .as_deref()
                .and_then(|t| self.limits.tools.spec(t))
                .and_then(|s| s.output_schema.as_ref())
            else {
                continue;
            };
            let Ok(Some(found)) = walk_output(schema, &r.path) else {
                continue;
            };
            let Some(given) = simple_type(found) else {
                continue;
            };
            let compatible = given == wanted || (wanted == "number" && given == "integer");
            if !compatible {
                problems.push((
                    format!("/steps/{}/args/{key}", f.index),
                    format!(
                        "argument `{key}` of {} wants {} but {} is {} (by {}'s output schema)",
                        spec.name,
                        a_type(wanted),
                        render_path(&r),
                        a_type(given),
                        target.tool.as_deref().unwrap_or_default()
                    ),
                ));
            }
        }
        for (path, message) in problems {
            self.step_diag(DiagnosticCode::OutputSchemaMismatch, f, path, message);
        }
    }

    /// Second pass: ids, dependencies, cycles, references, size.
    fn check_graph(&mut self, facts: &[StepFacts<'_>]) {
        let mut first: BTreeMap<&StepId, &StepFacts<'_>> = BTreeMap::new();
        for f in facts {
            let Some(id) = &f.id else { continue };
            if let Some(earlier) = first.get(id) {
                self.step_diag(
                    DiagnosticCode::DuplicateStepId,
                    f,
                    format!("/steps/{}/id", f.index),
                    format!("id {id} is already used by step #{}", earlier.index + 1),
                );
            } else {
                first.insert(id, f);
            }
        }
        let ids: BTreeSet<&StepId> = first.keys().copied().collect();
        for f in facts {
            for (i, dep) in f.deps.iter().enumerate() {
                let path = format!("/steps/{}/depends_on/{i}", f.index);
                if Some(dep) == f.id.as_ref() {
                    self.step_diag(
                        DiagnosticCode::SelfDependency,
                        f,
                        path,
                        "depends on itself".to_owned(),
                    );
                } else if !ids.contains(dep) {
                    self.step_diag(
                        DiagnosticCode::UnknownDependency,
                        f,
                        path,
                        format!("depends on {dep}, which is not in the plan"),
                    );
                } else if let Some(d) = first.get(dep)
                    && matches!(d.status, StepStatus::Terminated | StepStatus::Skipped)
                    && !f.status.is_final()
                {
                    self.step_diag(
                        DiagnosticCode::DeadDependency,
                        f,
                        path,
                        format!(
                            "depends on {dep}, which is {} and will never succeed",
                            d.status
                        ),
                    );
                }
            }
        }
        let with_ids: Vec<_> = facts
            .iter()
            .filter_map(|f| f.id.as_ref().map(|id| (id, f.deps.as_slice())))
            .collect();
        let graph = DepGraph::new(with_ids);
        for cycle in graph.cycles() {
            let Some(head) = first.get(&cycle[0]) else {
                continue;
            };
            let loop_text: Vec<&str> = cycle
                .iter()
                .chain(cycle.first())
                .map(StepId::as_str)
                .collect();
            self.step_diag(
                DiagnosticCode::DependencyCycle,
                head,
                format!("/steps/{}/depends_on", head.index),
                format!(
                    "dependency cycle: {} (each step depends on the next)",
                    loop_text.join(" → ")
                ),
            );
        }
        for f in facts {
            // Only a step with references needs its transitive dependencies
            // (computing them for every step of a long chain is quadratic).
            let mut deps = None;
            for (path, value) in &f.ref_sources {
                let (refs, errors) = references(value);
                for e in errors {
                    self.step_diag(
                        DiagnosticCode::MalformedReference,
                        f,
                        path.clone(),
                        e.to_string(),
                    );
                }
                for r in refs {
                    if Some(&r.step) == f.id.as_ref() {
                        self.step_diag(
                            DiagnosticCode::ReferenceNotDependency,
                            f,
                            path.clone(),
                            format!("refers to its own result (${})", r.step),
                        );
                    } else if !ids.contains(&r.step) {
                        self.step_diag(
                            DiagnosticCode::UnknownReference,
                            f,
                            path.clone(),
                            format!("refers to ${}, which is not a step in the plan", r.step),
                        );
                    } else if !deps
                        .get_or_insert_with(|| {
                            f.id.as_ref()
                                .map(|id| graph.transitive_deps(id))
                                .unwrap_or_default()
                        })
                        .contains(&r.step)
                    {
                        self.step_diag(
                            DiagnosticCode::ReferenceNotDependency,
                            f,
                            path.clone(),
                            format!(
                                "refers to ${0} but does not depend on {0}: add it to depends_on",
                                r.step
                            ),
                        );
                    } else if let Some(problem) =
                        first.get(&r.step).and_then(|d| self.output_problem(&r, d))
                    {
                        self.step_diag(
                            DiagnosticCode::OutputSchemaMismatch,
                            f,
                            path.clone(),
                            problem,
                        );
                    }
                }
            }
            self.check_reference_types(f, &first);
        }
        let counted = facts
            .iter()
            .filter(|f| f.status != StepStatus::Skipped)
            .count();
        if let Some(max) = self.limits.max_steps
            && counted > max
        {
            self.push(
                DiagnosticCode::TooManySteps,
                None,
                None,
                "/steps".to_owned(),
                format!("the plan has {counted} steps but max_steps is {max}"),
            );
        }
    }
}

/// The path of the first object mentioning `$open` inside `value` (whose
/// own path is `path`), if any.
fn nested_open(value: &Value, path: &str) -> Option<String> {
    match value {
        Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, v)| nested_open_here(v, &format!("{path}/{i}"))),
        Value::Object(map) => map
            .iter()
            .find_map(|(k, v)| nested_open_here(v, &format!("{path}/{k}"))),
        _ => None,
    }
}

fn nested_open_here(value: &Value, path: &str) -> Option<String> {
    if mentions_open(value) {
        Some(path.to_owned())
    } else {
        nested_open(value, path)
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// `${a.output.x[0]}` as written, for messages.
fn render_path(r: &ArgRef) -> String {
    let mut text = format!("${{{}.output", r.step);
    for seg in &r.path {
        match seg {
            PathSegment::Key(k) => {
                text.push('.');
                text.push_str(k);
            }
            PathSegment::Index(i) => text.push_str(&format!("[{i}]")),
        }
    }
    text.push('}');
    text
}

/// The one JSON type a schema allows, if it names exactly one.
fn simple_type(schema: &Value) -> Option<&str> {
    match schema.get("type")? {
        Value::String(t) => Some(t),
        Value::Array(types) if types.len() == 1 => types[0].as_str(),
        _ => None,
    }
}

fn a_type(t: &str) -> String {
    match t {
        "object" | "array" | "integer" => format!("an {t}"),
        other => format!("a {other}"),
    }
}

/// Follows `path` through an output schema. `Ok(Some(schema))`: the schema
/// of the value there; `Ok(None)`: the schema cannot tell (a `$ref`, a
/// combinator, no constraint); `Err`: the schema rules the path out, said as
/// the end of a sentence ("has no field `x` …").
fn walk_output<'s>(schema: &'s Value, path: &[PathSegment]) -> Result<Option<&'s Value>, String> {
    const UNKNOWABLE: [&str; 7] = [
        "$ref",
        "anyOf",
        "oneOf",
        "allOf",
        "not",
        "if",
        "$dynamicRef",
    ];
    let mut current = schema;
    let mut walked = String::from("output");
    for seg in path {
        let Value::Object(obj) = current else {
            return Ok(None);
        };
        if UNKNOWABLE.iter().any(|k| obj.contains_key(*k)) {
            return Ok(None);
        }
        let types: Vec<&str> = match obj.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        match seg {
            PathSegment::Key(k) => {
                if !types.is_empty() && !types.contains(&"object") {
                    return Err(format!(
                        "says {walked} is {}, which has no field `{k}`",
                        a_type(types[0])
                    ));
                }
                let props = obj.get("properties").and_then(Value::as_object);
                if let Some(next) = props.and_then(|p| p.get(k)) {
                    current = next;
                } else {
                    match obj.get("additionalProperties") {
                        Some(extra @ Value::Object(_)) => current = extra,
                        Some(Value::Bool(true)) => return Ok(None),
                        _ if obj.contains_key("patternProperties") => return Ok(None),
                        extra
                            if extra == Some(&Value::Bool(false))
                                || (extra.is_none() && props.is_some()) =>
                        {
                            let mut known: Vec<&str> = props
                                .into_iter()
                                .flatten()
                                .map(|(n, _)| n.as_str())
                                .collect();
                            known.sort_unstable();
                            return Err(format!(
                                "has no field `{k}` in {walked} (it has: {})",
                                if known.is_empty() {
                                    "none".to_owned()
                                } else {
                                    known.join(", ")
                                }
                            ));
                        }
                        _ => return Ok(None),
                    }
                }
                walked.push('.');
                walked.push_str(k);
            }
            PathSegment::Index(i) => {
                if !types.is_empty() && !types.contains(&"array") {
                    return Err(format!(
                        "says {walked} is {}, not an array",
                        a_type(types[0])
                    ));
                }
                let prefix = obj.get("prefixItems").and_then(Value::as_array);
                match (prefix.and_then(|p| p.get(*i)), obj.get("items")) {
                    (Some(item), _) => current = item,
                    (None, Some(items @ Value::Object(_))) => current = items,
                    _ => return Ok(None),
                }
                walked.push_str(&format!("[{i}]"));
            }
        }
    }
    Ok(Some(current))
}

/// Steps that passed every check of [`validate`], in plan order. Only
/// `validate` makes one, so holding one is proof the steps were checked
/// against the limits it was given.
#[derive(Debug, Clone, PartialEq)]
pub struct ValidatedPlan {
    steps: Vec<Step>,
}

impl ValidatedPlan {
    /// The steps.
    pub fn steps(&self) -> &[Step] {
        &self.steps
    }

    /// How many steps.
    pub fn len(&self) -> usize {
        self.steps.len()
    }

    /// Whether it has no step.
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// The steps, to become a plan version.
    pub fn into_steps(self) -> Vec<Step> {
        self.steps
    }
}

/// Validates a plan document. `Ok` holds the typed steps (version is the
/// caller's to set); `Err` holds every diagnostic found, in plan order.
pub fn validate(document: &Value, limits: Limits<'_>) -> Result<ValidatedPlan, Vec<Diagnostic>> {
    let mut checker = Checker {
        limits,
        out: Vec::new(),
    };
    let steps = match document {
        Value::Array(steps) => steps,
        Value::Object(obj) => match obj.get("steps") {
            Some(Value::Array(steps)) => steps,
            Some(other) => {
                checker.push(
                    DiagnosticCode::InvalidPlan,
                    None,
                    None,
                    "/steps".to_owned(),
                    format!("`steps` must be an array, not {}", kind(other)),
                );
                return Err(checker.out);
            }
            None => {
                checker.push(
                    DiagnosticCode::InvalidPlan,
                    None,
                    None,
                    String::new(),
                    "a plan is an object with a `steps` array (or a bare array of steps); `steps` is missing".to_owned(),
                );
                return Err(checker.out);
            }
        },
        other => {
            checker.push(
                DiagnosticCode::InvalidPlan,
                None,
                None,
                String::new(),
                format!(
                    "a plan is an object with a `steps` array (or a bare array of steps), not {}",
                    kind(other)
                ),
            );
            return Err(checker.out);
        }
    };
    if steps.is_empty() {
        checker.push(
            DiagnosticCode::EmptyPlan,
            None,
            None,
            "/steps".to_owned(),
            "the plan has no steps".to_owned(),
        );
        return Err(checker.out);
    }
    let facts: Vec<_> = steps
        .iter()
        .enumerate()
        .map(|(i, s)| checker.check_step(i, s))
        .collect();
    checker.check_graph(&facts);
    if !checker.out.is_empty() {
        return Err(checker.out);
    }
    steps
        .iter()
        .enumerate()
        .map(|(i, s)| {
            // The checks above read a null `args`, `depends_on` or
            // `preconditions` as absent; serde's defaults do not.
            const OPTIONAL: [&str; 3] = ["args", "depends_on", "preconditions"];
            let typed = match s {
                Value::Object(obj)
                    if OPTIONAL
                        .iter()
                        .any(|f| obj.get(*f).is_some_and(Value::is_null)) =>
                {
                    let mut obj = obj.clone();
                    obj.retain(|k, v| !(v.is_null() && OPTIONAL.contains(&k.as_str())));
                    Step::deserialize(&Value::Object(obj))
                }
                // Read in place: no copy of the document.
                s => Step::deserialize(s),
            };
            typed.map_err(|e| Diagnostic {
                code: DiagnosticCode::InvalidField,
                step: None,
                index: Some(i),
                path: format!("/steps/{i}"),
                message: e.to_string(),
                repairable: true,
            })
        })
        .collect::<Result<Vec<_>, _>>()
        .map(|steps| ValidatedPlan { steps })
        .map_err(|d| vec![d])
}

/// Validates an already-typed plan (e.g. one composed by a replan).
pub fn validate_plan(plan: &Plan, limits: Limits<'_>) -> Vec<Diagnostic> {
    validate(&plan.to_json(), limits).err().unwrap_or_default()
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
