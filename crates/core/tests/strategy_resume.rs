//! Every strategy survives an interruption at any event: resumed from the
//! store, the run ends exactly as an uninterrupted one, no recorded call is
//! repeated, and the log still folds to the live state.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::{Value, json};
use stepwise_core::decision::Routing;
use stepwise_core::decision::{Completeness, Verification};
use stepwise_core::engine::ResumeOptions;
use stepwise_core::roles::{ActRequest, Action, Actor, Router, Verifier};
use stepwise_core::roles::{Reply, RoleError};
use stepwise_core::testing::{
    CrashAfter, FnTool, PrefixSummarizer, ScriptedAssessor, ScriptedPlanner, ScriptedRepairer,
    ScriptedReplanner, ScriptedSynthesizer, draft,
};
use stepwise_core::{
    Constraints, Engine, EventSink, Evidence, MemoryStore, Report, RunId, RunState, RunStatus,
    Step, StepStatus, Store, StoreSink, StrategyRegistry, ToolRegistry,
};
use stepwise_core::{Goal, ToolSpec};

/// Calls `read` for x, y and z in turn, then answers citing the first call.
struct RuleActor;

#[async_trait]
impl Actor for RuleActor {
    async fn act(&self, request: ActRequest<'_>) -> Result<Reply<Action>, RoleError> {
        let done = request.history.len();
        if let Some(name) = ["x", "y", "z"].get(done) {
            return Ok(Reply::free(Action::Call {
                thought: format!("read {name}"),
                tool: "read".into(),
                args: json!({"step": name}).as_object().cloned().unwrap(),
            }));
        }
        Ok(Reply::free(Action::Answer {
            report: Report {
                text: "x, y and z were read [call-1]".into(),
                // The call's output names no source; the call is the source.
                evidence: vec![Evidence {
                    source_id: "call-1".into(),
                    step: "call-1".into(),
                    quote: "text of x".into(),
                }],
                gaps: Vec::new(),
            },
            gaps: vec!["w was never read".into()],
        }))
    }
}

/// Sends every goal to react (seed 000's first question answered no).
struct ExploringRouter;

#[async_trait]
impl Router for ExploringRouter {
    async fn route(&self, _goal: &Goal, _tools: &[ToolSpec]) -> Result<Reply<Routing>, RoleError> {
        Ok(Reply::free(Routing {
            steps_known_up_front: false,
            three_or_more_steps: true,
            same_tool_repeated: true,
            reason: "each read depends on the last".into(),
        }))
    }
}

/// Completeness = succeeded steps ÷ 4: partial until a replan adds the fourth.
struct RuleVerifier;

#[async_trait]
impl Verifier for RuleVerifier {
    async fn verify(&self, state: &RunState) -> Result<Reply<Verification>, RoleError> {
        let done = state
            .plan
            .steps
            .iter()
            .filter(|s| s.status == StepStatus::Succeeded)
            .count();
        Ok(Reply::free(Verification {
            status: Completeness::Partial,
            completeness: done as f64 / 4.0,
            confidence: 0.1,
            missing: vec!["the fourth read".into()],
            contradictions: Vec::new(),
            weak_steps: Vec::new(),
        }))
    }
}

fn read(id: &str, deps: &[&str]) -> Step {
    Step::new(id, format!("read {id}"), "read")
        .with_args(json!({"step": id}))
        .after(deps.iter().copied())
        .accept("done")
}

struct Setup {
    strategy: &'static str,
    reads: Arc<Mutex<Vec<String>>>,
}

impl Setup {
    fn engine(&self, sink: Arc<dyn EventSink>) -> Engine {
        let roles = stepwise_core::Roles::new(
            Arc::new(ScriptedPlanner::new([draft(vec![
                read("a", &[]),
                read("b", &["a"]),
                read("c", &[]),
            ])])),
            Arc::new(ScriptedRepairer::new([])),
            Arc::new(ScriptedAssessor::new([])),
            Arc::new(ScriptedReplanner::new([draft(vec![read("d", &["b"])])])),
            Arc::new(ScriptedSynthesizer::summarising()),
        )
        .with_actor(Arc::new(RuleActor))
        .with_verifier(Arc::new(RuleVerifier))
        .with_summarizer(Arc::new(PrefixSummarizer { chars: 20 }))
        .with_router(Arc::new(ExploringRouter));
        let reads = Arc::clone(&self.reads);
        let mut tools = ToolRegistry::new();
        tools.register_dyn(Arc::new(FnTool::new("read", move |args: Value| {
            let reads = Arc::clone(&reads);
            Box::pin(async move {
                let step = args["step"].as_str().unwrap_or_default().to_owned();
                reads.lock().unwrap().push(step.clone());
                Ok(json!(format!("text of {step}")))
            })
        })));
        let strategy: Arc<dyn stepwise_core::Strategy> = if self.strategy == "router-escalating" {
            // react capped at two calls: the actor's third is refused and the
            // run escalates to plan-execute.
            stepwise_core::testing::capped_router(2)
        } else {
            StrategyRegistry::builtin().get(self.strategy).unwrap()
        };
        Engine::new(roles, tools, Default::default())
            .unwrap()
            .with_sink(sink)
            .with_strategy(strategy)
    }
}

