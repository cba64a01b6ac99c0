//! [`Cursor`]: where the planning graph stands between the events that act
//! on it — the decision held until in-flight steps finish — and what a
//! resume needs of the log: outcomes not yet assessed, the last failure of
//! each unfinished step, what a person decided since the run last started,
//! whether an escalation is still unplanned. It is part of the folded
//! [`RunState`](crate::state::RunState), changes only with events and is
//! kept in the store's snapshot, so a resumed run rebuilds it by folding
//! its log (or the tail after a snapshot), and neither the engine nor a
//! resume reads the raw history.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::decision::Verdict;
use crate::event::EventKind;
use crate::failure::{FailureClass, FailureKind, StepFailure};
use crate::ids::StepId;

/// The run's position in the graph that is not a step status: the decision
/// waiting for in-flight steps to finish, and what a resume reads.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Cursor {
    /// The decision to take once nothing is in flight: the strongest verdict
    /// assessed (or an approval refused) since the plan version was approved,
    /// or, after a resume, what the run goes on with. A replan takes it.
    #[serde(skip_serializing_if = "Option::is_none")]
    held: Option<(Verdict, String)>,
    /// The strongest verdict assessed since the plan version was approved:
    /// what a resume goes on from (a refused approval is asked again).
    #[serde(skip_serializing_if = "Option::is_none")]
    assessed: Option<(Verdict, String)>,
    /// Outcomes recorded and not yet assessed, in log order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    unassessed: Vec<(StepId, Unassessed)>,
    /// The last failure of each step that failed and has neither succeeded
    /// since nor been assessed: what a step interrupted on its retry, or
    /// terminated, failed with.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    failures: BTreeMap<StepId, StepFailure>,
    /// What people decided since the run last started or resumed (grants
    /// only once it had stopped for review), in log order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    decisions: Vec<Decided>,
    /// The run's last stop for review, if it stopped for one: whether the
    /// answer it stopped on was unusable (asking again may succeed).
    #[serde(skip_serializing_if = "Option::is_none")]
    stopped: Option<bool>,
    /// The run escalated to planning and has not planned since.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    escalated_unplanned: bool,
}

/// An outcome waiting for the assessor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unassessed {
    /// The step succeeded; its result is in `step_results`.
    Succeeded,
    /// The step was terminated, for this reason.
    Terminated(String),
}

/// A person's decision on record, as [`crate::engine::what_changed`] says it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decided {
    /// A side-effect step was refused.
    Denied {
        /// The step.
        step: StepId,
        /// Who.
        by: String,
    },
    /// A plan version was rejected.
    PlanRejected {
        /// The version.
        version: u32,
    },
    /// A side-effect step was approved.
    Granted {
        /// The step.
        step: StepId,
        /// Who.
        by: String,
    },
    /// A plan version was approved.
    PlanApproved {
        /// The version.
        version: u32,
        /// Who.
        by: String,
    },
}

impl Decided {
    /// The decision, said for a person.
    pub fn describe(&self) -> String {
        match self {
            Self::Denied { step, by } => format!("{by} refused step {step}; it is asked for again"),
            Self::PlanRejected { version } => {
                format!("plan version {version} was rejected; a plan is asked for again")
            }
            Self::Granted { step, by } => format!("{by} approved step {step}"),
            Self::PlanApproved { version, by } => format!("{by} approved plan version {version}"),
        }
    }

    fn is_grant(&self) -> bool {
        matches!(self, Self::Granted { .. } | Self::PlanApproved { .. })
    }
}

/// What a resume needs of the state it folds over.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Resumed<'a> {
    /// The run had stopped for review, for this reason.
    pub(crate) review: Option<&'a str>,
    /// The run had stopped for review (with or without a reason).
    pub(crate) was_review: bool,
    /// Its driver replans after a step (plan-execute).
    pub(crate) replans: bool,
    /// Every step of its plan is final.
    pub(crate) plan_done: bool,
}

/// Keeps the stronger of the decision in `slot` and a new verdict
/// (carrying on holds nothing; of equals, the first stands).
fn hold(slot: &mut Option<(Verdict, String)>, verdict: Verdict, reason: &str) {
    if verdict != Verdict::Continue && slot.as_ref().is_none_or(|(h, _)| verdict > *h) {
        *slot = Some((verdict, reason.to_owned()));
    }
}

