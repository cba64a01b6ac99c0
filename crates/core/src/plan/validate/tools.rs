//! The checks of a step against its tool: the tool exists and is allowed,
//! the arguments fit its schema, references fit the output they name.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::ids::StepId;
use crate::step_status::StepStatus;

use super::checker::{Checker, StepFacts};
use super::diagnostics::DiagnosticCode;
use super::schema::{a_type, render_path, simple_type, walk_output};
use crate::plan::args::{ArgRef, mentions_open, open_hint, whole_reference};

impl Checker<'_> {
    pub(super) fn check_tool(
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
    pub(super) fn output_problem(&self, r: &ArgRef, target: &StepFacts<'_>) -> Option<String> {
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
    pub(super) fn check_reference_types(
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
