//! The LLM step executor: for a step whose plan leaves arguments open
//! (`{"$open": "what to fill in"}`, see `docs/plan-format.md`), the model
//! writes them from the step's isolated context — its description and
//! criteria, the arguments the plan gives (references resolved), its
//! dependencies' outputs; never the run's history. The filled arguments are
//! checked against the tool's schema before the tool is called. A step with
//! no open argument is called directly, as `ToolCallExecutor` does, at no
//! model cost.
//!
//! Every model call is handed back — with the reply, or with the
//! [`StepFailure`] when the model's answer is unusable, the provider fails,
//! the filled arguments do not fit, or the tool then fails — so the engine
//! records and counts it either way.

use std::sync::Arc;

use async_trait::async_trait;
use serde::Serialize;
use serde_json::{Map, Value, json};
use stepwise_core::model::ModelExchange;
use stepwise_core::plan::args::open_args;
use stepwise_core::roles::{Reply, RoleError, RoleName, StepContext, StepExecutor};
use stepwise_core::{
    DynTool, FailureClass, FailureKind, ResponseSchema, StepFailure, ToolError, Usage,
};

use super::view::{self, ToolView};
use super::{Ask, Backend, llm_role};
use crate::structured::Check;

/// Most schema violations quoted in a failure.
const MAX_SCHEMA_ERRORS: usize = 5;

/// execute_step, with a model filling open arguments.
#[derive(Debug)]
pub struct LlmExecutor {
    backend: Backend,
}
llm_role!(LlmExecutor);

#[derive(Serialize)]
struct StepView<'a> {
    id: &'a str,
    description: &'a str,
    acceptance_criteria: Vec<String>,
    /// The step's agent type (gathering, analysis, output), if the plan gave one.
    agent: Option<&'static str>,
}

#[derive(Serialize)]
struct DependencyView {
    step: String,
    description: String,
    output: String,
}

/// One argument the model must write.
#[derive(Serialize)]
struct OpenView {
    name: String,
    /// What the plan says to fill in.
    hint: String,
    /// The argument's schema, compact JSON (`{}` if the tool's schema has none).
    schema: String,
}

#[derive(Serialize)]
struct ExecutorContext<'a> {
    step: StepView<'a>,
    tool: ToolView,
    /// The arguments the plan gives (references resolved), compact JSON;
    /// empty when it gives none.
    given: String,
    open: Vec<OpenView>,
    dependencies: Vec<DependencyView>,
}

fn tool_failure(e: ToolError) -> StepFailure {
    let mut failure = StepFailure::new(e.class, FailureKind::Tool, e.message);
    failure.retry_after_ms = e.retry_after_ms;
    failure
}

fn executor_failure(mut e: RoleError) -> StepFailure {
    let class = match &e {
        RoleError::Failed { class, .. } => *class,
        RoleError::Malformed { .. } => FailureClass::Persistent,
    };
    let usage = e.usage();
    let exchanges = e.take_exchanges();
    StepFailure::new(class, FailureKind::Executor, e.to_string()).with_calls(usage, exchanges)
}

/// The schema of the answer: an object holding exactly the open arguments,
/// each with its schema from the tool's (definitions kept, so `$ref`s resolve).
fn open_schema(tool_schema: &Value, open: &[(String, String)]) -> Value {
    let properties = tool_schema.get("properties").and_then(Value::as_object);
    let mut props = Map::new();
    for (name, _) in open {
        let schema = properties
            .and_then(|p| p.get(name))
            .cloned()
            .unwrap_or_else(|| json!({}));
        props.insert(name.clone(), schema);
    }
    let names: Vec<&str> = open.iter().map(|(n, _)| n.as_str()).collect();
    let mut schema = json!({
        "type": "object",
        "properties": props,
        "required": names,
        "additionalProperties": false
    });
    if let (Value::Object(out), Value::Object(tool)) = (&mut schema, tool_schema) {
        for key in ["$schema", "$defs", "definitions"] {
            if let Some(v) = tool.get(key) {
                out.insert(key.to_owned(), v.clone());
            }
        }
    }
    schema
}

/// Schema violations of the complete arguments, as one line.
fn schema_problems(schema: &Value, args: &Value) -> Result<(), String> {
    let validator = jsonschema::validator_for(schema)
        .map_err(|e| format!("the tool's argument schema does not compile: {e}"))?;
    let errors: Vec<String> = validator
        .iter_errors(args)
        .take(MAX_SCHEMA_ERRORS)
        .map(|e| {
            let path = e.instance_path().as_str();
            let path = if path.is_empty() { "/" } else { path };
            format!("at {path}: {e}")
        })
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("; "))
    }
}

