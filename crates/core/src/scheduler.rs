//! Readiness and preconditions: pure functions over the current plan, so the
//! scheduler recomputes them before every dispatch instead of freezing an
//! order at plan time.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::Value;

use crate::ids::StepId;
use crate::plan::args::{Outputs, resolve_reference_in};
use crate::plan::{Plan, Precondition, Step};
use crate::step_status::StepStatus;

/// Pending steps whose dependencies have all succeeded, in plan order.
pub fn ready_steps(plan: &Plan) -> Vec<StepId> {
    let status: BTreeMap<&StepId, StepStatus> = plan.statuses();
    plan.steps
        .iter()
        .filter(|s| s.status == StepStatus::Pending)
        .filter(|s| {
            s.depends_on
                .iter()
                .all(|d| status.get(d) == Some(&StepStatus::Succeeded))
        })
        .map(|s| s.id.clone())
        .collect()
}

/// Plans up to this many steps are searched by a scan, which is as fast as
/// a hash lookup at that size; longer ones get a position map.
const SCAN_UP_TO: usize = 16;

/// Where each step of a plan sits and where its dependencies sit: lookups
/// by id and readiness checks without scanning the plan or comparing ids.
///
/// A cache kept beside the plan it indexes (in [`RunState`](crate::RunState)):
/// rebuilt whenever the plan's version or length changes, and every position
/// it gives is checked against the plan before use, so a stale index costs
/// time, never a wrong answer. Clones start empty, and it takes no part in
/// equality.
#[derive(Default)]
pub(crate) struct PlanIndex {
    /// The plan version and step count it was built for (`None`: never built).
    built_for: Option<(u32, usize)>,
    /// First position of each id, by a hash of the id (long plans only).
    position: HashMap<u64, u32>,
    /// Step `i`'s dependencies are at `dep_pos[dep_start[i]..dep_start[i + 1]]`;
    /// `u32::MAX` for one that is not in the plan (the step is never ready).
    dep_start: Vec<u32>,
    dep_pos: Vec<u32>,
    /// Every step before this position is final: readiness starts here.
    first_open: usize,
}

impl Clone for PlanIndex {
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl PartialEq for PlanIndex {
    fn eq(&self, _other: &Self) -> bool {
        true
    }
}

impl std::fmt::Debug for PlanIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PlanIndex")
    }
}

const MISSING: u32 = u32::MAX;

fn id_hash(id: &StepId) -> u64 {
    use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
    BuildHasherDefault::<DefaultHasher>::default().hash_one(id.as_str())
}

impl PlanIndex {
    /// Rebuilds the index if the plan has changed version or length since.
    fn sync(&mut self, plan: &Plan) {
        let key = (plan.version, plan.steps.len());
        if self.built_for == Some(key) {
            return;
        }
        *self = Self {
            built_for: Some(key),
            ..Self::default()
        };
        let steps = &plan.steps;
        if steps.len() > SCAN_UP_TO {
            self.position.reserve(steps.len());
            for (i, s) in steps.iter().enumerate() {
                let i = u32::try_from(i).unwrap_or(MISSING);
                self.position.entry(id_hash(&s.id)).or_insert(i);
            }
        }
        self.dep_start.reserve(steps.len() + 1);
        for s in steps {
            self.dep_start
                .push(u32::try_from(self.dep_pos.len()).unwrap_or(MISSING));
            for d in &s.depends_on {
                let at = self
                    .locate(plan, d)
                    .and_then(|i| u32::try_from(i).ok())
                    .unwrap_or(MISSING);
                self.dep_pos.push(at);
            }
        }
        self.dep_start
            .push(u32::try_from(self.dep_pos.len()).unwrap_or(MISSING));
    }

    /// Position of the first step with this id, given an index synced with `plan`.
    fn locate(&self, plan: &Plan, id: &StepId) -> Option<usize> {
        if plan.steps.len() > SCAN_UP_TO
            && let Some(&i) = self.position.get(&id_hash(id))
            && plan.steps.get(i as usize).is_some_and(|s| &s.id == id)
        {
            return Some(i as usize);
        }
        // A short plan, a hash collision, or an id not in the plan.
        plan.steps.iter().position(|s| &s.id == id)
    }

    /// Position of the step with this id, as [`Plan::step`] would find it.
    pub(crate) fn position(&mut self, plan: &Plan, id: &StepId) -> Option<usize> {
        self.sync(plan);
        self.locate(plan, id)
    }

