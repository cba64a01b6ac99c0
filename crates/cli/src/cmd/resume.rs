//! `stepwise resume RUN`: continue a run after a crash, or from a
//! breakpoint once a person has acted (approved, rejected, raised a bound,
//! changed the notes).

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::anyhow;
use serde_json::Value;
use stepwise_core::engine::{ResumeOptions, what_changed};
use stepwise_core::{RunState, RunStatus};

use crate::cli::ResumeArgs;
use crate::db;
use crate::error::{CliError, CliResult};
use crate::finish::finish;
use crate::session::{self, Host, Session};

/// How a resume ended: it ran on, or it would only have repeated itself.
enum Resumed {
    Ran(RunState),
    Unchanged { state: RunState, hint: String },
}

/// `stepwise resume RUN`.
pub(crate) fn resume(args: &ResumeArgs, db_flag: Option<&PathBuf>) -> CliResult {
    let store = db::open(db_flag)?;
    let resumed = db::block_on(async {
        let state = db::load(store.as_ref(), &args.run).await?;
        if state.status.has_ended() {
            return Err(CliError::failed(anyhow!(
                "run {} already ended ({}); there is nothing to resume",
                state.run_id,
                state.status.as_str()
            )));
        }
        let host = Host::of(&state)?;
        // Loaded once: compared with the fingerprint on record, then handed
        // to the engine (what it skipped is said only if the run goes on).
        let loaded = session::load_notes(&host.notes, true)?;
        // Only a run stopped for review needs a reason to go on; a crashed or
        // paused one resumes as it is.
        let (changed, new_host) = if state.status == RunStatus::NeedsReview {
            crate::host::host_changes(&state, &host, &loaded)
        } else {
            (Vec::new(), Value::Null)
        };
        let options = ResumeOptions {
            by: db::person(),
            max_replans: args.max_replans,
            max_steps: args.max_steps,
            // The only change the host sees is its notes.
            sources_changed: !changed.is_empty(),
            changed,
            host: new_host,
        };
        if state.status == RunStatus::NeedsReview && what_changed(&state, &options).is_empty() {
            // Resumed unchanged it would only repeat itself: record nothing.
            let hint = crate::review::unchanged_hint(&state, Some(&host));
            return Ok(Resumed::Unchanged { state, hint });
        }
        if !args.output.quiet {
            session::note_skipped(&loaded);
        }
        let corpus = Arc::new(loaded.corpus);
        let session = Session::open(store, &state.run_id, &host, corpus, args.approve).await?;
        // Load again under the lease: the log may have grown since.
        let state = db::load(session.store.as_ref(), state.run_id.as_str()).await?;
        let so_far = state.clone();
        let state = session
            .drive(args.output.quiet, Some(so_far), |engine| async move {
                engine.resume(state, options).await
            })
            .await?;
        Ok(Resumed::Ran(state))
    })??;
    match resumed {
        Resumed::Ran(state) => finish(&state, &args.output, None),
        Resumed::Unchanged { state, hint } => finish(&state, &args.output, Some(&hint)),
    }
}
