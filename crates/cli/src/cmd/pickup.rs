//! How a run is picked up for work — by `stepwise serve` or by a `stepwise
//! worker` that claimed it from the queue — decided from its log and the
//! person's resume alone, so both pick it up the same way: a freshly
//! recorded run is started ([`Engine::start_recorded`], no spurious
//! `run_resumed`), any other is resumed with the person's bounds, and a run
//! stopped for review with nothing changed is left as it is.
//!
//! [`Engine::start_recorded`]: stepwise_core::Engine::start_recorded

use std::path::PathBuf;

use anyhow::{Context, anyhow};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use stepwise_core::engine::{ResumeOptions, what_changed};
use stepwise_core::{Constraints, RunId, RunState, RunStatus};
use stepwise_server::{ApproveMode as ServeApprove, Resume};
use stepwise_tools::notes::LoadedCorpus;

use crate::cli::ApproveMode;
use crate::db;
use crate::error::{CliError, CliResult};
use crate::session::Host;

/// The host JSON key of a server run's approval mode (beside the tenant).
pub(crate) const APPROVE_KEY: &str = "approve";

/// What `run --detach` puts in the queue: all a worker needs to start the run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Detached {
    pub(crate) goal: String,
    pub(crate) constraints: Constraints,
    /// The run's settings (as recorded in `run_started.host`).
    pub(crate) host: Value,
    pub(crate) strategy: String,
    /// `auto` or `never`: how side-effect steps get approved.
    pub(crate) approve: String,
}

/// Puts a run in the queue of the PostgreSQL database `url`.
pub(crate) fn enqueue(flag: Option<&PathBuf>, run: &RunId, spec: &Detached) -> CliResult {
    let url = db::url(flag).ok_or_else(|| {
        CliError::usage(anyhow!(
            "--detach needs a PostgreSQL database (--db postgres://… or STEPWISE_DB): workers (`stepwise worker`) claim detached runs from there"
        ))
    })?;
    let store = db::open_postgres(&url)?;
    let spec = serde_json::to_value(spec).context("cannot encode the run")?;
    db::block_on(store.enqueue(run, &spec))?.map_err(|e| CliError::usage(anyhow!(e)))?;
    Ok(())
}

/// What to do with a run picked up for work.
pub(crate) enum Pickup {
    /// Start it from its recorded `run_started`.
    Start,
    /// Resume it from its log.
    Resume(ResumeOptions),
    /// It stopped for review and nothing changed: resuming would only
    /// repeat itself.
    Unchanged,
}

/// Decides how to pick `state` up; `by` names who resumes when the person's
/// resume does not.
pub(crate) fn pickup(
    state: &RunState,
    host: &Host,
    loaded: &LoadedCorpus,
    resume: Option<Resume>,
    by: &str,
) -> Pickup {
    if resume.is_none() && state.execution_history.len() == 1 {
        return Pickup::Start;
    }
    let (changed, new_host) = if state.status == RunStatus::NeedsReview {
        crate::host::host_changes(state, host, loaded)
    } else {
        (Vec::new(), Value::Null)
    };
    let resume = resume.unwrap_or_default();
    let options = ResumeOptions {
        by: if resume.by.is_empty() {
            by.to_owned()
        } else {
            resume.by
        },
        max_replans: resume.max_replans,
        max_steps: resume.max_steps,
        // The only change the host sees is its notes.
        sources_changed: !changed.is_empty(),
        changed,
        host: new_host,
    };
    if state.status == RunStatus::NeedsReview && what_changed(state, &options).is_empty() {
        return Pickup::Unchanged;
    }
    Pickup::Resume(options)
}

/// The approval mode to work with: the person's resume's, else the one the
/// run recorded (a server run), else `never`.
pub(crate) fn approve_mode(state: &RunState, asked: Option<ServeApprove>) -> ApproveMode {
    let recorded = state
        .host
        .get(APPROVE_KEY)
        .and_then(|v| serde_json::from_value::<ServeApprove>(v.clone()).ok());
    match asked.or(recorded) {
        Some(ServeApprove::Auto) => ApproveMode::Auto,
        Some(ServeApprove::Never) | None => ApproveMode::Never,
    }
}

/// What the server puts in the workers' queue for a run it recorded: its
/// `run_started` is on record, so only a person's resume, if it was one.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct Recorded {
    #[serde(default)]
    pub(crate) resume: Option<Resumed>,
}

/// A person's resume, as the queue carries it to a worker.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct Resumed {
    #[serde(default)]
    pub(crate) by: String,
    #[serde(default)]
    pub(crate) max_replans: Option<u32>,
    #[serde(default)]
    pub(crate) max_steps: Option<usize>,
    #[serde(default)]
    pub(crate) approve: Option<ServeApprove>,
}

impl From<Resume> for Resumed {
    fn from(r: Resume) -> Resumed {
        Resumed {
            by: r.by,
            max_replans: r.max_replans,
            max_steps: r.max_steps,
            approve: r.approve,
        }
    }
}

impl From<Resumed> for Resume {
    fn from(r: Resumed) -> Resume {
        Resume {
            by: r.by,
            max_replans: r.max_replans,
            max_steps: r.max_steps,
            approve: r.approve,
        }
    }
}
