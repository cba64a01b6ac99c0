//! LLM-backed roles: each renders its prompt template, asks a [`ChatModel`]
//! for structured output (one repair round-trip on a bad answer) and hands
//! back the answer with every model exchange, so the engine records them and
//! a run can be replayed. Plans are returned as the model wrote them: the
//! engine's validator and repairer judge them, not these roles.
//!
//! Each role sees only what it needs (seed 002's context isolation): the
//! assessor one step, the executor one step and its dependencies, the
//! summarizer one tool result, the router the goal, the replanner,
//! verifier and synthesizer summarised, size-capped results — never the
//! whole history. The ReAct actor sees its own history of calls (that is
//! what ReAct is), as the engine builds it.

mod actor;
mod assessor;
mod executor;
mod planner;
mod prompts;
mod replanner;
mod router;
mod summarizer;
mod synthesizer;
mod verifier;
mod view;

use std::fmt;
use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use stepwise_core::model::ModelExchange;
use stepwise_core::roles::{AutoApprove, Reply, RoleError, RoleName};
use stepwise_core::{ChatModel, ChatRequest, FailureClass, ResponseSchema, Roles};

pub use actor::LlmActor;
pub use assessor::LlmAssessor;
pub use executor::LlmExecutor;
pub use planner::{LlmPlanner, LlmRepairer};
pub use prompts::{PromptError, Prompts};
pub use replanner::{LlmReplanner, replan_schema};
pub use router::LlmRouter;
pub use summarizer::LlmSummarizer;
pub use synthesizer::LlmSynthesizer;
pub use verifier::LlmVerifier;

use crate::call::{CallPolicy, TextSink};
use crate::structured::{Check, structured_streaming};

/// Every LLM-backed role over one model: the planning graph's roles, with
/// plans approved automatically and open step arguments filled by the model,
/// and the strategies' roles (verifier, actor, summarizer, router).
pub fn llm_roles(model: Arc<dyn ChatModel>, policy: CallPolicy, prompts: Prompts) -> Roles {
    let backend = Backend::new(model, policy, prompts);
    Roles {
        planner: Arc::new(LlmPlanner::from_backend(backend.clone())),
        repairer: Arc::new(LlmRepairer::from_backend(backend.clone())),
        reviewer: Arc::new(AutoApprove),
        executor: Arc::new(LlmExecutor::from_backend(backend.clone())),
        assessor: Arc::new(LlmAssessor::from_backend(backend.clone())),
        replanner: Arc::new(LlmReplanner::from_backend(backend.clone())),
        synthesizer: Arc::new(LlmSynthesizer::from_backend(backend.clone())),
        verifier: Some(Arc::new(LlmVerifier::from_backend(backend.clone()))),
        actor: Some(Arc::new(LlmActor::from_backend(backend.clone()))),
        summarizer: Some(Arc::new(LlmSummarizer::from_backend(backend.clone()))),
        router: Some(Arc::new(LlmRouter::from_backend(backend))),
    }
}

/// Puts `role` of `roles` on `model` (its own model: a cheap one to assess,
/// a strong one to plan — seed 002's planner/executor separation). The
/// reviewer has no model form and is left as it is.
pub fn use_model_for(
    roles: &mut Roles,
    role: RoleName,
    model: Arc<dyn ChatModel>,
    policy: CallPolicy,
    prompts: Prompts,
) {
    let b = Backend::new(model, policy, prompts);
    match role {
        RoleName::Planner => roles.planner = Arc::new(LlmPlanner::from_backend(b)),
        RoleName::Repairer => roles.repairer = Arc::new(LlmRepairer::from_backend(b)),
        RoleName::StepExecutor => roles.executor = Arc::new(LlmExecutor::from_backend(b)),
        RoleName::Assessor => roles.assessor = Arc::new(LlmAssessor::from_backend(b)),
        RoleName::Replanner => roles.replanner = Arc::new(LlmReplanner::from_backend(b)),
        RoleName::Synthesizer => roles.synthesizer = Arc::new(LlmSynthesizer::from_backend(b)),
        RoleName::Verifier => roles.verifier = Some(Arc::new(LlmVerifier::from_backend(b))),
        RoleName::Actor => roles.actor = Some(Arc::new(LlmActor::from_backend(b))),
        RoleName::Summarizer => roles.summarizer = Some(Arc::new(LlmSummarizer::from_backend(b))),
        RoleName::Router => roles.router = Some(Arc::new(LlmRouter::from_backend(b))),
        RoleName::Reviewer => {}
    }
}

