//! `stepwise replay RUN`: runs a recorded run again against its recorded
//! model responses — zero network calls — in a scratch in-memory database,
//! and checks that it reaches the same output. Side-effect tools are not
//! called again: they answer with the outputs the run recorded.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, anyhow};
use serde_json::{Value, json};
use stepwise_core::{RunId, RunState};
use stepwise_llm::replay::ReplayModel;
use stepwise_store::SqliteStore;

use crate::cli::ReplayArgs;
use crate::db;
use crate::error::{CliError, CliResult, ErrorKind};
use crate::output;
use crate::session::{self, Host, Session};

/// What two runs must agree on.
fn outcome(state: &RunState) -> Value {
    json!({
        "status": state.status,
        "final_report": state.final_report,
        "knowledge_gaps": state.knowledge_gaps,
        "evidence": state.evidence,
        "plan": state.plan.steps.iter().map(|s| json!([s.id, s.tool, s.status])).collect::<Vec<_>>(),
        "outputs": state.step_results.iter().map(|(k, r)| (k.to_string(), r.output.clone())).collect::<BTreeMap<_, _>>(),
    })
}

/// `stepwise replay RUN`: exit 0 when the replay reaches the same output, 1 when it diverged.
pub(crate) fn replay(args: &ReplayArgs, db_flag: Option<&PathBuf>) -> CliResult {
    let store = db::open(db_flag)?;
    let (original, replayed, calls) = db::block_on(async {
        let original = db::load(store.as_ref(), &args.run).await?;
        let host = Host::of(&original)?;
        let corpus = Arc::new(session::load_notes(&host.notes, args.quiet)?.corpus);
        let model = Arc::new(ReplayModel::from_run(&original));
        let scratch: db::Db = Arc::new(SqliteStore::in_memory().map_err(|e| anyhow!(e))?);
        let run_id = RunId(format!("replay_{}", original.run_id));
        let session = Session::open_replay(
            scratch,
            &run_id,
            &host,
            corpus,
            Arc::clone(&model),
            &original,
        )
        .await?;
        let constraints = original.constraints.clone();
        let input = original.input.clone();
        let host_json = original.host.clone();
        let state = session
            .drive(args.quiet, None, |engine| async move {
                engine.start(run_id, &input, constraints, host_json).await
            })
            .await?;
        Ok::<_, CliError>((original, state, (model.used(), model.len())))
    })??;
    let same = outcome(&original) == outcome(&replayed);
    let text = if args.json {
        let report = json!({
            "run_id": original.run_id,
            "identical": same,
            "model_calls_recorded": calls.1,
            "model_calls_replayed": calls.0,
            "network_calls": 0,
            "original": outcome(&original),
            "replay": outcome(&replayed),
            "divergence": (!same).then(|| replayed.blocked_reason.clone()).flatten(),
        });
        let json = serde_json::to_string_pretty(&report).context("cannot encode the comparison")?;
        format!("{json}\n")
    } else if same {
        format!(
            "replay of {}: identical output ({} of {} recorded model calls played back, 0 network calls)\n",
            original.run_id, calls.0, calls.1
        )
    } else {
        let why = replayed
            .blocked_reason
            .clone()
            .unwrap_or_else(|| "the outputs differ".to_owned());
        format!("replay of {} diverged: {why}\n", original.run_id)
    };
    output::stdout(&text)?;
    if same {
        Ok(())
    } else {
        // The text above says how it diverged.
        Err(CliError::quiet(ErrorKind::Failed))
    }
}
