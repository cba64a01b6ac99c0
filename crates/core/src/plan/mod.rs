//! Plans: a versioned list of [`Step`]s forming a DAG.
//!
//! A plan arrives as JSON (from a planner, a repairer, a replanner or a file),
//! is checked by [`validate`](crate::plan::validate) as a whole — every problem
//! reported at once — and only then becomes a typed [`Plan`]. See
//! `docs/plan-format.md` for the format.

pub mod args;
pub mod criteria;
pub mod dag;
pub mod diff;
pub mod stream;
pub mod validate;

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ids::StepId;
use crate::step_status::StepStatus;

/// One tool call in a plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// Unique within the run, across every plan version.
    pub id: StepId,
    /// What this step finds out or does, in one sentence.
    pub description: String,
    /// The name of the tool to call.
    pub tool: String,
    /// Arguments for the tool. Strings may reference earlier results:
    /// `"$step_1"` (the whole output) or `"${step_1.output.items[0]}"`.
    #[serde(default)]
    pub args: serde_json::Map<String, Value>,
    /// Steps that must succeed before this one starts.
    #[serde(default)]
    pub depends_on: Vec<StepId>,
    /// Checked by the executor before the tool is called.
    #[serde(default)]
    pub preconditions: Vec<Precondition>,
    /// What a result must show for this step to count as done: free text
    /// judged by the assessor, or typed checks the engine evaluates itself
    /// ([`criteria`]). At least one.
    pub acceptance_criteria: Vec<criteria::Criterion>,
    /// Managed by the runtime; a plan file may omit it.
    #[serde(default)]
    pub status: StepStatus,
    /// Attempts made so far (retries included).
    #[serde(default)]
    pub attempts: u32,
    /// The kind of agent that handles the step (seed 004): it bounds the
    /// tools the step may call and selects the executor's prompt. Optional.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<AgentType>,
}

/// The agent types of the `verified` strategy (seed 004).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AgentType {
    /// Finds evidence: read-only tools (search, read).
    Gathering,
    /// Works on gathered results: read-only tools (compare, compute).
    Analysis,
    /// Produces the deliverable: may call tools with side effects (write).
    Output,
}

impl AgentType {
    /// Its name in plans.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Gathering => "gathering",
            Self::Analysis => "analysis",
            Self::Output => "output",
        }
    }

    /// Whether a step of this type may call a tool (only output steps may
    /// have side effects).
    pub fn allows(self, spec: &crate::tool::ToolSpec) -> bool {
        self == Self::Output || !spec.side_effect
    }
}

impl Step {
    /// A pending step with no dependencies, preconditions or criteria.
    pub fn new(
        id: impl Into<String>,
        description: impl Into<String>,
        tool: impl Into<String>,
    ) -> Self {
        Self {
            id: StepId::new(id),
            description: description.into(),
            tool: tool.into(),
            args: serde_json::Map::new(),
            depends_on: Vec::new(),
            preconditions: Vec::new(),
            acceptance_criteria: Vec::new(),
            status: StepStatus::Pending,
            attempts: 0,
            agent: None,
        }
    }

    /// Sets the arguments (must be a JSON object; anything else is ignored).
    #[must_use]
    pub fn with_args(mut self, args: Value) -> Self {
        if let Value::Object(map) = args {
            self.args = map;
        }
        self
    }

    /// Adds dependencies.
    #[must_use]
    pub fn after<I: IntoIterator<Item = S>, S: Into<String>>(mut self, deps: I) -> Self {
        self.depends_on
            .extend(deps.into_iter().map(|d| StepId::new(d)));
        self
    }

    /// Adds an acceptance criterion.
    #[must_use]
    pub fn accept(mut self, criterion: impl Into<criteria::Criterion>) -> Self {
        self.acceptance_criteria.push(criterion.into());
        self
    }

    /// Adds a precondition.
    #[must_use]
    pub fn require(mut self, precondition: Precondition) -> Self {
        self.preconditions.push(precondition);
        self
    }
}

/// A condition on earlier results, checked by the executor before the tool
/// runs. Data, not prose: it never depends on a model's judgement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "check", rename_all = "snake_case", deny_unknown_fields)]
pub enum Precondition {
    /// The referenced value exists and is not null.
    Exists {
        /// A reference such as `"${step_1.output.items}"`.
        #[serde(rename = "ref")]
        reference: String,
    },
    /// The referenced value is a non-empty string, array or object (or any number or boolean).
    NonEmpty {
        /// A reference such as `"${step_1.output.items}"`.
        #[serde(rename = "ref")]
        reference: String,
    },
    /// The referenced value equals `value`.
    Equals {
        /// A reference such as `"${step_1.output.status}"`.
        #[serde(rename = "ref")]
        reference: String,
        /// The expected value.
        value: Value,
    },
}

impl Precondition {
    /// The reference this precondition reads.
    pub fn reference(&self) -> &str {
        match self {
            Self::Exists { reference }
            | Self::NonEmpty { reference }
            | Self::Equals { reference, .. } => reference,
        }
    }
}

/// A validated plan. `version` starts at 1 and grows with every repair and replan.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct Plan {
    /// Grows by one with each repair or replan.
    pub version: u32,
    /// Steps in the order the planner gave them (dispatch order among ready steps).
    pub steps: Vec<Step>,
}

