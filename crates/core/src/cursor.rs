//! [`Cursor`]: where the planning graph stands between the events that act
//! on it — the decision held until in-flight steps finish. It is part of the
//! folded [`RunState`](crate::state::RunState) and changes only with events,
//! so a resumed run rebuilds it by folding its log, and the engine never
//! reconstructs it by special code.

use crate::decision::Verdict;
use crate::event::EventKind;

/// The run's position in the graph that is not a step status: the decision
/// waiting for in-flight steps to finish.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cursor {
    /// The decision to take once nothing is in flight: the strongest verdict
    /// assessed (or an approval refused) since the plan version was approved,
    /// or, after a resume, what the run goes on with. A replan takes it.
    held: Option<(Verdict, String)>,
    /// The strongest verdict assessed since the plan version was approved:
    /// what a resume goes on from (a refused approval is asked again).
    assessed: Option<(Verdict, String)>,
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

    /// Folds one event (`resumed` is given with `run_resumed` only).
    pub(crate) fn apply(&mut self, kind: &EventKind, resumed: Option<Resumed<'_>>) {
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
            EventKind::PlanApproved { .. } => *self = Self::default(),
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
