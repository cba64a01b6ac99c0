//! What a run used and cost: the one-line usage, the "Model usage" table of
//! `show`, and the JSON output `run --json` and `show --json` both print
//! (the run's final output, priced when `stepwise.toml` has a price).

use anyhow::Context;
use serde_json::{Value, json};
use stepwise_core::{RunState, Usage};

use super::table::Table;
use super::{duration, plural_u64};
use crate::config::Price;
use crate::host::price;

/// `3 model calls · 1200 tokens (1000 in, 200 out) · 2 tool calls · 1.2 s`.
pub(crate) fn usage_line(usage: &Usage) -> String {
    format!(
        "{} · {} tokens ({} in, {} out) · {} · {}",
        plural_u64(usage.llm_calls, "model call"),
        usage.input_tokens + usage.output_tokens,
        usage.input_tokens,
        usage.output_tokens,
        plural_u64(usage.tool_calls, "tool call"),
        duration(usage.wall_time_ms),
    )
}

/// `$0.000180`: enough digits for the cost of one call.
pub(crate) fn usd(amount: f64) -> String {
    format!("${amount:.6}")
}

/// The run's final output (seed 001's `final_output`) as JSON, with its
/// `cost` and a `cost_usd` on each entry of `usage_by_step` and
/// `usage_by_role` when `stepwise.toml` prices the run's model.
pub(crate) fn priced_output(state: &RunState) -> anyhow::Result<Value> {
    priced_output_with(state, price(state))
}

/// [`priced_output`] with the run's model and price given (`stepwise serve`
/// reads its config once, not at every request).
pub(crate) fn priced_output_with(
    state: &RunState,
    price: Option<(String, Price)>,
) -> anyhow::Result<Value> {
    let mut value = serde_json::to_value(state.final_output()).context("cannot encode the run")?;
    let Some((model, price)) = price else {
        return Ok(value);
    };
    if let Value::Object(map) = &mut value {
        map.insert(
            "cost".to_owned(),
            json!({"model": model, "usd": price.cost(&state.usage)}),
        );
    }
    for key in ["usage_by_step", "usage_by_role"] {
        let Some(Value::Object(parts)) = value.get_mut(key) else {
            continue;
        };
        for part in parts.values_mut() {
            let Ok(usage) = serde_json::from_value::<Usage>(part.clone()) else {
                continue;
            };
            if let Value::Object(map) = part {
                map.insert("cost_usd".to_owned(), json!(price.cost(&usage)));
            }
        }
    }
    Ok(value)
}

/// The "Model usage" table of `show`: each step that called a model (plan
/// order), then each other role that did, with calls, tokens and (with a
/// price) cost. Empty when the run made no model call.
pub(crate) fn usage_table(state: &RunState, price: Option<&Price>) -> String {
    let steps = stepwise_core::state::usage_by_step(&state.execution_history);
    let roles = stepwise_core::state::usage_by_role(&state.execution_history);
    let mut labelled: Vec<(String, Usage)> = state
        .plan
        .steps
        .iter()
        .filter_map(|s| steps.get(&s.id).map(|u| (format!("step {}", s.id), *u)))
        .collect();
    // Steps no longer in the plan, if any.
    labelled.extend(
        steps
            .iter()
            .filter(|(id, _)| state.plan.step(id).is_none())
            .map(|(id, u)| (format!("step {id}"), *u)),
    );
    labelled.extend(roles);
    // The label and the calls to the left, tokens and cost to the right.
    let mut table = Table::headless(5).right(&[2, 3, 4]).indent(2);
    for (label, u) in labelled {
        table.row([
            label,
            plural_u64(u.llm_calls, "call"),
            format!("{} in", u.input_tokens),
            format!("{} out", u.output_tokens),
            price.map(|p| usd(p.cost(&u))).unwrap_or_default(),
        ]);
    }
    if table.is_empty() {
        return String::new();
    }
    format!("\nModel usage\n{}", table.render())
}
