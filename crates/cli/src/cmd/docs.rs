//! `stepwise completions SHELL` and `stepwise man`: generated from the clap
//! definitions in [`crate::cli`], so they never drift from the real flags.

use anyhow::Context;
use clap::CommandFactory;
use clap_complete::Shell as Target;

use crate::cli::{Cli, Shell};
use crate::error::CliResult;
use crate::output;

/// `stepwise completions bash|zsh|fish|powershell`.
pub(crate) fn completions(shell: Shell) -> CliResult {
    let target = match shell {
        Shell::Bash => Target::Bash,
        Shell::Zsh => Target::Zsh,
        Shell::Fish => Target::Fish,
        Shell::Powershell => Target::PowerShell,
    };
    let mut script = Vec::new();
    clap_complete::generate(target, &mut Cli::command(), "stepwise", &mut script);
    output::stdout(&String::from_utf8_lossy(&script))?;
    Ok(())
}

/// `stepwise man`: the manual page, as roff.
pub(crate) fn man() -> CliResult {
    let mut page = Vec::new();
    clap_mangen::Man::new(Cli::command())
        .render(&mut page)
        .context("cannot render the manual page")?;
    output::stdout(&String::from_utf8_lossy(&page))?;
    Ok(())
}
