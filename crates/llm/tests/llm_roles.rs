//! The LLM-backed roles driven through the real engine, with real notes
//! tools over `examples/notes` and a scripted model standing in for the
//! provider: every scenario is deterministic and needs no network.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;

use common::{GOAL, calls, model, policy, registry, roles_called};

use serde_json::{Value, json};
use stepwise_core::event::EventKind;
use stepwise_core::model::{ExchangeOutcome, ModelExchange};
use stepwise_core::roles::{StepContext, StepExecutor, ToolCallExecutor};
use stepwise_core::{
    Constraints, Engine, FailureClass, FailureKind, RunConfig, RunState, RunStatus, Step, StepId,
    StepStatus, StopCondition, ToolContext, Usage,
};
use stepwise_llm::roles::{LlmExecutor, Prompts, llm_roles};
use stepwise_llm::script::ScriptModel;

async fn run(model: Arc<ScriptModel>) -> RunState {
    let roles = llm_roles(model, policy(), Prompts::embedded());
    let engine = Engine::new(roles, registry(), RunConfig::default()).unwrap();
    engine.run(GOAL, Constraints::default()).await.unwrap()
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

/// A short report citing a verbatim passage that `find` returns (a report
/// that cites nothing would end in needs_review, not ok).
async fn plain_report() -> Value {
    let (note, quote) = search_quote().await;
    json!({"purpose": "synthesizer", "json": {
        "text": format!("Fine-tuning costs money [{note}]."),
        "evidence": [{"source_id": note, "step": "find", "quote": quote}]
    }})
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
        plain_report().await
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
        plain_report().await
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
        plain_report().await
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
            EventKind::RunFailed { error, .. } => Some(error.clone()),
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
        plain_report().await
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

/// The executor on its own: open arguments are filled by the model; given
/// ones are used as they are, with no model call; an unusable answer is a
/// persistent failure that carries the calls it made and their cost.
#[tokio::test(start_paused = true)]
async fn h_the_llm_executor_fills_open_arguments_from_the_model() {
    let tools = registry();
    let tool = tools.get("search_notes").cloned().unwrap();
    let mut step = Step::new(
        "find",
        "Find notes on the cost of fine-tuning",
        "search_notes",
    )
    .accept("at least one note with a cost figure");
    step.acceptance_criteria
        .push(stepwise_core::plan::criteria::Criterion::Check(
            stepwise_core::plan::criteria::Check::NonEmpty {
                path: "results".into(),
            },
        ));
    let context = |args: Value| StepContext {
        step: step.clone(),
        args,
        dependencies: Vec::new(),
        tool_context: ToolContext::default(),
    };
    let open = json!({"query": {"$open": "keywords for the cost of fine-tuning"}, "limit": 2});
    let model = model(json!([
        {"purpose": "executor", "text": "```json\n{\"query\": \"fine-tuning cost\"}\n```",
         "usage": {"input_tokens": 50, "output_tokens": 7}},
        {"purpose": "executor", "json": {"q": "x"}, "usage": {"input_tokens": 51, "output_tokens": 4}},
        {"purpose": "executor", "json": {"q": "y"}, "usage": {"input_tokens": 60, "output_tokens": 4}}
    ]));
    let executor = LlmExecutor::new(model.clone(), policy(), Prompts::embedded());
    let reply = executor
        .execute(context(open.clone()), Arc::clone(&tool))
        .await
        .unwrap();
    let results = reply.value["results"].as_array().unwrap();
    assert!(
        !results.is_empty() && results.len() <= 2,
        "limit 2 was kept"
    );
    assert_eq!(reply.exchanges.len(), 1);
    assert_eq!(reply.usage.llm_calls, 1);
    let request = &reply.exchanges[0].request;
    let prompt: String = request
        .messages
        .iter()
        .map(|m| m.content.as_str())
        .collect();
    assert!(
        prompt.contains("at least one note with a cost figure"),
        "{prompt}"
    );
    // A typed check is shown as the sentence it stands for, not its JSON.
    assert!(prompt.contains("- `results` is not empty"), "{prompt}");
    assert!(!prompt.contains("non_empty"), "{prompt}");
    assert!(
        prompt.contains("keywords for the cost of fine-tuning"),
        "{prompt}"
    );
    assert!(
        prompt.contains("\"limit\":2"),
        "the given argument is shown: {prompt}"
    );
    // The answer's schema holds exactly the open argument, with the tool's schema for it.
    let schema = &request.response_schema.as_ref().unwrap().schema;
    assert_eq!(schema["required"], json!(["query"]));
    assert_eq!(schema["properties"]["query"]["type"], "string");
    assert!(schema["properties"].get("limit").is_none());
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
    // An answer that never matches the schema: a persistent executor failure
    // that hands back both calls and what they cost.
    let failure = executor.execute(context(open), tool).await.unwrap_err();
    assert_eq!(failure.kind, FailureKind::Executor);
    assert_eq!(failure.class, FailureClass::Persistent);
    assert_eq!(failure.exchanges.len(), 2);
    assert_eq!(
        (
            failure.usage.llm_calls,
            failure.usage.input_tokens,
            failure.usage.output_tokens
        ),
        (2, 111, 8)
    );
}

fn usage_triple(u: &Usage) -> (u64, u64, u64) {
    (u.llm_calls, u.input_tokens, u.output_tokens)
}

/// A step whose query is left open for the executor.
fn open_search_step() -> Value {
    json!({
        "id": "find",
        "description": "Find notes on the cost of fine-tuning",
        "tool": "search_notes",
        "args": {"query": {"$open": "keywords for the cost of fine-tuning"}},
        "acceptance_criteria": ["at least one note with a cost figure"]
    })
}

/// Part of issue 5: every model call is recorded and counted exactly once,
/// including answers that could not be used (a malformed plan, a malformed
/// executor answer) and calls behind a failed step attempt, whose
/// `model_called` events (role `step_executor`) come before its `step_failed`.
#[tokio::test(start_paused = true)]
async fn i_usage_counts_every_model_call_once_even_unusable_and_failed_ones() {
    let model = model(json!([
        {"purpose": "planner", "error": {"kind": "rate_limited", "retry_after_ms": 3}},
        {"purpose": "planner", "text": "I will search the notes.", "usage": {"input_tokens": 100, "output_tokens": 10}},
        {"purpose": "planner", "text": "Still no JSON, sorry.", "usage": {"input_tokens": 110, "output_tokens": 12}},
        {"purpose": "repairer", "json": {"steps": [open_search_step()]}, "usage": {"input_tokens": 300, "output_tokens": 50}},
        // Attempt 1 of the step: the provider keeps failing (3 call attempts).
        {"purpose": "executor", "error": {"kind": "server", "status": 503}},
        {"purpose": "executor", "error": {"kind": "server", "status": 503}},
        {"purpose": "executor", "error": {"kind": "server", "status": 503}},
        // Attempt 2: two unusable answers.
        {"purpose": "executor", "text": "no idea", "usage": {"input_tokens": 40, "output_tokens": 5}},
        {"purpose": "executor", "json": {"query": 5}, "usage": {"input_tokens": 45, "output_tokens": 6}},
        {"purpose": "assessor", "json": {"acceptance_met": false, "verdict": "continue",
            "reason": "the search never ran"}, "usage": {"input_tokens": 60, "output_tokens": 8}},
        {"purpose": "synthesizer", "json": {"text": "Nothing was found.", "evidence": []},
            "usage": {"input_tokens": 70, "output_tokens": 9}}
    ]));
    let state = run(Arc::clone(&model)).await;
    // The only step never ran, so the report has nothing to cite: it is kept
    // as the partial brief of a run that needs review, never `ok`.
    assert_eq!(state.status, RunStatus::NeedsReview);
    assert!(
        state
            .blocked_reason
            .as_deref()
            .unwrap()
            .starts_with("the report cites no evidence: no step succeeded"),
        "{:?}",
        state.blocked_reason
    );
    assert_eq!(state.final_report.as_deref(), Some("Nothing was found."));
    assert_eq!(model.remaining(), 0);

    // The run's total is the sum over its model_called events…
    let exchanges: Vec<ModelExchange> = calls(&state).into_iter().map(|(_, x)| x).collect();
    assert_eq!(exchanges.len(), 11);
    let summed = stepwise_core::model::usage_of(&exchanges);
    assert_eq!(usage_triple(&state.usage), usage_triple(&summed));
    assert_eq!(usage_triple(&state.usage), (7, 725, 100));
    // …and the same when the state is rebuilt from the log alone.
    let mut rebuilt = RunState::default();
    for event in &state.execution_history {
        rebuilt.apply(event).unwrap();
    }
    assert_eq!(usage_triple(&rebuilt.usage), (7, 725, 100));
    // The final output splits it by step and by role, and the parts add up.
    let out = state.final_output();
    assert_eq!(
        usage_triple(&out.usage_by_step[&StepId::new("find")]),
        (2, 85, 11)
    );
    assert_eq!(usage_triple(&out.usage_by_role["planner"]), (2, 210, 22));
    assert!(!out.usage_by_role.contains_key("step_executor"));
    let mut parts = Usage::default();
    for u in out.usage_by_step.values().chain(out.usage_by_role.values()) {
        parts += *u;
    }
    assert_eq!(usage_triple(&parts), (7, 725, 100));

    // The malformed plan's two answers are paid for on its plan_created event.
    let planned = state
        .execution_history
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::PlanCreated { usage, draft } => Some((*usage, draft.clone())),
            _ => None,
        })
        .unwrap();
    assert_eq!(usage_triple(&planned.0), (2, 210, 22));
    assert_eq!(planned.1, json!("Still no JSON, sorry."));

    // Each failed attempt: its executor calls, then step_failed carrying their cost.
    let kinds: Vec<(&str, String)> = state
        .execution_history
        .iter()
        .map(|e| match &e.kind {
            EventKind::ModelCalled { role, .. } => (e.kind.name(), role.clone()),
            other => (other.name(), String::new()),
        })
        .filter(|(k, r)| *k != "model_called" || r == "step_executor")
        .skip_while(|(k, _)| *k != "step_started")
        .take(10)
        .collect();
    let names: Vec<&str> = kinds.iter().map(|(k, _)| *k).collect();
    assert_eq!(
        names,
        [
            "step_started",
            "model_called",
            "model_called",
            "model_called",
            "step_failed",
            "step_retrying",
            "step_started",
            "model_called",
            "model_called",
            "step_failed",
        ]
    );
    let failures: Vec<&stepwise_core::StepFailure> = state
        .execution_history
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::StepFailed { failure, .. } => Some(failure),
            _ => None,
        })
        .collect();
    assert_eq!(failures.len(), 2);
    assert_eq!(failures[0].class, FailureClass::Transient);
    assert!(failures[0].usage.is_zero(), "failed attempts cost nothing");
    assert_eq!(failures[1].class, FailureClass::Persistent);
    assert_eq!(failures[1].kind, FailureKind::Executor);
    assert_eq!(usage_triple(&failures[1].usage), (2, 85, 11));
    assert!(
        failures[1].message.contains("could not be used"),
        "{}",
        failures[1].message
    );
    let find = state.plan.step(&StepId::new("find")).unwrap();
    assert_eq!(find.status, StepStatus::Terminated);
}