#[async_trait]
impl StepExecutor for LlmExecutor {
    async fn execute(
        &self,
        context: StepContext,
        tool: Arc<dyn DynTool>,
    ) -> Result<Reply<Value>, StepFailure> {
        let spec = tool.spec().clone();
        let open = open_args(&context.args);
        if open.is_empty() {
            let value = tool
                .call_json(context.tool_context, context.args)
                .await
                .map_err(tool_failure)?;
            return Ok(Reply::free(value));
        }
        if spec.side_effect {
            // An approval covers the arguments it was shown; arguments written
            // after it would bypass it. (The plan validator refuses such a
            // plan; this guards plans that bypassed it.)
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
        let mut args = match context.args {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        let given: Map<String, Value> = args
            .iter()
            .filter(|(k, _)| !open.iter().any(|(name, _)| name == *k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let schema = open_schema(&spec.args_schema, &open);
        let step = &context.step;
        let prompt = ExecutorContext {
            step: StepView {
                id: step.id.as_str(),
                description: &step.description,
                acceptance_criteria: super::view::criteria(&step.acceptance_criteria),
                agent: step.agent.map(|a| a.as_str()),
            },
            tool: view::tools(std::slice::from_ref(&spec))
                .pop()
                .ok_or_else(|| {
                    StepFailure::new(FailureClass::Persistent, FailureKind::Executor, "no tool")
                })?,
            given: if given.is_empty() {
                String::new()
            } else {
                Value::Object(given).to_string()
            },
            open: open
                .iter()
                .map(|(name, hint)| OpenView {
                    name: name.clone(),
                    hint: hint.clone(),
                    schema: view::compact_schema(&schema["properties"][name]),
                })
                .collect(),
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
        let Reply {
            value: mut filled,
            usage,
            exchanges,
        } = self
            .backend
            .ask::<Map<String, Value>, _>(Ask {
                role: RoleName::StepExecutor,
                purpose: "executor",
                template: "executor.jinja",
                context: &prompt,
                schema: ResponseSchema {
                    name: "arguments".to_owned(),
                    schema,
                },
                check: Check::Schema,
            })
            .await
            .map_err(executor_failure)?;
        let fail = |message: String, usage: Usage, exchanges: Vec<ModelExchange>| {
            StepFailure::new(FailureClass::Persistent, FailureKind::InvalidArgs, message)
                .with_calls(usage, exchanges)
        };
        for (name, _) in &open {
            match filled.remove(name) {
                Some(value) => {
                    args.insert(name.clone(), value);
                }
                None => {
                    return Err(fail(
                        format!("the model did not fill in argument `{name}`"),
                        usage,
                        exchanges,
                    ));
                }
            }
        }
        let args = Value::Object(args);
        if let Err(problems) = schema_problems(&spec.args_schema, &args) {
            return Err(fail(
                format!(
                    "the arguments the model filled in do not match {}'s schema: {problems}",
                    spec.name
                ),
                usage,
                exchanges,
            ));
        }
        match tool.call_json(context.tool_context, args).await {
            Ok(value) => Ok(Reply {
                value,
                usage,
                exchanges,
            }),
            Err(e) => Err(tool_failure(e).with_calls(usage, exchanges)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_answer_schema_holds_exactly_the_open_arguments() {
        let tool = json!({
            "$defs": {"Lang": {"type": "string"}},
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "lang": {"$ref": "#/$defs/Lang"},
                "limit": {"type": "integer"}
            },
            "required": ["query"]
        });
        let open = vec![
            ("query".to_owned(), "what to look for".to_owned()),
            ("lang".to_owned(), "the language".to_owned()),
            ("other".to_owned(), "not in the schema".to_owned()),
        ];
        let schema = open_schema(&tool, &open);
        assert_eq!(schema["required"], json!(["query", "lang", "other"]));
        assert_eq!(schema["additionalProperties"], json!(false));
        assert_eq!(schema["properties"]["other"], json!({}));
        assert!(schema["properties"].get("limit").is_none());
        assert_eq!(schema["$defs"], tool["$defs"]);
        assert!(schema_problems(&schema, &json!({"query": "q", "lang": "en", "other": 1})).is_ok());
        assert!(schema_problems(&schema, &json!({"query": "q", "lang": 3, "other": 1})).is_err());
    }
}
