//! The LLM-backed roles driven through the real engine, with real notes
//! tools over `examples/notes` and a scripted model standing in for the
//! provider: every scenario is deterministic and needs no network.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::sync::Arc;

use serde_json::{Value, json};
use stepwise_core::event::EventKind;
use stepwise_core::model::{ExchangeOutcome, ModelExchange};
use stepwise_core::roles::{StepContext, StepExecutor};
use stepwise_core::{
    Constraints, Engine, FailureClass, FailureKind, RetryPolicy, RunConfig, RunState, RunStatus,
    Step, StepId, StepStatus, StopCondition, ToolContext, ToolRegistry,
};
use stepwise_llm::call::CallPolicy;
use stepwise_llm::roles::{LlmExecutor, Prompts, llm_roles};
use stepwise_llm::script::{ScriptModel, parse};
use stepwise_tools::{Corpus, register_notes_tools};

const GOAL: &str = "What does fine-tuning cost us?";

fn registry() -> ToolRegistry {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/notes");
    let corpus = Corpus::load(dir).unwrap().corpus;
    let mut tools = ToolRegistry::new();
    register_notes_tools(&mut tools, Arc::new(corpus));
    tools
}

/// Tiny backoff, no jitter: retries are on record but cost no time.
fn policy() -> CallPolicy {
    CallPolicy {
        retry: RetryPolicy {
            max_attempts: 3,
            initial_delay_ms: 1,
            max_delay_ms: 5,
            multiplier: 2.0,
            jitter: 0.0,
        },
        timeout_ms: 10_000,
    }
}

/// A script in the documented file format (a JSON array of entries).
fn model(entries: Value) -> Arc<ScriptModel> {
    let text = serde_json::to_string_pretty(&entries).unwrap();
    Arc::new(ScriptModel::from_entries(
        parse(&text, "test script").unwrap(),
    ))
}

async fn run(model: Arc<ScriptModel>) -> RunState {
    let roles = llm_roles(model, policy(), Prompts::embedded());
    let engine = Engine::new(roles, registry(), RunConfig::default()).unwrap();
    engine.run(GOAL, Constraints::default()).await.unwrap()
}

fn calls(state: &RunState) -> Vec<(String, ModelExchange)> {
    state
        .execution_history
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ModelCalled { role, exchange } => Some((role.clone(), exchange.clone())),
            _ => None,
        })
        .collect()
}

fn roles_called(state: &RunState) -> Vec<String> {
    calls(state).into_iter().map(|(r, _)| r).collect()
}

fn search_step() -> Value {
    json!({
        "id": "find",
        "description": "Find notes on the cost of fine-tuning",
        "tool": "search_notes",
        "args": {"query": "fine-tuning cost", "limit": 3},
        "acceptance_criteria": ["at least one note with a cost figure"]
    })
}

fn read_step() -> Value {
    json!({
        "id": "read",
        "description": "Read the best note in full",
        "tool": "read_note",
        "args": {"id": "${find.output.results[0].note_id}"},
        "depends_on": ["find"],
        "preconditions": [{"check": "non_empty", "ref": "${find.output.results}"}],
        "acceptance_criteria": ["the full text of one note"]
    })
}

fn two_step_plan() -> Value {
    json!({"steps": [search_step(), read_step()]})
}

fn ok_assessment() -> Value {
    json!({"purpose": "assessor", "json": {"acceptance_met": true, "verdict": "continue", "reason": "criteria met"}})
}

fn plain_report() -> Value {
    json!({"purpose": "synthesizer", "json": {"text": "Fine-tuning costs money [find].", "evidence": []}})
}

/// The best note and a verbatim passage from it, as search_notes returns them.
async fn search_quote() -> (String, String) {
    let tool = registry().get("search_notes").cloned().unwrap();
    let out = tool
        .call_json(
            ToolContext::default(),
            json!({"query": "fine-tuning cost", "limit": 3}),
        )
        .await
        .unwrap();
    let hit = &out["results"][0];
    let passage = hit["passages"][0].as_str().unwrap();
    let collapsed = passage.split_whitespace().collect::<Vec<_>>().join(" ");
    let quote: String = collapsed.chars().take(80).collect();
    (
        hit["note_id"].as_str().unwrap().to_owned(),
        quote.trim().to_owned(),
    )
}

