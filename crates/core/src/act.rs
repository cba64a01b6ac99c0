//! A person's change to a run no process is working on — approve, reject,
//! cancel — as pure rules: what the run's folded state allows, and the
//! events that record it. The CLI (`stepwise approve`, `reject`, `cancel`)
//! and the server (`POST /v1/runs/{id}/approvals`, `…/reject`, `DELETE`)
//! both ask here and only translate the answer; [`under_lease`] is how
//! either records it.

use crate::event::{Event, EventKind};
use crate::ids::{RunId, StepId};
use crate::state::{RunState, RunStatus};
use crate::store::{Store, StoreError};
use crate::usage::Usage;

/// Why a person's change is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ActError {
    /// Approvals and refusals go to a run paused at `awaiting_approval`.
    #[error("run {run} is not waiting for an approval (it is {})", status.as_str())]
    NotAwaitingApproval {
        /// The run.
        run: RunId,
        /// Its status.
        status: RunStatus,
    },
    /// The run is paused, but every request it made is answered on record
    /// (by a concurrent refusal, say): nothing is left to refuse.
    #[error(
        "run {run} is not waiting for an approval: its requests are answered on record; resume or cancel it"
    )]
    Answered {
        /// The run.
        run: RunId,
    },
    /// The approval names a plan version other than the one under review.
    #[error("plan version {named} is stale: the run waits for a review of version {pending}")]
    StalePlan {
        /// The version named.
        named: u32,
        /// The version waiting.
        pending: u32,
    },
    /// The approval names a plan version, and no plan waits for a review.
    #[error("run {run} waits for no plan review")]
    NoPlanReview {
        /// The run.
        run: RunId,
    },
    /// The approval of a step names a hash other than the one it asks with
    /// now: its arguments changed since the approver read them.
    #[error(
        "the approval of step {step} names hash {named}, but the step now asks with hash {pending}: its arguments changed; read the pending request again"
    )]
    StaleStep {
        /// The step.
        step: StepId,
        /// The hash named.
        named: String,
        /// The hash it asks with.
        pending: String,
    },
    /// The step named waits for no approval.
    #[error(
        "run {run} has no approval pending for step {step}; {}",
        waits_for(waiting)
    )]
    NotPending {
        /// The run.
        run: RunId,
        /// The step named.
        step: StepId,
        /// What the run does wait for.
        waiting: Vec<String>,
    },
    /// The request named nothing to approve.
    #[error("name what to approve: `plan_version` and/or `steps` with each step's `args_hash`")]
    NothingNamed,
    /// A run that ended stays ended.
    #[error("run {run} already ended ({})", status.as_str())]
    Ended {
        /// The run.
        run: RunId,
        /// How it ended.
        status: RunStatus,
    },
}

fn waits_for(what: &[String]) -> String {
    if what.is_empty() {
        "it waits for nothing (its approvals are on record)".to_owned()
    } else {
        format!("it waits for: {}", what.join(", "))
    }
}

/// What an approval approves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Approve<'a> {
    /// Everything the run waits for, each step with the arguments it asked
    /// for (the hash on record); nothing, if it waits for nothing.
    Everything,
    /// What is named: a plan version and steps, each step bound to a hash
    /// (`None`: the hash on record). Naming nothing is refused.
    Named {
        /// The plan version under review, if it is approved.
        plan_version: Option<u32>,
        /// The steps.
        steps: &'a [(StepId, Option<String>)],
    },
}

/// `plan version 2`, `step save`, …: what a paused run waits for.
pub fn waiting_for(state: &RunState) -> Vec<String> {
    let mut what: Vec<String> = state
        .pending_review
        .iter()
        .map(|v| format!("plan version {v}"))
        .collect();
    what.extend(state.pending_approvals.keys().map(|s| format!("step {s}")));
    what
}

