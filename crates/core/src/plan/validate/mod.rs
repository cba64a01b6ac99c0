//! The plan validator: reads a plan as raw JSON and reports *every* problem at
//! once, each a [`Diagnostic`] with a stable [`DiagnosticCode`], the step it
//! concerns and a human message. Only a plan with no diagnostics becomes a
//! typed [`Plan`].

mod checker;
mod diagnostics;
mod graph;
mod limits;
mod schema;
mod steps;
mod tools;

pub use diagnostics::{Diagnostic, DiagnosticCode};
pub use limits::Limits;
pub use steps::is_valid_step_id;

use serde::Deserialize;
use serde_json::Value;

use crate::plan::{Plan, Step};

use checker::{Checker, kind};

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
