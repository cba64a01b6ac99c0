//! The engine's decisions, as pure functions of the folded state and what
//! just happened: no role is called, nothing is recorded, no task is
//! spawned. The node methods gather an outcome (a role's answer, a step's
//! result, the validator's diagnostics), ask here what it means, and then
//! perform the answer — record its events, go to its node. So every branch
//! of the planning graph can be tested with a state and an outcome alone.

mod act;
mod assess;
mod budget;
mod dispatch;
mod plan;

pub(crate) use act::*;
pub(crate) use assess::*;
pub(crate) use budget::*;
pub(crate) use dispatch::*;
pub(crate) use plan::*;

use crate::decision::{Driver, Report, Verdict};

use super::AssessMode;
use crate::event::{Brief, EventKind, StopCondition};
use crate::graph::Node;
use crate::state::RunState;
use crate::usage::Usage;

/// Where the graph goes, with what the node there needs from the decision
/// that sent it: a decision's reason travels with it, not in the run.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Next {
    /// A node that reads only the folded state.
    To(Node),
    /// replan, told why.
    Replan(String),
    /// mark_needs_review, told why. (Boxed, as the answer is: a run's
    /// future holds a `Next`, and these are rare and large.)
    Review(Box<Review>),
    /// synthesize_report, with the ReAct actor's answer as the report.
    Answer(Box<(Report, Usage)>),
}

impl Next {
    /// The graph node it goes to (what [`EDGES`](crate::graph::EDGES) checks).
    pub(crate) fn node(&self) -> Node {
        match self {
            Self::To(node) => *node,
            Self::Replan(_) => Node::Replan,
            Self::Review(_) => Node::MarkNeedsReview,
            Self::Answer(..) => Node::SynthesizeReport,
        }
    }
}

impl From<Node> for Next {
    fn from(node: Node) -> Self {
        Self::To(node)
    }
}

/// What mark_needs_review records besides the partial brief.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Review {
    /// Why the run stops (empty: it cannot continue safely).
    pub(crate) reason: String,
    /// What the unusable answer that stopped it cost.
    pub(crate) usage: Usage,
    /// It stopped on an unusable answer: a resume asks again.
    pub(crate) ask_again: bool,
    /// A report that cited nothing, as the partial brief, with its cost.
    pub(crate) partial: Option<(Brief, Usage)>,
}

impl Review {
    /// To mark_needs_review, for this reason.
    pub(crate) fn because(reason: impl Into<String>) -> Next {
        Next::Review(Box::new(Self {
            reason: reason.into(),
            ..Self::default()
        }))
    }
}

/// A decision to perform: record these events, in order, then go on.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Command {
    /// Events to append (each durable before the next is acted on).
    pub(crate) record: Vec<EventKind>,
    /// Where the graph goes after them.
    pub(crate) then: Next,
}

impl Command {
    /// Go on, recording nothing.
    pub(crate) fn go(next: impl Into<Next>) -> Self {
        Self {
            record: Vec::new(),
            then: next.into(),
        }
    }

    /// Record a stop condition, then stop for review.
    fn stop(condition: StopCondition, detail: String, review: String) -> Self {
        Self {
            record: vec![EventKind::StopConditionMet {
                condition,
                detail,
                gaps: Vec::new(),
                usage: Usage::default(),
            }],
            then: Review::because(review),
        }
    }
}

/// The decision held until nothing is in flight: the cursor's (folded from
/// assessments and refusals), else the token budget's stop once recorded.
pub(crate) fn held(state: &RunState) -> Option<(Verdict, &str)> {
    state.cursor.held().or_else(|| {
        (state.stop_condition == Some(StopCondition::TokenBudget))
            .then_some((Verdict::Synthesize, "the token budget is spent"))
    })
}

/// What a held decision leads to once nothing is in flight. A replan goes
/// ahead only within `max_replans` and `max_steps` (see [`replan_guard`]).
pub(crate) fn on_held(state: &RunState, verdict: Verdict, reason: &str) -> Command {
    match verdict {
        Verdict::Continue => Command::go(Node::SelectNextStep),
        Verdict::Synthesize => Command::go(Node::SynthesizeReport),
        Verdict::NeedsReview => Command::go(Review::because(reason)),
        Verdict::Replan => match replan_guard(state, reason.to_owned()) {
            ReplanGuard::Replan(_) if let Some(report) = report_if_spent(state) => report,
            ReplanGuard::Replan(reason) => Command::go(Next::Replan(reason)),
            // Seed 000: past the replan cap, ask the person to simplify.
            ReplanGuard::Stop {
                condition,
                detail,
                review,
            } => Command::stop(condition, detail, review),
        },
    }
}

