//! Checking a streamed plan one step at a time (LLMCompiler): each step is
//! validated as it arrives, on top of the steps already accepted, by the same
//! [`validate`] as a whole plan — so a step may only depend on (and refer to)
//! steps written before it, must call a known tool with arguments its schema
//! accepts, and must fit `max_steps`. A refused step is left out; the steps
//! that depend on it are then refused in turn (their dependency is unknown),
//! and nothing else is. The whole draft is validated again once the stream
//! ends, and its diagnostics go to repair as any invalid plan's do.

use serde_json::Value;

use super::Step;
use super::validate::{Diagnostic, Limits, validate};

/// What a step that just arrived is.
#[derive(Debug, Clone, PartialEq)]
pub enum Arrival {
    /// Valid on top of the accepted steps: it may run once its dependencies have.
    Accepted(Box<Step>),
    /// The same as a step already accepted (a stream retried from its start
    /// sends its steps again): nothing to do.
    Repeated,
    /// Invalid on top of the accepted steps, for these reasons.
    Refused(Vec<Diagnostic>),
}

/// The steps of a streamed plan accepted so far, as they were written.
#[derive(Debug, Clone, Default)]
pub struct PrefixCheck {
    accepted: Vec<Value>,
}

impl PrefixCheck {
    /// Nothing accepted yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many steps were accepted.
    pub fn accepted(&self) -> usize {
        self.accepted.len()
    }

    /// Checks one arriving step against the accepted ones and `limits`;
    /// accepts it if it passes.
    pub fn check(&mut self, step: Value, limits: Limits<'_>) -> Arrival {
        let id = step.get("id").and_then(Value::as_str);
        if id.is_some() && self.accepted.contains(&step) {
            return Arrival::Repeated;
        }
        self.accepted.push(step);
        // Validated in place, without copying the accepted steps.
        let document = Value::Array(std::mem::take(&mut self.accepted));
        let outcome = validate(&document, limits);
        if let Value::Array(steps) = document {
            self.accepted = steps;
        }
        match outcome {
            Ok(plan) => match plan.into_steps().pop() {
                Some(step) => Arrival::Accepted(Box::new(step)),
                None => Arrival::Refused(Vec::new()),
            },
            Err(diagnostics) => {
                self.accepted.pop();
                Arrival::Refused(diagnostics)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;
    use crate::goal::Constraints;
    use crate::plan::validate::DiagnosticCode;
    use crate::testing::FnTool;
    use crate::tool::ToolRegistry;

    fn catalog() -> crate::tool::ToolCatalog {
        let mut tools = ToolRegistry::new();
        tools.register_dyn(std::sync::Arc::new(
            FnTool::echo("search", std::time::Duration::ZERO).with_schema(json!({
                "type": "object",
                "properties": {"query": {"type": "string"}},
                "required": ["query"]
            })),
        ));
        tools.catalog().unwrap()
    }

    fn step(id: &str, deps: &[&str]) -> Value {
        json!({"id": id, "description": format!("find {id}"), "tool": "search",
               "args": {"query": id}, "depends_on": deps, "acceptance_criteria": ["non_empty"]})
    }

    fn codes(arrival: &Arrival) -> Vec<DiagnosticCode> {
        match arrival {
            Arrival::Refused(d) => d.iter().map(|d| d.code).collect(),
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn each_step_is_checked_against_those_before_it() {
        let catalog = catalog();
        let constraints = Constraints::default();
        let limits = Limits {
            tools: &catalog,
            max_steps: Some(4),
            constraints: &constraints,
        };
        let mut check = PrefixCheck::new();
        let first = check.check(step("a", &[]), limits);
        assert!(
            matches!(&first, Arrival::Accepted(s) if s.id.as_str() == "a"),
            "{first:?}"
        );
        // A dependency on a step not written yet is refused, as is its dependant.
        assert_eq!(
            codes(&check.check(step("b", &["later"]), limits)),
            [DiagnosticCode::UnknownDependency]
        );
        assert_eq!(
            codes(&check.check(step("c", &["b"]), limits)),
            [DiagnosticCode::UnknownDependency]
        );
        // An unknown tool, and arguments against the tool's schema.
        let mut bad_tool = step("d", &[]);
        bad_tool["tool"] = json!("no_such_tool");
        assert_eq!(
            codes(&check.check(bad_tool, limits)),
            [DiagnosticCode::UnknownTool]
        );
        let mut bad_args = step("e", &[]);
        bad_args["args"] = json!({"query": 7});
        assert_eq!(
            codes(&check.check(bad_args, limits)),
            [DiagnosticCode::ArgsSchemaMismatch]
        );
        // An independent step after the refused ones is accepted; a repeat is not new.
        assert!(matches!(
            check.check(step("f", &["a"]), limits),
            Arrival::Accepted(_)
        ));
        assert_eq!(check.check(step("f", &["a"]), limits), Arrival::Repeated);
        // The same id with other content is a duplicate.
        assert_eq!(
            codes(&check.check(step("f", &[]), limits)),
            [DiagnosticCode::DuplicateStepId]
        );
        assert_eq!(check.accepted(), 2);
        // The budget: max_steps counts the accepted steps.
        assert!(matches!(
            check.check(step("g", &[]), limits),
            Arrival::Accepted(_)
        ));
        assert!(matches!(
            check.check(step("h", &[]), limits),
            Arrival::Accepted(_)
        ));
        assert_eq!(
            codes(&check.check(step("i", &[]), limits)),
            [DiagnosticCode::TooManySteps]
        );
    }
}