impl Plan {
    /// The steps that count against `max_steps`: all but those a replan
    /// superseded.
    pub fn active_steps(&self) -> usize {
        self.steps
            .iter()
            .filter(|s| s.status != crate::step_status::StepStatus::Skipped)
            .count()
    }

    /// The step with this id.
    pub fn step(&self, id: &StepId) -> Option<&Step> {
        self.steps.iter().find(|s| &s.id == id)
    }

    /// The step with this id, mutably.
    pub fn step_mut(&mut self, id: &StepId) -> Option<&mut Step> {
        self.steps.iter_mut().find(|s| &s.id == id)
    }

    /// Status of every step, by id.
    pub fn statuses(&self) -> BTreeMap<&StepId, StepStatus> {
        self.steps.iter().map(|s| (&s.id, s.status)).collect()
    }

    /// The plan as the JSON the validator reads (what `stepwise plan validate` takes).
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// A plan as a role produced it, before validation: any JSON at all. Either an
/// object with a `steps` array or a bare array of steps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct DraftPlan(pub Value);

impl DraftPlan {
    /// A draft from typed steps (scripted and offline roles).
    pub fn from_steps(steps: Vec<Step>) -> Self {
        Self(serde_json::json!({ "steps": steps }))
    }
}

/// The JSON Schema of a plan file, as published by `stepwise plan schema`.
pub fn plan_json_schema() -> Value {
    #[derive(JsonSchema)]
    #[allow(dead_code)]
    #[schemars(
        title = "Stepwise plan",
        description = "A DAG of tool-call steps. A bare array of steps is accepted too."
    )]
    struct PlanFile {
        /// Optional; the runtime numbers plan versions itself.
        version: Option<u32>,
        /// The steps, in dispatch order among ready steps.
        steps: Vec<Step>,
    }
    serde_json::to_value(schemars::schema_for!(PlanFile)).unwrap_or(Value::Null)
}

/// Builds the next plan document from the adopted plan and a draft from a
/// planner, replanner or repairer (either the remaining steps or a full plan).
///
/// - Steps that already ran (succeeded, terminated, skipped) are kept as they
///   are; a draft step that repeats one of them unchanged is dropped, a
///   changed one keeps its id and fails validation as a duplicate, so
///   completed work is never re-run or rewritten.
/// - Pending steps the draft does not mention become `skipped` (superseded).
/// - Every draft step starts `pending` with no attempts, whatever it claims.
///
/// A draft that is not a list of steps is returned as is, for the validator to reject.
pub fn compose(previous: &Plan, draft: &Value) -> Value {
    let steps = match draft {
        Value::Array(steps) => steps,
        Value::Object(obj) => match obj.get("steps") {
            Some(Value::Array(steps)) => steps,
            _ => return draft.clone(),
        },
        _ => return draft.clone(),
    };
    let mut kept: Vec<Value> = Vec::new();
    let mut new_steps: Vec<Value> = Vec::new();
    let draft_id = |v: &Value| v.get("id").and_then(Value::as_str).map(str::to_owned);
    for value in steps {
        let mut value = value.clone();
        if let Value::Object(obj) = &mut value {
            obj.remove("status");
            obj.remove("attempts");
        }
        let ran = draft_id(&value)
            .and_then(|id| previous.step(&StepId::new(id)))
            .filter(|s| s.status != StepStatus::Pending);
        if let Some(ran) = ran {
            let mut ran_json = serde_json::to_value(ran).unwrap_or(Value::Null);
            if let Value::Object(obj) = &mut ran_json {
                obj.remove("status");
                obj.remove("attempts");
            }
            if normalise_step(&ran_json) == normalise_step(&value) || same_step(ran, &value) {
                continue;
            }
        }
        new_steps.push(value);
    }
    let redeclared: Vec<String> = new_steps.iter().filter_map(draft_id).collect();
    for step in &previous.steps {
        if step.status == StepStatus::Pending {
            if redeclared.iter().any(|id| id == step.id.as_str()) {
                continue;
            }
            let mut skipped = step.clone();
            skipped.status = StepStatus::Skipped;
            kept.push(serde_json::to_value(skipped).unwrap_or(Value::Null));
        } else {
            kept.push(serde_json::to_value(step).unwrap_or(Value::Null));
        }
    }
    kept.extend(new_steps);
    // Built directly: `json!` would serialise `kept` into a second copy.
    let mut doc = serde_json::Map::new();
    doc.insert("steps".to_owned(), Value::Array(kept));
    Value::Object(doc)
}

/// Whether a draft's step is `ran` as written, read as a typed step (so a
/// criterion written `{"check": "non_empty"}` equals its typed form).
fn same_step(ran: &Step, draft: &Value) -> bool {
    let Ok(mut written) = Step::deserialize(draft) else {
        return false;
    };
    written.status = ran.status;
    written.attempts = ran.attempts;
    written == *ran
}

/// A step with its optional fields filled in, so `{}` and a missing `args` compare equal.
fn normalise_step(v: &Value) -> Value {
    let mut v = v.clone();
    if let Value::Object(obj) = &mut v {
        for (field, empty) in [
            ("args", Value::Object(serde_json::Map::new())),
            ("depends_on", Value::Array(Vec::new())),
            ("preconditions", Value::Array(Vec::new())),
        ] {
            if obj.get(field).is_none_or(Value::is_null) {
                obj.insert(field.to_owned(), empty);
            }
        }
    }
    v
}
