//! execute_step: a step executor runs one step attempt in an isolated context.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Reply;
use crate::failure::{FailureClass, StepFailure};
use crate::ids::StepId;
use crate::plan::Step;
use crate::tool::{DynTool, ToolContext};

/// What a step executor is given: an isolated context.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepContext {
    /// The step, with its description and acceptance criteria.
    pub step: Step,
    /// Arguments with every reference resolved.
    pub args: Value,
    /// Outputs of the step's direct dependencies.
    pub dependencies: Vec<DependencyOutput>,
    /// Run, step, attempt and idempotency key, for the tool.
    #[serde(skip)]
    pub tool_context: ToolContext,
}

/// One dependency's result, as a step executor sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DependencyOutput {
    /// The dependency.
    pub step: StepId,
    /// What it was for.
    pub description: String,
    /// Its output.
    pub output: Value,
}

/// execute_step.
#[async_trait]
pub trait StepExecutor: Send + Sync {
    /// Runs one step attempt. Errors are classified so the scheduler knows
    /// whether to retry.
    async fn execute(
        &self,
        context: StepContext,
        tool: Arc<dyn DynTool>,
    ) -> Result<Reply<Value>, StepFailure>;
}

/// Calls the step's tool with its resolved arguments: the executor for every
/// step whose arguments the plan fully specifies. A step with an open
/// argument (`{"$open": …}`) fails persistently: filling it in takes a model.
#[derive(Debug, Clone, Copy, Default)]
pub struct ToolCallExecutor;

/// Written out rather than with `#[async_trait]`: the checks and the
/// destructuring happen before the future is made, so the future a step in
/// flight holds is the tool's call and little else (an `async fn` would
/// keep the whole context beside it).
impl StepExecutor for ToolCallExecutor {
    fn execute<'life0, 'async_trait>(
        &'life0 self,
        context: StepContext,
        tool: Arc<dyn DynTool>,
    ) -> Pin<Box<dyn Future<Output = Result<Reply<Value>, StepFailure>> + Send + 'async_trait>>
    where
        'life0: 'async_trait,
        Self: 'async_trait,
    {
        let open = crate::plan::args::open_args(&context.args);
        if !open.is_empty() {
            let names: Vec<String> = open.iter().map(|(k, _)| format!("`{k}`")).collect();
            let (noun, verb) = if names.len() == 1 {
                ("argument", "is")
            } else {
                ("arguments", "are")
            };
            let failure = StepFailure::new(
                FailureClass::Persistent,
                crate::failure::FailureKind::InvalidArgs,
                format!(
                    "{noun} {} of {} {verb} open and no model executor is configured to fill \
                     {} in (run with a model, or give the value in the plan)",
                    names.join(", "),
                    context.step.tool,
                    if names.len() == 1 { "it" } else { "them" },
                ),
            );
            return Box::pin(std::future::ready(Err(failure)));
        }
        let StepContext {
            args, tool_context, ..
        } = context;
        Box::pin(async move {
            tool.call_json(tool_context, args)
                .await
                .map(Reply::free)
                .map_err(|e| {
                    let mut failure =
                        StepFailure::new(e.class, crate::failure::FailureKind::Tool, e.message);
                    failure.retry_after_ms = e.retry_after_ms;
                    failure
                })
        })
    }
}
