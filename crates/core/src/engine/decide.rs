//! The engine's decisions, as pure functions of the folded state and what
//! just happened: no role is called, nothing is recorded, no task is
//! spawned. The node methods gather an outcome (a role's answer, a step's
//! result, the validator's diagnostics), ask here what it means, and then
//! perform the answer — record its events, go to its node. So every branch
//! of the planning graph can be tested with a state and an outcome alone.

use crate::decision::{Assessment, Driver, Report, ReviewDecision, Verdict, VerifyPolicy};
use crate::goal::{Goal, InputError};
use crate::plan::criteria::{Check, Criterion, all_typed};
use crate::plan::validate::ValidatedPlan;
use crate::plan::{Plan, Step};

use super::AssessMode;
use crate::event::{Brief, EventKind, StopCondition};
use crate::failure::StepFailure;
use crate::graph::Node;
use crate::ids::StepId;
use crate::plan::validate::Diagnostic;
use crate::retry::{FailureClass, RetryPolicy};
use crate::roles::StepOutcome;
use crate::scheduler::blocked_dependants;
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

/// What an assessed step means for the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Assessed {
    /// The verdict in force, which may overrule the assessor's.
    pub(crate) verdict: Verdict,
    /// Why, for a person.
    pub(crate) reason: String,
    /// The step failed and replanning is not per step (`plan-solve`,
    /// `verified`): skip what it blocks, naming this failure.
    pub(crate) skip_blocked: Option<String>,
}

/// The verdict on a finished step: the assessor's, unless the outcome
/// overrules it — a fatal failure always stops for review; a failure that
/// blocks other steps is a replan even when the assessor says carry on;
/// without per-step replanning (`replans_per_step` false) a replan becomes
/// "carry on, skipping what the failure blocks".
pub(crate) fn assess(
    state: &RunState,
    step: &StepId,
    outcome: &StepOutcome,
    assessor: (Verdict, String),
    replans_per_step: bool,
) -> Assessed {
    let (mut verdict, mut reason) = assessor;
    let mut skip_blocked = None;
    if let StepOutcome::Failed(failure) = outcome {
        let blocked = blocked_dependants(&state.plan, step);
        if failure.class == FailureClass::Fatal {
            verdict = Verdict::NeedsReview;
            reason = format!("step {step} failed fatally: {}", failure.message);
        } else if verdict == Verdict::Continue && !blocked.is_empty() {
            let names: Vec<&str> = blocked.iter().map(StepId::as_str).collect();
            verdict = Verdict::Replan;
            reason = format!(
                "step {step} failed and blocks {}: {}",
                names.join(", "),
                failure.message
            );
        }
    }
    if verdict == Verdict::Replan && !replans_per_step {
        verdict = Verdict::Continue;
        if let StepOutcome::Failed(failure) = outcome {
            skip_blocked = Some(failure.message.clone());
        }
    }
    Assessed {
        verdict,
        reason,
        skip_blocked,
    }
}

