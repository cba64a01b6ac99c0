//! Decisions after a dispatch: a failed attempt retried or final, and
//! where the graph goes when a wave is done.

use crate::decision::Verdict;

use crate::failure::StepFailure;
use crate::graph::Node;
use crate::retry::{FailureClass, RetryPolicy};
use crate::state::RunState;

/// What follows a failed attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AfterFailure {
    /// Try again after this backoff.
    Retry {
        /// Milliseconds to wait.
        delay_ms: u64,
    },
    /// Give up on the step, for this reason.
    Terminate(String),
}

/// Transient failures are retried with backoff while the policy allows
/// (`jitter` is a draw in 0..1, so the caller owns the randomness); any
/// other failure ends the step.
pub(crate) fn after_failure(
    policy: &RetryPolicy,
    attempt: u32,
    failure: &StepFailure,
    jitter: f64,
) -> AfterFailure {
    if failure.class == FailureClass::Transient && policy.allows_retry_after(attempt) {
        return AfterFailure::Retry {
            delay_ms: policy.delay_ms(attempt, failure.retry_after_ms, jitter),
        };
    }
    AfterFailure::Terminate(match failure.class {
        FailureClass::Transient => format!(
            "still failing after {attempt} attempt(s): {}",
            failure.message
        ),
        FailureClass::Persistent => {
            format!("persistent failure, not retried: {}", failure.message)
        }
        FailureClass::Fatal => format!("fatal failure: {}", failure.message),
    })
}

/// What dispatch found once it started what it could.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Dispatched<'a> {
    /// Steps are in flight (or outcomes wait to be assessed).
    pub(crate) busy: bool,
    /// A decision held until nothing is in flight.
    pub(crate) held: Option<Verdict>,
    /// Side-effect steps wait for a person's approval.
    pub(crate) awaiting: bool,
    /// The run verifies each iteration (`verified`).
    pub(crate) verifies: bool,
    /// The run's state.
    pub(crate) state: &'a RunState,
}

/// Where the graph goes after select_next_step. Every step final and
/// nothing held: the iteration is done (verify, else report). A step that
/// is neither final nor runnable, or a held replan with nothing in flight,
/// is a bug, named.
pub(crate) fn after_dispatch(d: Dispatched<'_>) -> Result<Node, String> {
    if d.busy {
        return Ok(Node::ExecuteStep);
    }
    match d.held {
        // A refused approval, with nothing left in flight.
        Some(Verdict::NeedsReview) => return Ok(Node::MarkNeedsReview),
        _ if d.awaiting => return Ok(Node::AwaitApproval),
        // The token budget stopped dispatch.
        Some(Verdict::Synthesize) => return Ok(Node::SynthesizeReport),
        Some(other) => {
            return Err(format!(
                "a held decision ({other:?}) with nothing in flight"
            ));
        }
        None => {}
    }
    let stuck: Vec<String> = d
        .state
        .plan
        .steps
        .iter()
        .filter(|s| !s.status.is_final())
        .map(|s| format!("{} ({})", s.id, s.status))
        .collect();
    if !stuck.is_empty() {
        return Err(format!(
            "nothing runnable but steps remain: {}",
            stuck.join(", ")
        ));
    }
    Ok(if d.verifies {
        Node::Verify
    } else {
        Node::SynthesizeReport
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    use crate::failure::FailureKind;

    #[test]
    fn only_transient_failures_are_retried_within_the_policy() {
        let policy = RetryPolicy::default();
        let failure = |class| StepFailure::new(class, FailureKind::Tool, "boom");
        assert!(matches!(
            after_failure(&policy, 1, &failure(FailureClass::Transient), 0.5),
            AfterFailure::Retry { .. }
        ));
        let last = policy.max_attempts;
        assert!(matches!(
            after_failure(&policy, last, &failure(FailureClass::Transient), 0.5),
            AfterFailure::Terminate(r) if r.contains("still failing")
        ));
        assert!(matches!(
            after_failure(&policy, 1, &failure(FailureClass::Persistent), 0.5),
            AfterFailure::Terminate(r) if r.contains("not retried")
        ));
    }
}