/// An open argument filled from the step's isolated context: the model sees
/// the step, the hint and its dependency's output, and its answer is the
/// argument the tool is called with. The plan keeps the marker.
#[tokio::test(start_paused = true)]
async fn j_an_open_argument_is_filled_from_the_dependency_results() {
    let (note, _) = search_quote().await;
    let read = json!({
        "id": "read",
        "description": "Read the note that states a fine-tuning cost",
        "tool": "read_note",
        "args": {"id": {"$open": "the note_id of the search hit that states a cost figure"}},
        "depends_on": ["find"],
        "acceptance_criteria": ["the full text of one note"]
    });
    let model = model(json!([
        {"purpose": "planner", "json": {"steps": [search_step(), read]}},
        ok_assessment(),
        {"purpose": "executor", "json": {"id": note}, "usage": {"input_tokens": 80, "output_tokens": 6}},
        ok_assessment(),
        plain_report().await
    ]));
    let state = run(Arc::clone(&model)).await;
    assert_eq!(state.status, RunStatus::Ok, "{:?}", state.blocked_reason);
    assert_eq!(
        roles_called(&state),
        [
            "planner",
            "assessor",
            "step_executor",
            "assessor",
            "synthesizer"
        ]
    );
    let result = &state.step_results[&StepId::new("read")];
    assert_eq!(result.output["note_id"], json!(note));
    // The executor's isolated context: the step, the hint, the dependency's output.
    let (_, exchange) = &calls(&state)[2];
    let prompt: String = exchange
        .request
        .messages
        .iter()
        .map(|m| m.content.as_str())
        .collect();
    assert!(prompt.contains("the note_id of the search hit"), "{prompt}");
    assert!(prompt.contains(&format!("note_id: {note}")), "{prompt}");
    assert!(!prompt.contains(GOAL), "no run history: {prompt}");
    // The step's usage is the executor's call; the plan still says the argument is open.
    let step_usage = state
        .execution_history
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::StepSucceeded { step, usage, .. } if step.as_str() == "read" => Some(*usage),
            _ => None,
        })
        .unwrap();
    assert_eq!(usage_triple(&step_usage), (1, 80, 6));
    let planned = state.plan.step(&StepId::new("read")).unwrap();
    assert!(stepwise_core::plan::args::open_hint(&planned.args["id"]).is_some());
}