/// The engine's own judgement of a finished step, when `mode` lets it judge
/// one: by the step's typed checks ([`Check`](crate::plan::criteria::Check)),
/// with no model call. `None`: the assessor judges it. A failed step's
/// criteria cannot hold: a gap, as the assessor would name it. Under
/// `Rules`, text criteria are not judged, and the observation says so.
/// Checks that hold resolve the gaps the same checks named on an earlier
/// step of the same tool (the step a replan retried): that gap is closed.
pub(crate) fn by_rules(
    state: &RunState,
    step: &Step,
    outcome: &StepOutcome,
    mode: AssessMode,
) -> Option<Assessment> {
    let typed = all_typed(&step.acceptance_criteria);
    let checks: Vec<&Check> = match (mode, typed) {
        (AssessMode::Model, _) | (AssessMode::Auto, None) => return None,
        (_, Some(all)) => all,
        (AssessMode::Rules, None) => step
            .acceptance_criteria
            .iter()
            .filter_map(|c| match c {
                Criterion::Check(check) => Some(check),
                Criterion::Text(_) => None,
            })
            .collect(),
    };
    let output = match outcome {
        StepOutcome::Failed(failure) => {
            return Some(Assessment::gap(format!(
                "{}: failed ({}), so its criteria cannot hold",
                step.id, failure.message
            )));
        }
        StepOutcome::Succeeded(result) => &result.output,
    };
    let failed: Vec<String> = checks
        .iter()
        .filter_map(|c| c.evaluate(output).err())
        .collect();
    if !failed.is_empty() {
        return Some(Assessment::gap(format!(
            "{}: {}",
            step.id,
            failed.join("; ")
        )));
    }
    let unjudged = step.acceptance_criteria.len() - checks.len();
    let mut assessment = Assessment::ok(if checks.is_empty() {
        "no typed criteria to check".to_owned()
    } else {
        let listed: Vec<String> = checks.iter().map(ToString::to_string).collect();
        format!("checked by the engine: {}", listed.join("; "))
    });
    if !checks.is_empty() {
        assessment.resolved_gaps = retried_gaps(state, step);
    }
    if unjudged > 0 {
        // Not judged is not met: say so rather than claim it.
        assessment.acceptance_met = false;
        assessment.observations.push(format!(
            "{unjudged} text criterion(s) of {} not judged: the run assesses by typed checks only",
            step.id
        ));
    }
    Some(assessment)
}

/// The open gaps the engine named for earlier steps that ran `step`'s tool
/// under the same criteria ("a: results has fewer than 1 item(s)").
fn retried_gaps(state: &RunState, step: &Step) -> Vec<String> {
    state
        .knowledge_gaps
        .iter()
        .filter(|gap| {
            state.plan.steps.iter().any(|earlier| {
                earlier.id != step.id
                    && earlier.tool == step.tool
                    && earlier.acceptance_criteria == step.acceptance_criteria
                    && gap
                        .strip_prefix(earlier.id.as_str())
                        .is_some_and(|rest| rest.starts_with(": "))
            })
        })
        .cloned()
        .collect()
}

/// Whether a replan may go ahead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ReplanGuard {
    /// Replan, for this reason.
    Replan(String),
    /// A bound is reached: record the stop and ask the person.
    Stop {
        /// `max_replans` or `max_steps`.
        condition: StopCondition,
        /// What was reached (recorded).
        detail: String,
        /// What the person is told (seed 000: please simplify).
        review: String,
    },
}

/// `max_replans` and `max_steps` always end the loop: a replan goes ahead
/// only with replans left and fewer steps run than `max_steps`.
pub(crate) fn replan_guard(state: &RunState, reason: String) -> ReplanGuard {
    let ran = state
        .plan
        .steps
        .iter()
        .filter(|s| s.status.is_final() && s.status != crate::step_status::StepStatus::Skipped)
        .count();
    let (condition, detail, more) = if state.replan_count >= state.max_replans {
        (
            StopCondition::MaxReplans,
            format!("{} replan(s) made, none left; {reason}", state.replan_count),
            "allow more replans",
        )
    } else if ran >= state.max_steps {
        (
            StopCondition::MaxSteps,
            format!(
                "{ran} step(s) ran, max_steps is {}; {reason}",
                state.max_steps
            ),
            "allow more steps",
        )
    } else {
        return ReplanGuard::Replan(reason);
    };
    let review = format!(
        "{condition}: {detail} — the goal is too complex to finish within these bounds: please simplify it or narrow it, or {more}"
    );
    ReplanGuard::Stop {
        condition,
        detail,
        review,
    }
}

/// prepare_input: a goal that can be read is recorded and the strategy
/// chosen next; one that cannot ends the run, saying why.
pub(crate) fn prepared(input: Result<Goal, InputError>) -> Command {
    match input {
        Ok(goal) => Command {
            record: vec![EventKind::InputPrepared {
                goal: Box::new(goal),
            }],
            then: Node::ChooseStrategy.into(),
        },
        Err(e) => Command {
            record: vec![EventKind::InputRejected {
                reason: e.to_string(),
            }],
            then: Node::End.into(),
        },
    }
}