#[tokio::test(start_paused = true)]
async fn a_happy_path_keeps_verbatim_evidence_and_records_every_call() {
    let (note, quote) = search_quote().await;
    let fenced = format!("Here is the plan:\n```json\n{}\n```", two_step_plan());
    let model = model(json!([
        {"purpose": "planner", "text": fenced, "usage": {"input_tokens": 900, "output_tokens": 200}},
        ok_assessment(),
        ok_assessment(),
        {"purpose": "synthesizer", "json": {
            "text": format!("The first year is dominated by data preparation [{note}]."),
            "evidence": [
                {"source_id": note, "step": "find", "quote": quote},
                {"source_id": note, "step": "find", "quote": "Fine-tuning is free forever."}
            ]
        }}
    ]));
    let state = run(Arc::clone(&model)).await;
    assert_eq!(state.status, RunStatus::Ok, "{:?}", state.blocked_reason);
    assert_eq!(state.step_results.len(), 2);
    assert_eq!(state.evidence.len(), 1, "the verbatim quote is kept");
    assert_eq!(state.evidence[0].quote, quote);
    let rejected = state.execution_history.iter().find_map(|e| match &e.kind {
        EventKind::Synthesized {
            rejected_evidence, ..
        } => Some(rejected_evidence.len()),
        _ => None,
    });
    assert_eq!(rejected, Some(1), "the invented quote is refused");
    assert_eq!(
        roles_called(&state),
        ["planner", "assessor", "assessor", "synthesizer"]
    );
    assert_eq!(state.usage.llm_calls, 4);
    assert_eq!(state.usage.input_tokens, 900);
    assert_eq!(model.remaining(), 0);
    // The planner saw the tools with their schemas and the reference syntax.
    let (_, planner) = &calls(&state)[0];
    let prompt: String = planner
        .request
        .messages
        .iter()
        .map(|m| m.content.as_str())
        .collect();
    assert!(prompt.contains("search_notes") && prompt.contains("\"required\":[\"query\"]"));
    assert!(prompt.contains("${find.output.results[0].note_id}"));
    assert!(prompt.contains(GOAL));
}

#[tokio::test(start_paused = true)]
async fn b_unparseable_planner_output_gets_one_repair_round_trip() {
    let model = model(json!([
        {"purpose": "planner", "text": "I would start by searching the notes."},
        {"purpose": "planner", "json": {"steps": [search_step()]}},
        ok_assessment(),
        plain_report()
    ]));
    let state = run(model).await;
    assert_eq!(state.status, RunStatus::Ok);
    let calls = calls(&state);
    assert_eq!(roles_called(&state)[..2], ["planner", "planner"]);
    let retry = &calls[1].1.request.messages;
    assert!(
        retry
            .last()
            .unwrap()
            .content
            .starts_with("Your answer was not valid:")
    );
    assert_eq!(
        retry[retry.len() - 2].content,
        "I would start by searching the notes."
    );
    assert!(
        !state
            .execution_history
            .iter()
            .any(|e| matches!(e.kind, EventKind::PlanInvalid { .. }))
    );
}

#[tokio::test(start_paused = true)]
async fn c_a_cyclic_plan_is_repaired_by_the_llm_repairer() {
    let mut a = search_step();
    a["depends_on"] = json!(["read"]);
    let model = model(json!([
        {"purpose": "planner", "json": {"steps": [a, read_step()]}},
        {"purpose": "repairer", "json": two_step_plan()},
        ok_assessment(),
        ok_assessment(),
        plain_report()
    ]));
    let state = run(model).await;
    assert_eq!(state.status, RunStatus::Ok, "{:?}", state.blocked_reason);
    let repair = calls(&state)
        .into_iter()
        .find(|(role, _)| role == "repairer")
        .unwrap()
        .1;
    let prompt: String = repair
        .request
        .messages
        .iter()
        .map(|m| m.content.as_str())
        .collect();
    assert!(prompt.contains("dependency_cycle"), "{prompt}");
    assert!(
        state
            .execution_history
            .iter()
            .any(|e| matches!(e.kind, EventKind::PlanRepaired { attempt: 1, .. }))
    );
}

