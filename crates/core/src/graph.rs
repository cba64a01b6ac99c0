//! The nodes and edges of seed 001's planning graph, exactly as DESIGN.md
//! draws them. The engine checks every move against [`EDGES`], so the code
//! cannot drift from the diagram.
//!
//! ```mermaid
//! flowchart TD
//!     START --> prepare_input --> choose_strategy --> create_plan --> validate_plan
//!     prepare_input -->|empty or meaningless goal| END
//!     validate_plan -->|valid| review_plan
//!     validate_plan -->|repairable, attempts left| repair_plan --> validate_plan
//!     validate_plan -->|unsafe, or invalid after repairs| mark_needs_review
//!     review_plan -->|approved| select_next_step
//!     review_plan -->|rejected| mark_needs_review
//!     select_next_step -->|steps to run or running| execute_step --> assess_progress
//!     select_next_step -->|all steps done| synthesize_report
//!     assess_progress -->|ok, work left| select_next_step
//!     assess_progress -->|gap or blocker, replans left| replan --> validate_plan
//!     assess_progress -->|enough evidence| synthesize_report
//!     assess_progress -->|unrecoverable or bounds hit| mark_needs_review
//!     synthesize_report --> END
//!     mark_needs_review --> END
//!     review_plan -->|deferred to a person| await_approval
//!     select_next_step -->|side-effect step without approval| await_approval
//!     select_next_step -->|approval refused| mark_needs_review
//!     await_approval --> END
//!     select_next_step -->|verified: all steps done| verify
//!     verify -->|weak or missing, no stop condition| replan
//!     verify -->|a stop condition holds| synthesize_report
//!     choose_strategy -->|react strategies| act
//!     act -->|tool call| execute_step --> act
//!     act -->|answer, or the cap or budget reached| synthesize_report
//!     verify -->|unusable verdict| mark_needs_review
//!     act -->|unusable action| mark_needs_review
//!     act -->|side-effect call without approval| await_approval
//!     synthesize_report -->|the report cites no evidence| mark_needs_review
//!     act -->|router: the cap reached, escalate| create_plan
//! ```
//!
//! `verify` and `act` belong to other strategies on the same skeleton
//! (`verified`, `react`, `react-isolated`): see [`crate::strategy`].
//!
//! `await_approval` is a breakpoint (durable runs): side-effect steps never
//! run without an approval bound to their tool and resolved arguments.
//!
//! An error a role cannot recover from (say, a provider refusing the key)
//! ends the run from any node with status `failed` and a `run_failed` event.

use std::fmt;

/// A node of the planning graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Node {
    /// Normalise the input; reject an empty goal.
    PrepareInput,
    /// Ask the strategy (a router may ask a model) how to drive the run:
    /// the planning graph, or ReAct's act loop.
    ChooseStrategy,
    /// Ask the planner for a plan.
    CreatePlan,
    /// Check the draft; adopt it or send it to repair.
    ValidatePlan,
    /// Ask the repairer to fix the diagnostics.
    RepairPlan,
    /// Record an approval (or a rejection) of the plan version.
    ReviewPlan,
    /// Dispatch every ready step (bounded), or finish.
    SelectNextStep,
    /// Wait for the next step outcome; retry transient failures.
    ExecuteStep,
    /// Judge the outcome; continue, replan, synthesize or stop.
    AssessProgress,
    /// Ask the replanner for the remaining steps, keeping completed ones.
    Replan,
    /// Write the report from the results; gaps stay gaps.
    SynthesizeReport,
    /// Stop safely with everything preserved.
    MarkNeedsReview,
    /// Pause until a person approves a plan or a side-effect step.
    AwaitApproval,
    /// `verified`: the verifier judges the iteration; stop or replan.
    Verify,
    /// ReAct: the actor calls a tool or answers.
    Act,
    /// The run is over.
    End,
}

impl Node {
    /// The node's name in seed 001.
    pub fn name(self) -> &'static str {
        match self {
            Self::PrepareInput => "prepare_input",
            Self::ChooseStrategy => "choose_strategy",
            Self::CreatePlan => "create_plan",
            Self::ValidatePlan => "validate_plan",
            Self::RepairPlan => "repair_plan",
            Self::ReviewPlan => "review_plan",
            Self::SelectNextStep => "select_next_step",
            Self::ExecuteStep => "execute_step",
            Self::AssessProgress => "assess_progress",
            Self::Replan => "replan",
            Self::SynthesizeReport => "synthesize_report",
            Self::MarkNeedsReview => "mark_needs_review",
            Self::AwaitApproval => "await_approval",
            Self::Verify => "verify",
            Self::Act => "act",
            Self::End => "END",
        }
    }
}

impl fmt::Display for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Every edge of the graph.
pub const EDGES: [(Node, Node); 36] = {
    use Node::*;
    [
        (PrepareInput, ChooseStrategy),
        (PrepareInput, End),
        (ChooseStrategy, CreatePlan),
        (ChooseStrategy, Act),
        (CreatePlan, ValidatePlan),
        (ValidatePlan, ReviewPlan),
        (ValidatePlan, RepairPlan),
        (ValidatePlan, MarkNeedsReview),
        (RepairPlan, ValidatePlan),
        (ReviewPlan, SelectNextStep),
        (ReviewPlan, MarkNeedsReview),
        (SelectNextStep, ExecuteStep),
        (SelectNextStep, SynthesizeReport),
        (ExecuteStep, AssessProgress),
        (AssessProgress, SelectNextStep),
        (AssessProgress, Replan),
        (AssessProgress, SynthesizeReport),
        (AssessProgress, MarkNeedsReview),
        (Replan, ValidatePlan),
        (SynthesizeReport, End),
        (MarkNeedsReview, End),
        (ReviewPlan, AwaitApproval),
        (SelectNextStep, AwaitApproval),
        (SelectNextStep, MarkNeedsReview),
        (AwaitApproval, End),
        (SelectNextStep, Verify),
        (Verify, Replan),
        (Verify, SynthesizeReport),
        (Act, ExecuteStep),
        (ExecuteStep, Act),
        (Act, SynthesizeReport),
        (Verify, MarkNeedsReview),
        (Act, MarkNeedsReview),
        (Act, AwaitApproval),
        (SynthesizeReport, MarkNeedsReview),
        // The router's escalation at ReAct's tool-call cap.
        (Act, CreatePlan),
    ]
};

/// Whether the graph has the edge `from -> to`.
pub fn is_edge(from: Node, to: Node) -> bool {
    EDGES.contains(&(from, to))
}