/// validate_plan: a valid draft becomes the next plan version, to review;
/// an invalid one is recorded with its diagnostics (see [`invalid_plan`]).
pub(crate) fn validated(
    state: &RunState,
    checked: Result<ValidatedPlan, Vec<Diagnostic>>,
    repair_first_draft: bool,
) -> Command {
    match checked {
        Ok(validated) => Command {
            record: vec![EventKind::PlanValidated {
                plan: Plan {
                    version: state.plan.version + 1,
                    steps: validated.into_steps(),
                },
            }],
            then: Node::ReviewPlan.into(),
        },
        Err(diagnostics) => invalid_plan(state, diagnostics, repair_first_draft),
    }
}

/// review_plan: what the reviewer's decision on plan `version` records and
/// where it goes — dispatch, a person's approval, or review with the reason.
/// (A deferral records no usage: the reviewer's cost on it is not kept, as
/// before this was a function of its own.)
pub(crate) fn reviewed(version: u32, decision: ReviewDecision, usage: Usage) -> Command {
    match decision {
        ReviewDecision::Approved { by } => Command {
            record: vec![EventKind::PlanApproved { version, by, usage }],
            then: Node::SelectNextStep.into(),
        },
        ReviewDecision::Deferred => Command {
            record: vec![EventKind::PlanReviewRequested { version }],
            then: Node::AwaitApproval.into(),
        },
        ReviewDecision::Rejected { reason } => {
            let review = format!("plan version {version} was rejected: {reason}");
            Command {
                record: vec![EventKind::PlanRejected {
                    version,
                    reason,
                    usage,
                }],
                then: Review::because(review),
            }
        }
    }
}

/// Where a plan that failed validation goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Invalid {
    /// To the repairer.
    Repair,
    /// To a person, for this reason.
    Review(String),
    /// To a person, once `max_repairs` is recorded as reached.
    RepairsSpent {
        /// What was reached (recorded with the stop).
        detail: String,
        /// What the person is told.
        review: String,
    },
}

/// validate_plan on an invalid draft: record its diagnostics, then repair
/// it or stop for review (see [`invalid`]).
pub(crate) fn invalid_plan(
    state: &RunState,
    diagnostics: Vec<Diagnostic>,
    repair_first_draft: bool,
) -> Command {
    let next = invalid(state, &diagnostics, repair_first_draft);
    let invalid = EventKind::PlanInvalid { diagnostics };
    match next {
        Invalid::Repair => Command {
            record: vec![invalid],
            then: Node::RepairPlan.into(),
        },
        Invalid::Review(reason) => Command {
            record: vec![invalid],
            then: Review::because(reason),
        },
        Invalid::RepairsSpent { detail, review } => {
            let mut command = Command::stop(StopCondition::MaxRepairs, detail, review);
            command.record.insert(0, invalid);
            command
        }
    }
}

/// A person's own plan (the first version, without `repair_first_draft`)
/// is never altered without their say; an unsafe plan is never repaired;
/// repairs stop at `max_repairs`.
fn invalid(state: &RunState, diagnostics: &[Diagnostic], repair_first_draft: bool) -> Invalid {
    let count = diagnostics.len();
    if state.plan.version == 0 && !repair_first_draft {
        let listed: Vec<String> = diagnostics.iter().map(ToString::to_string).collect();
        return Invalid::Review(format!(
            "the given plan has {count} problem(s) and is not repaired unless repair is asked for: {}",
            listed.join("; ")
        ));
    }
    let unsafe_ones: Vec<String> = diagnostics
        .iter()
        .filter(|d| !d.repairable)
        .map(ToString::to_string)
        .collect();
    if !unsafe_ones.is_empty() {
        return Invalid::Review(format!("the plan is unsafe: {}", unsafe_ones.join("; ")));
    }
    if state.repair_count >= state.max_repairs {
        let detail = format!(
            "the plan still has {count} problem(s) after {} repair attempt(s)",
            state.repair_count
        );
        let review = format!("{}: {detail}", StopCondition::MaxRepairs);
        return Invalid::RepairsSpent { detail, review };
    }
    Invalid::Repair
}

