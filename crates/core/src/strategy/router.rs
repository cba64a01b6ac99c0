//! The router (seed 000): classifies a goal as simple (answered by a few
//! tool calls: `react`) or complex (worth a plan: `plan-execute`). The
//! decision and its reason are recorded, so routing accuracy can be checked
//! later against how the run went.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::goal::Goal;
use crate::roles::{Reply, RoleError};

/// How hard a goal is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Route {
    /// A lookup or a single question: a few tool calls answer it.
    Simple,
    /// Several parts, comparisons or constraints: worth a plan.
    Complex,
}

/// The router's decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Routing {
    /// simple or complex.
    pub route: Route,
    /// Why.
    pub reason: String,
}

/// route: classifies a goal.
#[async_trait]
pub trait Router: Send + Sync {
    /// Simple or complex, and why.
    async fn route(&self, goal: &Goal) -> Result<Reply<Routing>, RoleError>;
}
