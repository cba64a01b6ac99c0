//! Strategies: named ways to run a goal on one skeleton (seed 002). Every
//! strategy shares the run's event log, store, tools, approvals and report
//! checks; what differs is the [`Driver`] it picks once the goal is prepared:
//! the planning graph (with or without replanning, with or without
//! verification) or a ReAct loop. The choice is recorded (`strategy_chosen`),
//! so a resume continues the same way and a router's decisions can be audited.

pub mod react;
pub mod verify;

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;

use crate::decision::VerifyPolicy;
pub use crate::decision::{DEFAULT_MAX_TOOL_CALLS, DEFAULT_STRATEGY, Driver, Route, Routed};
use crate::goal::Goal;
use crate::retry::FailureClass;
use crate::roles::Roles;
use crate::roles::{Reply, RoleError, RoleName};
use crate::tool::ToolSpec;

/// A strategy's decision for one run.
#[derive(Debug, Clone, PartialEq)]
pub struct Choice {
    /// How to drive it.
    pub driver: Driver,
    /// Why (for a router, the classifier's reason).
    pub reason: String,
    /// A router's answers and route (recorded on `strategy_chosen`).
    pub routing: Option<Routed>,
}

/// A named way to run a goal.
#[async_trait]
pub trait Strategy: Send + Sync {
    /// The name users pick it by (`--strategy NAME`).
    fn name(&self) -> &str;
    /// One line for `stepwise strategies`.
    fn description(&self) -> &str;
    /// How to drive a run of `goal` with `tools` (called once, after prepare_input).
    async fn choose(
        &self,
        goal: &Goal,
        tools: &[ToolSpec],
        roles: &Roles,
    ) -> Result<Reply<Choice>, RoleError>;
}

/// A strategy that always picks the same driver.
#[derive(Debug, Clone)]
pub struct Fixed {
    name: String,
    description: String,
    driver: Driver,
}

impl Fixed {
    /// A strategy named `name` that always drives runs with `driver`.
    pub fn new(name: impl Into<String>, description: impl Into<String>, driver: Driver) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            driver,
        }
    }
}

#[async_trait]
impl Strategy for Fixed {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    async fn choose(
        &self,
        _goal: &Goal,
        _tools: &[ToolSpec],
        _roles: &Roles,
    ) -> Result<Reply<Choice>, RoleError> {
        Ok(Reply::free(Choice {
            driver: self.driver,
            reason: format!("the {} strategy always drives runs this way", self.name),
            routing: None,
        }))
    }
}

/// Seed 000's router: asks the Router role its three questions, then hands
/// the `react` route to one strategy and both plan-execute routes to
/// another — batched as that strategy drives it, sequential one step at a
/// time. Its react runs escalate to the planning graph at the tool-call cap.
pub struct RouterStrategy {
    simple: Arc<dyn Strategy>,
    complex: Arc<dyn Strategy>,
}

impl std::fmt::Debug for RouterStrategy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RouterStrategy")
            .field("simple", &self.simple.name())
            .field("complex", &self.complex.name())
            .finish()
    }
}

impl RouterStrategy {
    /// Routes `react` to `simple`, the plan-execute routes to `complex`.
    pub fn new(simple: Arc<dyn Strategy>, complex: Arc<dyn Strategy>) -> Self {
        Self { simple, complex }
    }
}

/// `driver` as `route` asks: a react loop that escalates at its cap, a
/// graph that dispatches one step at a time for the sequential route.
fn routed_driver(driver: Driver, route: Route) -> Driver {
    match (driver, route) {
        (
            Driver::React {
                isolated,
                max_tool_calls,
                ..
            },
            _,
        ) => Driver::React {
            isolated,
            max_tool_calls,
            escalate: true,
        },
        (
            Driver::Graph {
                replanning, verify, ..
            },
            Route::PlanExecuteSequential,
        ) => Driver::Graph {
            replanning,
            verify,
            sequential: true,
        },
        (graph @ Driver::Graph { .. }, _) => graph,
    }
}

#[async_trait]
impl Strategy for RouterStrategy {
    fn name(&self) -> &str {
        "router"
    }

    fn description(&self) -> &str {
        "seed 000's tree: steps known up front? three or more? the same tool repeated? → react, plan-execute batched or sequential; react escalates to plan-execute at its cap; answers recorded"
    }

