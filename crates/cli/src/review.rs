//! What a person needs to act on a run that stopped for review: the fix for
//! each plan problem, what `--repair` changed in their plan, whether
//! anything changed since the run stopped, and what would have to.

use serde_json::Value;
use stepwise_core::{Diagnostic, DiagnosticCode, EventKind, RunState};

use crate::host::{Host, needs};

/// The steps of a plan document (an object with `steps`, or a bare array).
fn draft_steps(draft: &Value) -> &[Value] {
    let steps = match draft {
        Value::Object(obj) => obj.get("steps"),
        other => Some(other),
    };
    steps.and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

/// The tool a diagnostic's step calls, read from the draft it was found in.
fn tool_of<'a>(state: &'a RunState, d: &Diagnostic) -> Option<&'a str> {
    let draft = state.pending_draft.as_ref()?;
    draft_steps(draft).get(d.index?)?.get("tool")?.as_str()
}

/// How to fix one plan problem.
pub(crate) fn fix(d: &Diagnostic, state: &RunState, host: Option<&Host>) -> String {
    let step = d
        .step
        .as_ref()
        .map_or_else(|| "the step".to_owned(), |s| format!("step {s}"));
    match d.code {
        DiagnosticCode::UnknownTool => {
            let tool = tool_of(state, d).unwrap_or("?");
            match host.and_then(|h| needs(tool, h)) {
                Some(flag) => format!("{step} uses {tool}, which needs {flag}"),
                None => format!(
                    "{step}: use one of the available tools instead of {tool:?} (see `stepwise tools`)"
                ),
            }
        }
        DiagnosticCode::ToolNotAllowed => {
            "add the tool to `allowed_tools` in the constraints, or use an allowed one".to_owned()
        }
        DiagnosticCode::SideEffectForbidden => {
            format!("remove {step}, or drop `forbid_side_effects` from the constraints")
        }
        DiagnosticCode::DependencyCycle | DiagnosticCode::SelfDependency => {
            "remove a `depends_on` entry so that no step waits, directly or not, on itself"
                .to_owned()
        }
        DiagnosticCode::UnknownDependency => {
            format!("{step}: name an existing step in `depends_on`, or remove the entry")
        }
        DiagnosticCode::DeadDependency => {
            format!("{step}: depend on a step that can still run, or remove it")
        }
        DiagnosticCode::DuplicateStepId => "give every step its own `id`".to_owned(),
        DiagnosticCode::ArgsSchemaMismatch => {
            "give the arguments the tool's schema asks for (`stepwise tools --json`)".to_owned()
        }
        DiagnosticCode::OpenArgumentSideEffect => {
            "write the argument out: a side-effect step's arguments must all be in the plan"
                .to_owned()
        }
        DiagnosticCode::MalformedReference | DiagnosticCode::UnknownReference => {
            "write references as `$step` or `${step.output.path}`, naming an existing step"
                .to_owned()
        }
        DiagnosticCode::ReferenceNotDependency => {
            format!("{step}: add the step it refers to to its `depends_on`")
        }
        DiagnosticCode::OutputSchemaMismatch => {
            "refer to a field the tool's output has, of the type the argument wants (its `output_schema` in `stepwise tools --json`)".to_owned()
        }
        DiagnosticCode::TooManySteps => "remove steps, or raise --max-steps".to_owned(),
        DiagnosticCode::InvalidPlan
        | DiagnosticCode::EmptyPlan
        | DiagnosticCode::MissingField
        | DiagnosticCode::InvalidField
        | DiagnosticCode::UnknownField => {
            "see `stepwise plan schema` for the plan format".to_owned()
        }
    }
}

/// What repair changed in the plan the user gave (`--plan` with
/// `--repair`): each removed, changed or added step, said for a person.
/// Empty when the plan was not theirs or was used as given.
pub(crate) fn repairs(state: &RunState, host: Option<&Host>) -> Vec<String> {
    let Some(given) = host.and_then(|h| h.plan.as_ref()) else {
        return Vec::new();
    };
    let history = &state.execution_history;
    let repaired = history
        .iter()
        .any(|e| matches!(e.kind, EventKind::PlanRepaired { .. }));
    let first = history.iter().find_map(|e| match &e.kind {
        EventKind::PlanValidated { plan } => Some(plan),
        _ => None,
    });
    let (true, Some(first)) = (repaired, first) else {
        return Vec::new();
    };
    let mut said = Vec::new();
    let given = draft_steps(given);
    for step in given {
        let Some(id) = step.get("id").and_then(Value::as_str) else {
            continue;
        };
        let tool = step.get("tool").and_then(Value::as_str).unwrap_or("?");
        let Some(now) = first.steps.iter().find(|s| s.id.as_str() == id) else {
            said.push(format!("removed step {id} ({tool})"));
            continue;
        };
        let mut what = Vec::new();
        if now.tool != tool {
            what.push(format!("tool {tool} -> {}", now.tool));
        }
        let args = step.get("args").cloned().unwrap_or(Value::Null);
        let was_args = if args.is_null() {
            Value::Object(Default::default())
        } else {
            args
        };
        if Value::Object(now.args.clone()) != was_args {
            what.push("arguments".to_owned());
        }
        let deps: Vec<&str> = step
            .get("depends_on")
            .and_then(Value::as_array)
            .map(|d| d.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let now_deps: Vec<&str> = now.depends_on.iter().map(|d| d.as_str()).collect();
        if deps != now_deps {
            what.push(format!(
                "depends_on [{}] -> [{}]",
                deps.join(", "),
                now_deps.join(", ")
            ));
        }
        if !what.is_empty() {
            said.push(format!("changed step {id}: {}", what.join(", ")));
        }
    }
    for now in &first.steps {
        let known = given
            .iter()
            .any(|s| s.get("id").and_then(Value::as_str) == Some(now.id.as_str()));
        if !known {
            said.push(format!("added step {} ({})", now.id, now.tool));
        }
    }
    said
}

/// What `stepwise resume` of a run that stopped for review could change:
/// the bounds, the notes, or (for a refusal) a new decision.
pub(crate) fn unchanged_hint(state: &RunState, host: Option<&Host>) -> String {
    let notes = host.map_or_else(
        || "its sources".to_owned(),
        |h| format!("notes in {}", h.notes.display()),
    );
    format!(
        "nothing changed since run {run} stopped for review, so it stays needs_review: raise --max-replans (now {}) or --max-steps (now {}), or add or change {notes}, then `stepwise resume {run}` again; to give up: `stepwise cancel {run}`",
        state.max_replans,
        state.max_steps,
        run = state.run_id,
    )
}
