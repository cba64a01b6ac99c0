//! Tools: what a step calls. A [`Tool`] is typed (its arguments derive a JSON
//! Schema); [`DynTool`] is its object-safe JSON-in/JSON-out twin, which a
//! [`ToolRegistry`] holds. A [`ToolCatalog`] is just the specs, for validation.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ids::{RunId, StepId};
use crate::retry::FailureClass;

/// What a tool call knows about where it runs. The idempotency key is derived
/// from the run and the step — never from the attempt — so a tool with side
/// effects can recognise a repeat of a call it already made (after a retry or
/// a crash) and not act twice.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ToolContext {
    /// The run.
    pub run_id: RunId,
    /// The step.
    pub step: StepId,
    /// The attempt, from 1 (for logging; never part of the key).
    pub attempt: u32,
    /// Stable across attempts and resumes of this step.
    pub idempotency_key: String,
}

impl ToolContext {
    /// The context of attempt `attempt` of `step` in `run`.
    pub fn new(run_id: &RunId, step: &StepId, attempt: u32) -> Self {
        Self {
            run_id: run_id.clone(),
            step: step.clone(),
            attempt,
            idempotency_key: idempotency_key(run_id, step),
        }
    }
}

/// The idempotency key of a step: a hash of the run and step ids, so it is
/// the same for every attempt and every resume, and different for every step.
pub fn idempotency_key(run_id: &RunId, step: &StepId) -> String {
    // FNV-1a, 64 bit: stable across builds and platforms (unlike std's hasher).
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in run_id
        .as_str()
        .bytes()
        .chain([0u8])
        .chain(step.as_str().bytes())
    {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{}:{}:{hash:016x}", run_id, step)
}

/// Everything a planner and the validator need to know about a tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolSpec {
    /// The name steps use in `tool`.
    pub name: String,
    /// What the tool does, for planners.
    pub description: String,
    /// JSON Schema of the `args` object.
    #[serde(default = "any_object_schema")]
    pub args_schema: Value,
    /// Changes the world (writes a file, sends a mail). Needs an approval on record.
    #[serde(default)]
    pub side_effect: bool,
    /// Calling it twice with the same arguments has the effect of calling it once.
    #[serde(default)]
    pub idempotent: bool,
    /// How long one call may take, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// May destroy or overwrite what is already there (MCP's
    /// `destructiveHint`), as opposed to only adding to it. Said when an
    /// approval is asked for; meaningful only with `side_effect`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub destructive: bool,
    /// JSON Schema of the tool's output, where the tool publishes one (MCP's
    /// `outputSchema`): the validator checks `${step.output.field}`
    /// references against it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
}

impl ToolSpec {
    /// A read-only, non-idempotent tool taking any object, without a timeout.
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            args_schema: any_object_schema(),
            side_effect: false,
            idempotent: false,
            timeout_ms: None,
            destructive: false,
            output_schema: None,
        }
    }

    /// Replaces the argument schema.
    #[must_use]
    pub fn with_args_schema(mut self, schema: Value) -> Self {
        self.args_schema = schema;
        self
    }
}

fn any_object_schema() -> Value {
    serde_json::json!({ "type": "object" })
}

/// A failed tool call, classified so the scheduler knows whether to retry.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct ToolError {
    /// Retry (transient), replan (persistent) or stop (fatal).
    pub class: FailureClass,
    /// A human message.
    pub message: String,
    /// A delay the tool asked for before a retry (e.g. HTTP Retry-After), in milliseconds.
    pub retry_after_ms: Option<u64>,
}

impl ToolError {
    /// A failure worth retrying (timeout, rate limit, 5xx).
    pub fn transient(message: impl Into<String>) -> Self {
        Self {
            class: FailureClass::Transient,
            message: message.into(),
            retry_after_ms: None,
        }
    }

    /// A failure a retry would repeat (bad input, not found).
    pub fn persistent(message: impl Into<String>) -> Self {
        Self {
            class: FailureClass::Persistent,
            message: message.into(),
            retry_after_ms: None,
        }
    }

    /// A failure that must stop the run (budget, denied approval).
    pub fn fatal(message: impl Into<String>) -> Self {
        Self {
            class: FailureClass::Fatal,
            message: message.into(),
            retry_after_ms: None,
        }
    }

    /// Asks for at least this delay before the next attempt.
    #[must_use]
    pub fn retry_after_ms(mut self, ms: u64) -> Self {
        self.retry_after_ms = Some(ms);
        self
    }
}

/// Side effects, idempotency and timeout of a tool.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Effects {
    /// Changes the world; needs an approval on record.
    pub side_effect: bool,
    /// Safe to call again with the same arguments.
    pub idempotent: bool,
    /// Most time one call may take, in milliseconds.
    pub timeout_ms: Option<u64>,
}

/// A typed tool. Implement this; register it with [`ToolRegistry::register`].
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a Stepwise tool",
    note = "implement `stepwise_core::Tool` (NAME, Args, Output, description, call)"
)]
pub trait Tool: Send + Sync + 'static {
    /// The name plans use.
    const NAME: &'static str;
    /// Arguments; their JSON Schema is derived and published to planners.
    type Args: DeserializeOwned + JsonSchema + Send;
    /// The result, stored as the step's output.
    type Output: Serialize;

    /// What the tool does, for planners.
    fn description(&self) -> String;

    /// Side effects, idempotency, timeout. Read-only, not idempotent, no timeout by default.
    fn effects(&self) -> Effects {
        Effects::default()
    }

    /// Runs the tool. `ctx.idempotency_key` identifies the step across
    /// attempts and resumes; a tool with side effects should use it to act once.
    fn call(
        &self,
        ctx: &ToolContext,
        args: Self::Args,
    ) -> impl Future<Output = Result<Self::Output, ToolError>> + Send;
}

