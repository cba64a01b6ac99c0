//! Readiness and preconditions: pure functions over the current plan, so the
//! scheduler recomputes them before every dispatch instead of freezing an
//! order at plan time.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::ids::StepId;
use crate::plan::args::resolve_reference;
use crate::plan::{Plan, Precondition};
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
    let value = resolve_reference(p.reference(), outputs).map_err(|e| e.to_string())?;
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
