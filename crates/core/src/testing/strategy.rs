//! Scripted roles of the other strategies: verifier, actor, summarizer and
//! router. Each replays its answers in order (an exhausted script is a typed
//! role failure), may charge a fixed usage per call (to exercise token
//! budgets), and the actor keeps what it was shown.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::Value;

use super::Script;
use crate::decision::{Driver, Routing, Verification};
use crate::goal::Goal;
use crate::roles::{ActRequest, Action, Actor, Router, Summarizer, Turn, Verifier};
use crate::roles::{Reply, RoleError, RoleName};
use crate::state::RunState;
use crate::strategy::{Fixed, RouterStrategy};
use crate::tool::ToolSpec;
use crate::usage::Usage;

/// A scripted role's answers and what each call costs.
#[derive(Debug)]
pub struct Costed<T> {
    /// The answers.
    pub script: Script<T>,
    /// Charged for every answer.
    pub cost: Usage,
}

impl<T> Costed<T> {
    fn new(role: RoleName, answers: impl IntoIterator<Item = T>) -> Self {
        Self {
            script: Script::new(role, answers.into_iter().map(Ok)),
            cost: Usage::default(),
        }
    }

    fn next(&self) -> Result<Reply<T>, RoleError> {
        let mut reply = self.script.next()?;
        reply.usage = self.cost;
        Ok(reply)
    }

    /// How many times the role was asked.
    pub fn calls(&self) -> usize {
        self.script.calls()
    }
}

/// A verifier that replays verdicts.
#[derive(Debug)]
pub struct ScriptedVerifier(pub Costed<Verification>);

impl ScriptedVerifier {
    /// Replays these verdicts.
    pub fn new(verdicts: impl IntoIterator<Item = Verification>) -> Self {
        Self(Costed::new(RoleName::Verifier, verdicts))
    }

    /// Charges `cost` for every verdict.
    #[must_use]
    pub fn costing(mut self, cost: Usage) -> Self {
        self.0.cost = cost;
        self
    }
}

#[async_trait]
impl Verifier for ScriptedVerifier {
    async fn verify(&self, _state: &RunState) -> Result<Reply<Verification>, RoleError> {
        self.0.next()
    }
}

/// An actor that replays actions and records every history it was shown.
#[derive(Debug)]
pub struct ScriptedActor {
    /// The actions.
    pub actions: Costed<Action>,
    /// The history of each call, in order.
    pub seen: Mutex<Vec<Vec<Turn>>>,
}

impl ScriptedActor {
    /// Replays these actions.
    pub fn new(actions: impl IntoIterator<Item = Action>) -> Self {
        Self {
            actions: Costed::new(RoleName::Actor, actions),
            seen: Mutex::new(Vec::new()),
        }
    }

    /// Charges `cost` for every action.
    #[must_use]
    pub fn costing(mut self, cost: Usage) -> Self {
        self.actions.cost = cost;
        self
    }

    /// The histories shown so far.
    pub fn histories(&self) -> Vec<Vec<Turn>> {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

#[async_trait]
impl Actor for ScriptedActor {
    async fn act(&self, request: ActRequest<'_>) -> Result<Reply<Action>, RoleError> {
        if let Ok(mut seen) = self.seen.lock() {
            seen.push(request.history.to_vec());
        }
        self.actions.next()
    }
}

/// A summarizer that keeps the first `chars` characters of a result's JSON.
#[derive(Debug, Clone, Copy)]
pub struct PrefixSummarizer {
    /// Characters kept.
    pub chars: usize,
}

#[async_trait]
impl Summarizer for PrefixSummarizer {
    async fn summarize(
        &self,
        _goal: &Goal,
        _thought: &str,
        _tool: &str,
        output: &Value,
    ) -> Result<Reply<String>, RoleError> {
        let text = output.to_string();
        Ok(Reply::free(format!(
            "summary: {}",
            text.chars().take(self.chars).collect::<String>()
        )))
    }
}

/// A router that replays decisions.
#[derive(Debug)]
pub struct ScriptedRouter(pub Costed<Routing>);

impl ScriptedRouter {
    /// Replays these decisions.
    pub fn new(decisions: impl IntoIterator<Item = Routing>) -> Self {
        Self(Costed::new(RoleName::Router, decisions))
    }
}

#[async_trait]
impl Router for ScriptedRouter {
    async fn route(&self, _goal: &Goal, _tools: &[ToolSpec]) -> Result<Reply<Routing>, RoleError> {
        self.0.next()
    }
}

/// The `router` strategy over a react loop capped at `cap` calls and
/// plan-execute: at the cap its react runs escalate (tests of the escalation).
pub fn capped_router(cap: usize) -> Arc<RouterStrategy> {
    Arc::new(RouterStrategy::new(
        Arc::new(Fixed::new(
            "react",
            "react capped for a test",
            Driver::React {
                isolated: false,
                max_tool_calls: cap,
                escalate: false,
            },
        )),
        Arc::new(Fixed::new(
            "plan-execute",
            "plan-execute for a test",
            Driver::PLAN_EXECUTE,
        )),
    ))
}
