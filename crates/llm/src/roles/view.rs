//! What roles show a model: tools, steps and results rendered for a prompt.
//! Results are written as indented text rather than JSON, so a passage
//! appears as it is — no `\n` or `\"` escapes for the model to copy into a
//! quote that then fails the engine's verbatim check — and they are cut to a
//! budget, so one huge result cannot crowd out the rest of the prompt.

use std::fmt::Write as _;

use serde::Serialize;
use serde_json::Value;
use stepwise_core::{Constraints, RunState, Step, StepId, StepStatus, ToolSpec};

/// A step's acceptance criteria in words: a typed check as the sentence it
/// stands for (`the output is not empty`), never as its JSON.
pub(crate) fn criteria(criteria: &[stepwise_core::plan::criteria::Criterion]) -> Vec<String> {
    criteria.iter().map(ToString::to_string).collect()
}

/// Characters of one step's result shown to the synthesizer.
pub(crate) const REPORT_BUDGET: usize = 6_000;
/// Characters of one step's result shown to the other roles.
pub(crate) const RESULT_BUDGET: usize = 2_500;

/// A tool as prompts show it.
#[derive(Debug, Serialize)]
pub(crate) struct ToolView {
    name: String,
    description: String,
    /// Compact JSON.
    args_schema: String,
    side_effect: bool,
}

pub(crate) fn tools(specs: &[ToolSpec]) -> Vec<ToolView> {
    specs
        .iter()
        .map(|s| ToolView {
            name: s.name.clone(),
            description: s.description.clone(),
            args_schema: compact_schema(&s.args_schema),
            side_effect: s.side_effect,
        })
        .collect()
}

/// The schema without its `$schema`/`title` noise, as compact JSON.
pub(crate) fn compact_schema(schema: &Value) -> String {
    let mut schema = schema.clone();
    if let Value::Object(obj) = &mut schema {
        obj.remove("$schema");
        obj.remove("title");
    }
    schema.to_string()
}

/// Constraints as compact JSON, or empty when there are none.
pub(crate) fn constraints(c: &Constraints) -> String {
    if *c == Constraints::default() {
        return String::new();
    }
    serde_json::to_string(c).unwrap_or_default()
}

/// A value as indented text: objects as `key: value`, arrays as `- item`,
/// strings as they are (whitespace collapsed), cut to `budget` characters.
pub(crate) fn readable(value: &Value, budget: usize) -> String {
    let mut out = String::new();
    write_value(&mut out, value, 0);
    truncate(out.trim_end(), budget)
}

fn write_value(out: &mut String, value: &Value, depth: usize) {
    let pad = "  ".repeat(depth);
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (k, v) in map {
                if is_scalar(v) {
                    let _ = writeln!(out, "{pad}{k}: {}", scalar(v));
                } else {
                    let _ = writeln!(out, "{pad}{k}:");
                    write_value(out, v, depth + 1);
                }
            }
        }
        Value::Array(items) if !items.is_empty() => {
            for v in items {
                if is_scalar(v) {
                    let _ = writeln!(out, "{pad}- {}", scalar(v));
                } else {
                    // YAML style: the item's first line follows the dash.
                    let mut item = String::new();
                    write_value(&mut item, v, depth + 1);
                    let inner = format!("{pad}  ");
                    out.push_str(&format!("{pad}- "));
                    out.push_str(item.strip_prefix(inner.as_str()).unwrap_or(&item));
                }
            }
        }
        other => {
            let _ = writeln!(out, "{pad}{}", scalar(other));
        }
    }
}

fn is_scalar(v: &Value) -> bool {
    match v {
        Value::Object(m) => m.is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => true,
    }
}

fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.split_whitespace().collect::<Vec<_>>().join(" "),
        other => other.to_string(),
    }
}

/// `text` cut to `budget` characters (on a char boundary), saying how much was cut.
pub(crate) fn truncate(text: &str, budget: usize) -> String {
    let total = text.chars().count();
    if total <= budget {
        return text.to_owned();
    }
    let kept: String = text.chars().take(budget).collect();
    format!("{kept}… [cut: {} more characters]", total - budget)
}

/// A step already run, as the repairer and the replanner see it.
#[derive(Debug, Serialize)]
pub(crate) struct RanStep {
    id: String,
    description: String,
    tool: String,
    status: String,
    /// Compact JSON.
    args: String,
    /// Readable, cut; empty unless it succeeded.
    result: String,
    /// Why it ended without success; empty if it succeeded.
    failure: String,
}

/// Every step of the current plan that is no longer pending, in plan order.
pub(crate) fn ran_steps(state: &RunState, budget: usize) -> Vec<RanStep> {
    state
        .plan
        .steps
        .iter()
        .filter(|s| s.status != StepStatus::Pending)
        .map(|s| RanStep {
            id: s.id.to_string(),
            description: s.description.clone(),
            tool: s.tool.clone(),
            status: s.status.to_string(),
            args: Value::Object(s.args.clone()).to_string(),
            result: state
                .step_results
                .get(&s.id)
                .map(|r| readable(&r.output, budget))
                .unwrap_or_default(),
            failure: if s.status == StepStatus::Succeeded {
                String::new()
            } else {
                failure_of(state, &s.id).unwrap_or_default()
            },
        })
        .collect()
}

/// Why a step was terminated, as folded from the log.
pub(crate) fn failure_of(state: &RunState, step: &StepId) -> Option<String> {
    state.step_terminations.get(step).cloned()
}

/// A step as compact JSON (what a plan would hold).
pub(crate) fn step_json(step: &Step) -> String {
    let mut value = serde_json::to_value(step).unwrap_or(Value::Null);
    if let Value::Object(obj) = &mut value {
        obj.remove("status");
        obj.remove("attempts");
    }
    value.to_string()
}

/// A succeeded step's result, as the synthesizer sees it.
#[derive(Debug, Serialize)]
pub(crate) struct ResultView {
    step: String,
    description: String,
    tool: String,
    output: String,
}

/// Every succeeded step's result, in plan order.
pub(crate) fn results(state: &RunState, budget: usize) -> Vec<ResultView> {
    state
        .plan
        .steps
        .iter()
        .filter_map(|s| {
            let result = state.step_results.get(&s.id)?;
            Some(ResultView {
                step: s.id.to_string(),
                description: s.description.clone(),
                tool: s.tool.clone(),
                output: readable(&result.output, budget),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn readable_keeps_passages_verbatim_and_cuts_long_output() {
        let v = json!({"results": [{"note_id": "n1", "passages": ["A \"quoted\"\nline."]}]});
        let text = readable(&v, 1_000);
        assert!(
            text.contains("results:\n  - note_id: n1\n    passages:"),
            "{text}"
        );
        assert!(text.contains("- A \"quoted\" line."));
        let cut = readable(&json!("é".repeat(50)), 10);
        assert!(cut.starts_with("éééééééééé…"));
        assert!(cut.contains("40 more"));
    }
}
