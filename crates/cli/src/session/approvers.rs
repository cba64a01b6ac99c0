//! Who approves side-effect steps and plans: a person at the terminal, or
//! `stepwise approve` later.

use std::io::{BufRead, IsTerminal, Write};

use async_trait::async_trait;
use stepwise_core::engine::{ApprovalDecision, ApprovalRequest, Approver};
use stepwise_core::roles::{Reply, ReviewDecision, Reviewer, RoleError};
use stepwise_core::{Goal, Plan, StepStatus};

use crate::cli::ApproveMode;
use crate::{db, output};

/// Asks on the terminal; without one, defers to `stepwise approve`.
pub(super) struct Ask;

fn ask(question: &str) -> Option<bool> {
    if !std::io::stdin().is_terminal() {
        output::note("no terminal to ask on; the run will wait for `stepwise approve`");
        return None;
    }
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "{question} [y/N] ");
    let _ = err.flush();
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line).ok()?;
    Some(matches!(line.trim(), "y" | "Y" | "yes" | "YES" | "Yes"))
}

#[async_trait]
impl Approver for Ask {
    async fn decide(&self, r: ApprovalRequest<'_>) -> ApprovalDecision {
        let question = format!("\n{}", r.question());
        match tokio::task::spawn_blocking(move || ask(&question))
            .await
            .ok()
            .flatten()
        {
            Some(true) => ApprovalDecision::Approve { by: db::person() },
            Some(false) => ApprovalDecision::Deny {
                by: db::person(),
                reason: "refused at the prompt".to_owned(),
            },
            None => ApprovalDecision::Defer,
        }
    }
}

/// review_plan for --review: approved, deferred or asked, like side-effect steps.
pub(super) struct ReviewBy(pub(super) ApproveMode);

#[async_trait]
impl Reviewer for ReviewBy {
    async fn review(&self, _goal: &Goal, plan: &Plan) -> Result<Reply<ReviewDecision>, RoleError> {
        let decision = match self.0 {
            ApproveMode::Auto => ReviewDecision::Approved {
                by: "auto".to_owned(),
            },
            ApproveMode::Never => ReviewDecision::Deferred,
            ApproveMode::Ask => {
                let steps: Vec<String> = plan
                    .steps
                    .iter()
                    .filter(|s| s.status == StepStatus::Pending)
                    .map(|s| format!("  {} ({}): {}", s.id, s.tool, s.description))
                    .collect();
                let question = format!(
                    "\nplan version {}:\n{}\napprove this plan?",
                    plan.version,
                    steps.join("\n")
                );
                match tokio::task::spawn_blocking(move || ask(&question))
                    .await
                    .ok()
                    .flatten()
                {
                    Some(true) => ReviewDecision::Approved { by: db::person() },
                    Some(false) => ReviewDecision::Rejected {
                        reason: "refused at the prompt".to_owned(),
                    },
                    None => ReviewDecision::Deferred,
                }
            }
        };
        Ok(Reply::free(decision))
    }
}