/// The object-safe twin of [`Tool`]: JSON in, JSON out. MCP tools implement it directly.
pub trait DynTool: Send + Sync {
    /// The tool's spec.
    fn spec(&self) -> &ToolSpec;
    /// Runs the tool on JSON arguments.
    fn call_json(&self, ctx: ToolContext, args: Value) -> BoxFuture<'_, Result<Value, ToolError>>;
}

/// Adapts a typed [`Tool`] to [`DynTool`], computing its spec once.
struct Typed<T> {
    tool: T,
    spec: ToolSpec,
}

impl<T: Tool> DynTool for Typed<T> {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call_json(&self, ctx: ToolContext, args: Value) -> BoxFuture<'_, Result<Value, ToolError>> {
        Box::pin(async move {
            let args: T::Args = serde_json::from_value(args).map_err(|e| {
                ToolError::persistent(format!("invalid arguments for {}: {e}", T::NAME))
            })?;
            let output = self.tool.call(&ctx, args).await?;
            serde_json::to_value(output).map_err(|e| {
                ToolError::persistent(format!("{} returned unserialisable output: {e}", T::NAME))
            })
        })
    }
}

/// The tools a run may call, by name.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: BTreeMap<String, Arc<dyn DynTool>>,
}

impl fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.tools.keys()).finish()
    }
}

impl ToolRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a typed tool (replacing one of the same name).
    pub fn register<T: Tool>(&mut self, tool: T) -> &mut Self {
        let effects = tool.effects();
        let schema = serde_json::to_value(schemars::schema_for!(T::Args))
            .unwrap_or_else(|_| any_object_schema());
        let spec = ToolSpec {
            name: T::NAME.to_owned(),
            description: tool.description(),
            args_schema: schema,
            side_effect: effects.side_effect,
            idempotent: effects.idempotent,
            timeout_ms: effects.timeout_ms,
            destructive: false,
            output_schema: None,
        };
        self.register_dyn(Arc::new(Typed { tool, spec }))
    }

    /// Adds an already-erased tool (e.g. one served over MCP).
    pub fn register_dyn(&mut self, tool: Arc<dyn DynTool>) -> &mut Self {
        self.tools.insert(tool.spec().name.clone(), tool);
        self
    }

    /// The tool with this name.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn DynTool>> {
        self.tools.get(name)
    }

    /// Every tool's spec, sorted by name.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools.values().map(|t| t.spec().clone()).collect()
    }

    /// Each tool replaced by what `wrap` makes of it (a wrapper that
    /// slows, guards or stands in for it), under the name its result gives.
    #[must_use]
    pub fn map(self, mut wrap: impl FnMut(Arc<dyn DynTool>) -> Arc<dyn DynTool>) -> Self {
        let mut out = Self::new();
        for tool in self.tools.into_values() {
            out.register_dyn(wrap(tool));
        }
        out
    }

    /// A catalogue of these tools for validation.
    pub fn catalog(&self) -> Result<ToolCatalog, CatalogError> {
        ToolCatalog::new(self.specs())
    }
}

/// A tool spec whose schema does not compile.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CatalogError {
    /// The schema is not a valid JSON Schema.
    #[error("tool {tool:?}: its args_schema is not a valid JSON Schema: {message}")]
    InvalidSchema {
        /// The tool.
        tool: String,
        /// What the schema compiler said.
        message: String,
    },
    /// Two tools share a name.
    #[error("tool {0:?} is listed twice")]
    Duplicate(String),
    /// A tool has an empty name.
    #[error("a tool has an empty name")]
    EmptyName,
}

/// Tool specs with their argument schemas compiled, for the plan validator.
pub struct ToolCatalog {
    tools: BTreeMap<String, (ToolSpec, jsonschema::Validator)>,
}

impl fmt::Debug for ToolCatalog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.tools.keys()).finish()
    }
}

impl ToolCatalog {
    /// Compiles every spec's schema; fails on the first bad one.
    pub fn new(specs: impl IntoIterator<Item = ToolSpec>) -> Result<Self, CatalogError> {
        let mut tools = BTreeMap::new();
        for spec in specs {
            if spec.name.trim().is_empty() {
                return Err(CatalogError::EmptyName);
            }
            let validator = jsonschema::validator_for(&spec.args_schema).map_err(|e| {
                CatalogError::InvalidSchema {
                    tool: spec.name.clone(),
                    message: e.to_string(),
                }
            })?;
            if tools.contains_key(&spec.name) {
                return Err(CatalogError::Duplicate(spec.name));
            }
            tools.insert(spec.name.clone(), (spec, validator));
        }
        Ok(Self { tools })
    }

    /// The spec of a tool.
    pub fn spec(&self, name: &str) -> Option<&ToolSpec> {
        self.tools.get(name).map(|(s, _)| s)
    }

    /// Tool names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tools.keys().map(String::as_str)
    }

    /// The argument schema's validator of tool `name` (see
    /// [`check_args`](Self::check_args), in `plan::args`, which knows what
    /// a reference and an open argument are).
    pub(crate) fn validator(&self, name: &str) -> Option<&jsonschema::Validator> {
        self.tools.get(name).map(|(_, v)| v)
    }
}
