//! A testing aid: tools slowed by `STEPWISE_TOOL_DELAY_MS`, so crash tests
//! can stop a run while a step is in flight.

use std::sync::Arc;

use serde_json::Value;
use stepwise_core::ToolRegistry;

/// A tool slowed down by `STEPWISE_TOOL_DELAY_MS` — a testing aid, so crash
/// tests can kill a run while a step is in flight.
struct Slowed {
    tool: Arc<dyn stepwise_core::DynTool>,
    delay: std::time::Duration,
}

impl stepwise_core::DynTool for Slowed {
    fn spec(&self) -> &stepwise_core::ToolSpec {
        self.tool.spec()
    }

    fn call_json(
        &self,
        ctx: stepwise_core::ToolContext,
        args: Value,
    ) -> futures::future::BoxFuture<'_, Result<Value, stepwise_core::ToolError>> {
        Box::pin(async move {
            tokio::time::sleep(self.delay).await;
            self.tool.call_json(ctx, args).await
        })
    }
}

/// Wraps every tool in [`Slowed`] when `STEPWISE_TOOL_DELAY_MS` is set.
pub(super) fn slowed(tools: ToolRegistry) -> ToolRegistry {
    let Some(ms) = std::env::var("STEPWISE_TOOL_DELAY_MS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    else {
        return tools;
    };
    tools.map(|tool| {
        Arc::new(Slowed {
            tool,
            delay: std::time::Duration::from_millis(ms),
        })
    })
}