/// Without a model executor, a step with an open argument fails at once with
/// a persistent failure that names the argument.
#[tokio::test(start_paused = true)]
async fn k_without_a_model_executor_an_open_argument_fails_the_step_clearly() {
    let model = model(json!([
        {"purpose": "planner", "json": {"steps": [open_search_step()]}},
        {"purpose": "assessor", "json": {"acceptance_met": false, "verdict": "continue", "reason": "no search"}},
        {"purpose": "synthesizer", "json": {"text": "Nothing was found.", "evidence": []}}
    ]));
    let mut roles = llm_roles(model, policy(), Prompts::embedded());
    roles.executor = Arc::new(ToolCallExecutor);
    let engine = Engine::new(roles, registry(), RunConfig::default()).unwrap();
    let state = engine.run(GOAL, Constraints::default()).await.unwrap();
    let failure = state
        .execution_history
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::StepFailed { failure, .. } => Some(failure.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(failure.class, FailureClass::Persistent);
    assert_eq!(failure.kind, FailureKind::InvalidArgs);
    assert!(
        failure.message.contains(
            "argument `query` of search_notes is open and no model executor is configured"
        ),
        "{}",
        failure.message
    );
    assert_eq!(
        state.plan.step(&StepId::new("find")).unwrap().attempts,
        1,
        "not retried"
    );
    assert!(!roles_called(&state).contains(&"step_executor".to_owned()));
}
