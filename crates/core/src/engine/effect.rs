//! What a node asks of the driver. Nodes are plain functions: they read
//! the folded state, note events (applied at once, sent later) and return
//! an [`Effect`]; the driver (`engine/driver/`) is the only code that
//! awaits. It commits what is noted before any I/O that is slow or seen
//! outside the run, performs the effect, and hands its result back to the
//! node that asked.

use serde_json::Value;

use crate::failure::StepFailure;
use crate::ids::StepId;
use crate::roles::{Reply, StepOutcome};

use super::decide::{Next, Review};

/// The I/O a run performs, one kind each.
pub(super) enum Effect {
    /// Go to a node of the graph (every move an edge of it).
    Go(Next),
    /// Call a role; its answer goes back to the node that asked.
    Call(RoleCall),
    /// Ask the approver about a side-effect step, then go on as it says.
    Ask(StepId, AfterAsk),
    /// Start these attempts (a step's `step_started` committed before its
    /// call, a side effect's idempotency record made before it), then go
    /// on. `alone`: nothing else is in flight or starting.
    Start {
        /// Each step and its attempt.
        attempts: Vec<(StepId, u32)>,
        /// Nothing else runs beside it: polled in place first.
        alone: bool,
        /// Where the run goes once they are started.
        then: Then,
    },
    /// Sleep a transient failure's backoff, then start its next attempt
    /// (execute_step waits on meanwhile).
    Backoff {
        /// The step.
        step: StepId,
        /// The attempt that starts after the sleep.
        attempt: u32,
        /// How long to sleep.
        delay_ms: u64,
    },
    /// Wait for the next attempt to finish and hand it to execute_step.
    Wait,
    /// Stream the first plan (see `engine/stream.rs`).
    Stream,
}

impl From<Next> for Effect {
    fn from(next: Next) -> Self {
        Self::Go(next)
    }
}

impl From<crate::graph::Node> for Effect {
    fn from(node: crate::graph::Node) -> Self {
        Self::Go(node.into())
    }
}

/// Where the run goes once attempts are started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Then {
    /// Wait on for the next completion (execute_step).
    Wait,
    /// Back into select_next_step: more may be ready, or an approval asked.
    Select,
    /// select_next_step's wave is out: decide where the graph goes.
    Dispatched,
    /// To execute_step (the act node's call).
    Execute,
}

/// Who asked the approver, so the answer goes back there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum AfterAsk {
    /// select_next_step, which dispatches on.
    Select,
    /// The act node, whose call starts unless it must wait.
    Act,
    /// A resumed ReAct run's unstarted call.
    Recover,
}

/// A role call, with what its answer needs to be acted on. The driver
/// builds the request from the state when it calls.
pub(super) enum RoleCall {
    /// The strategy chooses a driver (choose_strategy).
    Route,
    /// The planner drafts the plan (create_plan).
    Plan,
    /// The repairer fixes the pending draft (repair_plan).
    Repair {
        /// Which repair attempt.
        attempt: u32,
    },
    /// The reviewer reads the plan (review_plan).
    Review,
    /// The replanner drafts a new plan, told why (replan).
    Replan {
        /// Why.
        reason: String,
    },
    /// The verifier judges the iteration (verify).
    Verify,
    /// The ReAct actor picks its next action (act).
    Act {
        /// Tool calls allowed in all.
        cap: usize,
        /// Whether the router may escalate at the cap.
        escalate: bool,
    },
    /// The summarizer condenses a step's result for the actor.
    Summarize {
        /// The step.
        step: StepId,
    },
    /// The assessor judges finished steps, one or a wave.
    Assess {
        /// Each step with its outcome.
        wave: Vec<(StepId, StepOutcome)>,
    },
    /// The synthesizer writes the report (synthesize_report).
    Synthesize,
    /// The synthesizer writes the partial brief of a run stopping for review.
    Partial {
        /// The stop it is for.
        review: Box<Review>,
    },
}

/// One step attempt's outcome, or the end of a backoff.
pub(super) struct Completion {
    pub(super) step: StepId,
    pub(super) attempt: u32,
    pub(super) kind: CompletionKind,
}

pub(super) enum CompletionKind {
    Attempt {
        result: Result<Reply<Value>, StepFailure>,
        duration_ms: u64,
    },
    BackoffElapsed,
}
