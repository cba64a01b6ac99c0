//! The offline router (seed 000 §11): answers the decision tree's three
//! questions from the goal's own words, without a model.
//!
//! 1. Steps known up front: no when the goal says the next step depends on
//!    what the last one finds ("explore", "investigate", "depending on", …).
//! 2. Three or more steps: one gathering step per dimension the goal asks
//!    (its own list, sections, comparison dimensions) and one to combine
//!    them when there are several; or every tool the goal names by name.
//! 3. The same tool repeated: several dimensions are gathered by one tool,
//!    one call each; a goal that names its tools uses each once.

use async_trait::async_trait;
use stepwise_core::Goal;
use stepwise_core::decision::Routing;
use stepwise_core::roles::Router;
use stepwise_core::roles::{Reply, RoleError};
use stepwise_core::tool::ToolSpec;

use stepwise_tools::text::Cue;
use stepwise_tools::text::cues;

use super::planner::sub_questions;

/// Answers the router's questions without a model.
#[derive(Debug, Clone, Copy, Default)]
pub struct OfflineRouter;

/// The three answers for `goal` with `tools` (pure: the tests call it).
pub(crate) fn answers(goal: &Goal, tools: &[ToolSpec]) -> Routing {
    let text = goal.goal.to_lowercase();
    let parts = sub_questions(goal, usize::MAX).0.len().max(1);
    let named: Vec<&str> = tools
        .iter()
        .map(|t| t.name.as_str())
        .filter(|name| text.contains(name) || text.contains(&name.replace('_', " ")))
        .collect();
    let exploratory = cues::find(&goal.goal, Cue::Exploratory);
    if let Some(cue) = exploratory
        .first()
        .and_then(|&(s, e)| goal.goal.get(s..e))
        .map(str::to_lowercase)
    {
        return Routing {
            steps_known_up_front: false,
            three_or_more_steps: parts > 1,
            same_tool_repeated: parts > 1,
            reason: format!("the goal says {cue:?}: each step depends on what the last found"),
        };
    }
    let gathering = if parts > 1 { parts + 1 } else { parts };
    let steps = gathering.max(named.len());
    let repeated = parts > 1;
    let reason = if parts > 1 {
        format!("{parts} dimensions, each gathered by the same tool, then combined: {steps} steps")
    } else if named.len() >= 3 {
        format!(
            "one question over {} tools it names, each once: {}",
            named.len(),
            named.join(", ")
        )
    } else {
        "one question: a lookup of one or two tool calls".to_owned()
    };
    Routing {
        steps_known_up_front: true,
        three_or_more_steps: steps >= 3,
        same_tool_repeated: repeated,
        reason,
    }
}

#[async_trait]
impl Router for OfflineRouter {
    async fn route(&self, goal: &Goal, tools: &[ToolSpec]) -> Result<Reply<Routing>, RoleError> {
        Ok(Reply::free(answers(goal, tools)))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use stepwise_core::Constraints;
    use stepwise_core::decision::Route;

    use super::*;

    fn goal(text: &str, c: Constraints) -> Goal {
        Goal::prepare(text, c).unwrap()
    }

    fn tools(names: &[&str]) -> Vec<ToolSpec> {
        names.iter().map(|n| ToolSpec::new(*n, "a tool")).collect()
    }

    #[test]
    fn an_exploratory_goal_goes_to_react_at_the_first_question() {
        let r = answers(
            &goal(
                "Investigate why churn rose and follow what the notes say",
                Constraints::default(),
            ),
            &tools(&["search_notes"]),
        );
        assert!(!r.steps_known_up_front, "{r:?}");
        assert!(r.reason.contains("investigate"), "{}", r.reason);
        assert_eq!(r.route(), Route::React);
    }

    #[test]
    fn a_single_lookup_goes_to_react_at_the_second_question() {
        let r = answers(
            &goal(
                "What share of conversations did the pilot resolve?",
                Constraints::default(),
            ),
            &tools(&["search_notes", "read_note"]),
        );
        assert!(r.steps_known_up_front && !r.three_or_more_steps, "{r:?}");
        assert_eq!(r.route(), Route::React);
    }

    #[test]
    fn several_dimensions_repeat_one_tool_and_are_batched() {
        let c = Constraints {
            comparison_dimensions: vec!["cost".into(), "accuracy".into(), "latency".into()],
            ..Constraints::default()
        };
        let r = answers(&goal("RAG or fine-tuning?", c), &tools(&["search_notes"]));
        assert!(
            r.steps_known_up_front && r.three_or_more_steps && r.same_tool_repeated,
            "{r:?}"
        );
        assert!(r.reason.contains("3 dimensions"), "{}", r.reason);
        assert_eq!(r.route(), Route::PlanExecuteBatched);
    }

    #[test]
    fn three_named_tools_each_once_run_sequentially() {
        let r = answers(
            &goal(
                "Run parse_columns on the code, then classify_domain_group, then lookup_index_candidates",
                Constraints::default(),
            ),
            &tools(&[
                "parse_columns",
                "classify_domain_group",
                "lookup_index_candidates",
                "lookup_abbreviation",
            ]),
        );
        assert!(
            r.steps_known_up_front && r.three_or_more_steps && !r.same_tool_repeated,
            "{r:?}"
        );
        assert!(r.reason.contains("3 tools"), "{}", r.reason);
        assert_eq!(r.route(), Route::PlanExecuteSequential);
    }
}
