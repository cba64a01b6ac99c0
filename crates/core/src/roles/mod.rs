//! The roles the planning graph calls, one file each. Each is a trait with
//! one method; an LLM-backed, an offline and a scripted implementation plug
//! in behind it. Roles see what they need and no more: a step executor gets
//! its step, its resolved arguments and its dependencies' outputs — never
//! the whole history. [`Roles`] is the set a run uses.

mod actor;
mod assessor;
mod executor;
mod planner;
mod repairer;
mod replanner;
mod reviewer;
mod router;
mod summarizer;
mod synthesizer;
mod verifier;

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

pub use actor::{ActRequest, Action, Actor, Turn};
pub use assessor::{AssessRequest, Assessor, StepOutcome};
pub use executor::{DependencyOutput, StepContext, StepExecutor, ToolCallExecutor};
pub use planner::{PlanRequest, Planner, StepSender};
pub use repairer::{RepairRequest, Repairer};
pub use replanner::{ReplanRequest, Replanner};
pub use reviewer::{AutoApprove, Reviewer};
pub use router::Router;
pub use summarizer::Summarizer;
pub use synthesizer::Synthesizer;
pub use verifier::Verifier;

// What roles answer with, at home in `decision`; named here too because
// every role's caller reads them.
pub use crate::decision::{Assessment, Evidence, Report, ReviewDecision, Verdict};

use crate::retry::FailureClass;
use crate::usage::Usage;

/// A role's answer, what producing it cost, and the model calls it made
/// (recorded in the run's log, for audits and replay).
#[derive(Debug, Clone, PartialEq)]
pub struct Reply<T> {
    /// The answer.
    pub value: T,
    /// Model calls and tokens spent on it.
    pub usage: Usage,
    /// Every model request and response behind it, retries included.
    pub exchanges: Vec<crate::model::ModelExchange>,
}

impl<T> Reply<T> {
    /// An answer that cost nothing (offline and scripted roles).
    pub fn free(value: T) -> Self {
        Self {
            value,
            usage: Usage::default(),
            exchanges: Vec::new(),
        }
    }
}

/// Which role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RoleName {
    /// create_plan
    Planner,
    /// repair_plan
    Repairer,
    /// review_plan
    Reviewer,
    /// execute_step
    StepExecutor,
    /// assess_progress
    Assessor,
    /// replan
    Replanner,
    /// synthesize_report
    Synthesizer,
    /// verify (the `verified` strategy)
    Verifier,
    /// act (the ReAct strategies)
    Actor,
    /// summarize (`react-isolated`)
    Summarizer,
    /// route (the `router` strategy)
    Router,
}

impl fmt::Display for RoleName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Planner => "planner",
            Self::Repairer => "repairer",
            Self::Reviewer => "reviewer",
            Self::StepExecutor => "step executor",
            Self::Assessor => "assessor",
            Self::Replanner => "replanner",
            Self::Synthesizer => "synthesizer",
            Self::Verifier => "verifier",
            Self::Actor => "actor",
            Self::Summarizer => "summarizer",
            Self::Router => "router",
        })
    }
}

/// A role could not answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RoleError {
    /// The answer came but could not be used (unparseable model output).
    /// A plan-producing role's malformed answer goes to validation and repair.
    #[error("{role} returned output that could not be used: {message}")]
    Malformed {
        /// Which role.
        role: RoleName,
        /// What was wrong.
        message: String,
        /// The raw output, if any, for the repairer to see.
        raw: Option<String>,
        /// Model calls behind it (recorded in the log).
        exchanges: Vec<crate::model::ModelExchange>,
        /// What the answers that could not be used cost: counted in the run's
        /// usage like any other answer's.
        usage: Usage,
    },
    /// The role failed (provider down, auth, script exhausted).
    #[error("{role} failed ({class}): {message}")]
    Failed {
        /// Model calls made before it failed (recorded with the failure).
        exchanges: Vec<crate::model::ModelExchange>,
        /// What the answers received before it failed cost.
        usage: Usage,
        /// Which role.
        role: RoleName,
        /// How to treat it.
        class: FailureClass,
        /// What went wrong.
        message: String,
    },
}