/// What every LLM role holds: the model, how to call it, the prompts.
#[derive(Clone)]
pub(crate) struct Backend {
    model: Arc<dyn ChatModel>,
    policy: CallPolicy,
    prompts: Prompts,
}

impl fmt::Debug for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Backend")
            .field("model", &self.model.name())
            .field("policy", &self.policy)
            .field("prompts_overridden", &self.prompts.overridden())
            .finish()
    }
}

/// One structured question to the model.
pub(crate) struct Ask<'a, C: Serialize> {
    pub(crate) role: RoleName,
    /// The request's purpose (what scripts match on): `planner`, `assessor`, …
    pub(crate) purpose: &'static str,
    /// The template's file name.
    pub(crate) template: &'static str,
    pub(crate) context: &'a C,
    pub(crate) schema: ResponseSchema,
    pub(crate) check: Check,
}

impl Backend {
    pub(crate) fn new(model: Arc<dyn ChatModel>, policy: CallPolicy, prompts: Prompts) -> Self {
        Self {
            model,
            policy,
            prompts,
        }
    }

    /// Renders the prompt and builds the request. A template that fails to
    /// render is a persistent role failure naming the template.
    pub(crate) fn request<C: Serialize>(&self, ask: &Ask<'_, C>) -> Result<ChatRequest, RoleError> {
        let messages = self
            .prompts
            .render(ask.template, ask.context)
            .map_err(|e| RoleError::failed(ask.role, FailureClass::Persistent, e.to_string()))?;
        Ok(ChatRequest {
            purpose: ask.purpose.to_owned(),
            messages,
            response_schema: Some(ask.schema.clone()),
            ..ChatRequest::default()
        })
    }

    /// Asks and parses, recording every exchange in the reply or the error.
    pub(crate) async fn ask<T: DeserializeOwned, C: Serialize>(
        &self,
        ask: Ask<'_, C>,
    ) -> Result<Reply<T>, RoleError> {
        self.ask_streaming(ask, None).await
    }

    /// Whether the model hands its answers over as they stream in.
    pub(crate) fn streams(&self) -> bool {
        self.model.streams()
    }

    /// [`ask`](Self::ask), handing the answer's text to `sink` as it streams in.
    pub(crate) async fn ask_streaming<T: DeserializeOwned, C: Serialize>(
        &self,
        ask: Ask<'_, C>,
        sink: Option<&mut (dyn TextSink + '_)>,
    ) -> Result<Reply<T>, RoleError> {
        let request = self.request(&ask)?;
        let mut log: Vec<ModelExchange> = Vec::new();
        let (value, usage) = structured_streaming(
            self.model.as_ref(),
            &request,
            &self.policy,
            ask.role,
            &mut log,
            ask.check,
            sink,
        )
        .await?;
        Ok(Reply {
            value,
            usage,
            exchanges: log,
        })
    }
}

/// A schema named `name`, from a `schemars` type.
pub(crate) fn schema_of<T: schemars::JsonSchema>(name: &str) -> ResponseSchema {
    ResponseSchema {
        name: name.to_owned(),
        schema: serde_json::to_value(schemars::schema_for!(T)).unwrap_or(Value::Null),
    }
}

/// Implements `new` and `from_backend` for a role struct holding a `Backend`.
macro_rules! llm_role {
    ($name:ident) => {
        impl $name {
            /// The role over `model`, called under `policy`, with `prompts`.
            pub fn new(
                model: std::sync::Arc<dyn stepwise_core::ChatModel>,
                policy: $crate::call::CallPolicy,
                prompts: $crate::roles::Prompts,
            ) -> Self {
                Self::from_backend($crate::roles::Backend::new(model, policy, prompts))
            }

            pub(crate) fn from_backend(backend: $crate::roles::Backend) -> Self {
                Self { backend }
            }
        }
    };
}
pub(crate) use llm_role;