impl Cursor {
    /// The decision held until nothing is in flight, if any.
    pub fn held(&self) -> Option<(Verdict, &str)> {
        self.held.as_ref().map(|(v, r)| (*v, r.as_str()))
    }

    /// Outcomes recorded and not yet assessed, in log order.
    pub fn unassessed(&self) -> &[(StepId, Unassessed)] {
        &self.unassessed
    }

    /// The last failure of step `id` still standing, or an interruption if
    /// it has none (it was cut off before it could fail).
    pub fn last_failure(&self, id: &StepId) -> StepFailure {
        self.failures_of(id).unwrap_or_else(|| {
            StepFailure::new(
                FailureClass::Transient,
                FailureKind::Interrupted,
                "interrupted",
            )
        })
    }

    /// The last failure of step `id` still standing, if it has one.
    pub fn failures_of(&self, id: &StepId) -> Option<StepFailure> {
        self.failures.get(id).cloned()
    }

    /// What people decided since the run last started or resumed.
    pub fn decisions(&self) -> &[Decided] {
        &self.decisions
    }

    /// `Some(ask_again)` if the run has stopped for review.
    pub fn stopped(&self) -> Option<bool> {
        self.stopped
    }

    /// Whether the run escalated to planning and has not planned since (a
    /// resume then goes to the planner, not to the ReAct calls' plan).
    pub fn escalated_unplanned(&self) -> bool {
        self.escalated_unplanned
    }

    /// Whether there is nothing to keep (what a snapshot leaves out).
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// Folds one event (`resumed` is given with `run_resumed` only).
    pub(crate) fn apply(&mut self, kind: &EventKind, resumed: Option<Resumed<'_>>) {
        self.note(kind);
        match kind {
            EventKind::Assessed {
                verdict, reason, ..
            } => {
                hold(&mut self.held, *verdict, reason);
                hold(&mut self.assessed, *verdict, reason);
            }
            EventKind::ApprovalDenied { step, by, reason } => hold(
                &mut self.held,
                Verdict::NeedsReview,
                &format!("{by} refused step {step}: {reason}"),
            ),
            EventKind::Replanned { .. } => self.held = None,
            EventKind::PlanApproved { .. } => {
                self.held = None;
                self.assessed = None;
            }
            EventKind::RunResumed { .. } => {
                let Some(r) = resumed else { return };
                self.held = self
                    .assessed
                    .clone()
                    .map(|(verdict, reason)| match verdict {
                        // Something changed since the run stopped for review: try to recover.
                        Verdict::NeedsReview if r.was_review => (Verdict::Replan, reason),
                        _ => (verdict, reason),
                    });
                if let Some(reason) = r.review
                    && self.held.is_none()
                    && r.replans
                    && r.plan_done
                {
                    // It stopped with its plan done (say, a report that cited
                    // nothing): with something changed, look again rather than
                    // write the same report (plan-solve never replans).
                    self.held = Some((Verdict::Replan, format!("resumed after review: {reason}")));
                }
            }
            _ => {}
        }
    }
}