/// What follows a failed attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AfterFailure {
    /// Try again after this backoff.
    Retry {
        /// Milliseconds to wait.
        delay_ms: u64,
    },
    /// Give up on the step, for this reason.
    Terminate(String),
}

/// Transient failures are retried with backoff while the policy allows
/// (`jitter` is a draw in 0..1, so the caller owns the randomness); any
/// other failure ends the step.
pub(crate) fn after_failure(
    policy: &RetryPolicy,
    attempt: u32,
    failure: &StepFailure,
    jitter: f64,
) -> AfterFailure {
    if failure.class == FailureClass::Transient && policy.allows_retry_after(attempt) {
        return AfterFailure::Retry {
            delay_ms: policy.delay_ms(attempt, failure.retry_after_ms, jitter),
        };
    }
    AfterFailure::Terminate(match failure.class {
        FailureClass::Transient => format!(
            "still failing after {attempt} attempt(s): {}",
            failure.message
        ),
        FailureClass::Persistent => {
            format!("persistent failure, not retried: {}", failure.message)
        }
        FailureClass::Fatal => format!("fatal failure: {}", failure.message),
    })
}

/// What dispatch found once it started what it could.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Dispatched<'a> {
    /// Steps are in flight (or outcomes wait to be assessed).
    pub(crate) busy: bool,
    /// A decision held until nothing is in flight.
    pub(crate) held: Option<Verdict>,
    /// Side-effect steps wait for a person's approval.
    pub(crate) awaiting: bool,
    /// The run verifies each iteration (`verified`).
    pub(crate) verifies: bool,
    /// The run's state.
    pub(crate) state: &'a RunState,
}

/// Where the graph goes after select_next_step. Every step final and
/// nothing held: the iteration is done (verify, else report). A step that
/// is neither final nor runnable, or a held replan with nothing in flight,
/// is a bug, named.
pub(crate) fn after_dispatch(d: Dispatched<'_>) -> Result<Node, String> {
    if d.busy {
        return Ok(Node::ExecuteStep);
    }
    match d.held {
        // A refused approval, with nothing left in flight.
        Some(Verdict::NeedsReview) => return Ok(Node::MarkNeedsReview),
        _ if d.awaiting => return Ok(Node::AwaitApproval),
        // The token budget stopped dispatch.
        Some(Verdict::Synthesize) => return Ok(Node::SynthesizeReport),
        Some(other) => {
            return Err(format!(
                "a held decision ({other:?}) with nothing in flight"
            ));
        }
        None => {}
    }
    let stuck: Vec<String> = d
        .state
        .plan
        .steps
        .iter()
        .filter(|s| !s.status.is_final())
        .map(|s| format!("{} ({})", s.id, s.status))
        .collect();
    if !stuck.is_empty() {
        return Err(format!(
            "nothing runnable but steps remain: {}",
            stuck.join(", ")
        ));
    }
    Ok(if d.verifies {
        Node::Verify
    } else {
        Node::SynthesizeReport
    })
}

