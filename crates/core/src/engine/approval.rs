//! Approvals of side-effect steps, bound to the exact tool and resolved
//! arguments: an approval of one argument set authorises nothing else, and a
//! replan that changes the arguments (or adds a side-effect step) needs a new
//! one. Tool outputs cannot approve anything: only an [`Approver`] can.

use async_trait::async_trait;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::effect::AfterAsk;
use super::{NodeResult, Run};
use crate::event::EventKind;
use crate::graph::Node;
use crate::ids::{RunId, StepId};
use crate::plan::args::resolve_value_in;
use crate::state::RunStatus;
use crate::tool::ToolSpec;

/// Hash of a tool name and its resolved arguments (SHA-256, hex). Keys are
/// sorted in serde_json's maps, so equal arguments always hash alike.
pub fn args_hash(tool: &str, args: &Value) -> String {
    let mut hasher = Sha256::new();
    hasher.update(tool.as_bytes());
    hasher.update([0u8]);
    hasher.update(args.to_string().as_bytes());
    hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// What an approver is asked.
#[derive(Debug, Clone, Copy)]
pub struct ApprovalRequest<'a> {
    /// The run.
    pub run_id: &'a RunId,
    /// The step.
    pub step: &'a StepId,
    /// What it is for.
    pub description: &'a str,
    /// The tool and its spec.
    pub tool: &'a ToolSpec,
    /// The resolved arguments.
    pub args: &'a Value,
    /// Their hash, which an approval names.
    pub args_hash: &'a str,
}

impl ApprovalRequest<'_> {
    /// The question put to a person: the step, its tool, a warning when the
    /// tool says it may destroy or overwrite data (MCP's `destructiveHint`),
    /// and the exact arguments the approval will be bound to.
    pub fn question(&self) -> String {
        let warning = if self.tool.destructive {
            "; destructive: it may delete or overwrite data"
        } else {
            ""
        };
        format!(
            "approve step {} ({}{warning}) with arguments {}?",
            self.step, self.tool.name, self.args
        )
    }
}

/// An approver's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApprovalDecision {
    /// Run it.
    Approve {
        /// Who approved.
        by: String,
    },
    /// Do not; the run stops for review.
    Deny {
        /// Who refused.
        by: String,
        /// Why.
        reason: String,
    },
    /// Ask a person later: the run pauses at `awaiting_approval`.
    Defer,
}

/// Decides whether a side-effect step may run.
#[async_trait]
pub trait Approver: Send + Sync {
    /// Approves, refuses or defers one step with these arguments.
    async fn decide(&self, request: ApprovalRequest<'_>) -> ApprovalDecision;
}

/// Defers every approval to a person (the default: `stepwise approve`).
#[derive(Debug, Clone, Copy, Default)]
pub struct DeferToPerson;

#[async_trait]
impl Approver for DeferToPerson {
    async fn decide(&self, _request: ApprovalRequest<'_>) -> ApprovalDecision {
        ApprovalDecision::Defer
    }
}

/// Approves every step, recorded as by `auto` (`--approve auto`).
#[derive(Debug, Clone, Copy, Default)]
pub struct ApproveAll;

#[async_trait]
impl Approver for ApproveAll {
    async fn decide(&self, _request: ApprovalRequest<'_>) -> ApprovalDecision {
        ApprovalDecision::Approve {
            by: "auto".to_owned(),
        }
    }
}

/// Whether a ready step may be dispatched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Gate {
    /// Read-only, or approved for exactly these arguments.
    Open,
    /// Waiting for a person.
    Wait,
    /// Refused (recorded; the fold holds the refusal as the decision).
    Denied,
}

/// An approval asked for one step.
#[derive(Debug, Clone, Copy)]
struct Asked<'a> {
    step: &'a StepId,
    tool: &'a str,
    args: &'a Value,
    args_hash: &'a str,
    destructive: bool,
    /// The same request is already on record (asked before a pause).
    on_record: bool,
}

/// What an approver's answer records and whether the step may go: the
/// request (unless on record already), then the grant or the refusal; a
/// deferral records only the request, and the run waits for a person.
fn answered(asked: Asked<'_>, decision: ApprovalDecision) -> (Vec<EventKind>, Gate) {
    let step = asked.step.clone();
    let mut record = Vec::new();
    if !asked.on_record {
        record.push(EventKind::ApprovalRequested {
            step: step.clone(),
            tool: asked.tool.to_owned(),
            args: asked.args.clone(),
            args_hash: asked.args_hash.to_owned(),
            destructive: asked.destructive,
        });
    }
    let gate = match decision {
        ApprovalDecision::Approve { by } => {
            record.push(EventKind::ApprovalGranted {
                step,
                args_hash: asked.args_hash.to_owned(),
                by,
            });
            Gate::Open
        }
        ApprovalDecision::Deny { by, reason } => {
            record.push(EventKind::ApprovalDenied { step, reason, by });
            Gate::Denied
        }
        ApprovalDecision::Defer => Gate::Wait,
    };
    (record, gate)
}

