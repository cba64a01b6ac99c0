//! `stepwise run`: a goal and a notes folder in, a cited brief out — on the
//! offline roles or a model, recorded in the run database, with live
//! progress on stderr. The run's status is its exit code (see `--help`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, anyhow};
use stepwise_core::{Constraints, RunId};

use crate::cli::RunArgs;
use crate::config::Config;
use crate::db;
use crate::error::{CliError, CliResult};
use crate::input::{read_constraints, read_json};
use crate::session::{self, Host, Session};

/// `path` made absolute, so a resume from another directory finds it.
fn absolute(path: &Path) -> CliResult<PathBuf> {
    std::path::absolute(path)
        .map_err(|e| CliError::usage(anyhow!("cannot resolve {}: {e}", path.display())))
}

/// `stepwise run GOAL --notes DIR`.
pub(crate) fn run(args: &RunArgs, db_flag: Option<&PathBuf>) -> CliResult {
    let mut constraints = match &args.constraints {
        Some(arg) => read_constraints(arg).map_err(CliError::usage)?,
        None => Constraints::default(),
    };
    if let Some(n) = args.max_steps {
        constraints.max_steps = Some(n);
    }
    if let Some(n) = args.max_replans {
        constraints.max_replans = Some(n);
    }
    let plan = match &args.plan {
        Some(path) => Some(read_json(path).map_err(CliError::usage)?.value),
        None => None,
    };
    let cwd = std::env::current_dir()
        .map_err(|e| CliError::usage(anyhow!("cannot read the current directory: {e}")))?;
    let config = Config::load(&cwd)?;
    let mut model = config.model_spec(args.model.as_deref());
    if let Some(file) = model.strip_prefix("script:") {
        // Recorded absolute, so a resume from another directory finds it.
        model = format!("script:{}", absolute(Path::new(file))?.display());
    }
    // Fail on a bad model spec or a missing key before anything is recorded.
    config.model(&model, &cwd)?;
    let mcp = config.mcp_servers(&args.mcp, &cwd)?;
    // Each role on a model of its own, checked now and recorded like --model.
    let mut role_models = config.role_models();
    for spec in role_models.values_mut() {
        if let Some(file) = spec.strip_prefix("script:") {
            *spec = format!("script:{}", absolute(Path::new(file))?.display());
        }
        config.model(spec, &cwd)?;
    }
    let mut host = Host {
        model,
        prompts: args.prompts.as_deref().map(absolute).transpose()?,
        role_models,
        notes: absolute(&args.notes)?,
        workspace: args.workspace.as_deref().map(absolute).transpose()?,
        concurrency: args.concurrency,
        plan,
        review: args.review,
        repair: args.repair,
        assess: args.assess,
        notes_fingerprint: None,
        mcp,
        strategy: args.strategy.clone(),
    };
    check_allowed_tools(&constraints, &host)?;
    // The notes are loaded once, here, before anything is created in the
    // database: checked, fingerprinted for a later resume, and handed to
    // the engine.
    let loading = std::time::Instant::now();
    let loaded = session::load_notes(&host.notes, args.output.quiet)?;
    host.notes_fingerprint = Some(loaded.fingerprint());
    let corpus = Arc::new(loaded.corpus);
    let loading = loading.elapsed();
    let run_id = args.run_id.clone().map_or_else(RunId::generate, RunId);
    let host_json = serde_json::to_value(&host).context("cannot encode the run's settings")?;
    if args.detach {
        return detach(args, db_flag, &run_id, constraints, host_json);
    }
    let store = db::open(db_flag)?;
    let state = db::block_on(async {
        let session = Session::open(store, &run_id, &host, corpus, args.approve)
            .await?
            .loading_took(loading);
        session
            .drive(args.output.quiet, None, |engine| async move {
                engine
                    .start(run_id.clone(), &args.goal, constraints, host_json)
                    .await
            })
            .await
    })??;
    crate::finish::finish(&state, &args.output, None)
}

/// `run --detach` in a build without workers (`serve`): refused.
#[cfg(not(feature = "serve"))]
fn detach(
    _: &RunArgs,
    _: Option<&PathBuf>,
    _: &RunId,
    _: Constraints,
    _: serde_json::Value,
) -> CliResult {
    Err(crate::error::not_built("serve"))
}

