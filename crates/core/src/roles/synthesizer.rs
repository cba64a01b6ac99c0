//! synthesize_report: the synthesizer writes the report from completed results.

use async_trait::async_trait;

use super::{Reply, RoleError};
use crate::decision::Report;
use crate::state::RunState;

/// synthesize_report.
#[async_trait]
pub trait Synthesizer: Send + Sync {
    /// Writes the final report from completed results; gaps stay gaps.
    async fn synthesize(&self, state: &RunState) -> Result<Reply<Report>, RoleError>;
}
