//! Decision data: what a run decided and recorded — a step's result, the
//! assessor's verdict, a review, the evidence and report, the verifier's
//! judgement, the driver a strategy chose, a router's route. Plain data at
//! the bottom of the crate: events, the state fold, roles and the engine all
//! read it, and it reads none of them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ids::StepId;

/// The recorded result of a succeeded step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StepResult {
    /// What the tool returned. References `${step.output...}` read this.
    pub output: Value,
    /// Attempts it took.
    pub attempts: u32,
    /// How long the successful attempt took, in milliseconds.
    pub duration_ms: u64,
}

/// The assessor's decision (seed 001's assess_progress branches).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Fine; carry on with the plan.
    Continue,
    /// Enough evidence: write the report now, even with gaps.
    Synthesize,
    /// A recoverable gap or blocker: change the remaining plan.
    Replan,
    /// Cannot go on safely: stop for a person.
    NeedsReview,
}

/// The assessor's judgement of one finished step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Assessment {
    /// Whether the step's acceptance criteria are met.
    pub acceptance_met: bool,
    /// What to do next.
    pub verdict: Verdict,
    /// Why.
    pub reason: String,
    /// Knowledge gaps this result reveals.
    #[serde(default)]
    pub new_gaps: Vec<String>,
    /// Earlier gaps this result closes (exact text).
    #[serde(default)]
    pub resolved_gaps: Vec<String>,
    /// Facts or progress notes worth keeping.
    #[serde(default)]
    pub observations: Vec<String>,
}

impl Assessment {
    /// Acceptance met, carry on.
    pub fn ok(reason: impl Into<String>) -> Self {
        Self {
            acceptance_met: true,
            verdict: Verdict::Continue,
            reason: reason.into(),
            new_gaps: Vec::new(),
            resolved_gaps: Vec::new(),
            observations: Vec::new(),
        }
    }

    /// Acceptance not met: a gap worth a replan.
    pub fn gap(gap: impl Into<String>) -> Self {
        let gap = gap.into();
        Self {
            acceptance_met: false,
            verdict: Verdict::Replan,
            reason: gap.clone(),
            new_gaps: vec![gap],
            resolved_gaps: Vec::new(),
            observations: Vec::new(),
        }
    }
}

/// A reviewer's decision on a plan version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum ReviewDecision {
    /// Run it.
    Approved {
        /// Who approved.
        by: String,
    },
    /// Do not run it.
    Rejected {
        /// Why.
        reason: String,
    },
    /// Ask a person: the run pauses at `awaiting_approval` until
    /// `stepwise approve` (or `reject`).
    Deferred,
}

/// A quoted passage from a step's output that backs a claim.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Evidence {
    /// The source (e.g. a note id).
    pub source_id: String,
    /// The step whose result contains the passage.
    pub step: StepId,
    /// The passage, verbatim.
    pub quote: String,
}

/// The synthesizer's report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Report {
    /// Markdown.
    pub text: String,
    /// The evidence the report cites.
    pub evidence: Vec<Evidence>,
    /// Knowledge gaps the report itself names (a section that found
    /// nothing, a dimension the plan had no room for), recorded with the
    /// run's other gaps so the gap list and the sections agree.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gaps: Vec<String>,
}

/// How complete the results are (seed 004's verdict).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Completeness {
    /// The results answer the goal.
    Complete,
    /// Some of it.
    Partial,
    /// Little or none of it.
    Incomplete,
}

impl Completeness {
    /// Its name in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Complete => "complete",
            Self::Partial => "partial",
            Self::Incomplete => "incomplete",
        }
    }
}

/// The Verifier's judgement of one iteration's results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Verification {
    /// complete, partial or incomplete.
    pub status: Completeness,
    /// How much of the goal the results answer, 0 to 1.
    pub completeness: f64,
    /// How sure the verifier is of its judgement, 0 to 1.
    #[serde(default = "half")]
    pub confidence: f64,
    /// Elements of the goal the results do not answer.
    #[serde(default)]
    pub missing: Vec<String>,
    /// Results that disagree, citing step ids.
    #[serde(default)]
    pub contradictions: Vec<String>,
    /// Sub-questions whose results are weak and worth retrying.
    #[serde(default)]
    pub weak_steps: Vec<StepId>,
}

fn half() -> f64 {
    0.5
}

impl Verification {
    /// Scores clamped to 0..=1 (a model may answer 80 for 0.8, or NaN).
    #[must_use]
    pub fn clamped(mut self) -> Self {
        let fix = |x: f64| {
            if x.is_nan() {
                0.0
            } else if x > 1.0 && x <= 100.0 {
                x / 100.0
            } else {
                x.clamp(0.0, 1.0)
            }
        };
        self.completeness = fix(self.completeness);
        self.confidence = fix(self.confidence);
        self
    }
}

