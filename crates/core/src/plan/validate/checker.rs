//! The [`Checker`] that collects diagnostics, what it learns about each
//! step, and the helpers every check uses.

use serde_json::{Map, Value};

use crate::ids::StepId;
use crate::step_status::StepStatus;

use super::diagnostics::{Diagnostic, DiagnosticCode};
use super::limits::Limits;

/// Collects diagnostics for one plan document.
pub(super) struct Checker<'a> {
    pub(super) limits: Limits<'a>,
    pub(super) out: Vec<Diagnostic>,
}

/// What the first pass learned about one step.
pub(super) struct StepFacts<'v> {
    pub(super) index: usize,
    pub(super) id: Option<StepId>,
    pub(super) deps: Vec<StepId>,
    pub(super) status: StepStatus,
    /// The step's agent type, if it has a valid one.
    pub(super) agent: Option<crate::plan::AgentType>,
    /// Strings that may hold references: `args` and preconditions' `ref`s.
    pub(super) ref_sources: Vec<(String, &'v Value)>,
    /// The tool it calls, if the catalogue has it.
    pub(super) tool: Option<String>,
}

impl Checker<'_> {
    pub(super) fn push(
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

    pub(super) fn step_diag(
        &mut self,
        code: DiagnosticCode,
        facts: &StepFacts<'_>,
        path: String,
        message: String,
    ) {
        self.push(code, facts.id.as_ref(), Some(facts.index), path, message);
    }

    /// Required non-empty string field.
    pub(super) fn required_string<'v>(
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
    pub(super) fn string_list(
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
}

pub(super) fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
