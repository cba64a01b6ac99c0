//! summarize (`react-isolated`): the summarizer turns a tool result into a short observation.

use async_trait::async_trait;
use serde_json::Value;

use super::{Reply, RoleError};
use crate::goal::Goal;

/// summarize: turns a tool result into a short observation (`react-isolated`).
#[async_trait]
pub trait Summarizer: Send + Sync {
    /// A summary of `output`, the result of `tool` called for `thought`.
    async fn summarize(
        &self,
        goal: &Goal,
        thought: &str,
        tool: &str,
        output: &Value,
    ) -> Result<Reply<String>, RoleError>;
}
