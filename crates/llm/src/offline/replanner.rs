//! The offline replanner: reformulates only the sub-questions whose evidence
//! fell short, keeps every other remaining step, and points dependants of a
//! reformulated step at its replacement.

use std::sync::Arc;

use super::gap_for;
use super::planner::gather_step;
use super::reformulate::Reformulator;
use async_trait::async_trait;
use serde_json::Value;
use stepwise_core::roles::{ReplanRequest, Replanner, Reply, RoleError};
use stepwise_core::{DraftPlan, RunState, Step, StepId, StepStatus};

/// Reformulates failing `search_notes` steps from the corpus vocabulary.
#[derive(Debug)]
pub struct OfflineReplanner {
    reformulator: Arc<Reformulator>,
}

impl OfflineReplanner {
    /// A replanner that reformulates with `reformulator`.
    pub fn new(reformulator: Arc<Reformulator>) -> Self {
        Self { reformulator }
    }
}

/// Search steps whose sub-question still has an open gap and whose latest
/// attempt has finished: the ones to reformulate.
fn failing(state: &RunState) -> Vec<&Step> {
    let mut out: Vec<&Step> = Vec::new();
    for s in state.plan.steps.iter().rev() {
        if s.tool != "search_notes" || !state.knowledge_gaps.contains(&gap_for(&s.description)) {
            continue;
        }
        if out.iter().any(|o| o.description == s.description) {
            continue;
        }
        let latest = state
            .plan
            .steps
            .iter()
            .rev()
            .find(|x| x.description == s.description);
        if latest.is_some_and(|l| {
            l.id == s.id && matches!(s.status, StepStatus::Succeeded | StepStatus::Terminated)
        }) {
            out.push(s);
        }
    }
    out.reverse();
    out
}

/// Replaces references to `from` with `to` in a JSON value.
fn retarget(value: &Value, from: &str, to: &str) -> Value {
    match value {
        Value::String(s) => Value::String(
            s.replace(&format!("${{{from}"), &format!("${{{to}"))
                .replace(&format!("${from}"), &format!("${to}")),
        ),
        Value::Array(a) => Value::Array(a.iter().map(|v| retarget(v, from, to)).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, v)| (k.clone(), retarget(v, from, to)))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[async_trait]
impl Replanner for OfflineReplanner {
    async fn replan(&self, request: ReplanRequest<'_>) -> Result<Reply<DraftPlan>, RoleError> {
        let state = request.state;
        let mut new_steps = Vec::new();
        let mut renamed: Vec<(StepId, StepId)> = Vec::new();
        for old in failing(state) {
            let Some(query) = self.reformulator.next_query(state, old) else {
                continue;
            };
            let base = old
                .id
                .as_str()
                .split("_r")
                .next()
                .unwrap_or(old.id.as_str());
            let attempt = state
                .plan
                .steps
                .iter()
                .filter(|s| s.description == old.description)
                .count();
            let id = format!("{base}_r{attempt}");
            renamed.push((old.id.clone(), StepId::new(id.clone())));
            new_steps.push(gather_step(&id, &old.description, &query));
        }
        for pending in state
            .plan
            .steps
            .iter()
            .filter(|s| s.status == StepStatus::Pending)
        {
            let mut step = pending.clone();
            for (from, to) in &renamed {
                for d in step.depends_on.iter_mut().filter(|d| *d == from) {
                    *d = to.clone();
                }
                step.args = match retarget(
                    &Value::Object(step.args.clone()),
                    from.as_str(),
                    to.as_str(),
                ) {
                    Value::Object(map) => map,
                    _ => step.args,
                };
            }
            new_steps.push(step);
        }
        Ok(Reply::free(DraftPlan::from_steps(new_steps)))
    }
}
