//! The per-step state machine (seed 003). Every status change goes through
//! [`StepStatus::transition`], so an illegal change is an error, never a silent overwrite.
//!
//! ```mermaid
//! stateDiagram-v2
//!     [*] --> pending
//!     pending --> running
//!     pending --> skipped : superseded by a replan
//!     running --> succeeded
//!     running --> failed
//!     failed --> retrying : transient
//!     retrying --> running
//!     failed --> terminated : persistent, fatal or out of attempts
//! ```

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Where a step is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    /// Not started; waits for its dependencies and preconditions.
    #[default]
    Pending,
    /// Dispatched; its tool call is in flight.
    Running,
    /// Finished; its result is recorded and final. Never re-run.
    Succeeded,
    /// The last attempt failed; the next move is a retry or termination.
    Failed,
    /// Waiting out a backoff before the next attempt.
    Retrying,
    /// Failed for good. Its dependants can never run.
    Terminated,
    /// Superseded by a replan before it ran.
    Skipped,
}

/// A status change the state machine does not allow.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("illegal step status transition {from} -> {to}")]
pub struct IllegalTransition {
    /// The status the step had.
    pub from: StepStatus,
    /// The status that was asked for.
    pub to: StepStatus,
}

impl StepStatus {
    /// Every status, in lifecycle order.
    pub const ALL: [StepStatus; 7] = [
        Self::Pending,
        Self::Running,
        Self::Succeeded,
        Self::Failed,
        Self::Retrying,
        Self::Terminated,
        Self::Skipped,
    ];

    /// Whether the machine allows `self -> to`.
    pub fn can_transition_to(self, to: StepStatus) -> bool {
        use StepStatus::*;
        matches!(
            (self, to),
            (Pending, Running)
                | (Pending, Skipped)
                | (Running, Succeeded)
                | (Running, Failed)
                | (Failed, Retrying)
                | (Failed, Terminated)
                | (Retrying, Running)
        )
    }

    /// The new status, or a typed error if the change is illegal.
    pub fn transition(self, to: StepStatus) -> Result<StepStatus, IllegalTransition> {
        if self.can_transition_to(to) {
            Ok(to)
        } else {
            Err(IllegalTransition { from: self, to })
        }
    }

    /// A status no step ever leaves.
    pub fn is_final(self) -> bool {
        matches!(self, Self::Succeeded | Self::Terminated | Self::Skipped)
    }

    /// The step has been dispatched and has not reached a final status.
    pub fn is_in_flight(self) -> bool {
        matches!(self, Self::Running | Self::Failed | Self::Retrying)
    }

    /// The snake_case name used in JSON and on the terminal.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Running => "running",
            Self::Succeeded => "succeeded",
            Self::Failed => "failed",
            Self::Retrying => "retrying",
            Self::Terminated => "terminated",
            Self::Skipped => "skipped",
        }
    }
}

impl fmt::Display for StepStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::StepStatus::{self, *};

    #[test]
    fn exactly_the_designed_transitions_are_legal() {
        let legal = [
            (Pending, Running),
            (Pending, Skipped),
            (Running, Succeeded),
            (Running, Failed),
            (Failed, Retrying),
            (Failed, Terminated),
            (Retrying, Running),
        ];
        for from in StepStatus::ALL {
            for to in StepStatus::ALL {
                let expected = legal.contains(&(from, to));
                assert_eq!(from.transition(to).is_ok(), expected, "{from} -> {to}");
            }
        }
    }

    #[test]
    fn illegal_transition_names_both_ends() {
        let err = Succeeded.transition(Running).unwrap_err();
        assert_eq!((err.from, err.to), (Succeeded, Running));
        assert_eq!(
            err.to_string(),
            "illegal step status transition succeeded -> running"
        );
    }

    #[test]
    fn final_statuses_have_no_way_out() {
        for from in StepStatus::ALL.into_iter().filter(|s| s.is_final()) {
            assert!(
                StepStatus::ALL
                    .iter()
                    .all(|to| !from.can_transition_to(*to)),
                "{from}"
            );
        }
    }
}
