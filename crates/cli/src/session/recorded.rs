//! Tools for a replay: a side-effect tool answers with the output the run
//! recorded instead of acting again.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;
use stepwise_core::{DynTool, RunState, StepId, ToolContext, ToolError, ToolRegistry, ToolSpec};

/// A side-effect tool during a replay: answers with the recorded output.
struct Recorded {
    spec: ToolSpec,
    outputs: Arc<BTreeMap<StepId, Value>>,
}

impl DynTool for Recorded {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call_json(&self, ctx: ToolContext, _args: Value) -> BoxFuture<'_, Result<Value, ToolError>> {
        let out = self.outputs.get(&ctx.step).cloned().ok_or_else(|| {
            ToolError::persistent(format!(
                "step {} has side effects and no recorded result; a replay does not repeat side effects",
                ctx.step
            ))
        });
        Box::pin(async move { out })
    }
}

/// Side-effect tools swapped for their recorded outputs.
pub(crate) fn without_side_effects(tools: ToolRegistry, original: &RunState) -> ToolRegistry {
    let outputs: Arc<BTreeMap<StepId, Value>> = Arc::new(
        original
            .step_results
            .iter()
            .map(|(k, r)| (k.clone(), r.output.clone()))
            .collect(),
    );
    tools.map(|tool| {
        if tool.spec().side_effect {
            Arc::new(Recorded {
                spec: tool.spec().clone(),
                outputs: Arc::clone(&outputs),
            })
        } else {
            tool
        }
    })
}
