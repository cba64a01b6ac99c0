//! The offline planner: sub-questions from the goal and its constraints.

use async_trait::async_trait;
use serde_json::json;
use stepwise_core::plan::AgentType;
use stepwise_core::roles::{PlanRequest, Planner, Reply, RoleError};
use stepwise_core::{DraftPlan, Goal, Step};

use super::search::key_terms;
use super::{MIN_COVERAGE, MIN_SCORE};

/// Words that say what to do rather than what about; they are kept out of
/// search queries because notes rarely contain them.
const TASK_WORDS: &[&str] = &[
    "about",
    "analyse",
    "analyze",
    "assess",
    "brief",
    "compare",
    "comparison",
    "create",
    "describe",
    "detail",
    "details",
    "draft",
    "evaluate",
    "evaluating",
    "explain",
    "find",
    "give",
    "identify",
    "info",
    "information",
    "know",
    "list",
    "make",
    "note",
    "overview",
    "please",
    "prepare",
    "produce",
    "regarding",
    "report",
    "research",
    "say",
    "short",
    "should",
    "summarise",
    "summarize",
    "summary",
    "tell",
    "whether",
    "write",
];

/// Separators between the parts of a goal that are worth a sub-question each.
const SEPARATORS: &[&str] = &[
    "?",
    ";",
    ",",
    " vs. ",
    " vs ",
    " versus ",
    " or ",
    " and ",
    " 그리고 ",
    " 또는 ",
    " 및 ",
];

/// The search query for a sub-question: its key terms without task words.
pub(crate) fn query_for(sub_question: &str) -> String {
    let terms: Vec<String> = key_terms(sub_question)
        .into_iter()
        .filter(|t| !TASK_WORDS.contains(&t.as_str()))
        .collect();
    if terms.is_empty() {
        sub_question.trim().to_owned()
    } else {
        terms.join(" ")
    }
}

fn split_parts(goal: &str) -> Vec<String> {
    let mut parts = vec![goal.to_owned()];
    for sep in SEPARATORS {
        parts = parts
            .iter()
            .flat_map(|p| p.split(sep).map(str::to_owned).collect::<Vec<_>>())
            .collect();
    }
    parts
        .into_iter()
        .map(|p| p.trim().to_owned())
        .filter(|p| {
            !query_for(p).is_empty()
                && key_terms(p)
                    .iter()
                    .any(|t| !TASK_WORDS.contains(&t.as_str()))
        })
        .collect()
}

/// Key terms kept from the first part of a split goal: the words next to the
/// separator name the first alternative ("… adopt RAG or fine-tuning").
const FOCUS_TERMS: usize = 3;

/// The tail of the first part that names its alternative: "Should our team
/// adopt retrieval-augmented generation" → "retrieval-augmented generation".
/// The leading context is already in the whole-goal sub-question.
fn focus_tail(part: &str) -> String {
    let terms: Vec<String> = key_terms(part)
        .into_iter()
        .filter(|t| !TASK_WORDS.contains(&t.as_str()))
        .collect();
    let Some(first) = terms
        .len()
        .checked_sub(FOCUS_TERMS)
        .and_then(|i| terms.get(i))
    else {
        return part.to_owned();
    };
    let lower = part.to_lowercase();
    match lower.rfind(first.as_str()) {
        // Lowercasing can change byte lengths; only cut where it is safe.
        Some(at) if lower.len() == part.len() && part.is_char_boundary(at) => {
            part[at..].trim().to_owned()
        }
        _ => part.to_owned(),
    }
}

/// The sub-questions for a goal, at most `max`: one per required section,
/// else one per comparison dimension, else the goal itself plus each of its
/// parts (split at commas, "and", "or", "vs", …).
pub fn sub_questions(goal: &Goal, max: usize) -> Vec<String> {
    let c = &goal.constraints;
    let topic = &goal.goal;
    let mut out: Vec<String> = if !c.required_sections.is_empty() {
        c.required_sections
            .iter()
            .map(|s| format!("{s}: {topic}"))
            .collect()
    } else if !c.comparison_dimensions.is_empty() {
        c.comparison_dimensions
            .iter()
            .map(|d| format!("{d}: {topic}"))
            .collect()
    } else {
        let mut qs = vec![topic.clone()];
        let mut parts = split_parts(topic);
        if parts.len() > 1 {
            parts[0] = focus_tail(&parts[0]);
            qs.extend(parts);
        }
        qs
    };
    let mut seen = Vec::new();
    out.retain(|q| {
        let key = query_for(q);
        let fresh = !seen.contains(&key);
        seen.push(key);
        fresh
    });
    out.truncate(max.max(1));
    out
}

/// The acceptance criterion of a gathering step.
fn criterion(query: &str) -> String {
    format!(
        "at least one passage scores >= {MIN_SCORE} and the evidence covers >= {:.0}% of the key terms: {}",
        MIN_COVERAGE * 100.0,
        key_terms(query).join(", ")
    )
}

/// A `search_notes` step for one sub-question.
pub(crate) fn gather_step(id: &str, sub_question: &str, query: &str) -> Step {
    let mut step = Step::new(id, sub_question, "search_notes")
        .with_args(json!({"query": query, "limit": 5}))
        .accept(criterion(query));
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

/// Plans one `search_notes` step per sub-question and, when there are two or
/// more and the `compare_results` tool is available, a comparison step that
/// depends on all of them.
#[derive(Debug, Clone, Copy, Default)]
pub struct OfflinePlanner;

#[async_trait]
impl Planner for OfflinePlanner {
    async fn plan(&self, request: PlanRequest<'_>) -> Result<Reply<DraftPlan>, RoleError> {
        let can_compare = request.tools.iter().any(|t| t.name == "compare_results");
        let room = if can_compare {
            request.max_steps.saturating_sub(1)
        } else {
            request.max_steps
        };
        let questions = sub_questions(request.goal, room);
        let ids: Vec<String> = (1..=questions.len()).map(|i| format!("q{i}")).collect();
        let mut steps: Vec<Step> = ids
            .iter()
            .zip(&questions)
            .map(|(id, q)| gather_step(id, q, &query_for(q)))
            .collect();
        if can_compare && ids.len() > 1 && steps.len() < request.max_steps {
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
    fn sections_drive_sub_questions() {
        let c = Constraints {
            required_sections: vec!["Costs".into(), "Risks".into()],
            ..Constraints::default()
        };
        assert_eq!(
            sub_questions(&goal("RAG for support", c), 10),
            ["Costs: RAG for support", "Risks: RAG for support"]
        );
    }

    #[test]
    fn a_goal_splits_into_its_parts() {
        let qs = sub_questions(
            &goal(
                "Compare RAG and fine-tuning for customer support",
                Constraints::default(),
            ),
            10,
        );
        assert_eq!(
            qs,
            [
                "Compare RAG and fine-tuning for customer support",
                "Compare RAG",
                "fine-tuning for customer support"
            ]
        );
        assert_eq!(query_for(&qs[1]), "rag");
    }

    #[test]
    fn the_plan_fits_max_steps() {
        let qs = sub_questions(&goal("a, b, c, d, e, f", Constraints::default()), 3);
        assert_eq!(qs.len(), 3);
    }
}
