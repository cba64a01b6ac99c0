//! The offline planner: sub-questions from the goal and its constraints.

use async_trait::async_trait;
use serde_json::json;
use stepwise_core::plan::AgentType;
use stepwise_core::roles::{PlanRequest, Planner, Reply, RoleError};
use stepwise_core::{DraftPlan, Goal, Step};

use stepwise_tools::notes::stem::stem;

use super::MIN_SCORE;
use super::asked::Asked;
use super::relevance::is_task_word;

/// The words of `text` worth searching for, as the search index spells
/// them: English words lowercased, Korean words without their particles;
/// stop words and task words ("compare", "검토하라") left out.
pub(crate) fn search_words(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for raw in text.split(|c: char| !c.is_alphanumeric() && c != '-') {
        for piece in raw.split('-') {
            let lower = piece.to_lowercase();
            if lower.is_empty() || stepwise_tools::notes::tokenize(&lower).is_empty() {
                continue;
            }
            let s = stem(&lower);
            if is_task_word(&s) {
                continue;
            }
            let word = if lower
                .chars()
                .any(|c| ('\u{AC00}'..='\u{D7A3}').contains(&c))
            {
                s
            } else {
                lower
            };
            if !word.is_empty() && !out.contains(&word) {
                out.push(word);
            }
        }
    }
    out
}

/// The search query for a sub-question: its own words, and for a dimension
/// the synonyms the lexicon gives it ("cost price … 가격"), so a note that
/// writes "가격" for 비용 is found. Neither the alternatives' names nor the
/// goal's context words go in: they would rank notes that name the options
/// above notes that answer the dimension (a Korean name of six syllables
/// is five search terms), and the judge already keeps off-topic notes out.
pub(crate) fn query_for(asked: &Asked, sub_question: &str) -> String {
    let mut terms = search_words(sub_question);
    if let Some(d) = asked.dimension_of(sub_question) {
        let stems = stepwise_tools::notes::stem::words(d);
        let mut extra: Vec<String> = Vec::new();
        for s in super::synonyms::of_dimension(&stems)
            .into_iter()
            .chain(stems.iter().flat_map(|t| super::synonyms::of(t)))
        {
            for w in search_words(&s.text) {
                if !terms.contains(&w) && !extra.contains(&w) {
                    extra.push(w);
                }
            }
        }
        terms.extend(extra);
    }
    if terms.is_empty() {
        sub_question.trim().to_owned()
    } else {
        terms.join(" ")
    }
}

/// The sub-questions for a goal: one per dimension it asks (its own list,
/// `required_sections` and `comparison_dimensions`, merged), each named by
/// the dimension as written, else the goal itself as one overview question.
/// At most `max`; the dimensions left out are returned second, so they can
/// be named as gaps rather than dropped.
pub fn sub_questions(goal: &Goal, max: usize) -> (Vec<String>, Vec<String>) {
    questions_of(&Asked::of(goal), &goal.goal, max)
}

/// [`sub_questions`] for what a goal asks, read once.
fn questions_of(asked: &Asked, goal: &str, max: usize) -> (Vec<String>, Vec<String>) {
    let mut all = if asked.dimensions.is_empty() {
        vec![goal.to_owned()]
    } else {
        asked.dimensions.clone()
    };
    let dropped = all.split_off(max.max(1).min(all.len()));
    (all, dropped)
}

/// The acceptance criterion of a gathering step.
fn criterion(sub_question: &str) -> String {
    format!(
        "at least one passage scores >= {MIN_SCORE} and has a sentence about {sub_question:?} in a note on the goal's topic"
    )
}

/// A `search_notes` step for one sub-question.
pub(crate) fn gather_step(id: &str, sub_question: &str, query: &str) -> Step {
    let mut step = Step::new(id, sub_question, "search_notes")
        .with_args(json!({"query": query, "limit": super::SEARCH_LIMIT}))
        .accept(criterion(sub_question));
    step.agent = Some(AgentType::Gathering);
    step
}

