//! Attribute keys. The GenAI ones are OpenTelemetry's GenAI semantic
//! conventions, spelled out here: `opentelemetry-semantic-conventions` has
//! them only as experimental, deprecated constants (they moved to a separate
//! GenAI registry), which `-D warnings` refuses. The `openinference.*`,
//! `llm.*` and `tool.name` keys are OpenInference's, which Arize Phoenix
//! reads to label spans and count tokens.

pub(crate) const GEN_AI_OPERATION_NAME: &str = "gen_ai.operation.name";
pub(crate) const GEN_AI_PROVIDER_NAME: &str = "gen_ai.provider.name";
/// The older name of `gen_ai.provider.name`, still read by many backends.
pub(crate) const GEN_AI_SYSTEM: &str = "gen_ai.system";
pub(crate) const GEN_AI_REQUEST_MODEL: &str = "gen_ai.request.model";
pub(crate) const GEN_AI_REQUEST_TEMPERATURE: &str = "gen_ai.request.temperature";
pub(crate) const GEN_AI_REQUEST_MAX_TOKENS: &str = "gen_ai.request.max_tokens";
pub(crate) const GEN_AI_RESPONSE_MODEL: &str = "gen_ai.response.model";
pub(crate) const GEN_AI_RESPONSE_FINISH_REASONS: &str = "gen_ai.response.finish_reasons";
pub(crate) const GEN_AI_USAGE_INPUT_TOKENS: &str = "gen_ai.usage.input_tokens";
pub(crate) const GEN_AI_USAGE_OUTPUT_TOKENS: &str = "gen_ai.usage.output_tokens";
pub(crate) const GEN_AI_TOOL_NAME: &str = "gen_ai.tool.name";
pub(crate) const GEN_AI_TOOL_CALL_ID: &str = "gen_ai.tool.call.id";
pub(crate) const GEN_AI_TOOL_CALL_ARGUMENTS: &str = "gen_ai.tool.call.arguments";
pub(crate) const GEN_AI_TOOL_CALL_RESULT: &str = "gen_ai.tool.call.result";
pub(crate) const GEN_AI_AGENT_NAME: &str = "gen_ai.agent.name";
pub(crate) const GEN_AI_CONVERSATION_ID: &str = "gen_ai.conversation.id";
pub(crate) const GEN_AI_INPUT_MESSAGES: &str = "gen_ai.input.messages";
pub(crate) const GEN_AI_OUTPUT_MESSAGES: &str = "gen_ai.output.messages";
pub(crate) const ERROR_TYPE: &str = "error.type";

pub(crate) const STEPWISE_RUN_ID: &str = "stepwise.run_id";
pub(crate) const STEPWISE_STEP_ID: &str = "stepwise.step_id";
pub(crate) const STEPWISE_ATTEMPT: &str = "stepwise.attempt";
pub(crate) const STEPWISE_PLAN_VERSION: &str = "stepwise.plan_version";
pub(crate) const STEPWISE_ROLE: &str = "stepwise.role";
pub(crate) const STEPWISE_NODE: &str = "stepwise.node";
pub(crate) const STEPWISE_EVENTS: &str = "stepwise.events";
pub(crate) const STEPWISE_STRATEGY: &str = "stepwise.strategy";
pub(crate) const STEPWISE_STATUS: &str = "stepwise.status";
pub(crate) const STEPWISE_REPLAN_COUNT: &str = "stepwise.replan_count";
pub(crate) const STEPWISE_LLM_CALLS: &str = "stepwise.llm_calls";
pub(crate) const STEPWISE_TOOL_CALLS: &str = "stepwise.tool_calls";
pub(crate) const STEPWISE_WAITED_MS: &str = "stepwise.waited_ms";
pub(crate) const STEPWISE_INPUT: &str = "stepwise.input";

pub(crate) const OPENINFERENCE_SPAN_KIND: &str = "openinference.span.kind";
pub(crate) const LLM_MODEL_NAME: &str = "llm.model_name";
pub(crate) const LLM_PROVIDER: &str = "llm.provider";
pub(crate) const LLM_TOKEN_COUNT_PROMPT: &str = "llm.token_count.prompt";
pub(crate) const LLM_TOKEN_COUNT_COMPLETION: &str = "llm.token_count.completion";
pub(crate) const LLM_TOKEN_COUNT_TOTAL: &str = "llm.token_count.total";
pub(crate) const TOOL_NAME: &str = "tool.name";
pub(crate) const INPUT_VALUE: &str = "input.value";
pub(crate) const OUTPUT_VALUE: &str = "output.value";
