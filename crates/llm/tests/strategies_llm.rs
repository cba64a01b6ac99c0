//! The strategies' LLM-backed roles — actor, summarizer, verifier, router —
//! driven through the real engine with the built-in strategies, real notes
//! tools over `examples/notes` and a scripted model standing in for the
//! provider: deterministic, no network.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;

use common::{GOAL, calls, model, policy, registry, roles_called};

use serde_json::{Value, json};
use stepwise_core::decision::{Completeness, Route};
use stepwise_core::event::EventKind;
use stepwise_core::model::ModelExchange;
use stepwise_core::{
    Constraints, Driver, Engine, RunConfig, RunState, RunStatus, StepId, StepStatus, StopCondition,
    StrategyRegistry, ToolContext,
};
use stepwise_llm::roles::{Prompts, llm_roles};
use stepwise_llm::script::ScriptModel;

/// Runs GOAL with every LLM role over `model`, under the built-in `strategy`.
async fn run(model: Arc<ScriptModel>, strategy: &str) -> RunState {
    let roles = llm_roles(model, policy(), Prompts::embedded());
    let strategy = StrategyRegistry::builtin().get(strategy).unwrap();
    let engine = Engine::new(roles, registry(), RunConfig::default())
        .unwrap()
        .with_strategy(strategy);
    engine.run(GOAL, Constraints::default()).await.unwrap()
}

