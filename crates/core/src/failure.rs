//! How a failure is classified decides what happens next (seed 003): a
//! transient failure is retried with backoff, a persistent one goes to
//! assessment (replan or breakpoint), a fatal one stops the run.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::model::ModelExchange;
pub use crate::retry::FailureClass;
use crate::usage::Usage;

/// What went wrong in one step attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// The tool returned an error.
    Tool,
    /// The tool did not answer within its timeout.
    Timeout,
    /// The plan names a tool the registry does not have.
    UnknownTool,
    /// A `$step` reference in the arguments could not be resolved.
    ArgResolution,
    /// The resolved arguments do not match the tool's schema.
    InvalidArgs,
    /// A precondition did not hold, so the tool was not called.
    PreconditionFailed,
    /// The step executor itself failed (e.g. its model call).
    Executor,
    /// The process running the step died mid-call; found on resume.
    Interrupted,
    /// A side-effect step was refused approval.
    ApprovalDenied,
}

/// One failed step attempt, as recorded in the history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StepFailure {
    /// Decides retry, replan or stop.
    pub class: FailureClass,
    /// What went wrong.
    pub kind: FailureKind,
    /// A human message.
    pub message: String,
    /// A delay the tool asked for (e.g. HTTP Retry-After), in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<u64>,
    /// What the executor's model calls cost on this attempt (an LLM executor
    /// that called a model and then failed). Counted in the run's usage when
    /// the `step_failed` event is applied.
    #[serde(default, skip_serializing_if = "Usage::is_zero")]
    pub usage: Usage,
    /// The model calls made on this attempt. The engine records each as a
    /// `model_called` event (role `step_executor`) before `step_failed`, so
    /// they are not serialised with the failure.
    #[serde(skip)]
    pub exchanges: Vec<ModelExchange>,
}

impl StepFailure {
    /// A failure with no retry hint.
    pub fn new(class: FailureClass, kind: FailureKind, message: impl Into<String>) -> Self {
        Self {
            class,
            kind,
            message: message.into(),
            retry_after_ms: None,
            usage: Usage::default(),
            exchanges: Vec::new(),
        }
    }

    /// The same failure, carrying the model calls made on the attempt (and
    /// their cost), so they are recorded and counted.
    #[must_use]
    pub fn with_calls(mut self, usage: Usage, exchanges: Vec<ModelExchange>) -> Self {
        self.usage += usage;
        self.exchanges.extend(exchanges);
        self
    }
}

impl fmt::Display for StepFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} failure ({:?}): {}",
            self.class, self.kind, self.message
        )
    }
}