/// Only a run paused at `awaiting_approval` takes approvals and refusals.
pub fn awaiting(state: &RunState) -> Result<(), ActError> {
    if state.status == RunStatus::AwaitingApproval {
        Ok(())
    } else {
        Err(ActError::NotAwaitingApproval {
            run: state.run_id.clone(),
            status: state.status,
        })
    }
}

/// The events that record `approve` by `by` on a paused run.
pub fn approve(
    state: &RunState,
    approve: Approve<'_>,
    by: &str,
) -> Result<Vec<EventKind>, ActError> {
    awaiting(state)?;
    grants(state, approve, by)
}

/// The events that record `approve` by `by`, checked against what the run
/// has asked for so far, whether or not it has paused yet (an approval a
/// worker records when the run it works on pauses).
pub fn grants(
    state: &RunState,
    approve: Approve<'_>,
    by: &str,
) -> Result<Vec<EventKind>, ActError> {
    let plan = |version| EventKind::PlanApproved {
        version,
        by: by.to_owned(),
        usage: Usage::default(),
    };
    let step = |step: &StepId, hash: &str| EventKind::ApprovalGranted {
        step: step.clone(),
        args_hash: hash.to_owned(),
        by: by.to_owned(),
    };
    let (plan_version, steps) = match approve {
        Approve::Everything => {
            let mut kinds: Vec<EventKind> = state.pending_review.into_iter().map(plan).collect();
            kinds.extend(state.pending_approvals.iter().map(|(s, h)| step(s, h)));
            return Ok(kinds);
        }
        Approve::Named {
            plan_version,
            steps,
        } => (plan_version, steps),
    };
    let mut kinds = Vec::new();
    if let Some(named) = plan_version {
        match state.pending_review {
            Some(pending) if pending == named => kinds.push(plan(named)),
            Some(pending) => return Err(ActError::StalePlan { named, pending }),
            None => {
                return Err(ActError::NoPlanReview {
                    run: state.run_id.clone(),
                });
            }
        }
    }
    for (id, named) in steps {
        match (state.pending_approvals.get(id), named) {
            (Some(pending), Some(named)) if pending != named => {
                return Err(ActError::StaleStep {
                    step: id.clone(),
                    named: named.clone(),
                    pending: pending.clone(),
                });
            }
            (Some(pending), _) => kinds.push(step(id, pending)),
            (None, _) => {
                return Err(ActError::NotPending {
                    run: state.run_id.clone(),
                    step: id.clone(),
                    waiting: waiting_for(state),
                });
            }
        }
    }
    if kinds.is_empty() {
        return Err(ActError::NothingNamed);
    }
    Ok(kinds)
}

/// The events that refuse everything a paused run waits for, then
/// `needs_review`: the run stops for review (a resume asks again).
pub fn reject(state: &RunState, reason: &str, by: &str) -> Result<Vec<EventKind>, ActError> {
    awaiting(state)?;
    let what = waiting_for(state);
    if what.is_empty() {
        return Err(ActError::Answered {
            run: state.run_id.clone(),
        });
    }
    let mut kinds: Vec<EventKind> = state
        .pending_review
        .iter()
        .map(|&version| EventKind::PlanRejected {
            version,
            reason: reason.to_owned(),
            usage: Usage::default(),
        })
        .collect();
    kinds.extend(
        state
            .pending_approvals
            .keys()
            .map(|step| EventKind::ApprovalDenied {
                step: step.clone(),
                reason: reason.to_owned(),
                by: by.to_owned(),
            }),
    );
    kinds.push(EventKind::NeedsReview {
        reason: format!("{by} rejected {}: {reason}", what.join(", ")),
        usage: Usage::default(),
        // No roles here to write one; a resume asks again.
        brief: None,
        ask_again: false,
    });
    Ok(kinds)
}

/// The event that cancels a run that has not ended.
pub fn cancel(state: &RunState, reason: &str) -> Result<Vec<EventKind>, ActError> {
    if state.status.has_ended() {
        return Err(ActError::Ended {
            run: state.run_id.clone(),
            status: state.status,
        });
    }
    Ok(vec![EventKind::RunCancelled {
        reason: reason.to_owned(),
    }])
}