/// Every message of a recorded request, as one text.
fn prompt(exchange: &ModelExchange) -> String {
    exchange
        .request
        .messages
        .iter()
        .map(|m| m.content.as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The prompts of the calls made for `role`, in order.
fn prompts_of(state: &RunState, role: &str) -> Vec<String> {
    calls(state)
        .iter()
        .filter(|(r, _)| r == role)
        .map(|(_, x)| prompt(x))
        .collect()
}

fn failure(state: &RunState) -> Option<String> {
    state.execution_history.iter().find_map(|e| match &e.kind {
        EventKind::RunFailed { error, .. } => Some(error.clone()),
        _ => None,
    })
}

const SEARCH_ARGS: &str = r#"{"query": "fine-tuning cost", "limit": 3}"#;

fn search_args() -> Value {
    serde_json::from_str(SEARCH_ARGS).unwrap()
}

/// What search_notes returns for SEARCH_ARGS: the raw output, the best
/// note's id, and a verbatim passage of it.
async fn searched() -> (Value, String, String) {
    let tool = registry().get("search_notes").cloned().unwrap();
    let out = tool
        .call_json(ToolContext::default(), search_args())
        .await
        .unwrap();
    let hit = &out["results"][0];
    let passage = hit["passages"][0].as_str().unwrap();
    let collapsed = passage.split_whitespace().collect::<Vec<_>>().join(" ");
    let quote: String = collapsed.chars().take(80).collect();
    let note = hit["note_id"].as_str().unwrap().to_owned();
    (out, note, quote.trim().to_owned())
}

/// What read_note returns for `note`.
async fn read(note: &str) -> Value {
    let tool = registry().get("read_note").cloned().unwrap();
    tool.call_json(ToolContext::default(), json!({"id": note}))
        .await
        .unwrap()
}

fn call(thought: &str, tool: &str, args: Value) -> Value {
    json!({"purpose": "actor", "json": {"action": "call", "thought": thought, "tool": tool, "args": args}})
}

fn search_step() -> Value {
    json!({
        "id": "find",
        "description": "Find notes on the cost of fine-tuning",
        "tool": "search_notes",
        "args": search_args(),
        "acceptance_criteria": ["at least one note with a cost figure"]
    })
}

fn ok_assessment() -> Value {
    json!({"purpose": "assessor", "json": {"acceptance_met": true, "verdict": "continue", "reason": "criteria met"}})
}

/// A short report citing a verbatim passage that `find` returns (a report
/// that cites nothing would end in needs_review, not ok).
async fn plain_report() -> Value {
    let (_, note, quote) = searched().await;
    json!({"purpose": "synthesizer", "json": {
        "text": format!("Fine-tuning costs money [{note}]."),
        "evidence": [{"source_id": note, "step": "find", "quote": quote}]
    }})
}

/// `react` with the LLM actor: two tool calls, then a cited answer. The
/// calls run as steps `call-1`, `call-2`; the actor sees each raw result
/// whole; the report's evidence is vetted like any synthesizer's.
#[tokio::test(start_paused = true)]
async fn react_actor_makes_two_calls_then_answers_with_vetted_evidence() {
    let (raw_search, note, quote) = searched().await;
    let raw_read = read(&note).await;
    let model = model(json!([
        call("Find notes on the cost of fine-tuning", "search_notes", search_args()),
        call("Read the best note in full", "read_note", json!({"id": note})),
        {"purpose": "actor", "usage": {"input_tokens": 2000, "output_tokens": 150}, "json": {
            "action": "answer",
            "report": {
                "text": format!("The first year is dominated by data preparation [{note}]."),
                "evidence": [
                    {"source_id": note, "step": "call-1", "quote": quote},
                    {"source_id": note, "step": "call-2", "quote": "Fine-tuning is free forever."}
                ]
            },
            "gaps": ["No figure for the yearly serving cost", "  "]
        }}
    ]));
    let state = run(Arc::clone(&model), "react").await;
    assert_eq!(state.status, RunStatus::Ok, "{:?}", failure(&state));
    assert_eq!(roles_called(&state), ["actor", "actor", "actor"]);
    assert_eq!(model.remaining(), 0);
    assert!(matches!(
        state.driver,
        Some(Driver::React {
            isolated: false,
            ..
        })
    ));
    // Each call ran as a step of the plan, with the actor's thought and args.
    let steps: Vec<(&str, &str, StepStatus)> = state
        .plan
        .steps
        .iter()
        .map(|s| (s.id.as_str(), s.tool.as_str(), s.status))
        .collect();
    assert_eq!(
        steps,
        [
            ("call-1", "search_notes", StepStatus::Succeeded),
            ("call-2", "read_note", StepStatus::Succeeded)
        ]
    );
    assert_eq!(
        state.plan.steps[0].description,
        "Find notes on the cost of fine-tuning"
    );
    // Evidence vetted: the verbatim quote kept, the invented one refused.
    assert_eq!(state.evidence.len(), 1);
    assert_eq!(state.evidence[0].quote, quote);
    assert_eq!(state.evidence[0].step, StepId::new("call-1"));
    let rejected = state.execution_history.iter().find_map(|e| match &e.kind {
        EventKind::Synthesized {
            rejected_evidence, ..
        } => Some(rejected_evidence.clone()),
        _ => None,
    });
    assert_eq!(rejected.map(|r| r.len()), Some(1));
    // The gap the actor named is on record (the blank one dropped) and in the report.
    assert_eq!(
        state.knowledge_gaps,
        ["No figure for the yearly serving cost"]
    );
    assert!(
        state
            .final_report
            .as_deref()
            .unwrap()
            .contains("No figure for the yearly serving cost")
    );
    // What the actor saw: the goal, the tools, then the raw results, uncut.
    let prompts = prompts_of(&state, "actor");
    assert!(prompts[0].contains(GOAL) && prompts[0].contains("search_notes"));
    assert!(prompts[0].contains("(none yet)") && prompts[0].contains("Calls left: 8"));
    assert!(
        prompts[1].contains(&raw_search.to_string()),
        "{}",
        prompts[1]
    );
    assert!(prompts[1].contains("Calls left: 7"));
    assert!(prompts[2].contains(&raw_search.to_string()));
    assert!(
        prompts[2].contains(&raw_read.to_string()),
        "the raw result, not cut"
    );
    assert!(!prompts[2].contains("more characters]"));
    assert_eq!(state.usage.llm_calls, 3);
    assert_eq!(state.usage.input_tokens, 2000);
}

/// `react-isolated`: after each successful call the summarizer writes the
/// observation, and the actor's next prompt holds that summary — not the raw
/// result.
#[tokio::test(start_paused = true)]
async fn react_isolated_summarizes_each_result_and_the_actor_sees_only_summaries() {
    let (raw_search, note, quote) = searched().await;
    let first_summary = format!(
        "Three notes match; [{note}] gives the first-year fine-tuning cost, mostly data preparation."
    );
    let second_summary = format!("[{note}] in full: the cost breakdown by year.");
    let model = model(json!([
        call("Find notes on the cost of fine-tuning", "search_notes", search_args()),
        {"purpose": "summarizer", "json": {"summary": first_summary}},
        call("Read the best note in full", "read_note", json!({"id": note})),
        {"purpose": "summarizer", "text": format!("```json\n{}\n```", json!({"summary": second_summary}))},
        {"purpose": "actor", "json": {
            "action": "answer",
            "report": {"text": format!("Mostly data preparation [{note}]."),
                "evidence": [{"source_id": note, "step": "call-1", "quote": quote}]}
        }}
    ]));
    let state = run(Arc::clone(&model), "react-isolated").await;
    assert_eq!(state.status, RunStatus::Ok, "{:?}", failure(&state));
    assert_eq!(
        roles_called(&state),
        ["actor", "summarizer", "actor", "summarizer", "actor"]
    );
    assert_eq!(model.remaining(), 0);
    let summaries: Vec<(String, String)> = state
        .execution_history
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::StepSummarized { step, summary, .. } => {
                Some((step.to_string(), summary.clone()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        summaries,
        [
            ("call-1".to_owned(), first_summary.clone()),
            ("call-2".to_owned(), second_summary.clone())
        ]
    );
    // The summarizer saw the result, as readable text, and why it was fetched.
    let summarizer = prompts_of(&state, "summarizer");
    assert!(summarizer[0].contains(&format!("note_id: {note}")));
    assert!(summarizer[0].contains("Find notes on the cost of fine-tuning"));
    // The actor's second prompt: the summary, and none of the raw result.
    let actor = prompts_of(&state, "actor");
    assert!(actor[1].contains(&first_summary), "{}", actor[1]);
    assert!(!actor[1].contains(&raw_search.to_string()));
    assert!(!actor[1].contains("\"passages\""), "{}", actor[1]);
    let passage = raw_search["results"][0]["passages"][0].as_str().unwrap();
    assert!(!actor[1].contains(passage));
    assert!(actor[2].contains(&first_summary) && actor[2].contains(&second_summary));
    assert!(!actor[2].contains("\"passages\""));
}

/// `verified` with the LLM verifier: the first verdict is partial (0.4), so
/// the replanner is told what is missing and weak; the second is 0.9 (given
/// as a percentage, clamped), so the completeness threshold stops the run.
#[tokio::test(start_paused = true)]
async fn verified_replans_on_a_partial_verdict_and_stops_at_the_completeness_threshold() {
    let serving = json!({
        "id": "serving",
        "description": "Find notes on the yearly serving cost of a fine-tuned model",
        "tool": "search_notes",
        "args": {"query": "serving cost per year", "limit": 3},
        "acceptance_criteria": ["a yearly serving cost figure"]
    });
    let model = model(json!([
        {"purpose": "planner", "json": {"steps": [search_step()]}},
        ok_assessment(),
        {"purpose": "verifier", "json": {
            "status": "partial", "completeness": 0.4, "confidence": 0.6,
            "missing": ["the yearly serving cost"],
            "contradictions": [],
            "weak_steps": ["find", "no-such-step"]
        }},
        {"purpose": "replanner", "json": {"final_answer": null, "steps": [serving]}},
        ok_assessment(),
        {"purpose": "verifier", "json": {
            "status": "complete", "completeness": 90, "confidence": 0.8,
            "missing": [], "contradictions": []
        }},
        plain_report().await
    ]));
    let state = run(Arc::clone(&model), "verified").await;
    assert_eq!(state.status, RunStatus::Ok, "{:?}", failure(&state));
    assert_eq!(model.remaining(), 0);
    assert_eq!(
        roles_called(&state),
        [
            "planner",
            "assessor",
            "verifier",
            "replanner",
            "assessor",
            "verifier",
            "synthesizer"
        ]
    );
    let history = &state.verification_history;
    assert_eq!(history.len(), 2);
    assert_eq!(history[0].status, Completeness::Partial);
    assert!((history[0].completeness - 0.4).abs() < 1e-9);
    assert_eq!(
        history[0].weak_steps,
        [StepId::new("find")],
        "an id the run does not have is dropped"
    );
    assert_eq!(history[1].status, Completeness::Complete);
    assert!((history[1].completeness - 0.9).abs() < 1e-9, "90 → 0.9");
    assert_eq!(state.replan_count, 1);
    assert_eq!(
        state.stop_condition,
        Some(StopCondition::CompletenessThreshold)
    );
    let stop = state.execution_history.iter().find_map(|e| match &e.kind {
        EventKind::StopConditionMet {
            condition, detail, ..
        } => Some((*condition, detail.clone())),
        _ => None,
    });
    let (condition, detail) = stop.unwrap();
    assert_eq!(condition, StopCondition::CompletenessThreshold);
    assert!(detail.contains("0.90"), "{detail}");
    // The verifier saw the results; the replanner saw the verdict.
    let verifier = prompts_of(&state, "verifier");
    assert!(
        verifier[0].contains("### Step find (search_notes)") && verifier[0].contains("note_id:")
    );
    assert!(verifier[0].contains("Iteration: 1"));
    assert!(verifier[1].contains("### Step serving") && verifier[1].contains("Iteration: 2"));
    let replanner = prompts_of(&state, "replanner");
    assert!(
        replanner[0].contains("completeness 0.40")
            && replanner[0].contains("missing: the yearly serving cost")
            && replanner[0].contains("weak: find"),
        "{}",
        replanner[0]
    );
}

/// `router` with the LLM router, each branch of seed 000's tree: the
/// model's three answers are recorded with the route the tree drew, and the
/// run is driven that way — react (escalating at its cap) for an
/// exploration or a short lookup, the planning graph otherwise, one step at
/// a time when no tool repeats.
#[tokio::test(start_paused = true)]
async fn the_llm_router_answers_the_three_questions_and_each_branch_is_recorded() {
    let reason = "One lookup: a single cost figure answers it.";
    let branches = [
        ((false, true, true), Route::React),
        ((true, false, false), Route::React),
        ((true, true, true), Route::PlanExecuteBatched),
        ((true, true, false), Route::PlanExecuteSequential),
    ];
    for ((up_front, three, repeated), expected) in branches {
        let routed = json!({"purpose": "router", "json": {
            "steps_known_up_front": up_front,
            "three_or_more_steps": three,
            "same_tool_repeated": repeated,
            "reason": reason,
        }});
        let script = if expected == Route::React {
            json!([routed, {"purpose": "actor", "json": {
                "action": "answer",
                "report": {"text": "The notes were not searched.", "evidence": []},
                "gaps": ["The notes were not searched"]
            }}])
        } else {
            json!([
                routed,
                {"purpose": "planner", "json": {"steps": [search_step()]}},
                ok_assessment(),
                plain_report().await
            ])
        };
        let state = run(model(script), "router").await;
        let (driver, recorded, routing) = state
            .execution_history
            .iter()
            .find_map(|e| match &e.kind {
                EventKind::StrategyChosen {
                    strategy,
                    driver,
                    reason,
                    routing,
                    ..
                } if strategy == "router" => Some((*driver, reason.clone(), routing.clone())),
                _ => None,
            })
            .unwrap();
        let routing = routing.expect("the answers are recorded");
        assert_eq!(
            (
                routing.answers.steps_known_up_front,
                routing.answers.three_or_more_steps,
                routing.answers.same_tool_repeated
            ),
            (up_front, three, repeated)
        );
        assert_eq!(routing.route, expected);
        assert_eq!(routing.answers.reason, reason);
        assert!(
            recorded.contains(expected.as_str()) && recorded.contains(reason),
            "{recorded}"
        );
        let router = prompts_of(&state, "router");
        assert!(
            router[0].contains(GOAL)
                && router[0].contains("steps_known_up_front")
                && router[0].contains("search_notes"),
            "the router sees the goal, the questions and the tools"
        );
        match expected {
            Route::React => {
                // The actor answered without looking anything up: its report
                // cites nothing, so the run is kept for review, never `ok`.
                assert_eq!(state.status, RunStatus::NeedsReview);
                assert_eq!(roles_called(&state), ["router", "actor"]);
                assert!(matches!(
                    driver,
                    Driver::React {
                        isolated: false,
                        escalate: true,
                        ..
                    }
                ));
            }
            Route::PlanExecuteBatched | Route::PlanExecuteSequential => {
                assert_eq!(state.status, RunStatus::Ok, "{:?}", failure(&state));
                assert_eq!(
                    roles_called(&state),
                    ["router", "planner", "assessor", "synthesizer"]
                );
                let sequential = expected == Route::PlanExecuteSequential;
                assert!(
                    matches!(driver, Driver::Graph { sequential: s, replanning: true, .. } if s == sequential),
                    "{driver:?}"
                );
            }
        }
    }
}

/// A verifier answer that is not a verdict gets one repair round-trip; a
/// second bad answer stops the run for review (resumable) with a message
/// naming the verifier — no panic, both answers on record and paid for.
#[tokio::test(start_paused = true)]
async fn a_malformed_verifier_answer_is_repaired_once_then_stops_for_review() {
    let model = model(json!([
        {"purpose": "planner", "json": {"steps": [search_step()]}},
        ok_assessment(),
        {"purpose": "verifier", "text": "It looks mostly complete to me.", "usage": {"input_tokens": 700, "output_tokens": 9}},
        {"purpose": "verifier", "json": {"status": "done", "completeness": "high"}, "usage": {"input_tokens": 720, "output_tokens": 11}},
        plain_report().await
    ]));
    let state = run(Arc::clone(&model), "verified").await;
    assert_eq!(state.status, RunStatus::NeedsReview);
    // A run that stops for review still returns its partial brief: the
    // synthesizer writes it over what succeeded, its evidence vetted.
    assert_eq!(
        roles_called(&state),
        ["planner", "assessor", "verifier", "verifier", "synthesizer"]
    );
    assert_eq!(model.remaining(), 0);
    assert!(
        state
            .final_report
            .as_deref()
            .unwrap()
            .contains("Fine-tuning costs money")
    );
    assert_eq!(state.evidence.len(), 1);
    let error = state.blocked_reason.clone().unwrap();
    assert!(
        error.contains("verifier returned output that could not be used")
            && error.contains("not valid twice")
            && error.contains("schema"),
        "{error}"
    );
    let verifier: Vec<ModelExchange> = calls(&state)
        .into_iter()
        .filter(|(r, _)| r == "verifier")
        .map(|(_, x)| x)
        .collect();
    let retry = &verifier[1].request.messages;
    assert_eq!(
        retry[retry.len() - 2].content,
        "It looks mostly complete to me."
    );
    assert!(
        retry
            .last()
            .unwrap()
            .content
            .starts_with("Your answer was not valid:")
    );
    assert!(state.verification_history.is_empty());
    assert_eq!(
        state.usage.input_tokens, 1420,
        "both bad answers are paid for"
    );
}