/// `verified`, after the iteration's verdict: the first stop condition
/// that holds (or no replans left) sends the run to its report, naming what
/// is still missing as gaps; otherwise the replanner is told what is weak or
/// missing. `None`: no verdict to decide from.
pub(crate) fn after_verification(state: &RunState, policy: VerifyPolicy) -> Option<Command> {
    let verification = state.verification_history.last()?;
    let iteration = state.verification_history.len();
    let stop = policy.stop(state).or_else(|| {
        (state.replan_count >= state.max_replans).then(|| {
            (
                StopCondition::MaxIterations,
                format!(
                    "{iteration} iteration(s) made and no replans left (max_replans is {})",
                    state.max_replans
                ),
            )
        })
    });
    if let Some((condition, detail)) = stop {
        // Missing elements not already named by an open gap.
        let gaps = verification
            .missing
            .iter()
            .filter(|m| !state.knowledge_gaps.iter().any(|g| g.contains(m.as_str())))
            .map(|m| format!("Missing after verification: {m}"))
            .collect();
        return Some(Command {
            record: vec![EventKind::StopConditionMet {
                condition,
                detail,
                gaps,
                usage: Usage::default(),
            }],
            then: Node::SynthesizeReport.into(),
        });
    }
    let mut reason = format!(
        "verification {iteration}: {}, completeness {:.2}",
        verification.status.as_str(),
        verification.completeness
    );
    if !verification.missing.is_empty() {
        reason.push_str(&format!("; missing: {}", verification.missing.join("; ")));
    }
    if !verification.weak_steps.is_empty() {
        let weak: Vec<&str> = verification.weak_steps.iter().map(StepId::as_str).collect();
        reason.push_str(&format!("; weak: {}", weak.join(", ")));
    }
    if !verification.contradictions.is_empty() {
        reason.push_str(&format!(
            "; contradictions: {}",
            verification.contradictions.join("; ")
        ));
    }
    Some(Command::go(Next::Replan(reason)))
}

