//! The offline ReAct actor: works through the goal's sub-questions one tool
//! call at a time. After each search it judges the result (the assessor's
//! rule); a search that falls short is retried with a reformulated query
//! while the corpus offers one, then given up as a gap. With every
//! sub-question settled it compares the evidence (if it can) and answers with
//! the offline synthesizer's cited brief.
//!
//! Unlike the planning strategies it decides one call at a time from what it
//! has seen, so it spends no calls on sub-questions it cannot reach and
//! stops at the tool-call cap.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::json;
use stepwise_core::roles::{ActRequest, Action, Actor};
use stepwise_core::roles::{Reply, RoleError, Synthesizer};
use stepwise_core::{RunState, Step, StepStatus};

use super::asked::Asked;
use super::judge::Lens;
use super::planner::{query_for, sub_questions};
use super::reformulate::Reformulator;
use super::{OfflineSynthesizer, gap_for};

/// The offline actor over a notes corpus.
#[derive(Debug)]
pub struct OfflineActor {
    reformulator: Arc<Reformulator>,
    synthesizer: OfflineSynthesizer,
}

impl OfflineActor {
    /// An actor that reformulates with `reformulator` and answers with `synthesizer`.
    pub fn new(reformulator: Arc<Reformulator>, synthesizer: OfflineSynthesizer) -> Self {
        Self {
            reformulator,
            synthesizer,
        }
    }
}

/// Where one sub-question stands.
enum Progress {
    /// Never searched.
    Untried,
    /// Its latest search met the criteria.
    Answered,
    /// Its latest search fell short: try this query next.
    Retry(String),
    /// Fell short and nothing is left to try.
    GivenUp,
}

impl OfflineActor {
    fn progress(&self, state: &RunState, question: &str) -> Progress {
        let Some(latest) = state
            .plan
            .steps
            .iter()
            .rev()
            .find(|s| s.tool == "search_notes" && s.description == question)
        else {
            return Progress::Untried;
        };
        let met = state.step_results.get(&latest.id).is_some_and(|r| {
            Lens::new(self.reformulator.lexicon(), state)
                .judge(latest, &r.output)
                .met()
        });
        if met {
            return Progress::Answered;
        }
        match self.reformulator.next_query(state, latest) {
            Some(query) => Progress::Retry(query),
            None => Progress::GivenUp,
        }
    }
}

fn search(question: &str, query: String) -> Action {
    Action::Call {
        thought: question.to_owned(),
        tool: "search_notes".to_owned(),
        args: json!({"query": query, "limit": super::SEARCH_LIMIT})
            .as_object()
            .cloned()
            .unwrap_or_default(),
    }
}

#[async_trait]
impl Actor for OfflineActor {
    async fn act(&self, request: ActRequest<'_>) -> Result<Reply<Action>, RoleError> {
        let state = request.state;
        let made = state.plan.steps.len();
        let (questions, _) = sub_questions(request.goal, made + request.calls_left);
        let asked = Asked::of(request.goal);
        let can_call = request.calls_left > 0;
        let mut gaps = Vec::new();
        for question in &questions {
            match self.progress(state, question) {
                Progress::Untried if can_call => {
                    return Ok(Reply::free(search(question, query_for(&asked, question))));
                }
                Progress::Retry(query) if can_call => {
                    return Ok(Reply::free(search(question, query)));
                }
                Progress::Answered => {}
                Progress::Untried => {
                    gaps.push(format!("Not searched (no tool calls left): {question}"))
                }
                Progress::Retry(_) | Progress::GivenUp => gaps.push(gap_for(question)),
            }
        }
        let can_compare = can_call && request.tools.iter().any(|t| t.name == "compare_results");
        let found: Vec<&Step> = state
            .plan
            .steps
            .iter()
            .filter(|s| s.tool == "search_notes" && s.status == StepStatus::Succeeded)
            .collect();
        let compared = state.plan.steps.iter().any(|s| s.tool == "compare_results");
        if can_compare && !compared && !found.is_empty() {
            let refs: Vec<String> = found.iter().map(|s| format!("${}", s.id)).collect();
            return Ok(Reply::free(Action::Call {
                thought: "Compare the evidence across sub-questions and flag contradictions"
                    .to_owned(),
                tool: "compare_results".to_owned(),
                args: json!({ "results": refs })
                    .as_object()
                    .cloned()
                    .unwrap_or_default(),
            }));
        }
        // The brief, written as if the gaps were already on record.
        let mut view = state.clone();
        for gap in &gaps {
            if !view.knowledge_gaps.contains(gap) {
                view.knowledge_gaps.push(gap.clone());
            }
        }
        let report = self.synthesizer.synthesize(&view).await?;
        Ok(Reply::free(Action::Answer {
            report: report.value,
            gaps,
        }))
    }
}
