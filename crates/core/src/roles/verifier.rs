//! verify (the `verified` strategy, seed 004): the verifier scores an iteration's results.

use async_trait::async_trait;

use super::{Reply, RoleError};
use crate::decision::Verification;
use crate::state::RunState;

/// verify: scores an iteration's results against the goal.
#[async_trait]
pub trait Verifier: Send + Sync {
    /// Judges the results so far (every succeeded step's output is in `state`).
    async fn verify(&self, state: &RunState) -> Result<Reply<Verification>, RoleError>;
}