/// The comparison step over every gathering step.
pub(crate) fn compare_step(gather_ids: &[String]) -> Step {
    let refs: Vec<String> = gather_ids.iter().map(|id| format!("${id}")).collect();
    let mut step = Step::new(
        "compare",
        "Compare the evidence across sub-questions and flag contradictions",
        "compare_results",
    )
    .with_args(json!({ "results": refs }))
    .after(gather_ids.iter().map(String::as_str))
    .accept("lists the notes each sub-question found and any contradicting figures between notes");
    step.agent = Some(AgentType::Analysis);
    step
}

/// Plans one `search_notes` step per sub-question and, when the
/// `compare_results` tool is available and the step budget allows, a
/// comparison step that depends on all of them (even on one: the notes one
/// search found may disagree with each other).
#[derive(Debug, Clone, Copy, Default)]
pub struct OfflinePlanner;

#[async_trait]
impl Planner for OfflinePlanner {
    async fn plan(&self, request: PlanRequest<'_>) -> Result<Reply<DraftPlan>, RoleError> {
        let asked = Asked::of(request.goal);
        let wanted = questions_of(&asked, &request.goal.goal, usize::MAX).0.len();
        // The comparison gives way to a dimension when the budget cannot
        // hold both: a dimension left out is a gap, a comparison is not.
        let can_compare =
            request.tools.iter().any(|t| t.name == "compare_results") && wanted < request.max_steps;
        let room = if can_compare {
            request.max_steps.saturating_sub(1)
        } else {
            request.max_steps
        };
        let (questions, _) = questions_of(&asked, &request.goal.goal, room);
        let ids: Vec<String> = (1..=questions.len()).map(|i| format!("q{i}")).collect();
        let mut steps: Vec<Step> = ids
            .iter()
            .zip(&questions)
            .map(|(id, q)| gather_step(id, q, &query_for(&asked, q)))
            .collect();
        if can_compare && !ids.is_empty() && steps.len() < request.max_steps {
            steps.push(compare_step(&ids));
        }
        Ok(Reply::free(DraftPlan::from_steps(steps)))
    }
}

#[cfg(test)]
mod tests {
    use stepwise_core::Constraints;

    use super::*;

    fn goal(text: &str, c: Constraints) -> Goal {
        Goal::prepare(text, c).unwrap()
    }

    #[test]
    fn sections_and_dimensions_are_merged() {
        let c = Constraints {
            required_sections: vec!["Costs".into(), "Risks".into()],
            comparison_dimensions: vec!["latency".into()],
            ..Constraints::default()
        };
        let (qs, dropped) = sub_questions(&goal("RAG for support", c), 10);
        assert_eq!(qs, ["Costs", "Risks", "latency"]);
        assert!(dropped.is_empty());
    }

    #[test]
    fn alternatives_are_not_sub_questions() {
        let g = goal(
            "Should we move order events to Kafka, RabbitMQ or SQS? Consider cost, throughput and staff training.",
            Constraints::default(),
        );
        let (qs, _) = sub_questions(&g, 10);
        assert_eq!(qs, ["cost", "throughput", "staff training"]);
        let asked = Asked::of(&g);
        // The dimension and its synonyms, not the alternatives' names: a
        // Korean name of six syllables is five search terms and would
        // outrank the dimension (the judge keeps other subjects out).
        assert_eq!(
            query_for(&asked, "cost"),
            "cost price prices priced pricing expense expenses fee fees invoice invoiced invoices 가격 단가 금액 인건비 운영비 유지비 사업비 구축비 도입비 월정액 렌탈료 임대료 수수료 위탁료 비용"
        );
        let (qs, _) = sub_questions(
            &goal(
                "Compare RAG and fine-tuning for customer support",
                Constraints::default(),
            ),
            10,
        );
        assert_eq!(qs, ["Compare RAG and fine-tuning for customer support"]);
    }

    #[test]
    fn dimensions_beyond_max_steps_are_returned_not_dropped() {
        let c = Constraints {
            comparison_dimensions: vec!["a1".into(), "b1".into(), "c1".into(), "d1".into()],
            ..Constraints::default()
        };
        let (qs, dropped) = sub_questions(&goal("x y", c), 3);
        assert_eq!(qs, ["a1", "b1", "c1"]);
        assert_eq!(dropped, ["d1"]);
    }
}