/// The five stop conditions of the `verified` strategy, all configurable.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct VerifyPolicy {
    /// Stop once completeness reaches this (default 0.8).
    pub completeness: f64,
    /// Stop once confidence reaches this (default 0.75) …
    pub confidence: f64,
    /// … with completeness at least this (default 0.5).
    pub confidence_min_completeness: f64,
    /// Stop when an iteration improves completeness by less than this
    /// (default 0.05).
    pub min_improvement: f64,
    /// Most iterations (plan + replans), default 3.
    pub max_iterations: u32,
}

impl Default for VerifyPolicy {
    fn default() -> Self {
        Self {
            completeness: 0.8,
            confidence: 0.75,
            confidence_min_completeness: 0.5,
            min_improvement: 0.05,
            max_iterations: 3,
        }
    }
}

/// The name of the default strategy.
pub const DEFAULT_STRATEGY: &str = "plan-execute";

/// Tool calls a ReAct run may make unless told otherwise.
pub const DEFAULT_MAX_TOOL_CALLS: usize = 8;

/// How a run is driven once its goal is prepared.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "driver", rename_all = "snake_case")]
pub enum Driver {
    /// Seed 001's planning graph.
    Graph {
        /// Whether the assessor may ask for a replan. Without, a failed step's
        /// dependants are skipped and named as gaps (`plan-solve`).
        replanning: bool,
        /// Verify each iteration and stop on seed 004's conditions (`verified`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        verify: Option<VerifyPolicy>,
        /// One step at a time, in plan order, instead of every ready step at
        /// once (the router's `plan-execute-sequential` route).
        #[serde(default, skip_serializing_if = "is_false")]
        sequential: bool,
    },
    /// A model ↔ tools loop.
    React {
        /// Tool results enter the history as summaries (`react-isolated`).
        isolated: bool,
        /// Most tool calls; at the cap the actor must answer.
        max_tool_calls: usize,
        /// At the cap, hand the run to the planning graph instead of
        /// answering (the router's escalation; recorded as `strategy_escalated`).
        #[serde(default, skip_serializing_if = "is_false")]
        escalate: bool,
    },
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl Driver {
    /// The default planning graph: replanning on, no verification.
    pub const PLAN_EXECUTE: Self = Self::Graph {
        replanning: true,
        verify: None,
        sequential: false,
    };
}

/// Where seed 000's decision tree sends a goal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Route {
    /// Exploratory, or one or two steps: a model ↔ tools loop.
    React,
    /// Three or more steps decided up front, the same tool repeated: the
    /// planning graph, the repeated tool's independent calls dispatched
    /// together (one wave).
    PlanExecuteBatched,
    /// Three or more steps decided up front, each a different tool: the
    /// planning graph, one step at a time in plan order.
    PlanExecuteSequential,
}

impl Route {
    /// As recorded and printed (`react`, `plan-execute-batched`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::React => "react",
            Self::PlanExecuteBatched => "plan-execute-batched",
            Self::PlanExecuteSequential => "plan-execute-sequential",
        }
    }
}

impl std::fmt::Display for Route {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The router's answers to seed 000's three questions (§11), asked of every
/// goal before any work starts. A model answers all three; the tree reads
/// them in order ([`route`](Self::route)).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Routing {
    /// [1] Can the steps be decided up front (a linear task), rather than
    /// each depending on what the last one found (exploration)?
    pub steps_known_up_front: bool,
    /// [2] Will it take three or more steps (tool calls)?
    pub three_or_more_steps: bool,
    /// [3] Is the same tool repeated (over several items or parts)?
    pub same_tool_repeated: bool,
    /// Why, in one sentence.
    pub reason: String,
}

impl Routing {
    /// Seed 000's tree: [1] no → react; [2] no → react; [3] yes →
    /// plan-execute batched, no → plan-execute sequential.
    pub fn route(&self) -> Route {
        if !self.steps_known_up_front || !self.three_or_more_steps {
            Route::React
        } else if self.same_tool_repeated {
            Route::PlanExecuteBatched
        } else {
            Route::PlanExecuteSequential
        }
    }

    /// The answers with the route they lead to, as `strategy_chosen` records them.
    pub fn decided(self) -> Routed {
        Routed {
            route: self.route(),
            answers: self,
        }
    }
}

/// A router's answers and the route the tree drew from them (recorded on
/// `strategy_chosen`, so the bench can score routing and a person audit it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Routed {
    /// The three answers and the reason.
    #[serde(flatten)]
    pub answers: Routing,
    /// Where they lead.
    pub route: Route,
}
