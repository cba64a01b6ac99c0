//! A person's approval as it travels: each step bound to the hash it asked
//! with, and an approval riding in a run's job to the worker that records
//! it when the run pauses.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use stepwise_core::act::{self, Approve};
use stepwise_core::{EventKind, RunState, StepId};

/// One step's approval, bound to the hash it asked with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StepApproval {
    /// The step.
    pub step: String,
    /// The `args_hash` shown in the pending request
    /// (`GET /v1/runs/{id}/approvals`); any other is refused as stale.
    pub args_hash: String,
}

/// A person's approval of a run a worker is working on, as it rides in
/// the run's job to that worker, which records it when the run pauses
/// (see [`Launcher::deliver_approval`](crate::Launcher::deliver_approval)).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeliveredApproval {
    /// Who approved (the tenant).
    pub by: String,
    /// A plan version approved, if any.
    #[serde(default)]
    pub plan_version: Option<u32>,
    /// The steps approved, each bound to its hash.
    #[serde(default)]
    pub steps: Vec<StepApproval>,
}

impl DeliveredApproval {
    /// The events that record it on the paused run `state`, checked as a
    /// person's approval of a paused run is: a step no longer pending, or
    /// whose arguments changed since, refuses it whole (with the reason).
    pub fn events(&self, state: &RunState) -> Result<Vec<EventKind>, String> {
        let steps = named(&self.steps);
        let approve = Approve::Named {
            plan_version: self.plan_version,
            steps: &steps,
        };
        act::approve(state, approve, &self.by).map_err(|e| e.to_string())
    }
}

/// Each step approved, bound to the hash the request names.
pub(crate) fn named(steps: &[StepApproval]) -> Vec<(StepId, Option<String>)> {
    steps
        .iter()
        .map(|a| (StepId::new(a.step.as_str()), Some(a.args_hash.clone())))
        .collect()
}