    async fn choose(
        &self,
        goal: &Goal,
        tools: &[ToolSpec],
        roles: &Roles,
    ) -> Result<Reply<Choice>, RoleError> {
        let router = roles.router.as_ref().ok_or_else(|| {
            RoleError::failed(
                RoleName::Router,
                FailureClass::Persistent,
                "the router strategy needs a router role, and none is configured",
            )
        })?;
        let routed = router.route(goal, tools).await?;
        let decided = routed.value.decided();
        let target = match decided.route {
            Route::React => &self.simple,
            Route::PlanExecuteBatched | Route::PlanExecuteSequential => &self.complex,
        };
        let mut inner = target.choose(goal, tools, roles).await?;
        let a = &decided.answers;
        let yes = |b: bool| if b { "yes" } else { "no" };
        inner.value.reason = format!(
            "steps known up front: {}; three or more steps: {}; same tool repeated: {} → {} ({}): {}",
            yes(a.steps_known_up_front),
            yes(a.three_or_more_steps),
            yes(a.same_tool_repeated),
            decided.route,
            target.name(),
            a.reason
        );
        inner.value.driver = routed_driver(inner.value.driver, decided.route);
        inner.value.routing = Some(decided);
        inner.usage += routed.usage;
        let mut exchanges = routed.exchanges;
        exchanges.append(&mut inner.exchanges);
        inner.exchanges = exchanges;
        Ok(inner)
    }
}

/// Strategies by name. [`builtin`](Self::builtin) holds Stepwise's own;
/// users [`register`](Self::register) theirs beside them.
#[derive(Clone, Default)]
pub struct StrategyRegistry {
    strategies: BTreeMap<String, Arc<dyn Strategy>>,
}

impl std::fmt::Debug for StrategyRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.strategies.keys()).finish()
    }
}

impl StrategyRegistry {
    /// plan-execute, plan-solve, verified, react, react-isolated and router.
    pub fn builtin() -> Self {
        let mut registry = Self::default();
        let plan_execute: Arc<dyn Strategy> = Arc::new(Fixed::new(
            DEFAULT_STRATEGY,
            "the planning graph: plan, validate, run the DAG in parallel, assess each step, replan what is missing (bounded)",
            Driver::PLAN_EXECUTE,
        ));
        let react: Arc<dyn Strategy> = Arc::new(Fixed::new(
            "react",
            "model ↔ tools loop over the whole history, one call at a time, with a tool-call cap that ends in a report",
            Driver::React {
                isolated: false,
                max_tool_calls: DEFAULT_MAX_TOOL_CALLS,
                escalate: false,
            },
        ));
        registry.register(Arc::clone(&plan_execute));
        registry.register(Arc::new(Fixed::new(
            "plan-solve",
            "plan once, run the DAG, synthesize: no replanning (a failed step's dependants are skipped and named as gaps)",
            Driver::Graph {
                replanning: false,
                verify: None,
                sequential: false,
            },
        )));
        registry.register(Arc::new(Fixed::new(
            "verified",
            "VMAO: a DAG of sub-questions, a verifier's verdict per iteration, adaptive replanning until one of five stop conditions",
            Driver::Graph {
                replanning: true,
                verify: Some(VerifyPolicy::default()),
                sequential: false,
            },
        )));
        registry.register(Arc::clone(&react));
        registry.register(Arc::new(Fixed::new(
            "react-isolated",
            "ReAct whose history holds summaries of tool results, not the raw results",
            Driver::React {
                isolated: true,
                max_tool_calls: DEFAULT_MAX_TOOL_CALLS,
                escalate: false,
            },
        )));
        registry.register(Arc::new(RouterStrategy::new(react, plan_execute)));
        registry
    }

    /// Adds a strategy, replacing one of the same name.
    pub fn register(&mut self, strategy: Arc<dyn Strategy>) {
        self.strategies.insert(strategy.name().to_owned(), strategy);
    }

    /// The strategy called `name`.
    pub fn get(&self, name: &str) -> Option<Arc<dyn Strategy>> {
        self.strategies.get(name).cloned()
    }

    /// Every strategy, by name.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<dyn Strategy>> {
        self.strategies.values()
    }

    /// The names, sorted.
    pub fn names(&self) -> Vec<&str> {
        self.strategies.keys().map(String::as_str).collect()
    }
}
