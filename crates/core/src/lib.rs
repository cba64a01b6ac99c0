//! # stepwise-core
//!
//! The planning core of Stepwise: a goal becomes a validated plan (a DAG of
//! tool-call steps with preconditions and acceptance criteria), which runs in
//! dependency order with independent steps in parallel, is assessed step by
//! step, replanned when a recoverable gap appears (bounded), and ends in a
//! cited report that names its gaps — or in a safe stop for review.
//!
//! A tour, offline, with scripted roles:
//!
//! ```
//! use std::sync::Arc;
//! use stepwise_core::testing::{FnTool, ScriptedAssessor, ScriptedPlanner, ScriptedRepairer,
//!     ScriptedReplanner, ScriptedSynthesizer, draft};
//! use stepwise_core::{Constraints, Engine, Roles, RunConfig, RunStatus, Step, ToolRegistry};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
//! let plan = draft(vec![
//!     Step::new("find", "Find sources", "echo").with_args(serde_json::json!({"q": "rag"})).accept("has sources"),
//!     Step::new("compare", "Compare them", "echo")
//!         .with_args(serde_json::json!({"from": "$find"})).after(["find"]).accept("a comparison"),
//! ]);
//! let roles = Roles::new(
//!     Arc::new(ScriptedPlanner::new([plan])),
//!     Arc::new(ScriptedRepairer::new([])),
//!     Arc::new(ScriptedAssessor::new([])),
//!     Arc::new(ScriptedReplanner::new([])),
//!     Arc::new(ScriptedSynthesizer::summarising()),
//! );
//! let mut tools = ToolRegistry::new();
//! tools.register_dyn(Arc::new(FnTool::echo("echo", std::time::Duration::ZERO)));
//! let engine = Engine::new(roles, tools, RunConfig::default()).unwrap();
//! let state = engine.run("Compare RAG designs", Constraints::default()).await.unwrap();
//! assert_eq!(state.status, RunStatus::Ok);
//! assert_eq!(state.step_results.len(), 2);
//! # });
//! ```

pub mod act;
pub mod cursor;
pub mod decision;
pub mod engine;
pub mod event;
pub mod failure;
pub mod goal;
pub mod graph;
pub mod ids;
pub mod model;
pub mod plan;
pub mod retry;
pub mod roles;
pub mod scheduler;
pub mod state;
pub mod stats;
pub mod step_status;
pub mod store;
pub mod strategy;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod tool;
pub mod usage;

pub use decision::{Driver, StepResult};
pub use engine::{AssessMode, Engine, EngineError, RunConfig};
pub use event::{BatchSink, Event, EventKind, EventSink, StopCondition};
pub use failure::{FailureClass, FailureKind, StepFailure};
pub use goal::{Constraints, Goal, InputError};
pub use ids::{RunId, StepId};
pub use model::{
    ChatModel, ChatRequest, ChatResponse, ChatRole, FinishReason, Message, ModelError,
    ResponseSchema, TimeoutStage, ToolCall,
};
pub use plan::validate::{Diagnostic, DiagnosticCode, Limits};
pub use plan::{DraftPlan, Plan, Precondition, Step};
pub use retry::RetryPolicy;
pub use roles::{Assessment, Evidence, Report, ReviewDecision, Roles, Verdict};
pub use state::{FinalOutput, RunState, RunStatus};
pub use step_status::{IllegalTransition, StepStatus};
pub use store::{
    IdempotencyLog, IdempotencyRecord, Lease, MemoryStore, RunLease, RunSummary, Store, StoreError,
    StoreSink,
};
pub use strategy::{Strategy, StrategyRegistry};
pub use tool::{
    DynTool, Effects, Tool, ToolCatalog, ToolContext, ToolError, ToolRegistry, ToolSpec,
};
pub use usage::Usage;