/// Whether a folded run stopped while its first plan was streaming: steps
/// on record, but no plan version validated yet.
fn stopped_mid_stream(state: &RunState) -> bool {
    state.plan.version == 0 && !state.plan.steps.is_empty()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::cursor::tests::assessed;
    use crate::failure::FailureKind;
    use crate::plan::{Plan, Step};
    use crate::step_status::StepStatus;

    fn state(steps: Vec<Step>) -> RunState {
        RunState {
            plan: Plan { version: 1, steps },
            max_replans: 2,
            max_steps: 10,
            max_repairs: 1,
            ..RunState::default()
        }
    }

    fn failed(class: FailureClass) -> StepOutcome {
        StepOutcome::Failed(StepFailure::new(class, FailureKind::Tool, "boom"))
    }

    #[test]
    fn a_review_records_its_decision_and_goes_where_it_says() {
        let approved = reviewed(
            2,
            ReviewDecision::Approved { by: "ana".into() },
            Usage::default(),
        );
        assert_eq!(approved.then, Next::To(Node::SelectNextStep));
        assert!(matches!(
            approved.record.as_slice(),
            [EventKind::PlanApproved { version: 2, by, .. }] if by == "ana"
        ));
        let deferred = reviewed(2, ReviewDecision::Deferred, Usage::default());
        assert_eq!(deferred.then, Next::To(Node::AwaitApproval));
        let rejected = reviewed(
            3,
            ReviewDecision::Rejected {
                reason: "too broad".into(),
            },
            Usage::default(),
        );
        assert!(matches!(
            rejected.record.as_slice(),
            [EventKind::PlanRejected { version: 3, .. }]
        ));
        match rejected.then {
            Next::Review(review) => {
                assert_eq!(review.reason, "plan version 3 was rejected: too broad");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_valid_draft_is_the_next_version_and_an_unreadable_goal_ends_the_run() {
        let mut tools = crate::tool::ToolRegistry::new();
        tools.register_dyn(std::sync::Arc::new(crate::testing::FnTool::echo(
            "search",
            std::time::Duration::ZERO,
        )));
        let catalog = tools.catalog().unwrap();
        let constraints = crate::goal::Constraints::default();
        let limits = crate::plan::validate::Limits {
            tools: &catalog,
            max_steps: None,
            constraints: &constraints,
        };
        let check = |tool: &str| {
            let draft = serde_json::json!({"steps": [
                {"id": "x", "description": "find", "tool": tool, "acceptance_criteria": ["non_empty"]}
            ]});
            crate::plan::validate::validate(&draft, limits)
        };
        let s = two_steps();
        let command = validated(&s, check("search"), true);
        assert_eq!(command.then, Next::To(Node::ReviewPlan));
        assert!(matches!(
            command.record.as_slice(),
            [EventKind::PlanValidated { plan }] if plan.version == 2 && plan.steps.len() == 1
        ));
        let command = validated(&s, check("nosuch"), true);
        assert_eq!(command.then, Next::To(Node::RepairPlan));
        assert!(
            matches!(command.record.as_slice(), [EventKind::PlanInvalid { diagnostics }] if !diagnostics.is_empty())
        );
        let ended = prepared(Goal::prepare("   ", constraints.clone()));
        assert_eq!(ended.then, Next::To(Node::End));
        assert!(matches!(
            ended.record.as_slice(),
            [EventKind::InputRejected { .. }]
        ));
    }

    fn two_steps() -> RunState {
        state(vec![
            Step::new("a", "find", "search"),
            Step::new("b", "use it", "search").after(["a"]),
        ])
    }

    #[test]
    fn the_outcome_can_overrule_the_assessor() {
        let s = two_steps();
        let a = StepId::from("a");
        let go_on = || (Verdict::Continue, "fine".to_owned());
        // A fatal failure stops for review whatever the assessor said.
        let fatal = assess(&s, &a, &failed(FailureClass::Fatal), go_on(), true);
        assert_eq!(fatal.verdict, Verdict::NeedsReview);
        // A failure that blocks b is a replan …
        let blocks = assess(&s, &a, &failed(FailureClass::Persistent), go_on(), true);
        assert_eq!(blocks.verdict, Verdict::Replan);
        assert!(blocks.reason.contains("blocks b"), "{}", blocks.reason);
        assert_eq!(blocks.skip_blocked, None);
        // … or, without per-step replanning, carry on skipping b.
        let solve = assess(&s, &a, &failed(FailureClass::Persistent), go_on(), false);
        assert_eq!(solve.verdict, Verdict::Continue);
        assert_eq!(solve.skip_blocked.as_deref(), Some("boom"));
        // A failed leaf blocks nothing: the assessor's word stands.
        let leaf = assess(
            &s,
            &StepId::from("b"),
            &failed(FailureClass::Persistent),
            go_on(),
            true,
        );
        assert_eq!(leaf.verdict, Verdict::Continue);
    }

    #[test]
    fn bounds_end_the_replanning_loop() {
        let mut s = two_steps();
        assert_eq!(
            replan_guard(&s, "gap".into()),
            ReplanGuard::Replan("gap".into())
        );
        s.replan_count = 2;
        let ReplanGuard::Stop {
            condition, review, ..
        } = replan_guard(&s, "gap".into())
        else {
            panic!("expected a stop");
        };
        assert_eq!(condition, StopCondition::MaxReplans);
        assert!(review.contains("please simplify"), "{review}");
        s.replan_count = 0;
        s.max_steps = 1;
        s.plan.steps[0].status = StepStatus::Succeeded;
        assert!(matches!(
            replan_guard(&s, "gap".into()),
            ReplanGuard::Stop {
                condition: StopCondition::MaxSteps,
                ..
            }
        ));
    }

    #[test]
    fn a_persons_plan_is_never_repaired_unasked() {
        let diag = |repairable| Diagnostic {
            code: crate::plan::validate::DiagnosticCode::UnknownTool,
            step: None,
            index: Some(0),
            path: "/steps/0/tool".into(),
            message: "no tool".into(),
            repairable,
        };
        let mut s = RunState {
            max_repairs: 1,
            ..RunState::default()
        };
        assert!(matches!(
            invalid(&s, &[diag(true)], false),
            Invalid::Review(r) if r.contains("not repaired unless repair is asked for")
        ));
        assert_eq!(invalid(&s, &[diag(true)], true), Invalid::Repair);
        assert!(matches!(
            invalid(&s, &[diag(false)], true),
            Invalid::Review(r) if r.contains("unsafe")
        ));
        s.repair_count = 1;
        assert!(matches!(
            invalid(&s, &[diag(true)], true),
            Invalid::RepairsSpent { .. }
        ));
    }

    #[test]
    fn only_transient_failures_are_retried_within_the_policy() {
        let policy = RetryPolicy::default();
        let failure = |class| StepFailure::new(class, FailureKind::Tool, "boom");
        assert!(matches!(
            after_failure(&policy, 1, &failure(FailureClass::Transient), 0.5),
            AfterFailure::Retry { .. }
        ));
        let last = policy.max_attempts;
        assert!(matches!(
            after_failure(&policy, last, &failure(FailureClass::Transient), 0.5),
            AfterFailure::Terminate(r) if r.contains("still failing")
        ));
        assert!(matches!(
            after_failure(&policy, 1, &failure(FailureClass::Persistent), 0.5),
            AfterFailure::Terminate(r) if r.contains("not retried")
        ));
    }

    #[test]
    fn a_finished_iteration_goes_to_its_verifier_or_its_report() {
        let mut s = two_steps();
        let d = |state: &RunState, held, awaiting, verifies| {
            after_dispatch(Dispatched {
                busy: false,
                held,
                awaiting,
                verifies,
                state,
            })
        };
        // Steps left that nothing can start: a bug, named.
        assert!(
            d(&s, None, false, false)
                .unwrap_err()
                .contains("a (pending)")
        );
        for step in &mut s.plan.steps {
            step.status = StepStatus::Succeeded;
        }
        assert_eq!(d(&s, None, false, false), Ok(Node::SynthesizeReport));
        assert_eq!(d(&s, None, false, true), Ok(Node::Verify));
        assert_eq!(d(&s, None, true, false), Ok(Node::AwaitApproval));
        assert_eq!(
            d(&s, Some(Verdict::NeedsReview), true, false),
            Ok(Node::MarkNeedsReview)
        );
        assert!(d(&s, Some(Verdict::Replan), false, false).is_err());
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

    #[test]
    fn an_invalid_plan_is_recorded_before_it_is_repaired_or_reviewed() {
        let diag = Diagnostic {
            code: crate::plan::validate::DiagnosticCode::UnknownTool,
            step: None,
            index: Some(0),
            path: "/steps/0/tool".into(),
            message: "no tool".into(),
            repairable: true,
        };
        let mut s = two_steps();
        let repair = invalid_plan(&s, vec![diag.clone()], true);
        assert!(matches!(
            repair.record.as_slice(),
            [EventKind::PlanInvalid { .. }]
        ));
        assert_eq!(repair.then, Next::To(Node::RepairPlan));
        s.repair_count = 1;
        let spent = invalid_plan(&s, vec![diag], true);
        assert!(
            matches!(
                spent.record.as_slice(),
                [
                    EventKind::PlanInvalid { .. },
                    EventKind::StopConditionMet {
                        condition: StopCondition::MaxRepairs,
                        ..
                    }
                ]
            ),
            "{spent:?}"
        );
        assert_eq!(spent.then.node(), Node::MarkNeedsReview);
    }

    #[test]
    fn a_verdict_stops_the_verified_loop_or_tells_the_replanner_what_is_missing() {
        let mut s = two_steps();
        let policy = VerifyPolicy::default();
        assert_eq!(after_verification(&s, policy), None);
        let verdict = |completeness| crate::decision::Verification {
            status: crate::decision::Completeness::Partial,
            completeness,
            confidence: 0.2,
            missing: vec!["costs".into()],
            contradictions: Vec::new(),
            weak_steps: vec!["b".into()],
        };
        s.verification_history.push(verdict(0.3));
        let Some(command) = after_verification(&s, policy) else {
            panic!("a verdict to decide from");
        };
        assert!(command.record.is_empty());
        assert!(
            matches!(&command.then, Next::Replan(r) if r.contains("missing: costs") && r.contains("weak: b")),
            "{command:?}"
        );
        // Complete enough: stop, naming what is still missing as a gap.
        s.verification_history.push(verdict(0.9));
        let Some(command) = after_verification(&s, policy) else {
            panic!("a verdict to decide from");
        };
        assert_eq!(command.then, Next::To(Node::SynthesizeReport));
        assert!(
            matches!(
                command.record.as_slice(),
                [EventKind::StopConditionMet { gaps, .. }] if gaps == &["Missing after verification: costs".to_owned()]
            ),
            "{command:?}"
        );
    }
}