    /// The step with this id, as [`Plan::step`] would find it: through the
    /// index when it is current for `plan`, by a scan otherwise.
    pub(crate) fn find<'p>(&self, plan: &'p Plan, id: &StepId) -> Option<&'p Step> {
        if self.built_for == Some((plan.version, plan.steps.len())) {
            return self.locate(plan, id).map(|i| &plan.steps[i]);
        }
        plan.step(id)
    }

    /// [`ready_steps`] of `plan`.
    pub(crate) fn ready(&mut self, plan: &Plan) -> Vec<StepId> {
        self.sync(plan);
        let steps = &plan.steps;
        // Final statuses never change within a plan version.
        while steps
            .get(self.first_open)
            .is_some_and(|s| s.status.is_final())
        {
            self.first_open += 1;
        }
        let deps_of = |i: usize| {
            let (from, to) = (self.dep_start[i] as usize, self.dep_start[i + 1] as usize);
            &self.dep_pos[from..to]
        };
        steps
            .iter()
            .enumerate()
            .skip(self.first_open)
            .filter(|(i, s)| {
                s.status == StepStatus::Pending
                    && deps_of(*i).iter().all(|&d| {
                        steps
                            .get(d as usize)
                            .is_some_and(|d| d.status == StepStatus::Succeeded)
                    })
            })
            .map(|(_, s)| s.id.clone())
            .collect()
    }
}

/// Pending steps that depend, directly or not, on `failed` — they can never run.
pub fn blocked_dependants(plan: &Plan, failed: &StepId) -> Vec<StepId> {
    let mut blocked: BTreeSet<&StepId> = BTreeSet::from([failed]);
    loop {
        let before = blocked.len();
        for s in &plan.steps {
            if s.depends_on.iter().any(|d| blocked.contains(d)) {
                blocked.insert(&s.id);
            }
        }
        if blocked.len() == before {
            break;
        }
    }
    plan.steps
        .iter()
        .filter(|s| s.status == StepStatus::Pending && &s.id != failed && blocked.contains(&s.id))
        .map(|s| s.id.clone())
        .collect()
}

/// Checks one precondition against finished steps' outputs; `Err` says why it does not hold.
pub fn check_precondition(
    p: &Precondition,
    outputs: &BTreeMap<StepId, Value>,
) -> Result<(), String> {
    check_precondition_in(p, outputs)
}

/// [`check_precondition`] against any [`Outputs`].
pub(crate) fn check_precondition_in<O: Outputs + ?Sized>(
    p: &Precondition,
    outputs: &O,
) -> Result<(), String> {
    let value = resolve_reference_in(p.reference(), outputs).map_err(|e| e.to_string())?;
    let holds = match p {
        Precondition::Exists { .. } => !value.is_null(),
        Precondition::NonEmpty { .. } => match &value {
            Value::Null => false,
            Value::String(s) => !s.trim().is_empty(),
            Value::Array(a) => !a.is_empty(),
            Value::Object(o) => !o.is_empty(),
            Value::Bool(_) | Value::Number(_) => true,
        },
        Precondition::Equals {
            value: expected, ..
        } => &value == expected,
    };
    if holds {
        Ok(())
    } else {
        let what = match p {
            Precondition::Exists { .. } => "exist".to_owned(),
            Precondition::NonEmpty { .. } => "be non-empty".to_owned(),
            Precondition::Equals { value, .. } => format!("equal {value}"),
        };
        Err(format!("{} must {what} but is {value}", p.reference()))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::plan::Step;

    fn plan(statuses: &[(&str, &[&str], StepStatus)]) -> Plan {
        let steps = statuses
            .iter()
            .map(|(id, deps, st)| {
                let mut s = Step::new(*id, "d", "t").after(deps.iter().copied());
                s.status = *st;
                s
            })
            .collect();
        Plan { version: 1, steps }
    }

    #[test]
    fn readiness_follows_current_statuses() {
        use StepStatus::*;
        let p = plan(&[
            ("a", &[], Succeeded),
            ("b", &["a"], Pending),
            ("c", &["b"], Pending),
            ("d", &[], Running),
        ]);
        assert_eq!(ready_steps(&p), vec![StepId::new("b")]);
        let p = plan(&[
            ("a", &[], Terminated),
            ("b", &["a"], Pending),
            ("c", &[], Pending),
        ]);
        assert_eq!(ready_steps(&p), vec![StepId::new("c")]);
    }

    #[test]
    fn blocked_dependants_are_transitive() {
        use StepStatus::*;
        let p = plan(&[
            ("a", &[], Terminated),
            ("b", &["a"], Pending),
            ("c", &["b"], Pending),
            ("d", &[], Pending),
        ]);
        assert_eq!(
            blocked_dependants(&p, &StepId::new("a")),
            vec![StepId::new("b"), StepId::new("c")]
        );
    }

    #[test]
    fn preconditions_are_checked_against_outputs() {
        let outputs = BTreeMap::from([(StepId::new("a"), json!({"items": [], "status": "ok"}))]);
        let non_empty = Precondition::NonEmpty {
            reference: "${a.output.items}".into(),
        };
        assert!(
            check_precondition(&non_empty, &outputs)
                .unwrap_err()
                .contains("be non-empty")
        );
        let equals = Precondition::Equals {
            reference: "${a.output.status}".into(),
            value: json!("ok"),
        };
        assert!(check_precondition(&equals, &outputs).is_ok());
        let exists = Precondition::Exists {
            reference: "${a.output.missing}".into(),
        };
        assert!(check_precondition(&exists, &outputs).is_err());
    }
}
