//! What `run` and `resume` print when a run stops: its brief or JSON, its
//! cost and what to do next; the run's status is the exit code.

use anyhow::{Context, anyhow};
use stepwise_core::{RunState, RunStatus};

use crate::cli::OutputArgs;
use crate::error::{CliError, CliResult, ErrorKind};
use crate::host::{Host, price};
use crate::output;
use crate::render::{brief, usage::priced_output};

/// Prints a run's output (`run` and `resume`), and returns its status as
/// the exit code. `hint` replaces the usual note on what to do next.
pub(crate) fn finish(state: &RunState, out: &OutputArgs, hint: Option<&str>) -> CliResult {
    let text = if out.json {
        let mut json = serde_json::to_string_pretty(&priced_output(state)?)
            .context("cannot encode the output")?;
        json.push('\n');
        json
    } else {
        brief::markdown(state)
    };
    if !out.quiet {
        if let Some((model, price)) = price(state) {
            let u = &state.usage;
            output::note(&format!(
                "{model}: {} calls, {} in / {} out tokens, ${:.4}",
                u.llm_calls,
                u.input_tokens,
                u.output_tokens,
                price.cost(u)
            ));
        }
        let host = Host::of(state).ok();
        let repaired = crate::review::repairs(state, host.as_ref());
        if !repaired.is_empty() {
            output::note(&format!(
                "--repair changed your plan: {}",
                repaired.join("; ")
            ));
        }
    }
    match &out.out {
        Some(path) => {
            std::fs::write(path, &text)
                .with_context(|| format!("cannot write {}", path.display()))?;
            if !out.quiet {
                output::note(&format!("wrote {}", path.display()));
            }
        }
        None => output::stdout(&text)?,
    }
    let run = &state.run_id;
    if !out.quiet {
        match state.status {
            RunStatus::NeedsReview => output::note(&hint.map_or_else(
                || {
                    format!(
                        "run {run} needs review; see `stepwise show {run}`, then, once something changed (--max-replans, --max-steps, the notes), `stepwise resume {run}`"
                    )
                },
                str::to_owned,
            )),
            RunStatus::AwaitingApproval => output::note(&format!(
                "run {run} waits for approval: `stepwise approve {run}`, then `stepwise resume {run}`"
            )),
            _ => {}
        }
    }
    match ErrorKind::of_status(state.status) {
        None => Ok(()),
        // Why it failed is worth an `error:` line; the other stops were said above.
        Some(ErrorKind::Failed) => Err(match &state.blocked_reason {
            Some(reason) => CliError::failed(anyhow!("{reason}")),
            None => CliError::quiet(ErrorKind::Failed),
        }),
        Some(kind) => Err(CliError::quiet(kind)),
    }
}