/// `run --detach`: the run goes to the queue, for a worker; its id to
/// stdout (with `--json`, `{"run_id", "status": "queued"}`).
#[cfg(feature = "serve")]
fn detach(
    args: &RunArgs,
    db_flag: Option<&PathBuf>,
    run_id: &RunId,
    constraints: Constraints,
    mut host: serde_json::Value,
) -> CliResult {
    let approve = match args.approve {
        crate::cli::ApproveMode::Auto => "auto",
        crate::cli::ApproveMode::Never => "never",
        crate::cli::ApproveMode::Ask => {
            return Err(CliError::usage(anyhow!(
                "--approve ask needs a terminal, which a detached run does not have: use --approve auto, or never (and `stepwise approve`)"
            )));
        }
    };
    // Recorded with the run, as the server records its runs' mode, so a
    // later pick-up (a resume through the API, requeued) keeps it.
    if let serde_json::Value::Object(map) = &mut host {
        map.insert(
            crate::cmd::pickup::APPROVE_KEY.to_owned(),
            serde_json::Value::String(approve.to_owned()),
        );
    }
    let spec = crate::cmd::pickup::Detached {
        goal: args.goal.clone(),
        constraints,
        host,
        strategy: args.strategy.clone(),
        approve: approve.to_owned(),
    };
    crate::cmd::pickup::enqueue(db_flag, run_id, &spec)?;
    if args.output.json {
        let json = serde_json::json!({"run_id": run_id.as_str(), "status": "queued"});
        crate::output::stdout(&format!("{json}\n"))?;
    } else {
        crate::output::stdout(&format!("{run_id}\n"))?;
    }
    if !args.output.quiet {
        crate::output::note(&format!(
            "queued run {run_id}; a `stepwise worker` will run it (`stepwise show {run_id}` once it has started)"
        ));
    }
    Ok(())
}

/// `allowed_tools` may name only tools the run can call: an unknown name
/// would otherwise leave the planner with nothing to use, unexplained.
pub(crate) fn check_allowed_tools(constraints: &Constraints, host: &Host) -> CliResult {
    let Some(allowed) = &constraints.allowed_tools else {
        return Ok(());
    };
    let available = session::available_tools(host);
    let problems: Vec<String> = allowed
        .iter()
        .filter_map(|tool| unusable(tool, host, &available))
        .collect();
    refuse("allowed_tools names", &problems, &available)
}

/// Why a run with these settings cannot call `tool`, if it cannot.
fn unusable(tool: &str, host: &Host, available: &[String]) -> Option<String> {
    if available.iter().any(|a| a == tool) || session::from_mcp(tool, host) {
        return None;
    }
    Some(match session::needs(tool, host) {
        Some(flag) => format!("{tool} needs {flag}"),
        None => format!("there is no tool named {tool:?}"),
    })
}

/// A usage error naming every tool `what` names that the run cannot use.
fn refuse(what: &str, problems: &[String], available: &[String]) -> CliResult {
    if problems.is_empty() {
        return Ok(());
    }
    Err(CliError::usage(anyhow!(
        "{what} tools the run cannot use: {}; the available tools are {}",
        problems.join("; "),
        available.join(", ")
    )))
}

/// A plan given with the run may name only tools the run can call: a
/// step naming another would pause the run for review after it was
/// accepted, for a mistake the request already shows.
#[cfg(feature = "serve")]
pub(crate) fn check_plan_tools(plan: Option<&serde_json::Value>, host: &Host) -> CliResult {
    let Some(steps) = plan.and_then(|p| p.get("steps")).and_then(|s| s.as_array()) else {
        return Ok(());
    };
    let available = session::available_tools(host);
    let problems: Vec<String> = steps
        .iter()
        .filter_map(|step| {
            let tool = step.get("tool").and_then(|t| t.as_str())?;
            let why = unusable(tool, host, &available)?;
            let id = step.get("id").and_then(|i| i.as_str()).unwrap_or("?");
            Some(format!("step {id}: {why}"))
        })
        .collect();
    refuse("the plan names", &problems, &available)
}
