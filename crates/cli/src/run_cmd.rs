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
use stepwise_core::engine::ResumeOptions;
use stepwise_core::{RunId, RunStatus};

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
    let host = Host {
        model,
        prompts: args.prompts.as_ref().map(absolute).transpose()?,
        notes: absolute(&args.notes)?,
        workspace: args.workspace.as_ref().map(absolute).transpose()?,
        concurrency: args.concurrency,
        plan,
        review: args.review,
        strategy: args.strategy.clone(),
    };
    // Check the notes before creating anything in the database.
    session::load_corpus(&host.notes, true)?;
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

pub(crate) fn resume(args: &ResumeArgs, db_flag: Option<&PathBuf>) -> anyhow::Result<ExitCode> {
    let store = db::open(db_flag)?;
    let state = db::block_on(async {
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
        let session =
            Session::open(store, &state.run_id, &host, args.approve, args.output.quiet).await?;
        // Load again under the lease: the log may have grown since.
        let state = db::load(&session.store, &args.run).await?;
        let options = ResumeOptions {
            by: db::person(),
            max_replans: args.max_replans,
            max_steps: args.max_steps,
        };
        let so_far = state.clone();
        session
            .drive(args.output.quiet, Some(so_far), |engine| async move {
                engine.resume(state, options).await
            })
            .await
    })??;
    session::finish(&state, &args.output)
}