/// Where a resumed run stands, from its folded state alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Standing {
    /// At this node, with nothing in flight to reconcile.
    At(Node),
    /// A ReAct run: reconcile its calls, then act.
    React,
    /// An approved plan: reconcile its steps, then [`after_resume`].
    Plan,
    /// Stopped while its first plan streamed: reconcile the streamed steps,
    /// then validate the draft if it was received, else plan again.
    Streamed,
}

/// How far a run got, read from the fold: input, strategy, draft, plan,
/// approval. (Runs logged before strategies existed have a plan or a
/// draft: the graph.)
pub(crate) fn standing(state: &RunState) -> Standing {
    if state.goal.is_empty() {
        return Standing::At(Node::PrepareInput);
    }
    if state.driver.is_none() && state.plan.version == 0 && state.pending_draft.is_none() {
        return Standing::At(Node::ChooseStrategy);
    }
    if state.cursor.escalated_unplanned() {
        // Escalated from ReAct at its cap; the planner has not answered.
        return Standing::At(Node::CreatePlan);
    }
    if let Some(Driver::React { .. }) = state.driver {
        return Standing::React;
    }
    if stopped_mid_stream(state) {
        return Standing::Streamed;
    }
    if state.pending_draft.is_some() {
        return Standing::At(Node::ValidatePlan);
    }
    if state.plan.version == 0 {
        return Standing::At(Node::CreatePlan);
    }
    if state.approved_version != Some(state.plan.version) {
        return Standing::At(Node::ReviewPlan);
    }
    Standing::Plan
}

/// Where a resumed plan goes once its in-flight steps are reconciled:
/// outcomes to assess first, then the decision held (see
/// [`Cursor`](crate::cursor::Cursor)), else on with the plan.
pub(crate) fn after_resume(state: &RunState, busy: bool, sources_changed: bool) -> Command {
    if busy {
        return Command::go(Node::ExecuteStep);
    }
    // New sources may answer what the old ones did not: a replan searches
    // the gaps again (within the replan bound, as any replan).
    if sources_changed && !state.knowledge_gaps.is_empty() {
        return on_held(
            state,
            Verdict::Replan,
            "the sources changed since the run stopped: its gaps are searched again",
        );
    }
    match state.cursor.held() {
        Some((verdict, reason)) => on_held(state, verdict, reason),
        None => Command::go(Node::SelectNextStep),
    }
}

/// Whether a folded run stopped while its first plan was streaming: steps
/// on record, but no plan version validated yet.
fn stopped_mid_stream(state: &RunState) -> bool {
    state.plan.version == 0 && !state.plan.steps.is_empty()
}

#[cfg(test)]
pub(super) mod tests {
    #![allow(clippy::unwrap_used)]

    use crate::failure::StepFailure;
    use crate::retry::FailureClass;
    use crate::roles::StepOutcome;

    use super::*;
    use crate::cursor::tests::assessed;
    use crate::failure::FailureKind;
    use crate::plan::{Plan, Step};

    pub(super) fn state(steps: Vec<Step>) -> RunState {
        RunState {
            plan: Plan { version: 1, steps },
            max_replans: 2,
            max_steps: 10,
            max_repairs: 1,
            ..RunState::default()
        }
    }

    pub(super) fn failed(class: FailureClass) -> StepOutcome {
        StepOutcome::Failed(StepFailure::new(class, FailureKind::Tool, "boom"))
    }

    pub(super) fn two_steps() -> RunState {
        state(vec![
            Step::new("a", "find", "search"),
            Step::new("b", "use it", "search").after(["a"]),
        ])
    }

    #[test]
    fn a_transition_stays_small_in_the_runs_future() {
        // The large, rare payloads are boxed: a transition is no larger
        // than a replan's reason.
        assert!(
            std::mem::size_of::<Next>() <= std::mem::size_of::<String>(),
            "Next is {} bytes",
            std::mem::size_of::<Next>()
        );
    }

