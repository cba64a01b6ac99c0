//! The offline repairer: without a model there is nothing to rewrite, but a
//! plan can still be made valid by dropping what is broken — the steps a
//! diagnostic names, and dependencies on steps that no longer exist.

use async_trait::async_trait;
use serde_json::Value;
use stepwise_core::DraftPlan;
use stepwise_core::roles::{RepairRequest, Repairer, Reply, RoleError};

/// Drops every step a diagnostic names (and, transitively, dependencies on them).
#[derive(Debug, Clone, Copy, Default)]
pub struct OfflineRepairer;

#[async_trait]
impl Repairer for OfflineRepairer {
    async fn repair(&self, request: RepairRequest<'_>) -> Result<Reply<DraftPlan>, RoleError> {
        let Some(steps) = request.draft.get("steps").and_then(Value::as_array) else {
            return Ok(Reply::free(DraftPlan(request.draft.clone())));
        };
        let bad: Vec<usize> = request.diagnostics.iter().filter_map(|d| d.index).collect();
        let kept: Vec<Value> = steps
            .iter()
            .enumerate()
            .filter(|(i, _)| !bad.contains(i))
            .map(|(_, s)| s.clone())
            .collect();
        let ids: Vec<String> = kept
            .iter()
            .filter_map(|s| s.get("id").and_then(Value::as_str).map(str::to_owned))
            .collect();
        let kept: Vec<Value> = kept
            .into_iter()
            .map(|mut s| {
                if let Some(Value::Array(deps)) = s.get_mut("depends_on") {
                    deps.retain(|d| d.as_str().is_some_and(|d| ids.iter().any(|i| i == d)));
                }
                s
            })
            .collect();
        Ok(Reply::free(DraftPlan(serde_json::json!({ "steps": kept }))))
    }
}
