//! How each event changes a [`RunState`]: the fold, and the step-status
//! and plan-version rules it enforces.

use crate::event::{Event, EventKind};
use crate::ids::StepId;
use crate::plan::{Plan, compose};
use crate::step_status::StepStatus;

use super::*;

fn push_unique(list: &mut Vec<String>, item: &str) {
    if !list.iter().any(|g| g == item) {
        list.push(item.to_owned());
    }
}

impl RunState {
    /// Takes a step off `current_step_ids` (where a step is at most once: it
    /// is added when it starts and removed whenever it stops running).
    fn not_running(&mut self, step: &StepId) {
        if let Some(i) = self.current_step_ids.iter().position(|s| s == step) {
            self.current_step_ids.remove(i);
        }
    }

    fn set_status(
        &mut self,
        id: &StepId,
        to: StepStatus,
    ) -> Result<&mut crate::plan::Step, StateError> {
        let at = self
            .index
            .position(&self.plan, id)
            .ok_or_else(|| StateError::UnknownStep(id.clone()))?;
        let from = self.plan.steps[at].status;
        self.plan.steps[at].status =
            from.transition(to)
                .map_err(|source| StateError::Transition {
                    step: id.clone(),
                    source,
                })?;
        self.index.changed(&self.plan, at, from);
        Ok(&mut self.plan.steps[at])
    }

    fn adopt(&mut self, plan: &Plan) -> Result<(), StateError> {
        for old in &self.plan.steps {
            let Some(new) = plan.step(&old.id) else {
                return Err(StateError::PlanRewritten {
                    step: old.id.clone(),
                    reason: "dropped".to_owned(),
                });
            };
            if old.status != new.status && !old.status.can_transition_to(new.status) {
                return Err(StateError::PlanRewritten {
                    step: old.id.clone(),
                    reason: format!("status {} -> {}", old.status, new.status),
                });
            }
            if old.status != StepStatus::Pending && old != new && new.status == old.status {
                return Err(StateError::PlanRewritten {
                    step: old.id.clone(),
                    reason: "changed after it ran".to_owned(),
                });
            }
        }
        self.plan = plan.clone();
        Ok(())
    }