    #[test]
    fn a_held_decision_leads_where_its_verdict_says_within_the_bounds() {
        let mut s = two_steps();
        assert_eq!(
            on_held(&s, Verdict::Synthesize, "enough"),
            Command::go(Node::SynthesizeReport)
        );
        assert_eq!(
            on_held(&s, Verdict::NeedsReview, "fatal"),
            Command::go(Review::because("fatal"))
        );
        assert_eq!(
            on_held(&s, Verdict::Replan, "gap"),
            Command::go(Next::Replan("gap".into()))
        );
        // No replans left: the stop is recorded before the review.
        s.replan_count = 2;
        let command = on_held(&s, Verdict::Replan, "gap");
        assert!(
            matches!(
                command.record.as_slice(),
                [EventKind::StopConditionMet {
                    condition: StopCondition::MaxReplans,
                    ..
                }]
            ),
            "{command:?}"
        );
        assert!(
            matches!(&command.then, Next::Review(r) if r.reason.contains("please simplify")),
            "{command:?}"
        );
    }

    #[test]
    fn the_held_decision_is_the_folds_else_a_spent_budget() {
        let mut s = two_steps();
        assert_eq!(held(&s), None);
        s.stop_condition = Some(StopCondition::TokenBudget);
        assert_eq!(
            held(&s),
            Some((Verdict::Synthesize, "the token budget is spent"))
        );
        s.cursor.apply(&assessed(Verdict::Replan, "gap"), None);
        assert_eq!(held(&s), Some((Verdict::Replan, "gap")));
    }

    #[test]
    fn a_resumed_run_stands_where_its_fold_says() {
        let mut s = RunState::default();
        assert_eq!(standing(&s), Standing::At(Node::PrepareInput));
        s.goal = "compare".into();
        assert_eq!(standing(&s), Standing::At(Node::ChooseStrategy));
        s.driver = Some(Driver::PLAN_EXECUTE);
        assert_eq!(standing(&s), Standing::At(Node::CreatePlan));
        s.pending_draft = Some(serde_json::json!({"steps": []}));
        assert_eq!(standing(&s), Standing::At(Node::ValidatePlan));
        s.pending_draft = None;
        // Streamed steps on record, no plan validated yet: stopped mid-stream.
        s.plan.steps = two_steps().plan.steps;
        assert_eq!(standing(&s), Standing::Streamed);
        s.plan.steps.clear();
        s.plan = two_steps().plan;
        assert_eq!(standing(&s), Standing::At(Node::ReviewPlan));
        s.approved_version = Some(1);
        assert_eq!(standing(&s), Standing::Plan);
        s.driver = Some(Driver::React {
            isolated: false,
            max_tool_calls: 3,
            escalate: false,
        });
        assert_eq!(standing(&s), Standing::React);
        // A log from before strategies: a plan without a driver is the graph.
        s.driver = None;
        assert_eq!(standing(&s), Standing::Plan);
    }

    #[test]
    fn a_resumed_plan_assesses_first_then_takes_the_held_decision() {
        let mut s = two_steps();
        assert_eq!(
            after_resume(&s, false, false),
            Command::go(Node::SelectNextStep)
        );
        s.cursor.apply(&assessed(Verdict::Replan, "gap"), None);
        assert_eq!(
            after_resume(&s, true, false),
            Command::go(Node::ExecuteStep)
        );
        assert_eq!(
            after_resume(&s, false, false),
            Command::go(Next::Replan("gap".into()))
        );
    }

    #[test]
    fn a_resume_on_changed_sources_searches_the_gaps_again() {
        let mut s = two_steps();
        s.cursor
            .apply(&assessed(Verdict::NeedsReview, "no evidence"), None);
        // Unchanged sources: the held decision stands.
        assert_eq!(
            after_resume(&s, false, false),
            Command::go(Review::because("no evidence"))
        );
        // Changed sources but no gap: nothing to search again.
        assert_eq!(
            after_resume(&s, false, true),
            Command::go(Review::because("no evidence"))
        );
        s.knowledge_gaps
            .push("No evidence in the notes for: cost".into());
        assert!(matches!(
            after_resume(&s, false, true),
            Command {
                then: Next::Replan(_),
                ..
            }
        ));
        // Past the replan bound it stops, as any replan does.
        s.replan_count = s.max_replans;
        assert!(!matches!(
            after_resume(&s, false, true),
            Command {
                then: Next::Replan(_),
                ..
            }
        ));
    }
}