impl Cursor {
    /// Folds what a resume reads of one event.
    fn note(&mut self, kind: &EventKind) {
        match kind {
            EventKind::RunStarted { .. } | EventKind::RunResumed { .. } => self.decisions.clear(),
            EventKind::StepFailed { step, failure, .. } => {
                self.failures.insert(step.clone(), failure.clone());
            }
            EventKind::StepSucceeded { step, .. } => {
                self.failures.remove(step);
                self.unassessed.push((step.clone(), Unassessed::Succeeded));
            }
            EventKind::StepTerminated { step, reason } => self
                .unassessed
                .push((step.clone(), Unassessed::Terminated(reason.clone()))),
            EventKind::Assessed { step, .. } => {
                self.unassessed.retain(|(s, _)| s != step);
                self.failures.remove(step);
            }
            // ReAct's calls before the router's escalation are never assessed.
            EventKind::StrategyEscalated { .. } => {
                self.unassessed.clear();
                self.escalated_unplanned = true;
            }
            EventKind::PlanCreated { .. } => self.escalated_unplanned = false,
            EventKind::NeedsReview { ask_again, .. } => {
                self.stopped = Some(*ask_again);
                // Approvals given before this stop are not news after it.
                self.decisions.retain(|d| !d.is_grant());
            }
            EventKind::ApprovalDenied { step, by, .. } => self.decisions.push(Decided::Denied {
                step: step.clone(),
                by: by.clone(),
            }),
            EventKind::PlanRejected { version, .. } => {
                self.decisions
                    .push(Decided::PlanRejected { version: *version });
            }
            EventKind::ApprovalGranted { step, by, .. } if self.stopped.is_some() => {
                self.decisions.push(Decided::Granted {
                    step: step.clone(),
                    by: by.clone(),
                });
            }
            EventKind::PlanApproved { version, by, .. } if self.stopped.is_some() => {
                self.decisions.push(Decided::PlanApproved {
                    version: *version,
                    by: by.clone(),
                });
            }
            _ => {}
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::usage::Usage;

    /// An `assessed` event of step `a` with this verdict (also for the engine's tests).
    pub(crate) fn assessed(verdict: Verdict, reason: &str) -> EventKind {
        EventKind::Assessed {
            step: "a".into(),
            acceptance_met: true,
            verdict,
            reason: reason.into(),
            new_gaps: Vec::new(),
            resolved_gaps: Vec::new(),
            observations: Vec::new(),
            usage: Usage::default(),
        }
    }

    fn resumed(was_review: bool) -> Resumed<'static> {
        Resumed {
            review: was_review.then_some("stuck"),
            was_review,
            replans: true,
            plan_done: true,
        }
    }

    const RESUMED: EventKind = EventKind::RunResumed {
        by: String::new(),
        max_replans: None,
        max_steps: None,
        changed: Vec::new(),
        sources_changed: false,
        host: serde_json::Value::Null,
    };

    #[test]
    fn the_strongest_decision_is_held() {
        let mut c = Cursor::default();
        c.apply(&assessed(Verdict::Continue, "ok"), None);
        assert_eq!(c.held(), None);
        c.apply(&assessed(Verdict::Replan, "gap"), None);
        c.apply(&assessed(Verdict::Synthesize, "enough"), None);
        assert_eq!(c.held(), Some((Verdict::Replan, "gap")));
        c.apply(&assessed(Verdict::NeedsReview, "stop"), None);
        assert_eq!(c.held(), Some((Verdict::NeedsReview, "stop")));
        // An approved plan version starts afresh.
        c.apply(
            &EventKind::PlanApproved {
                version: 2,
                by: "auto".into(),
                usage: Usage::default(),
            },
            None,
        );
        assert_eq!(c, Cursor::default());
    }

    #[test]
    fn a_refusal_is_held_but_a_resume_asks_again() {
        let mut c = Cursor::default();
        c.apply(
            &EventKind::ApprovalDenied {
                step: "send".into(),
                reason: "no".into(),
                by: "ana".into(),
            },
            None,
        );
        assert_eq!(
            c.held(),
            Some((Verdict::NeedsReview, "ana refused step send: no"))
        );
        c.apply(
            &RESUMED,
            Some(Resumed {
                review: Some("refused"),
                was_review: true,
                replans: true,
                plan_done: false,
            }),
        );
        assert_eq!(c.held(), None);
    }

    #[test]
    fn a_resume_after_review_turns_a_stop_into_a_replan() {
        let mut c = Cursor::default();
        c.apply(&assessed(Verdict::NeedsReview, "fatal"), None);
        c.apply(&RESUMED, Some(resumed(true)));
        assert_eq!(c.held(), Some((Verdict::Replan, "fatal")));
        // After a crash (not a review) the stop stands.
        c.apply(&RESUMED, Some(resumed(false)));
        assert_eq!(c.held(), Some((Verdict::NeedsReview, "fatal")));
        // A replan takes the decision.
        c.apply(
            &EventKind::Replanned {
                replan_count: 1,
                reason: "fatal".into(),
                draft: serde_json::Value::Null,
                usage: Usage::default(),
            },
            None,
        );
        assert_eq!(c.held(), None);
    }

    #[test]
    fn a_done_plan_resumed_after_review_is_looked_at_again() {
        let mut c = Cursor::default();
        c.apply(&RESUMED, Some(resumed(true)));
        assert_eq!(
            c.held(),
            Some((Verdict::Replan, "resumed after review: stuck"))
        );
        // Not without per-step replanning, nor with steps left.
        for r in [
            Resumed {
                replans: false,
                ..resumed(true)
            },
            Resumed {
                plan_done: false,
                ..resumed(true)
            },
        ] {
            let mut c = Cursor::default();
            c.apply(&RESUMED, Some(r));
            assert_eq!(c.held(), None);
        }
    }
}
