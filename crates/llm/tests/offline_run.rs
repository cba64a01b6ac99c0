//! The offline roles end to end, through the real engine and the real notes
//! tools over the example corpus.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;

use stepwise_core::{
    Constraints, Engine, EventKind, RunConfig, RunState, RunStatus, StepStatus, ToolRegistry,
};
use stepwise_tools::notes::{Corpus, Note};

fn example_corpus() -> Corpus {
    Corpus::load(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/notes"))
        .unwrap()
        .corpus
}

async fn run(corpus: Corpus, goal: &str, constraints: Constraints) -> RunState {
    let corpus = Arc::new(corpus);
    let mut tools = ToolRegistry::new();
    stepwise_tools::register_notes_tools(&mut tools, Arc::clone(&corpus));
    let engine = Engine::new(
        stepwise_llm::offline::roles(corpus),
        tools,
        RunConfig::default(),
    )
    .unwrap();
    let state = engine.run(goal, constraints).await.unwrap();
    assert_eq!(
        RunState::from_events(&state.execution_history).unwrap(),
        state,
        "the log folds to the state"
    );
    state
}

#[tokio::test]
async fn a_research_brief_over_the_example_notes_is_ok_and_cited() {
    let state = run(
        example_corpus(),
        "Should our support team adopt retrieval-augmented generation or fine-tuning?",
        Constraints::default(),
    )
    .await;
    assert_eq!(state.status, RunStatus::Ok, "{:?}", state.blocked_reason);
    let report = state.final_report.as_deref().unwrap();
    assert!(
        report.starts_with("# Should our support team adopt"),
        "{report}"
    );
    assert!(report.contains("## Unresolved gaps"));
    assert!(!state.evidence.is_empty());
    // Every citation in the text is a note the run retrieved, and every
    // evidence quote is in the report.
    let retrieved: Vec<String> = state
        .step_results
        .values()
        .flat_map(|r| r.output["results"].as_array().cloned().unwrap_or_default())
        .filter_map(|h| h["note_id"].as_str().map(str::to_owned))
        .collect();
    for e in &state.evidence {
        assert!(
            retrieved.contains(&e.source_id),
            "{} was not retrieved",
            e.source_id
        );
        assert!(report.contains(&e.quote));
        assert!(report.contains(&format!("[{}]", e.source_id)));
    }
    // No dimension named: one overview question (and the comparison of
    // what it found), its section named so.
    let tools: Vec<&str> = state.plan.steps.iter().map(|s| s.tool.as_str()).collect();
    assert_eq!(tools, ["search_notes", "compare_results"]);
    assert!(report.contains("\n## Overview\n"), "{report}");
}

#[tokio::test]
async fn contradicting_notes_are_flagged() {
    let state = run(
        example_corpus(),
        "What share of conversations did the pilot resolve without escalation?",
        Constraints {
            comparison_dimensions: vec!["resolution rate".into(), "escalation".into()],
            ..Constraints::default()
        },
    )
    .await;
    let report = state.final_report.as_deref().unwrap_or_default();
    assert!(report.contains("## Contradictions"), "{report}");
    assert!(report.contains("41%") && report.contains("27%"), "{report}");
}

#[tokio::test]
async fn required_sections_become_sections_of_the_brief() {
    let c = Constraints {
        required_sections: vec!["Costs".into(), "Latency".into()],
        audience: Some("support leads".into()),
        ..Constraints::default()
    };
    let state = run(example_corpus(), "RAG for customer support", c).await;
    let report = state.final_report.as_deref().unwrap();
    assert!(report.contains("## Costs\n"), "{report}");
    assert!(report.contains("## Latency\n"), "{report}");
    assert!(report.contains("_For: support leads_"));
}

#[tokio::test]
async fn a_weak_sub_question_is_reformulated_and_completed_steps_are_kept() {
    // The notes never say "maintenance", only "maintain": the first search
    // finds nothing about it, and the replanner retries with the corpus's
    // variants of the same word (never with a word that merely looks alike).
    let state = run(
        example_corpus(),
        "How well is the knowledge base kept up?",
        Constraints {
            comparison_dimensions: vec!["maintenance".into()],
            ..Constraints::default()
        },
    )
    .await;
    assert_eq!(state.status, RunStatus::Ok, "{:?}", state.blocked_reason);
    assert_eq!(state.replan_count, 1);
    let runs: Vec<&str> = state
        .execution_history
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::StepStarted { step, .. } => Some(step.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        runs,
        ["q1", "q1_r1", "compare"],
        "q1 is kept, not re-run; only the reformulation runs (then the comparison)"
    );
    let q1 = state
        .plan
        .steps
        .iter()
        .find(|s| s.id.as_str() == "q1")
        .unwrap();
    let r1 = state
        .plan
        .steps
        .iter()
        .find(|s| s.id.as_str() == "q1_r1")
        .unwrap();
    assert_eq!(q1.status, StepStatus::Succeeded);
    assert_eq!(
        r1.description, q1.description,
        "same sub-question, new wording"
    );
    assert_ne!(r1.args["query"], q1.args["query"]);
    assert!(
        r1.args["query"].as_str().unwrap().contains("maintain"),
        "{}",
        r1.args["query"]
    );
    assert!(
        state.knowledge_gaps.is_empty(),
        "the reformulation closed the gap: {:?}",
        state.knowledge_gaps
    );
}

#[tokio::test]
async fn a_corpus_where_nothing_matches_needs_review_with_its_gaps() {
    let corpus = Corpus::from_notes([
        Note::new(
            "garden",
            "Garden",
            "Tomatoes need full sun and regular watering.",
        ),
        Note::new(
            "bread",
            "Bread",
            "Sourdough rises slowly in a cool kitchen.",
        ),
    ])
    .unwrap();
    let state = run(
        corpus,
        "Quarterly revenue of semiconductor firms",
        Constraints::default(),
    )
    .await;
    assert_eq!(state.status, RunStatus::NeedsReview);
    assert!(!state.knowledge_gaps.is_empty());
    assert!(state.evidence.is_empty(), "no evidence is fabricated");
    // The partial brief says what was not found; it cites nothing.
    let brief = state.final_report.as_deref().unwrap_or_default();
    for gap in &state.knowledge_gaps {
        assert!(brief.contains(gap.as_str()), "{gap} missing from {brief}");
    }
    assert!(
        !brief.contains("[garden]") && !brief.contains("[bread]"),
        "{brief}"
    );
}

#[tokio::test]
async fn the_same_inputs_give_the_same_report() {
    let a = run(
        example_corpus(),
        "Compare RAG and fine-tuning costs",
        Constraints::default(),
    )
    .await;
    let b = run(
        example_corpus(),
        "Compare RAG and fine-tuning costs",
        Constraints::default(),
    )
    .await;
    assert_eq!(a.final_report, b.final_report);
    assert_eq!(a.knowledge_gaps, b.knowledge_gaps);
}

async fn run_with(
    corpus: Corpus,
    strategy: &str,
    goal: &str,
    constraints: Constraints,
) -> RunState {
    let corpus = Arc::new(corpus);
    let mut tools = ToolRegistry::new();
    stepwise_tools::register_notes_tools(&mut tools, Arc::clone(&corpus));
    let strategy = stepwise_core::strategy::StrategyRegistry::builtin()
        .get(strategy)
        .unwrap();
    let engine = Engine::new(
        stepwise_llm::offline::roles(corpus),
        tools,
        RunConfig::default(),
    )
    .unwrap()
    .with_strategy(strategy);
    engine.run(goal, constraints).await.unwrap()
}

#[tokio::test]
async fn the_verifier_scores_the_asked_dimensions_the_brief_can_cite() {
    // Two of the three dimensions are in the notes; team skills are not.
    let state = run_with(
        example_corpus(),
        "verified",
        "Should our team adopt retrieval-augmented generation for customer support?",
        Constraints {
            comparison_dimensions: vec!["cost".into(), "latency".into(), "team skills".into()],
            ..Constraints::default()
        },
    )
    .await;
    let v = state.verification_history.last().expect("a verification");
    assert!(
        (v.completeness - 2.0 / 3.0).abs() < 1e-9,
        "completeness {} for {:?}",
        v.completeness,
        v.missing
    );
    assert_eq!(v.missing, ["team skills"]);
    let report = state.final_report.as_deref().unwrap();
    assert!(
        report.contains("## team skills\n\n_No evidence found"),
        "{report}"
    );
    assert!(
        state
            .knowledge_gaps
            .contains(&"No evidence in the notes for: team skills".to_owned()),
        "{:?}",
        state.knowledge_gaps
    );
}

#[tokio::test]
async fn dimensions_beyond_max_steps_are_named_as_gaps() {
    // Four dimensions, room for two steps: two are searched, two are named.
    let state = run(
        example_corpus(),
        "Should our team adopt retrieval-augmented generation for customer support?",
        Constraints {
            comparison_dimensions: vec![
                "cost".into(),
                "latency".into(),
                "risks".into(),
                "accuracy".into(),
            ],
            max_steps: Some(2),
            ..Constraints::default()
        },
    )
    .await;
    let searched: Vec<&str> = state
        .plan
        .steps
        .iter()
        .map(|s| s.description.as_str())
        .collect();
    assert_eq!(searched, ["cost", "latency"]);
    for dropped in ["risks", "accuracy"] {
        let gap = format!("Not searched (step budget): {dropped}");
        assert!(
            state.knowledge_gaps.contains(&gap),
            "{:?}",
            state.knowledge_gaps
        );
        let report = state.final_report.as_deref().unwrap();
        assert!(
            report.contains(&format!("## {dropped}\n\n_Not searched")),
            "{report}"
        );
        assert!(report.contains(&format!("- {gap}")), "{report}");
    }
}

#[tokio::test]
async fn seed_001s_example_is_one_overview_question_searched_by_its_topic_words() {
    // Seed 001's example input names no dimension: one overview question,
    // searched for its topic's words (not the task's), with a cited answer.
    let goal = "Create a short research plan for evaluating whether our team should adopt retrieval-augmented generation for customer support.";
    let state = run(
        example_corpus(),
        goal,
        Constraints {
            max_steps: Some(4),
            ..Constraints::default()
        },
    )
    .await;
    assert_eq!(state.status, RunStatus::Ok, "{:?}", state.blocked_reason);
    let q1 = &state.plan.steps[0];
    let query = q1.args["query"].as_str().unwrap();
    for task_word in ["create", "short", "research", "evaluating", "should"] {
        assert!(!query.split(' ').any(|w| w == task_word), "{query}");
    }
    assert!(
        query.contains("retrieval") && query.contains("support"),
        "{query}"
    );
    let report = state.final_report.as_deref().unwrap();
    assert!(report.contains("\n## Overview\n\n- "), "{report}");
    assert!(!state.evidence.is_empty());
}
