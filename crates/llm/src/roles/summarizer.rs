//! The LLM summarizer (`react-isolated`): turns one tool result into a short
//! observation — at most five sentences keeping source ids and figures — so
//! the actor's history stays bounded however many calls came before. It sees
//! the goal, why the call was made, the tool and its result (as plain text,
//! cut to a budget); nothing else.
//!
//! Roles ask for structured output only, so the summary comes back as
//! `{"summary": "..."}`; the engine bounds its length as well.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use stepwise_core::Goal;
use stepwise_core::roles::Summarizer;
use stepwise_core::roles::{Reply, RoleError, RoleName};
use stepwise_core::strategy::react::{MAX_SUMMARY_CHARS, bounded};

use super::{Ask, Backend, llm_role, schema_of, view};
use crate::structured::Check;

/// summarize with a model.
#[derive(Debug)]
pub struct LlmSummarizer {
    backend: Backend,
}
llm_role!(LlmSummarizer);

/// The model's answer.
#[derive(Debug, Deserialize, JsonSchema)]
struct Summary {
    /// At most five sentences, keeping source ids and figures.
    #[schemars(length(min = 1))]
    summary: String,
}

#[derive(Serialize)]
struct SummarizerContext<'a> {
    goal: &'a str,
    thought: &'a str,
    tool: &'a str,
    /// Readable text, cut to a budget.
    output: String,
    max_chars: usize,
}

#[async_trait]
impl Summarizer for LlmSummarizer {
    async fn summarize(
        &self,
        goal: &Goal,
        thought: &str,
        tool: &str,
        output: &Value,
    ) -> Result<Reply<String>, RoleError> {
        let context = SummarizerContext {
            goal: &goal.goal,
            thought,
            tool,
            output: view::readable(output, view::REPORT_BUDGET),
            max_chars: MAX_SUMMARY_CHARS,
        };
        let reply: Reply<Summary> = self
            .backend
            .ask(Ask {
                role: RoleName::Summarizer,
                purpose: "summarizer",
                template: "summarizer.jinja",
                context: &context,
                schema: schema_of::<Summary>("summary"),
                check: Check::Schema,
            })
            .await?;
        let summary = reply.value.summary.split_whitespace().collect::<Vec<_>>();
        Ok(Reply {
            value: bounded(&summary.join(" "), MAX_SUMMARY_CHARS),
            usage: reply.usage,
            exchanges: reply.exchanges,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schema_requires_a_non_empty_summary() {
        let schema = schema_of::<Summary>("summary").schema;
        let validator = jsonschema::validator_for(&schema).unwrap();
        assert!(validator.is_valid(&serde_json::json!({"summary": "[n1] 41 %."})));
        assert!(!validator.is_valid(&serde_json::json!({"summary": ""})));
        assert!(!validator.is_valid(&serde_json::json!({"text": "x"})));
    }
}
