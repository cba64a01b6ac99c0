//! What changed between two plans, by structure rather than text: steps
//! added or removed, steps whose tool, arguments or dependencies changed.
//! A step is the same step in both plans when its id is, or — ids being a
//! planner's choice of words — when a step left unmatched by id has the
//! same tool and arguments as one left unmatched in the other plan.
//! Descriptions, criteria and statuses are not compared.

use serde::Serialize;

use super::{Plan, Step};
use crate::ids::StepId;

/// The structural difference between two plans (ids are the later plan's,
/// but for `removed`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PlanDiff {
    /// Steps only the later plan has.
    pub added: Vec<StepId>,
    /// Steps only the earlier plan has.
    pub removed: Vec<StepId>,
    /// Steps that call another tool.
    pub retooled: Vec<StepId>,
    /// Steps that call the same tool with other arguments.
    pub reargued: Vec<StepId>,
    /// Steps that depend on other steps than before.
    pub rewired: Vec<StepId>,
}

impl PlanDiff {
    /// How many changes: each step added, removed, retooled, reargued or
    /// rewired counts once per way it changed.
    pub fn distance(&self) -> usize {
        self.added.len()
            + self.removed.len()
            + self.retooled.len()
            + self.reargued.len()
            + self.rewired.len()
    }

    /// Whether the plans are the same in structure.
    pub fn is_empty(&self) -> bool {
        self.distance() == 0
    }
}

/// What changed from `before` to `after`.
pub fn diff(before: &Plan, after: &Plan) -> PlanDiff {
    // Pairs (before, after), by id first.
    let mut pairs: Vec<(&Step, &Step)> = Vec::new();
    let mut unmatched_before: Vec<&Step> = Vec::new();
    for old in &before.steps {
        match after.step(&old.id) {
            Some(new) => pairs.push((old, new)),
            None => unmatched_before.push(old),
        }
    }
    let mut unmatched_after: Vec<&Step> = after
        .steps
        .iter()
        .filter(|new| before.step(&new.id).is_none())
        .collect();
    // Then a renamed step: same tool, same arguments.
    unmatched_before.retain(|old| {
        let same = unmatched_after
            .iter()
            .position(|new| new.tool == old.tool && new.args == old.args);
        match same {
            Some(i) => {
                pairs.push((old, unmatched_after.remove(i)));
                false
            }
            None => true,
        }
    });
    // Dependencies compared through the pairing: a renamed dependency is
    // the same dependency.
    let renamed = |id: &StepId| -> StepId {
        pairs
            .iter()
            .find(|(old, _)| &old.id == id)
            .map_or_else(|| id.clone(), |(_, new)| new.id.clone())
    };
    let mut d = PlanDiff {
        added: unmatched_after.iter().map(|s| s.id.clone()).collect(),
        removed: unmatched_before.iter().map(|s| s.id.clone()).collect(),
        ..PlanDiff::default()
    };
    for (old, new) in &pairs {
        if old.tool != new.tool {
            d.retooled.push(new.id.clone());
        } else if old.args != new.args {
            d.reargued.push(new.id.clone());
        }
        let mut was: Vec<StepId> = old.depends_on.iter().map(&renamed).collect();
        let mut is: Vec<StepId> = new.depends_on.clone();
        was.sort();
        is.sort();
        if was != is {
            d.rewired.push(new.id.clone());
        }
    }
    d.retooled.sort();
    d.reargued.sort();
    d.rewired.sort();
    d
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn plan(steps: Vec<Step>) -> Plan {
        Plan { version: 1, steps }
    }

    fn search(id: &str, query: &str) -> Step {
        Step::new(id, "find it", "search_notes").with_args(json!({ "query": query }))
    }

    #[test]
    fn the_same_plan_in_other_words_is_no_change() {
        let a = plan(vec![search("a", "cost"), search("b", "risk").after(["a"])]);
        let mut b = a.clone();
        b.steps[0].description = "look up the cost".into();
        assert!(diff(&a, &b).is_empty());
        // Renamed steps with the same call are the same steps, and a
        // dependency on a renamed step is the same dependency.
        let renamed = plan(vec![
            search("cost", "cost"),
            search("risk", "risk").after(["cost"]),
        ]);
        assert_eq!(diff(&a, &renamed), PlanDiff::default());
    }

    #[test]
    fn each_kind_of_change_is_named() {
        let a = plan(vec![
            search("a", "cost"),
            search("b", "risk").after(["a"]),
            search("c", "latency"),
        ]);
        let b = plan(vec![
            search("a", "price"),
            Step::new("b", "read it", "read_note")
                .with_args(json!({ "query": "risk" }))
                .after(["c"]),
            search("d", "vendors"),
            search("c", "latency"),
        ]);
        let d = diff(&a, &b);
        assert_eq!(d.added, [StepId::new("d")]);
        assert!(d.removed.is_empty());
        assert_eq!(d.reargued, [StepId::new("a")]);
        assert_eq!(d.retooled, [StepId::new("b")]);
        assert_eq!(d.rewired, [StepId::new("b")]);
        assert_eq!(d.distance(), 4);
        let back = diff(&b, &a);
        assert_eq!(back.removed, [StepId::new("d")]);
    }
}