fn stable(state: &RunState) -> Value {
    json!({
        "status": state.status,
        "report": state.final_report,
        "results": state.step_results.iter().map(|(k, v)| (k.to_string(), v.output.clone())).collect::<BTreeMap<_, _>>(),
        "gaps": state.knowledge_gaps,
        "stop": state.stop_condition,
        "summaries": state.step_summaries,
        "verifications": state.verification_history.len(),
        "assessed": state.execution_history.iter().filter(|e| e.kind.name() == "assessed").count(),
    })
}

async fn interrupt_everywhere(strategy: &'static str) {
    let reference = {
        let setup = Setup {
            strategy,
            reads: Arc::default(),
        };
        let store = Arc::new(MemoryStore::new());
        let sink = Arc::new(StoreSink::new(store.clone(), None));
        let state = setup
            .engine(sink)
            .run("read everything", Constraints::default())
            .await
            .unwrap();
        assert_eq!(state.status, RunStatus::Ok, "{strategy}");
        if strategy == "router-escalating" {
            let kinds: Vec<&str> = state
                .execution_history
                .iter()
                .map(|e| e.kind.name())
                .collect();
            assert!(kinds.contains(&"strategy_escalated"), "{kinds:?}");
            assert_eq!(state.step_results.len(), 5, "x, y, then the plan's a, b, c");
        }
        (stable(&state), state.execution_history.len())
    };
    for limit in 1..reference.1 {
        let setup = Setup {
            strategy,
            reads: Arc::default(),
        };
        let store = Arc::new(MemoryStore::new());
        let run = RunId(format!("run_{limit}"));
        let crashing = Arc::new(CrashAfter::new(
            Arc::new(StoreSink::new(store.clone(), None)),
            limit,
        ));
        let crashed = setup
            .engine(crashing)
            .run_with_id(run.clone(), "read everything", Constraints::default())
            .await;
        assert!(crashed.is_err(), "{strategy} limit {limit}");
        let saved = store.state(&run).await.unwrap();
        let recorded: Vec<String> = saved
            .step_results
            .values()
            .filter_map(|r| {
                r.output
                    .as_str()
                    .map(|s| s.trim_start_matches("text of ").to_owned())
            })
            .collect();
        let sink = Arc::new(StoreSink::new(store.clone(), None));
        // A fresh engine: nothing of the first process survives but the log.
        let state = setup
            .engine(sink)
            .resume(
                saved,
                ResumeOptions {
                    by: "test".into(),
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        assert_eq!(
            stable(&state),
            reference.0,
            "{strategy} limit {limit}: same end as an uninterrupted run"
        );
        let reads = setup.reads.lock().unwrap().clone();
        for r in &recorded {
            assert_eq!(
                reads.iter().filter(|x| *x == r).count(),
                1,
                "{strategy} limit {limit}: {r} was read again after its result was recorded"
            );
        }
        assert_eq!(
            RunState::from_events(&store.events(&run).await.unwrap()).unwrap(),
            state,
            "{strategy} limit {limit}"
        );
    }
}

#[tokio::test]
async fn react_resumes_from_any_event() {
    interrupt_everywhere("react").await;
}

#[tokio::test]
async fn react_isolated_resumes_from_any_event() {
    interrupt_everywhere("react-isolated").await;
}

#[tokio::test]
async fn verified_resumes_from_any_event() {
    interrupt_everywhere("verified").await;
}

#[tokio::test]
async fn plan_solve_resumes_from_any_event() {
    interrupt_everywhere("plan-solve").await;
}

/// The router's escalation from react to plan-execute, interrupted at every
/// event: a resume between `strategy_escalated` and `plan_created` goes to
/// the planner, not back to the react calls.
#[tokio::test]
async fn an_escalating_router_resumes_from_any_event() {
    interrupt_everywhere("router-escalating").await;
}
