//! What a plan is validated against: the tools, the run's bounds.

use crate::goal::Constraints;
use crate::tool::ToolCatalog;

/// What a plan is validated against.
#[derive(Debug, Clone, Copy)]
pub struct Limits<'a> {
    /// The tools steps may call.
    pub tools: &'a ToolCatalog,
    /// Most steps (not counting skipped ones) a plan may have.
    pub max_steps: Option<usize>,
    /// Allowed tools and the side-effect ban.
    pub constraints: &'a Constraints,
}