/// Records a person's change under the run's lease (taken and given back
/// by the caller, whose way of waiting for it differs): reloads the state
/// under the lease, appends what `decide` returns fenced by it (nothing if
/// it returns nothing), and returns the state after and the events
/// appended.
pub async fn under_lease<S, E>(
    store: &S,
    run: &RunId,
    fence: u64,
    decide: impl FnOnce(&RunState) -> Result<Vec<EventKind>, E>,
) -> Result<(RunState, Vec<Event>), E>
where
    S: Store + ?Sized,
    E: From<StoreError>,
{
    let state = store.state(run).await?;
    let kinds = decide(&state)?;
    if kinds.is_empty() {
        return Ok((state, Vec::new()));
    }
    let events = state.next_events(kinds);
    store.append(run, &events, Some(fence)).await?;
    let state = store.state(run).await?;
    Ok((state, events))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paused() -> RunState {
        let mut state = RunState {
            run_id: RunId("run_p".into()),
            status: RunStatus::AwaitingApproval,
            pending_review: Some(2),
            ..RunState::default()
        };
        state
            .pending_approvals
            .insert(StepId::new("save"), "h1".into());
        state
    }

    #[test]
    fn everything_grants_each_request_with_its_hash_on_record() {
        let kinds = approve(&paused(), Approve::Everything, "ana").unwrap();
        assert_eq!(kinds.len(), 2);
        assert!(
            matches!(&kinds[1], EventKind::ApprovalGranted { args_hash, .. } if args_hash == "h1")
        );
    }

    #[test]
    fn a_named_approval_is_checked_against_what_is_pending() {
        let state = paused();
        let stale = [(StepId::new("save"), Some("h0".to_owned()))];
        let named = |steps| Approve::Named {
            plan_version: None,
            steps,
        };
        assert!(matches!(
            grants(&state, named(&stale), "a"),
            Err(ActError::StaleStep { .. })
        ));
        let other = [(StepId::new("send"), None)];
        let err = grants(&state, named(&other), "a").unwrap_err();
        assert_eq!(
            err.to_string(),
            "run run_p has no approval pending for step send; it waits for: plan version 2, step save"
        );
        assert_eq!(grants(&state, named(&[]), "a"), Err(ActError::NothingNamed));
        let old_plan = Approve::Named {
            plan_version: Some(1),
            steps: &[],
        };
        assert_eq!(
            grants(&state, old_plan, "a"),
            Err(ActError::StalePlan {
                named: 1,
                pending: 2
            })
        );
        let on_record = [(StepId::new("save"), None)];
        assert_eq!(grants(&state, named(&on_record), "a").unwrap().len(), 1);
    }

    #[test]
    fn a_refusal_needs_a_request_to_refuse_and_stops_the_run_for_review() {
        let kinds = reject(&paused(), "no", "ana").unwrap();
        assert!(
            matches!(kinds.last(), Some(EventKind::NeedsReview { reason, .. })
            if reason == "ana rejected plan version 2, step save: no")
        );
        let answered = RunState {
            pending_review: None,
            pending_approvals: Default::default(),
            ..paused()
        };
        assert!(matches!(
            reject(&answered, "no", "a"),
            Err(ActError::Answered { .. })
        ));
        let running = RunState {
            status: RunStatus::Running,
            ..paused()
        };
        assert!(matches!(
            approve(&running, Approve::Everything, "a"),
            Err(ActError::NotAwaitingApproval { .. })
        ));
    }

    #[test]
    fn an_ended_run_cannot_be_cancelled() {
        let done = RunState {
            status: RunStatus::Ok,
            ..paused()
        };
        assert!(matches!(cancel(&done, "x"), Err(ActError::Ended { .. })));
        assert_eq!(cancel(&paused(), "x").unwrap().len(), 1);
    }
}