impl RoleError {
    /// A failure with no model calls behind it.
    pub fn failed(role: RoleName, class: FailureClass, message: impl Into<String>) -> Self {
        Self::Failed {
            exchanges: Vec::new(),
            usage: Usage::default(),
            role,
            class,
            message: message.into(),
        }
    }

    /// Takes the model calls behind the error, to record them.
    pub fn take_exchanges(&mut self) -> Vec<crate::model::ModelExchange> {
        match self {
            Self::Failed { exchanges, .. } | Self::Malformed { exchanges, .. } => {
                std::mem::take(exchanges)
            }
        }
    }

    /// What the model calls behind the error cost (kept when the exchanges
    /// are taken): the engine counts it in the run's usage.
    pub fn usage(&self) -> Usage {
        match self {
            Self::Failed { usage, .. } | Self::Malformed { usage, .. } => *usage,
        }
    }
}

/// The roles a run uses.
#[derive(Clone)]
pub struct Roles {
    /// create_plan
    pub planner: Arc<dyn Planner>,
    /// repair_plan
    pub repairer: Arc<dyn Repairer>,
    /// review_plan (default: approve everything)
    pub reviewer: Arc<dyn Reviewer>,
    /// execute_step (default: call the tool)
    pub executor: Arc<dyn StepExecutor>,
    /// assess_progress
    pub assessor: Arc<dyn Assessor>,
    /// replan
    pub replanner: Arc<dyn Replanner>,
    /// synthesize_report
    pub synthesizer: Arc<dyn Synthesizer>,
    /// verify (needed by the `verified` strategy)
    pub verifier: Option<Arc<dyn Verifier>>,
    /// act (needed by the ReAct strategies)
    pub actor: Option<Arc<dyn Actor>>,
    /// summarize (needed by `react-isolated`)
    pub summarizer: Option<Arc<dyn Summarizer>>,
    /// route (needed by the `router` strategy)
    pub router: Option<Arc<dyn Router>>,
}

impl std::fmt::Debug for Roles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Roles { .. }")
    }
}

impl Roles {
    /// Roles with auto-approval and the plain tool-calling executor.
    pub fn new(
        planner: Arc<dyn Planner>,
        repairer: Arc<dyn Repairer>,
        assessor: Arc<dyn Assessor>,
        replanner: Arc<dyn Replanner>,
        synthesizer: Arc<dyn Synthesizer>,
    ) -> Self {
        Self {
            planner,
            repairer,
            reviewer: Arc::new(AutoApprove),
            executor: Arc::new(ToolCallExecutor),
            assessor,
            replanner,
            synthesizer,
            verifier: None,
            actor: None,
            summarizer: None,
            router: None,
        }
    }

    /// Adds the verifier (the `verified` strategy).
    #[must_use]
    pub fn with_verifier(mut self, verifier: Arc<dyn Verifier>) -> Self {
        self.verifier = Some(verifier);
        self
    }

    /// Adds the actor (the ReAct strategies).
    #[must_use]
    pub fn with_actor(mut self, actor: Arc<dyn Actor>) -> Self {
        self.actor = Some(actor);
        self
    }

    /// Adds the summarizer (`react-isolated`).
    #[must_use]
    pub fn with_summarizer(mut self, summarizer: Arc<dyn Summarizer>) -> Self {
        self.summarizer = Some(summarizer);
        self
    }

    /// Adds the router (the `router` strategy).
    #[must_use]
    pub fn with_router(mut self, router: Arc<dyn Router>) -> Self {
        self.router = Some(router);
        self
    }

    /// Replaces the reviewer.
    #[must_use]
    pub fn with_reviewer(mut self, reviewer: Arc<dyn Reviewer>) -> Self {
        self.reviewer = reviewer;
        self
    }

    /// Replaces the step executor.
    #[must_use]
    pub fn with_executor(mut self, executor: Arc<dyn StepExecutor>) -> Self {
        self.executor = executor;
        self
    }
}
