//! The LLM step executor: for a step whose arguments the plan left open, the
//! model writes them from the step's isolated context (its description and
//! criteria, resolved inputs, its dependencies' outputs — never the run's
//! history), then the tool is called. A step with arguments is called
//! directly, as `ToolCallExecutor` does, at no model cost.

use std::sync::Arc;

use async_trait::async_trait;
use serde::Serialize;
use serde_json::Value;
use stepwise_core::roles::{Reply, RoleError, RoleName, StepContext, StepExecutor};
use stepwise_core::{DynTool, FailureClass, FailureKind, ResponseSchema, StepFailure, ToolError};

use super::view::{self, ToolView};
use super::{Ask, Backend, llm_role};
use crate::structured::Check;

/// execute_step, with a model filling open arguments.
#[derive(Debug)]
pub struct LlmExecutor {
    backend: Backend,
}
llm_role!(LlmExecutor);

/// Whether the plan left the arguments open: none given, though the tool
/// requires some.
pub(crate) fn args_open(args: &Value, schema: &Value) -> bool {
    let empty = match args {
        Value::Null => true,
        Value::Object(map) => map.is_empty(),
        _ => false,
    };
    let requires = schema
        .get("required")
        .and_then(Value::as_array)
        .is_some_and(|r| !r.is_empty());
    empty && requires
}

#[derive(Serialize)]
struct StepView<'a> {
    id: &'a str,
    description: &'a str,
    acceptance_criteria: &'a [String],
}

#[derive(Serialize)]
struct DependencyView {
    step: String,
    description: String,
    output: String,
}

#[derive(Serialize)]
struct ExecutorContext<'a> {
    step: StepView<'a>,
    tool: ToolView,
    dependencies: Vec<DependencyView>,
}

fn tool_failure(e: ToolError) -> StepFailure {
    StepFailure {
        class: e.class,
        kind: FailureKind::Tool,
        message: e.message,
        retry_after_ms: e.retry_after_ms,
    }
}

fn executor_failure(e: &RoleError) -> StepFailure {
    let class = match e {
        RoleError::Failed { class, .. } => *class,
        RoleError::Malformed { .. } => FailureClass::Persistent,
    };
    StepFailure::new(class, FailureKind::Executor, e.to_string())
}

#[async_trait]
impl StepExecutor for LlmExecutor {
    async fn execute(
        &self,
        context: StepContext,
        tool: Arc<dyn DynTool>,
    ) -> Result<Reply<Value>, StepFailure> {
        let spec = tool.spec().clone();
        if !args_open(&context.args, &spec.args_schema) {
            let value = tool
                .call_json(context.tool_context, context.args)
                .await
                .map_err(tool_failure)?;
            return Ok(Reply::free(value));
        }
        if spec.side_effect {
            // An approval covers the arguments it was shown; arguments written
            // after it would bypass it.
            return Err(StepFailure::new(
                FailureClass::Persistent,
                FailureKind::InvalidArgs,
                format!(
                    "{} has side effects, so its arguments must be in the plan (where they \
                     are approved), not filled in at run time",
                    spec.name
                ),
            ));
        }
        let step = &context.step;
        let prompt = ExecutorContext {
            step: StepView {
                id: step.id.as_str(),
                description: &step.description,
                acceptance_criteria: &step.acceptance_criteria,
            },
            tool: view::tools(std::slice::from_ref(&spec))
                .pop()
                .ok_or_else(|| {
                    StepFailure::new(FailureClass::Persistent, FailureKind::Executor, "no tool")
                })?,
            dependencies: context
                .dependencies
                .iter()
                .map(|d| DependencyView {
                    step: d.step.to_string(),
                    description: d.description.clone(),
                    output: view::readable(&d.output, view::RESULT_BUDGET),
                })
                .collect(),
        };
        let asked: Result<Reply<Value>, RoleError> = self
            .backend
            .ask(Ask {
                role: RoleName::StepExecutor,
                purpose: "executor",
                template: "executor.jinja",
                context: &prompt,
                schema: ResponseSchema {
                    name: "arguments".to_owned(),
                    schema: spec.args_schema.clone(),
                },
                check: Check::Schema,
            })
            .await;
        // A StepFailure has no room for exchanges: a failed model call is
        // recorded through the failure's message only.
        let Reply {
            value: args,
            usage,
            exchanges,
        } = asked.map_err(|e| executor_failure(&e))?;
        let value = tool
            .call_json(context.tool_context, args)
            .await
            .map_err(tool_failure)?;
        Ok(Reply {
            value,
            usage,
            exchanges,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn open_means_empty_args_and_required_properties() {
        let schema = json!({"type": "object", "required": ["query"]});
        assert!(args_open(&json!({}), &schema));
        assert!(!args_open(&json!({"query": "x"}), &schema));
        assert!(!args_open(&json!({}), &json!({"type": "object"})));
        assert!(!args_open(
            &json!({}),
            &json!({"type": "object", "required": []})
        ));
    }
}
