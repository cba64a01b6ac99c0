//! `stepwise show RUN --diff [V1..V2]`: what changed between two versions of
//! a run's plan, by structure (`stepwise_core::plan::diff`), not by text.

use serde_json::{Value, json};
use stepwise_core::plan::diff::{PlanDiff, diff};
use stepwise_core::plan::{Plan, Step};
use stepwise_core::{EventKind, RunState};

/// Every validated version of the run's plan, in order.
pub(crate) fn versions(state: &RunState) -> Vec<&Plan> {
    state
        .execution_history
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::PlanValidated { plan } => Some(plan),
            _ => None,
        })
        .collect()
}

/// The two versions `range` names (`V1..V2`; none: the last two), or why not.
pub(crate) fn pick<'a>(
    plans: &[&'a Plan],
    range: Option<&str>,
) -> Result<(&'a Plan, &'a Plan), String> {
    let find = |v: u32| {
        plans
            .iter()
            .copied()
            .find(|p| p.version == v)
            .ok_or_else(|| format!("the run has no plan version {v} (it has {})", listed(plans)))
    };
    match range {
        None => match plans {
            [.., a, b] => Ok((a, b)),
            _ => Err(format!(
                "the run has {}: nothing to compare (a replan makes a new version)",
                listed(plans)
            )),
        },
        Some(text) => {
            let (a, b) = text
                .split_once("..")
                .ok_or_else(|| format!("--diff {text}: expected V1..V2, e.g. 1..2"))?;
            let number = |s: &str| {
                s.trim()
                    .trim_start_matches('v')
                    .parse::<u32>()
                    .map_err(|_| format!("--diff {text}: {s:?} is not a plan version"))
            };
            Ok((find(number(a)?)?, find(number(b)?)?))
        }
    }
}

fn listed(plans: &[&Plan]) -> String {
    match plans.len() {
        0 => "no validated plan".to_owned(),
        _ => format!(
            "plan version(s) {}",
            plans
                .iter()
                .map(|p| p.version.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// The difference as text: a line per change, each step with what it was
/// and what it is.
pub(crate) fn text(before: &Plan, after: &Plan) -> String {
    let d = diff(before, after);
    let mut out = format!(
        "plan v{} → v{}: {}\n",
        before.version,
        after.version,
        match d.distance() {
            0 => "the same steps, tools, arguments and dependencies".to_owned(),
            1 => "1 change".to_owned(),
            n => format!("{n} changes"),
        }
    );
    let call = |s: &Step| format!("{} {}", s.tool, Value::Object(s.args.clone()));
    let deps = |s: &Step| {
        if s.depends_on.is_empty() {
            "no dependency".to_owned()
        } else {
            format!(
                "after {}",
                s.depends_on
                    .iter()
                    .map(|d| d.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
    };
    for id in &d.added {
        if let Some(s) = after.step(id) {
            out.push_str(&format!("  + added     {id}: {}\n", call(s)));
        }
    }
    for id in &d.removed {
        if let Some(s) = before.step(id) {
            out.push_str(&format!("  - removed   {id}: {}\n", call(s)));
        }
    }
    let was = |id| before.step(id).or_else(|| renamed(before, after, id));
    for (ids, what) in [(&d.retooled, "retooled"), (&d.reargued, "reargued")] {
        for id in ids {
            if let (Some(old), Some(new)) = (was(id), after.step(id)) {
                out.push_str(&format!(
                    "  ~ {what:<9} {id}: {} → {}\n",
                    call(old),
                    call(new)
                ));
            }
        }
    }
    for id in &d.rewired {
        if let (Some(old), Some(new)) = (was(id), after.step(id)) {
            out.push_str(&format!(
                "  ~ rewired   {id}: {} → {}\n",
                deps(old),
                deps(new)
            ));
        }
    }
    out
}

/// The step of `before` that `id` of `after` is, when it was renamed (the
/// same call under another id).
fn renamed<'a>(before: &'a Plan, after: &Plan, id: &stepwise_core::StepId) -> Option<&'a Step> {
    let new = after.step(id)?;
    before
        .steps
        .iter()
        .find(|s| after.step(&s.id).is_none() && s.tool == new.tool && s.args == new.args)
}

/// The difference as JSON: the two versions and each kind of change.
pub(crate) fn json(before: &Plan, after: &Plan) -> Value {
    let d: PlanDiff = diff(before, after);
    json!({
        "from": before.version,
        "to": after.version,
        "distance": d.distance(),
        "diff": d,
    })
}