    /// Everything `apply` does but recording the event in the history.
    pub(super) fn fold(&mut self, event: &Event) -> Result<(), StateError> {
        let expected = self.last_seq() + 1;
        if event.seq != expected {
            return Err(StateError::Sequence {
                expected,
                got: event.seq,
            });
        }
        if matches!(event.kind, EventKind::RunStarted { .. }) != (expected == 1) {
            return Err(StateError::NotStarted);
        }
        // What a resume goes on from: how the run stopped.
        let was = matches!(event.kind, EventKind::RunResumed { .. })
            .then(|| (self.status, self.blocked_reason.clone()));
        match &event.kind {
            EventKind::RunStarted {
                run_id,
                input,
                constraints,
                max_replans,
                max_steps,
                max_repairs,
                host,
                strategy,
            } => {
                self.host = host.clone();
                self.strategy = strategy.clone();
                self.run_id = run_id.clone();
                self.input = input.clone();
                self.constraints = (**constraints).clone();
                self.max_replans = *max_replans;
                self.max_steps = *max_steps;
                self.max_repairs = *max_repairs;
            }
            EventKind::InputRejected { reason } => {
                self.status = RunStatus::Failed;
                self.blocked_reason = Some(reason.clone());
            }
            EventKind::InputPrepared { goal } => {
                self.goal = goal.goal.clone();
                self.constraints = goal.constraints.clone();
            }
            EventKind::PlanCreated { draft, usage } => {
                self.pending_draft = Some(compose(&self.plan, draft));
                self.usage += *usage;
            }
            EventKind::PlanValidated { plan } => {
                self.adopt(plan)?;
                self.plan_errors.clear();
                self.pending_draft = None;
                self.repair_count = 0;
                self.approved_plan = false;
            }
            EventKind::PlanInvalid { diagnostics } => self.plan_errors = diagnostics.clone(),
            EventKind::PlanRepaired {
                attempt,
                draft,
                usage,
            } => {
                self.pending_draft = Some(compose(&self.plan, draft));
                self.repair_count = *attempt;
                self.usage += *usage;
            }
            EventKind::PlanApproved { version, usage, .. } => {
                self.pending_review = None;
                self.approved_plan = true;
                self.approved_version = Some(*version);
                self.usage += *usage;
            }
            EventKind::PlanRejected { reason, usage, .. } => {
                self.approved_plan = false;
                self.blocked_reason = Some(format!("plan rejected: {reason}"));
                self.usage += *usage;
            }
            EventKind::StepStarted { step, attempt } => {
                self.set_status(step, StepStatus::Running)?.attempts = *attempt;
                self.current_step_ids.push(step.clone());
                self.usage.tool_calls += 1;
            }
            EventKind::StepSucceeded {
                step,
                result,
                usage,
            } => {
                self.set_status(step, StepStatus::Succeeded)?;
                self.not_running(step);
                self.step_results.insert(step.clone(), result.clone());
                self.usage += *usage;
            }
            EventKind::StepFailed { step, failure, .. } => {
                self.set_status(step, StepStatus::Failed)?;
                self.not_running(step);
                self.usage += failure.usage;
                self.step_failures
                    .insert(step.clone(), failure.message.clone());
            }
            EventKind::StrategyChosen {
                strategy,
                driver,
                usage,
                ..
            } => {
                self.strategy = strategy.clone();
                self.driver = Some(*driver);
                self.usage += *usage;
            }
            EventKind::StrategyEscalated { to, usage, .. } => {
                self.driver = Some(*to);
                self.usage += *usage;
            }
            EventKind::StepAdded {
                step,
                usage,
                streamed,
            } => {
                if self.plan.step(&step.id).is_some() {
                    return Err(StateError::DuplicateStep(step.id.clone()));
                }
                let mut step = (**step).clone();
                step.status = StepStatus::Pending;
                step.attempts = 0;
                if !streamed {
                    // A streamed plan stays version 0 until it is validated whole.
                    self.plan.version = self.plan.version.max(1);
                }
                self.plan.steps.push(step);
                self.usage += *usage;
            }
            EventKind::StepSkipped { step, reason } => {
                self.set_status(step, StepStatus::Skipped)?;
                push_unique(&mut self.knowledge_gaps, reason);
            }
            EventKind::GapsNoted { gaps } => {
                for gap in gaps {
                    push_unique(&mut self.knowledge_gaps, gap);
                }
            }
            EventKind::StepSummarized {
                step,
                summary,
                usage,
            } => {
                self.step_summaries.insert(step.clone(), summary.clone());
                self.usage += *usage;
            }
            EventKind::Verified {
                verification,
                usage,
                ..
            } => {
                self.verification_history.push(verification.clone());
                self.usage += *usage;
            }
            EventKind::StepRetrying { step, .. } => {
                self.set_status(step, StepStatus::Retrying)?;
            }
            EventKind::StepTerminated { step, reason } => {
                self.set_status(step, StepStatus::Terminated)?;
                self.step_terminations.insert(step.clone(), reason.clone());
            }
            EventKind::Assessed {
                new_gaps,
                resolved_gaps,
                observations,
                usage,
                ..
            } => {
                self.knowledge_gaps.retain(|g| !resolved_gaps.contains(g));
                for gap in new_gaps {
                    push_unique(&mut self.knowledge_gaps, gap);
                }
                self.observations.extend(observations.iter().cloned());
                self.usage += *usage;
            }
            EventKind::StopConditionMet {
                condition,
                detail,
                gaps,
                usage,
            } => {
                self.usage += *usage;
                if condition.needs_review() {
                    self.blocked_reason = Some(format!("{condition}: {detail}"));
                }
                self.stop_condition = Some(*condition);
                for gap in gaps {
                    push_unique(&mut self.knowledge_gaps, gap);
                }
            }
            EventKind::Replanned {
                replan_count,
                draft,
                usage,
                ..
            } => {
                self.replan_count = *replan_count;
                self.pending_draft = Some(compose(&self.plan, draft));
                self.usage += *usage;
            }
            EventKind::Synthesized {
                report,
                evidence,
                usage,
                ..
            } => {
                self.final_report = Some(report.clone());
                self.evidence = evidence.clone();
                self.status = RunStatus::Ok;
                self.usage += *usage;
            }
            EventKind::NeedsReview {
                reason,
                usage,
                brief,
                ..
            } => {
                self.usage += *usage;
                self.status = RunStatus::NeedsReview;
                self.blocked_reason = Some(reason.clone());
                if let Some(brief) = brief {
                    self.final_report = Some(brief.report.clone());
                    self.evidence = brief.evidence.clone();
                }
            }
            EventKind::RunFailed { error, usage } => {
                self.status = RunStatus::Failed;
                self.blocked_reason = Some(error.clone());
                self.usage += *usage;
            }
            EventKind::PlanReviewRequested { version } => self.pending_review = Some(*version),
            EventKind::ApprovalRequested {
                step, args_hash, ..
            } => {
                self.pending_approvals
                    .insert(step.clone(), args_hash.clone());
            }
            EventKind::ApprovalGranted {
                step,
                args_hash,
                by,
            } => {
                self.pending_approvals.remove(step);
                self.approvals.insert(step.clone(), args_hash.clone());
                self.approved_by.insert(step.clone(), by.clone());
            }
            EventKind::ApprovalDenied { step, reason, by } => {
                self.pending_approvals.remove(step);
                self.blocked_reason = Some(format!("{by} refused {step}: {reason}"));
            }
            EventKind::AwaitingApproval {
                steps,
                plan_version,
            } => {
                self.status = RunStatus::AwaitingApproval;
                let mut what: Vec<String> = steps.iter().map(|s| format!("step {s}")).collect();
                if let Some(v) = plan_version {
                    what.insert(0, format!("plan version {v}"));
                }
                self.blocked_reason = Some(format!("waiting for approval of {}", what.join(", ")));
            }
            EventKind::StepInterrupted { step, .. } => {
                self.set_status(step, StepStatus::Failed)?;
                self.not_running(step);
            }
            EventKind::RunResumed {
                max_replans,
                max_steps,
                host,
                sources_changed,
                ..
            } => {
                if *sources_changed {
                    // Side effects (approved steps) are not repeated; reads are.
                    let read: Vec<StepId> = self
                        .plan
                        .steps
                        .iter()
                        .filter(|s| {
                            s.status == StepStatus::Succeeded && !self.approvals.contains_key(&s.id)
                        })
                        .map(|s| s.id.clone())
                        .collect();
                    self.stale_steps.extend(read);
                }
                self.status = RunStatus::Running;
                self.blocked_reason = None;
                self.repair_count = 0;
                // A partial brief was of the run as it stopped; it goes on now.
                self.final_report = None;
                self.evidence.clear();
                if !host.is_null() {
                    self.host = host.clone();
                }
                if let Some(n) = max_replans {
                    self.max_replans = *n;
                }
                if let Some(n) = max_steps {
                    self.max_steps = *n;
                }
            }
            // Recorded for audits and replay. Its cost is counted once, on the
            // event of the decision it served (plan_created, assessed,
            // step_succeeded, step_failed's failure, run_failed, …), never here:
            // see "Usage" in docs/models.md.
            EventKind::ModelCalled { .. } => {}
            EventKind::RunCancelled { reason } => {
                self.status = RunStatus::Cancelled;
                self.blocked_reason = Some(format!("cancelled: {reason}"));
            }
        }
        let resumed = was.as_ref().map(|(status, reason)| {
            let was_review = *status == RunStatus::NeedsReview;
            crate::cursor::Resumed {
                review: reason.as_deref().filter(|_| was_review),
                was_review,
                replans: matches!(
                    self.driver.unwrap_or(crate::decision::Driver::PLAN_EXECUTE),
                    crate::decision::Driver::Graph {
                        replanning: true,
                        ..
                    }
                ),
                plan_done: self.plan.steps.iter().all(|s| s.status.is_final()),
            }
        });
        self.cursor.apply(&event.kind, resumed);
        let first = self.started_at().unwrap_or(event.at);
        let elapsed = (event.at - first).num_milliseconds();
        self.usage.wall_time_ms = u64::try_from(elapsed).unwrap_or(0);
        self.tally = Tally {
            last_seq: event.seq,
            first_at: Some(first),
            last_at: Some(event.at),
        };
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use chrono::Utc;

    use super::*;

    fn ev(seq: u64, kind: EventKind) -> Event {
        Event {
            seq,
            at: Utc::now(),
            kind,
        }
    }

    fn started() -> Event {
        ev(
            1,
            EventKind::RunStarted {
                run_id: RunId("r".into()),
                input: "x".into(),
                constraints: Box::default(),
                max_replans: 1,
                max_steps: 5,
                max_repairs: 1,
                host: serde_json::Value::Null,
                strategy: "plan-execute".into(),
            },
        )
    }

    #[test]
    fn events_must_come_in_order_and_start_with_run_started() {
        let mut s = RunState::default();
        assert_eq!(
            s.apply(&ev(
                1,
                EventKind::NeedsReview {
                    reason: "x".into(),
                    usage: Usage::default(),
                    brief: None,
                    ask_again: false,
                }
            )),
            Err(StateError::NotStarted)
        );
        s.apply(&started()).unwrap();
        assert_eq!(
            s.apply(&ev(
                3,
                EventKind::NeedsReview {
                    reason: "x".into(),
                    usage: Usage::default(),
                    brief: None,
                    ask_again: false,
                }
            )),
            Err(StateError::Sequence {
                expected: 2,
                got: 3
            })
        );
    }

    #[test]
    fn logs_written_before_partial_briefs_and_resume_changes_still_load() {
        let old = [
            r#"{"seq":2,"at":"2025-01-01T00:00:00Z","kind":"run_resumed","by":"a","max_replans":null,"max_steps":null}"#,
            r#"{"seq":3,"at":"2025-01-01T00:00:01Z","kind":"needs_review","reason":"stuck"}"#,
        ];
        let mut s = RunState::default();
        s.apply(&started()).unwrap();
        for line in old {
            let event: Event = serde_json::from_str(line).unwrap();
            s.apply(&event).unwrap();
        }
        assert_eq!(s.status, RunStatus::NeedsReview);
        assert_eq!(s.final_report, None);
        assert_eq!(s.blocked_reason.as_deref(), Some("stuck"));
        // And the new fields stay out of the JSON when unused.
        let text = serde_json::to_string(&s.execution_history[2]).unwrap();
        assert!(
            !text.contains("brief") && !text.contains("ask_again"),
            "{text}"
        );
    }

    #[test]
    fn a_partial_brief_becomes_the_report_of_a_run_that_needs_review() {
        let mut s = RunState::default();
        s.apply(&started()).unwrap();
        let brief = crate::event::Brief {
            report: "## Found\n\n- a fact [n]".into(),
            evidence: vec![Evidence {
                source_id: "n".into(),
                step: "a".into(),
                quote: "a fact".into(),
            }],
            rejected_evidence: Vec::new(),
        };
        s.apply(&ev(
            2,
            EventKind::NeedsReview {
                reason: "bounds".into(),
                usage: Usage::default(),
                brief: Some(Box::new(brief)),
                ask_again: false,
            },
        ))
        .unwrap();
        assert_eq!(s.status, RunStatus::NeedsReview);
        assert_eq!(s.final_report.as_deref(), Some("## Found\n\n- a fact [n]"));
        assert_eq!(s.evidence.len(), 1);
        // Resumed, the run goes on: the brief was of the stop.
        s.apply(&ev(
            3,
            EventKind::RunResumed {
                by: "a".into(),
                max_replans: Some(2),
                max_steps: None,
                changed: vec!["max_replans raised from 1 to 2".into()],
                sources_changed: false,
                host: serde_json::json!({"notes": "/n"}),
            },
        ))
        .unwrap();
        assert_eq!(s.final_report, None);
        assert!(s.evidence.is_empty());
        assert_eq!(s.host, serde_json::json!({"notes": "/n"}));
    }

    #[test]
    fn illegal_step_transitions_in_the_log_are_refused() {
        let mut s = RunState::default();
        s.apply(&started()).unwrap();
        let plan = Plan {
            version: 1,
            steps: vec![crate::plan::Step::new("a", "d", "t")],
        };
        s.apply(&ev(2, EventKind::PlanValidated { plan })).unwrap();
        let result = StepResult {
            output: Value::Null,
            attempts: 1,
            duration_ms: 0,
        };
        let err = s
            .apply(&ev(
                3,
                EventKind::StepSucceeded {
                    step: "a".into(),
                    result,
                    usage: Usage::default(),
                },
            ))
            .unwrap_err();
        assert!(matches!(err, StateError::Transition { .. }), "{err}");
        assert_eq!(s.plan.steps[0].status, StepStatus::Pending);
    }
}