/// A side-effect step that needs an approval of its resolved arguments.
pub(super) struct Needed {
    pub(super) description: String,
    pub(super) spec: ToolSpec,
    pub(super) args: Value,
    pub(super) hash: String,
}

impl Run<'_> {
    /// Whether a step needs an approval before it runs, and of what: not a
    /// read-only step, nor one approved for exactly these arguments. (An
    /// unknown tool or a bad reference is dispatch's to report.)
    pub(super) fn needs_approval(&self, id: &StepId) -> Option<Needed> {
        let step = self.state.index.find(&self.state.plan, id)?;
        let spec = self.engine.tools.get(&step.tool)?.spec();
        if !spec.side_effect {
            return None;
        }
        let args =
            resolve_value_in(&Value::Object(step.args.clone()), &self.state.step_results).ok()?;
        let hash = args_hash(&step.tool, &args);
        if self.state.approvals.get(id) == Some(&hash) {
            return None;
        }
        Some(Needed {
            description: step.description.clone(),
            spec: spec.clone(),
            args,
            hash,
        })
    }

    /// Whether a step's tool has side effects.
    pub(super) fn has_side_effect(&self, id: &StepId) -> bool {
        self.state
            .plan
            .step(id)
            .and_then(|s| self.engine.tools.get(&s.tool))
            .is_some_and(|t| t.spec().side_effect)
    }

    /// Notes an approver's answer about a step (see [`answered`]); a
    /// deferral leaves the step waiting for a person.
    pub(super) fn approval_answered(
        &mut self,
        id: &StepId,
        needed: &Needed,
        decision: ApprovalDecision,
    ) -> Result<Gate, super::EngineError> {
        let asked = Asked {
            step: id,
            tool: &needed.spec.name,
            args: &needed.args,
            args_hash: &needed.hash,
            destructive: needed.spec.destructive,
            on_record: self.state.pending_approvals.get(id) == Some(&needed.hash),
        };
        let (record, gate) = answered(asked, decision);
        for kind in record {
            self.note(kind)?;
        }
        if matches!(gate, Gate::Wait) {
            self.awaiting.push(id.clone());
        }
        Ok(gate)
    }

    /// Where the run goes once the approver answered about `id`.
    pub(super) fn after_ask(&mut self, id: StepId, gate: Gate, after: AfterAsk) -> NodeResult {
        match after {
            // A refusal, noted, is the decision held: dispatch stops.
            AfterAsk::Select if gate == Gate::Denied => self.dispatched(),
            // Dispatch goes on: an approved step is now open, a deferred
            // one waits.
            AfterAsk::Select => self.select_next_step(),
            // Refused, the actor's call is dispatched anyway and fails for
            // want of an approval: the actor sees why.
            AfterAsk::Act if gate == Gate::Wait => Ok(Node::AwaitApproval.into()),
            AfterAsk::Act => self.start_call(id),
            AfterAsk::Recover if gate == Gate::Wait => Ok(Node::AwaitApproval.into()),
            AfterAsk::Recover => {
                self.retry_now(&id, 1);
                self.recover_react()
            }
        }
    }

    /// await_approval: pause the run until a person acts.
    pub(super) fn await_approval(&mut self) -> NodeResult {
        let plan_version = self.state.pending_review;
        let steps = std::mem::take(&mut self.awaiting);
        self.note(EventKind::AwaitingApproval {
            steps,
            plan_version,
        })?;
        debug_assert_eq!(self.state.status, RunStatus::AwaitingApproval);
        Ok(Node::End.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asked<'a>(step: &'a StepId, args: &'a Value, on_record: bool) -> Asked<'a> {
        Asked {
            step,
            tool: "write_file",
            args,
            args_hash: "h",
            destructive: false,
            on_record,
        }
    }

    #[test]
    fn an_answer_records_the_request_once_then_the_decision() {
        let (step, args) = (StepId::new("save"), serde_json::json!({"path": "a"}));
        let by = || "ana".to_owned();
        let (record, gate) = answered(
            asked(&step, &args, false),
            ApprovalDecision::Approve { by: by() },
        );
        assert_eq!(gate, Gate::Open);
        let kinds: Vec<&str> = record.iter().map(EventKind::name).collect();
        assert_eq!(kinds, ["approval_requested", "approval_granted"]);

        let (record, gate) = answered(
            asked(&step, &args, true),
            ApprovalDecision::Deny {
                by: by(),
                reason: "no".into(),
            },
        );
        assert_eq!(gate, Gate::Denied);
        let kinds: Vec<&str> = record.iter().map(EventKind::name).collect();
        assert_eq!(kinds, ["approval_denied"]);

        let (record, gate) = answered(asked(&step, &args, false), ApprovalDecision::Defer);
        assert_eq!(gate, Gate::Wait);
        assert_eq!(record.len(), 1);
        let (record, _) = answered(asked(&step, &args, true), ApprovalDecision::Defer);
        assert!(
            record.is_empty(),
            "a deferral already on record records nothing"
        );
    }
}