#[tokio::test(start_paused = true)]
async fn d_endless_garbage_ends_in_needs_review_without_a_panic() {
    let junk = [
        "{",
        "```json\n{\"steps\": [",
        "",
        "null",
        "]]}}",
        "🙂 {not: json}",
    ];
    let model = model(Value::Array(
        junk.iter().map(|j| json!({"text": j})).collect(),
    ));
    let state = run(model).await;
    assert_eq!(state.status, RunStatus::NeedsReview);
    assert!(state.execution_history.iter().any(|e| matches!(
        e.kind,
        EventKind::StopConditionMet {
            condition: StopCondition::MaxRepairs,
            ..
        }
    )));
    assert_eq!(
        roles_called(&state),
        [
            "planner", "planner", "repairer", "repairer", "repairer", "repairer"
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn e_a_rate_limit_is_retried_and_both_attempts_recorded() {
    let model = model(json!([
        {"purpose": "planner", "error": {"kind": "rate_limited", "retry_after_ms": 3}},
        {"purpose": "planner", "json": {"steps": [search_step()]}},
        ok_assessment(),
        plain_report()
    ]));
    let state = run(model).await;
    assert_eq!(state.status, RunStatus::Ok);
    let calls = calls(&state);
    let planner: Vec<&ModelExchange> = calls
        .iter()
        .filter(|(r, _)| r == "planner")
        .map(|(_, x)| x)
        .collect();
    assert_eq!(planner.len(), 2);
    assert!(matches!(
        planner[0].outcome,
        ExchangeOutcome::Error {
            class: FailureClass::Transient,
            retry_after_ms: Some(3),
            ..
        }
    ));
    assert_eq!((planner[1].attempt, planner[1].waited_ms), (2, 3));
    assert_eq!(state.usage.llm_calls, 3, "the failed attempt cost nothing");
}

#[tokio::test(start_paused = true)]
async fn f_an_auth_error_fails_the_run_at_once_naming_the_fix() {
    let model = model(json!([
        {"error": {"kind": "auth", "status": 401, "message": "invalid x-api-key", "fix": "set ANTHROPIC_API_KEY"}},
        {"json": {"steps": [search_step()]}}
    ]));
    let state = run(Arc::clone(&model)).await;
    assert_eq!(state.status, RunStatus::Failed);
    let error = state
        .execution_history
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::RunFailed { error } => Some(error.clone()),
            _ => None,
        })
        .unwrap();
    assert!(error.contains("set ANTHROPIC_API_KEY"), "{error}");
    assert_eq!(roles_called(&state), ["planner"], "not retried");
    assert_eq!(model.remaining(), 1);
}

#[tokio::test(start_paused = true)]
async fn g_a_final_answer_from_the_replanner_skips_the_rest_and_synthesizes() {
    let gap = "No figure for the yearly serving cost";
    let model = model(json!([
        {"purpose": "planner", "json": two_step_plan()},
        {"purpose": "assessor", "json": {"acceptance_met": false, "verdict": "replan",
            "reason": "no serving cost", "new_gaps": [gap]}},
        {"purpose": "replanner", "json": {"final_answer": "The search results answer the goal.", "steps": []}},
        plain_report()
    ]));
    let state = run(model).await;
    assert_eq!(state.status, RunStatus::Ok, "{:?}", state.blocked_reason);
    assert_eq!(state.replan_count, 1);
    let read = state.plan.step(&StepId::new("read")).unwrap();
    assert_eq!(read.status, StepStatus::Skipped);
    assert!(state.final_report.as_deref().unwrap().contains(gap));
    assert_eq!(
        roles_called(&state),
        ["planner", "assessor", "replanner", "synthesizer"]
    );
    let (_, replan) = &calls(&state)[2];
    let prompt: String = replan
        .request
        .messages
        .iter()
        .map(|m| m.content.as_str())
        .collect();
    assert!(prompt.contains("no serving cost") && prompt.contains("note_id:"));
}

/// The engine's validator refuses a step with empty arguments for a tool
/// that requires some, so the executor is exercised directly here.
#[tokio::test(start_paused = true)]
async fn h_the_llm_executor_fills_open_arguments_from_the_model() {
    let tools = registry();
    let tool = tools.get("search_notes").cloned().unwrap();
    let step = Step::new(
        "find",
        "Find notes on the cost of fine-tuning",
        "search_notes",
    )
    .accept("at least one note with a cost figure");
    let context = |args: Value| StepContext {
        step: step.clone(),
        args,
        dependencies: Vec::new(),
        tool_context: ToolContext::default(),
    };
    let model = model(json!([
        {"purpose": "executor", "text": "```json\n{\"query\": \"fine-tuning cost\"}\n```"},
        {"purpose": "executor", "json": {"q": "x"}},
        {"purpose": "executor", "json": {"q": "y"}}
    ]));
    let executor = LlmExecutor::new(model.clone(), policy(), Prompts::embedded());
    let reply = executor
        .execute(context(json!({})), Arc::clone(&tool))
        .await
        .unwrap();
    assert!(!reply.value["results"].as_array().unwrap().is_empty());
    assert_eq!(reply.exchanges.len(), 1);
    let prompt = &reply.exchanges[0].request.messages;
    assert!(
        prompt
            .iter()
            .any(|m| m.content.contains("at least one note with a cost figure"))
    );
    // Arguments given by the plan: the tool is called with no model call.
    let direct = executor
        .execute(
            context(json!({"query": "RAG operating cost"})),
            Arc::clone(&tool),
        )
        .await
        .unwrap();
    assert!(direct.exchanges.is_empty());
    assert_eq!(model.used(), 1);
    // Arguments that never match the tool's schema: a persistent executor failure.
    let failure = executor
        .execute(context(json!({})), tool)
        .await
        .unwrap_err();
    assert_eq!(failure.kind, FailureKind::Executor);
    assert_eq!(failure.class, FailureClass::Persistent);
}
