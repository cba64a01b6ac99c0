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

/// Where each step of a plan sits, which steps wait on which, and which are
/// ready: lookups by id and readiness without scanning the plan.
///
/// A cache kept beside the plan it indexes (in [`RunState`](crate::RunState),
/// whose fold reports every status change to it): rebuilt from the plan
/// whenever the plan's version or length changes, and every position it
/// gives is checked against the plan before use. Clones start empty, and it
/// takes no part in equality.
#[derive(Default)]
pub(crate) struct PlanIndex {
    /// The plan version and step count it was built for (`None`: never built).
    built_for: Option<(u32, usize)>,
    /// First position of each id, by a hash of the id (long plans only).
    position: HashMap<u64, u32>,
    /// The steps depending on step `i` are at
    /// `dependants[dependant_start[i]..dependant_start[i + 1]]`.
    dependant_start: Vec<u32>,
    dependants: Vec<u32>,
    /// How many of each step's dependencies have not succeeded (one that is
    /// not in the plan never does).
    unmet: Vec<u32>,
    /// Pending steps with nothing unmet, in plan order.
    ready: BTreeSet<u32>,
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

fn id_hash(id: &StepId) -> u64 {
    use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
    BuildHasherDefault::<DefaultHasher>::default().hash_one(id.as_str())
}

/// A position as stored (plans are far shorter than `u32::MAX` steps).
fn pos(i: usize) -> u32 {
    u32::try_from(i).unwrap_or(u32::MAX)
}

impl PlanIndex {
    /// Rebuilds the index if the plan has changed version or length since.
    fn sync(&mut self, plan: &Plan) {
        let key = (plan.version, plan.steps.len());
        if self.built_for == Some(key) {
            return;
        }
        let steps = &plan.steps;
        *self = Self {
            built_for: Some(key),
            ..Self::default()
        };
        if steps.len() > SCAN_UP_TO {
            self.position.reserve(steps.len());
            for (i, s) in steps.iter().enumerate() {
                self.position.entry(id_hash(&s.id)).or_insert(pos(i));
            }
        }
        // (dependency, dependant) pairs, then the dependants of each step
        // grouped by dependency.
        let mut edges = Vec::new();
        self.unmet = vec![0; steps.len()];
        for (j, s) in steps.iter().enumerate() {
            for d in &s.depends_on {
                match self.locate(plan, d) {
                    Some(i) => {
                        if steps[i].status != StepStatus::Succeeded {
                            self.unmet[j] += 1;
                        }
                        edges.push((pos(i), pos(j)));
                    }
                    None => self.unmet[j] += 1,
                }
            }
        }
        edges.sort_unstable();
        self.dependant_start = Vec::with_capacity(steps.len() + 1);
        let mut e = 0;
        for i in 0..steps.len() {
            self.dependant_start.push(pos(e));
            while edges.get(e).is_some_and(|&(from, _)| from as usize == i) {
                e += 1;
            }
        }
        self.dependant_start.push(pos(e));
        self.dependants = edges.into_iter().map(|(_, to)| to).collect();
        self.ready = steps
            .iter()
            .enumerate()
            .filter(|&(j, s)| s.status == StepStatus::Pending && self.unmet[j] == 0)
            .map(|(j, _)| pos(j))
            .collect();
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

    /// Step `at` of `plan` (just located with [`position`](Self::position))
    /// went from `from` to its current status.
    pub(crate) fn changed(&mut self, plan: &Plan, at: usize, from: StepStatus) {
        if self.built_for != Some((plan.version, plan.steps.len())) {
            return; // rebuilt from the statuses at the next use
        }
        if from == StepStatus::Pending {
            self.ready.remove(&pos(at));
        }
        if plan.steps[at].status == StepStatus::Succeeded {
            let (start, end) = (
                self.dependant_start[at] as usize,
                self.dependant_start[at + 1] as usize,
            );
            for &j in &self.dependants[start..end] {
                let unmet = &mut self.unmet[j as usize];
                *unmet = unmet.saturating_sub(1);
                if *unmet == 0 && plan.steps[j as usize].status == StepStatus::Pending {
                    self.ready.insert(j);
                }
            }
        }
    }

    /// [`ready_steps`] of `plan`, in plan order.
    pub(crate) fn ready(&mut self, plan: &Plan) -> Vec<StepId> {
        self.sync(plan);
        self.ready
            .iter()
            .map(|&i| &plan.steps[i as usize])
            .filter(|s| s.status == StepStatus::Pending)
            .map(|s| s.id.clone())
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
    fn the_index_agrees_with_ready_steps_as_statuses_change() {
        use StepStatus::*;
        let mut rng = fastrand::Rng::with_seed(7);
        for n in [1, 5, 16, 17, 60] {
            for _ in 0..20 {
                let steps = (0..n)
                    .map(|i| {
                        let mut s = Step::new(format!("s{i}"), "d", "t");
                        for d in 0..i {
                            if rng.u8(..4) == 0 {
                                s.depends_on.push(StepId::new(format!("s{d}")));
                            }
                        }
                        if rng.u8(..30) == 0 {
                            s.depends_on.push(StepId::new("missing"));
                        }
                        s
                    })
                    .collect();
                let mut plan = Plan { version: 1, steps };
                let mut index = PlanIndex::default();
                assert_eq!(index.ready(&plan), ready_steps(&plan));
                for _ in 0..(4 * n) {
                    let at = rng.usize(..n);
                    let from = plan.steps[at].status;
                    let to = match from {
                        Pending | Retrying => Running,
                        Running if rng.bool() => Succeeded,
                        Running => Failed,
                        Failed if rng.bool() => Retrying,
                        Failed => Terminated,
                        Succeeded | Terminated | Skipped => continue,
                    };
                    let id = plan.steps[at].id.clone();
                    assert_eq!(index.position(&plan, &id), Some(at));
                    plan.steps[at].status = to;
                    index.changed(&plan, at, from);
                    assert_eq!(index.ready(&plan), ready_steps(&plan));
                    assert_eq!(
                        index.find(&plan, &id).map(|s| &s.id),
                        plan.step(&id).map(|s| &s.id)
                    );
                }
                // A new plan version is indexed afresh.
                plan.version += 1;
                plan.steps.iter_mut().for_each(|s| {
                    if s.status == Pending {
                        s.status = Skipped;
                    }
                });
                assert_eq!(index.ready(&plan), ready_steps(&plan));
            }
        }
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
