//! What the validator reports: a [`Diagnostic`] per problem, each with a
//! stable [`DiagnosticCode`].

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ids::StepId;

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
