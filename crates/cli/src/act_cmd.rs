//! `stepwise approve`, `reject` and `cancel`: a person acts on a run that no
//! process is working on. Each takes the run's lease (so it cannot write
//! underneath a live run), appends its events fenced by that lease, and
//! gives the lease back.
//!
//! Exit status: 0 done (`reject`: 3, the run now needs review), 1 the run
//! is not in a state that allows it or is being worked on, 2 usage error
//! (an unknown run, an unusable database file).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, anyhow, bail};
use stepwise_core::{Event, EventKind, RunId, RunLease, RunState, RunStatus, StepId, Store, Usage};
use stepwise_store::SqliteStore;

use crate::cli::{ApproveArgs, CancelArgs, RejectArgs};
use crate::db;
use crate::output;
use crate::runs_cmd::{describe_request, finish, one_line, open_run};

/// Exit status of a run that stopped for review (as `run` and `resume` use).
const NEEDS_REVIEW: u8 = 3;

/// `stepwise approve RUN [--step ID]`: approves the plan version the run
/// waits for and/or its side-effect steps, each with exactly the arguments
/// it asked for.
pub(crate) fn approve(args: &ApproveArgs, db: Option<&PathBuf>) -> anyhow::Result<ExitCode> {
    finish(approve_run(args, db))
}

/// `stepwise reject RUN --reason TEXT`: refuses what the run waits for; the
/// run stops for review (exit 3).
pub(crate) fn reject(args: &RejectArgs, db: Option<&PathBuf>) -> anyhow::Result<ExitCode> {
    finish(reject_run(args, db))
}

/// `stepwise cancel RUN [--reason TEXT]`: ends a run that has not ended.
pub(crate) fn cancel(args: &CancelArgs, db: Option<&PathBuf>) -> anyhow::Result<ExitCode> {
    finish(cancel_run(args, db))
}

