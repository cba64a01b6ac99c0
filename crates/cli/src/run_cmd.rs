//! `stepwise run`: a goal and a notes folder in, a cited brief out — on the
//! offline roles, with live progress on stderr.
//!
//! Exit status: 0 `ok`, 3 `needs_review`, 1 `failed` or an error during the
//! run, 2 usage error (bad flags, a missing or empty notes folder, bad
//! constraints).

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, anyhow};
use stepwise_core::event::ChannelSink;
use stepwise_core::{Engine, RunConfig, RunState, RunStatus, StepStatus, ToolRegistry};
use stepwise_tools::notes::Corpus;

use crate::cli::RunArgs;
use crate::input::read_constraints;
use crate::output;
use crate::progress::{Mode, Progress};

/// Exit status of a run that stopped for review.
pub(crate) const NEEDS_REVIEW: u8 = 3;

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

/// Loads the corpus, reporting skipped files on stderr.
fn load_corpus(dir: &Path, quiet: bool) -> anyhow::Result<Corpus> {
    let loaded = Corpus::load(dir).map_err(|e| usage(anyhow!(e)))?;
    if !quiet {
        for skipped in &loaded.skipped {
            output::note(&format!(
                "skipped {}: {}",
                skipped.path.display(),
                skipped.reason
            ));
        }
    }
    Ok(loaded.corpus)
}

pub(crate) fn run(args: &RunArgs) -> anyhow::Result<ExitCode> {
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
    let corpus = Arc::new(load_corpus(&args.notes, args.quiet)?);
    let mut tools = ToolRegistry::new();
    stepwise_tools::register_notes_tools(&mut tools, Arc::clone(&corpus));
    let config = RunConfig {
        concurrency: args.concurrency,
        ..RunConfig::default()
    };
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let engine = Engine::new(stepwise_llm::offline::roles(corpus), tools, config)
        .context("the built-in tools are misconfigured")?
        .with_sink(Arc::new(ChannelSink(tx)));

    // One thread: with the offline roles every tool answers at once, so the
    // run is deterministic — the same events in the same order every time.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .context("cannot start the async runtime")?;
    let mode = Mode::detect(args.quiet);
    let state = runtime.block_on(async {
        let display = tokio::spawn(async move {
            let mut progress = Progress::new(mode, std::io::stderr());
            while let Some(event) = rx.recv().await {
                progress.on_event(&event);
            }
            progress.finish();
        });
        let state = engine.run(&args.goal, constraints).await;
        drop(engine); // closes the channel, so the display ends
        let _ = display.await;
        state
    })?;

    let text = if args.json {
        let mut json = serde_json::to_string_pretty(&state.final_output())
            .context("cannot encode the output")?;
        json.push('\n');
        json
    } else {
        markdown(&state)
    };
    match &args.out {
        Some(path) => {
            std::fs::write(path, &text)
                .with_context(|| format!("cannot write {}", path.display()))?;
            if !args.quiet {
                output::note(&format!("wrote {}", path.display()));
            }
        }
        None => output::stdout(&text)?,
    }
    Ok(match state.status {
        RunStatus::Ok => ExitCode::SUCCESS,
        RunStatus::NeedsReview => ExitCode::from(NEEDS_REVIEW),
        RunStatus::Failed | RunStatus::Running => {
            if let Some(reason) = &state.blocked_reason {
                output::error(&anyhow!("{reason}"));
            }
            ExitCode::FAILURE
        }
    })
}

/// The Markdown for stdout: the report when the run is `ok`; otherwise a
/// summary of why it stopped, what ran and which gaps are open — never a
/// report it did not earn.
fn markdown(state: &RunState) -> String {
    if let (RunStatus::Ok, Some(report)) = (state.status, &state.final_report) {
        let mut text = report.clone();
        if !text.ends_with('\n') {
            text.push('\n');
        }
        return text;
    }
    let title = if state.status == RunStatus::NeedsReview {
        "Needs review"
    } else {
        "Run failed"
    };
    let goal = if state.goal.is_empty() {
        state.input.trim()
    } else {
        state.goal.as_str()
    };
    let mut text = format!("# {title}: {goal}\n\n");
    if let Some(reason) = &state.blocked_reason {
        text.push_str(&format!("**Why:** {reason}\n"));
    }
    if !state.plan.steps.is_empty() {
        text.push_str(&format!("\n## Plan (version {})\n\n", state.plan.version));
        for s in &state.plan.steps {
            let mark = match s.status {
                StepStatus::Succeeded => "x",
                _ => " ",
            };
            text.push_str(&format!(
                "- [{mark}] {} ({}, {}): {}\n",
                s.id, s.tool, s.status, s.description
            ));
        }
    }
    if !state.plan_errors.is_empty() {
        text.push_str("\n## Plan problems\n\n");
        for d in &state.plan_errors {
            text.push_str(&format!("- {d}\n"));
        }
    }
    text.push_str("\n## Unresolved gaps\n\n");
    if state.knowledge_gaps.is_empty() {
        text.push_str("None recorded.\n");
    } else {
        for gap in &state.knowledge_gaps {
            text.push_str(&format!("- {gap}\n"));
        }
    }
    text
}
