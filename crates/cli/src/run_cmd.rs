//! `stepwise run` and `stepwise resume`: a goal and a notes folder in, a
//! cited brief out — on the offline roles, recorded in the run database,
//! with live progress on stderr.
//!
//! Exit status: 0 `ok`, 3 `needs_review`, 4 `awaiting_approval`,
//! 5 `cancelled`, 1 `failed` or an error during the run, 2 usage error (bad
//! flags, a missing or empty notes folder, bad constraints, a bad database).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::anyhow;
use serde_json::Value;
use stepwise_core::engine::{ResumeOptions, what_changed};
use stepwise_core::{Constraints, RunId, RunState, RunStatus};

use crate::cli::{ResumeArgs, RunArgs};
use crate::db;
use crate::input::{read_constraints, read_json};
use crate::session::{self, Host, Session};

/// A usage problem (exit 2), as opposed to a failure of the run itself (exit 1).
#[derive(Debug)]
pub(crate) struct UsageError(pub(crate) anyhow::Error);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:#}", self.0)
    }
}

impl std::error::Error for UsageError {}

fn usage(e: anyhow::Error) -> anyhow::Error {
    anyhow::Error::new(UsageError(e))
}

fn absolute(path: &PathBuf) -> anyhow::Result<PathBuf> {
    std::path::absolute(path).map_err(|e| usage(anyhow!("cannot resolve {}: {e}", path.display())))
}

pub(crate) fn run(args: &RunArgs, db_flag: Option<&PathBuf>) -> anyhow::Result<ExitCode> {
    let mut constraints = match &args.constraints {
        Some(arg) => read_constraints(arg).map_err(usage)?,
        None => Default::default(),
    };
    if let Some(n) = args.max_steps {
        constraints.max_steps = Some(n);
    }
    if let Some(n) = args.max_replans {
        constraints.max_replans = Some(n);
    }
    let plan = match &args.plan {
        Some(path) => Some(read_json(path).map_err(usage)?.value),
        None => None,
    };
    let cwd = std::env::current_dir()
        .map_err(|e| usage(anyhow!("cannot read the current directory: {e}")))?;
    let config = crate::config::Config::load(&cwd)?;
    let mut model = config.model_spec(args.model.as_deref());
    if let Some(file) = model.strip_prefix("script:") {
        // Recorded absolute, so a resume from another directory finds it.
        model = format!("script:{}", absolute(&PathBuf::from(file))?.display());
    }
    // Fail on a bad model spec or a missing key before anything is recorded.
    config.model(&model, &cwd)?;
    let mut host = Host {
        model,
        prompts: args.prompts.as_ref().map(absolute).transpose()?,
        notes: absolute(&args.notes)?,
        workspace: args.workspace.as_ref().map(absolute).transpose()?,
        concurrency: args.concurrency,
        plan,
        review: args.review,
        repair: args.repair,
        notes_fingerprint: None,
        strategy: args.strategy.clone(),
    };
    check_allowed_tools(&constraints, &host)?;
    // Check the notes before creating anything in the database.
    host.notes_fingerprint = Some(session::load_notes(&host.notes, true)?.fingerprint());
    let store = db::open(db_flag)?;
    let run_id = args.run_id.clone().map_or_else(RunId::generate, RunId);
    let host_json = serde_json::to_value(&host)?;
    let state = db::block_on(async {
        let session = Session::open(store, &run_id, &host, args.approve, args.output.quiet).await?;
        session
            .drive(args.output.quiet, None, |engine| async move {
                engine
                    .start(run_id.clone(), &args.goal, constraints, host_json)
                    .await
            })
            .await
    })??;
    session::finish(&state, &args.output)
}

/// `allowed_tools` may name only tools the run can call: an unknown name
/// would otherwise leave the planner with nothing to use, unexplained.
fn check_allowed_tools(constraints: &Constraints, host: &Host) -> anyhow::Result<()> {
    let Some(allowed) = &constraints.allowed_tools else {
        return Ok(());
    };
    let available = session::available_tools(host);
    let problems: Vec<String> = allowed
        .iter()
        .filter(|tool| !available.contains(tool))
        .map(|tool| match session::needs(tool, host) {
            Some(flag) => format!("{tool} needs {flag}"),
            None => format!("there is no tool named {tool:?}"),
        })
        .collect();
    if problems.is_empty() {
        return Ok(());
    }
    Err(usage(anyhow!(
        "allowed_tools names tools the run cannot use: {}; the available tools are {}",
        problems.join("; "),
        available.join(", ")
    )))
}

/// What changed outside the log since a run stopped for review (its notes),
/// and the settings to record if it goes on.
fn host_changes(state: &RunState, host: &Host) -> anyhow::Result<(Vec<String>, Value)> {
    let loaded = session::load_notes(&host.notes, true)?;
    let now = loaded.fingerprint();
    let mut changed = Vec::new();
    // A run recorded without a fingerprint cannot tell: only a known
    // difference counts as a change.
    if host
        .notes_fingerprint
        .as_ref()
        .is_some_and(|was| *was != now)
    {
        changed.push(format!(
            "the notes in {} changed ({} notes now)",
            host.notes.display(),
            loaded.corpus.len()
        ));
    }
    let mut value = state.host.clone();
    if let Value::Object(map) = &mut value {
        map.insert("notes_fingerprint".to_owned(), Value::String(now));
    }
    Ok((changed, value))
}

pub(crate) fn resume(args: &ResumeArgs, db_flag: Option<&PathBuf>) -> anyhow::Result<ExitCode> {
    let store = db::open(db_flag)?;
    let resumed = db::block_on(async {
        let state = db::load(&store, &args.run).await?;
        if matches!(
            state.status,
            RunStatus::Ok | RunStatus::Failed | RunStatus::Cancelled
        ) {
            return Err(anyhow!(
                "run {} already ended ({}); there is nothing to resume",
                args.run,
                state.status.as_str()
            ));
        }
        let host = Host::of(&state)?;
        // Only a run stopped for review needs a reason to go on; a crashed or
        // paused one resumes as it is.
        let (changed, new_host) = if state.status == RunStatus::NeedsReview {
            host_changes(&state, &host)?
        } else {
            (Vec::new(), Value::Null)
        };
        let options = ResumeOptions {
            by: db::person(),
            max_replans: args.max_replans,
            max_steps: args.max_steps,
            changed,
            host: new_host,
        };
        if state.status == RunStatus::NeedsReview && what_changed(&state, &options).is_empty() {
            // Resumed unchanged it would only repeat itself: record nothing.
            let hint = crate::review::unchanged_hint(&state, Some(&host));
            return Ok(Err((state, hint)));
        }
        let session =
            Session::open(store, &state.run_id, &host, args.approve, args.output.quiet).await?;
        // Load again under the lease: the log may have grown since.
        let state = db::load(&session.store, &args.run).await?;
        let so_far = state.clone();
        session
            .drive(args.output.quiet, Some(so_far), |engine| async move {
                engine.resume(state, options).await
            })
            .await
            .map(Ok)
    })??;
    match resumed {
        Ok(state) => session::finish(&state, &args.output),
        Err((state, hint)) => session::finish_with(&state, &args.output, Some(&hint)),
    }
}