fn approve_run(args: &ApproveArgs, flag: Option<&PathBuf>) -> anyhow::Result<ExitCode> {
    let (store, state) = open_run(flag, &args.run)?;
    approvable(&state)?; // fail early, before touching the lease
    let (state, granted) = with_lease(&store, &args.run, |state| {
        approvable(state)?;
        let by = db::person();
        let mut kinds = Vec::new();
        match &args.step {
            Some(step) => {
                let step = StepId::new(step.as_str());
                if !state.pending_approvals.contains_key(&step) {
                    bail!(
                        "run {} has no approval pending for step {step}; {}",
                        state.run_id,
                        pending_list(state)
                    );
                }
                kinds.push(grant(state, &step, &by));
            }
            None => {
                if let Some(version) = state.pending_review {
                    kinds.push(EventKind::PlanApproved {
                        version,
                        by: by.clone(),
                        usage: Usage::default(),
                    });
                }
                for step in state.pending_approvals.keys() {
                    kinds.push(grant(state, step, &by));
                }
            }
        }
        Ok(kinds)
    })?;

    let run = &state.run_id;
    let mut text = String::new();
    if granted.is_empty() {
        text.push_str(&format!(
            "run {run} has nothing left to approve (its approvals are on record)\n"
        ));
    }
    for kind in &granted {
        match kind {
            EventKind::PlanApproved { version, .. } => {
                text.push_str(&format!(
                    "approved plan version {version} ({})\n",
                    output::plural(state.plan.steps.len(), "step")
                ));
            }
            EventKind::ApprovalGranted {
                step, args_hash, ..
            } => {
                text.push_str(&format!(
                    "approved {}\n",
                    describe_request(&state, step, args_hash)
                ));
            }
            _ => {}
        }
    }
    if state.pending_review.is_some() || !state.pending_approvals.is_empty() {
        text.push_str(&format!(
            "still waiting for: {}\napprove with: stepwise approve {run}\n",
            waiting_for(&state).join(", ")
        ));
    } else {
        text.push_str(&format!("continue with: stepwise resume {run}\n"));
    }
    output::stdout(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// `approval_granted` for a pending step, naming the hash it asked for.
fn grant(state: &RunState, step: &StepId, by: &str) -> EventKind {
    EventKind::ApprovalGranted {
        step: step.clone(),
        args_hash: state
            .pending_approvals
            .get(step)
            .cloned()
            .unwrap_or_default(),
        by: by.to_owned(),
    }
}

fn reject_run(args: &RejectArgs, flag: Option<&PathBuf>) -> anyhow::Result<ExitCode> {
    let reason = one_line(&args.reason);
    if reason.is_empty() {
        return Err(anyhow::Error::new(crate::run_cmd::UsageError(anyhow!(
            "--reason must say why (it is recorded)"
        ))));
    }
    let (store, state) = open_run(flag, &args.run)?;
    approvable(&state)?;
    let rejected = with_lease(&store, &args.run, |state| {
        approvable(state)?;
        let what = waiting_for(state);
        if what.is_empty() {
            bail!(
                "run {} has nothing waiting for a decision (its approvals are on record); to stop it, use: stepwise cancel {}",
                state.run_id,
                state.run_id
            );
        }
        let by = db::person();
        let mut kinds = Vec::new();
        if let Some(version) = state.pending_review {
            kinds.push(EventKind::PlanRejected {
                version,
                reason: reason.clone(),
                usage: Usage::default(),
            });
        }
        for step in state.pending_approvals.keys() {
            kinds.push(EventKind::ApprovalDenied {
                step: step.clone(),
                reason: reason.clone(),
                by: by.clone(),
            });
        }
        kinds.push(EventKind::NeedsReview {
            reason: format!("{by} rejected {}: {reason}", what.join(", ")),
            usage: stepwise_core::Usage::default(),
            // No roles here to write one; `stepwise resume` asks again.
            brief: None,
            ask_again: false,
        });
        Ok(kinds)
    })?;
    let (state, kinds) = rejected;
    let what: Vec<String> = kinds
        .iter()
        .filter_map(|kind| match kind {
            EventKind::PlanRejected { version, .. } => Some(format!("plan version {version}")),
            EventKind::ApprovalDenied { step, .. } => Some(format!("step {step}")),
            _ => None,
        })
        .collect();
    let run = &state.run_id;
    output::stdout(&format!(
        "rejected {}: {reason}\nrun {run} now needs review (exit status 3); to be asked again: stepwise resume {run}; to give up: stepwise cancel {run}\n",
        what.join(", ")
    ))?;
    Ok(ExitCode::from(NEEDS_REVIEW))
}

fn cancel_run(args: &CancelArgs, flag: Option<&PathBuf>) -> anyhow::Result<ExitCode> {
    let reason = match one_line(&args.reason) {
        r if r.is_empty() => "cancelled by a person".to_owned(),
        r => r,
    };
    let (store, state) = open_run(flag, &args.run)?;
    cancellable(&state)?;
    let (state, _) = with_lease(&store, &args.run, |state| {
        cancellable(state)?;
        Ok(vec![EventKind::RunCancelled {
            reason: reason.clone(),
        }])
    })?;
    output::stdout(&format!("cancelled run {}: {reason}\n", state.run_id))?;
    Ok(ExitCode::SUCCESS)
}

/// Only a run paused at `awaiting_approval` takes approvals and refusals.
fn approvable(state: &RunState) -> anyhow::Result<()> {
    if state.status == RunStatus::AwaitingApproval {
        Ok(())
    } else {
        bail!(
            "run {} is not waiting for an approval (it is {})",
            state.run_id,
            state.status.as_str()
        )
    }
}

/// A run that ended stays ended.
fn cancellable(state: &RunState) -> anyhow::Result<()> {
    match state.status {
        RunStatus::Ok | RunStatus::Failed | RunStatus::Cancelled => bail!(
            "run {} already ended ({})",
            state.run_id,
            state.status.as_str()
        ),
        RunStatus::Running | RunStatus::NeedsReview | RunStatus::AwaitingApproval => Ok(()),
    }
}

/// `plan version 2`, `step save`, …: what the run waits for.
fn waiting_for(state: &RunState) -> Vec<String> {
    let mut what: Vec<String> = state
        .pending_review
        .iter()
        .map(|v| format!("plan version {v}"))
        .collect();
    what.extend(state.pending_approvals.keys().map(|s| format!("step {s}")));
    what
}

/// `it waits for: step a, step b` (for an error about `--step`).
fn pending_list(state: &RunState) -> String {
    let what = waiting_for(state);
    if what.is_empty() {
        "it waits for nothing (its approvals are on record)".to_owned()
    } else {
        format!("it waits for: {}", what.join(", "))
    }
}

/// Takes the run's lease, reloads its state under it, appends the events
/// `decide` returns (fenced), and gives the lease back whatever happened.
/// Returns the state after the append and the events' kinds.
fn with_lease(
    store: &SqliteStore,
    run: &str,
    decide: impl FnOnce(&RunState) -> anyhow::Result<Vec<EventKind>>,
) -> anyhow::Result<(RunState, Vec<EventKind>)> {
    let run_id = RunId(run.to_owned());
    db::block_on(async {
        // A dead holder on this host is taken over; a live one is a clear error.
        let lease = db::take_lease(store, &run_id).await?;
        let result = async {
            let state = db::load(store, run).await?;
            let kinds = decide(&state)?;
            if kinds.is_empty() {
                return Ok((state, kinds));
            }
            let first = state.execution_history.len() as u64 + 1;
            let events: Vec<Event> = kinds
                .iter()
                .zip(first..)
                .map(|(kind, seq)| Event {
                    seq,
                    at: chrono::Utc::now(),
                    kind: kind.clone(),
                })
                .collect();
            store
                .append(&run_id, &events, Some(lease.fence))
                .await
                .with_context(|| format!("cannot record the change to run {run}"))?;
            let state = db::load(store, run).await?;
            Ok((state, kinds))
        }
        .await;
        if let Err(e) = store.release(&lease).await {
            // Harmless: the lease runs out by itself at `until`.
            output::note(&format!(
                "cannot give back the lease of run {run} ({e}); it runs out at {}",
                lease.until.format("%H:%M:%S UTC")
            ));
        }
        result
    })?
}
