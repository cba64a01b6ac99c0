//! Why a command did not end in plain success, and the exit code each
//! reason gets. The codes are mapped here and nowhere else (ripgrep's
//! `Error { kind }` shape), so `--help`, the commands and scripts that read
//! `$?` cannot drift apart.

use std::fmt;
use std::process::ExitCode;

use stepwise_core::RunStatus;

/// What went wrong, as far as the exit code is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ErrorKind {
    /// The input was read and found wanting (an invalid plan), or a run
    /// failed, broke down or diverged on replay, or the run's state did not
    /// allow the change asked for.
    Failed,
    /// The command was asked wrongly: bad flags, an unreadable or malformed
    /// file, a missing notes folder, an unusable database, an unknown run.
    /// Clap uses the same code for its own parse errors.
    Usage,
    /// A run stopped for review; `stepwise resume` once something changed.
    NeedsReview,
    /// A run paused for an approval; `stepwise approve`, then `resume`.
    AwaitingApproval,
    /// A run was cancelled.
    Cancelled,
    /// The process was interrupted (Ctrl-C, SIGTERM) mid-run; `stepwise
    /// resume` continues the run. 130, as shells report a SIGINT.
    Interrupted,
}

impl ErrorKind {
    /// Every kind, in exit-code order (the help text lists them so).
    pub(crate) const ALL: [ErrorKind; 6] = [
        ErrorKind::Failed,
        ErrorKind::Usage,
        ErrorKind::NeedsReview,
        ErrorKind::AwaitingApproval,
        ErrorKind::Cancelled,
        ErrorKind::Interrupted,
    ];

    /// The process exit code; 0 is success and belongs to no kind.
    pub(crate) const fn code(self) -> u8 {
        match self {
            ErrorKind::Failed => 1,
            ErrorKind::Usage => 2,
            ErrorKind::NeedsReview => 3,
            ErrorKind::AwaitingApproval => 4,
            ErrorKind::Cancelled => 5,
            ErrorKind::Interrupted => 130,
        }
    }

    /// What the code means, for `stepwise --help`.
    pub(crate) const fn meaning(self) -> &'static str {
        match self {
            ErrorKind::Failed => {
                "failed: an invalid plan, a run that failed or broke down, a replay that diverged, or a change the run's state does not allow"
            }
            ErrorKind::Usage => {
                "usage error: bad flags, an unreadable or malformed file, a missing notes folder, an unusable database, an unknown run"
            }
            ErrorKind::NeedsReview => {
                "the run stopped for review (see `stepwise show RUN`, then `stepwise resume RUN`)"
            }
            ErrorKind::AwaitingApproval => {
                "the run waits for an approval (`stepwise approve RUN`, then `stepwise resume RUN`)"
            }
            ErrorKind::Cancelled => "the run was cancelled",
            ErrorKind::Interrupted => {
                "interrupted (Ctrl-C) mid-run, its MCP servers stopped; `stepwise resume RUN` continues it"
            }
        }
    }

    /// The kind a run's final status exits with; `None` for `ok`. A run
    /// still `running` when the engine gave it back did not finish: failed.
    pub(crate) const fn of_status(status: RunStatus) -> Option<ErrorKind> {
        match status {
            RunStatus::Ok => None,
            RunStatus::NeedsReview => Some(ErrorKind::NeedsReview),
            RunStatus::AwaitingApproval => Some(ErrorKind::AwaitingApproval),
            RunStatus::Cancelled => Some(ErrorKind::Cancelled),
            RunStatus::Failed | RunStatus::Running => Some(ErrorKind::Failed),
        }
    }
}

/// The `Exit status:` section of `stepwise --help`: every code.
pub(crate) fn exit_codes_help() -> String {
    exit_codes(&ErrorKind::ALL)
}

/// An `Exit status:` section listing success and `kinds`, one line per
/// code, for a command's help: each command names the codes it can end
/// with, and the words come from this one table.
pub(crate) fn exit_codes(kinds: &[ErrorKind]) -> String {
    let mut text = String::from("Exit status:\n  0  success\n");
    for kind in kinds {
        text.push_str(&format!("  {}  {}\n", kind.code(), kind.meaning()));
    }
    text
}

/// How a command did not succeed: its [`ErrorKind`] picks the exit code,
/// and its message, if it has one, is printed as one `error:` line. A run
/// that stopped for review has no message: its output already said so.
#[derive(Debug)]
pub(crate) struct CliError {
    pub(crate) kind: ErrorKind,
    message: Option<anyhow::Error>,
}

/// What every command returns.
pub(crate) type CliResult<T = ()> = Result<T, CliError>;

impl CliError {
    /// A usage error (exit 2).
    pub(crate) fn usage(err: impl Into<anyhow::Error>) -> CliError {
        CliError {
            kind: ErrorKind::Usage,
            message: Some(err.into()),
        }
    }

    /// A failure with a message (exit 1).
    pub(crate) fn failed(err: impl Into<anyhow::Error>) -> CliError {
        CliError {
            kind: ErrorKind::Failed,
            message: Some(err.into()),
        }
    }

    /// A run interrupted (Ctrl-C, SIGTERM) mid-way (exit 130).
    pub(crate) fn interrupted(message: String) -> CliError {
        CliError {
            kind: ErrorKind::Interrupted,
            message: Some(anyhow::Error::msg(message)),
        }
    }

    /// The error as a plain message, for a caller with no exit code to
    /// pick (the server's and the workers' launches).
    pub(crate) fn into_anyhow(self) -> anyhow::Error {
        match self.message {
            Some(err) => err,
            None => anyhow::anyhow!("exit {}", self.kind.code()),
        }
    }

    /// An exit code with nothing more to say: the command's output said it.
    pub(crate) fn quiet(kind: ErrorKind) -> CliError {
        CliError {
            kind,
            message: None,
        }
    }

    /// The same error with `context` before its message, as
    /// `anyhow::Context` would add it.
    pub(crate) fn context(self, context: impl fmt::Display + Send + Sync + 'static) -> CliError {
        CliError {
            kind: self.kind,
            message: Some(match self.message {
                Some(err) => err.context(context),
                None => anyhow::anyhow!("{context}"),
            }),
        }
    }

    /// The message to print, if any.
    pub(crate) fn message(&self) -> Option<&anyhow::Error> {
        self.message.as_ref()
    }

    /// The process exit code.
    pub(crate) fn exit_code(&self) -> ExitCode {
        ExitCode::from(self.kind.code())
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.message {
            Some(err) => write!(f, "{err:#}"),
            None => write!(f, "exit {}", self.kind.code()),
        }
    }
}

/// A person's change the run's state does not allow: a failure.
impl From<stepwise_core::act::ActError> for CliError {
    fn from(err: stepwise_core::act::ActError) -> CliError {
        CliError {
            kind: ErrorKind::Failed,
            message: Some(anyhow::Error::new(err)),
        }
    }
}

/// What a build without the Cargo feature `feature` says of a command or
/// flag it left out (crates/cli/Cargo.toml's `[features]`).
#[cfg(not(all(
    feature = "postgres",
    feature = "serve",
    feature = "mcp",
    feature = "otel"
)))]
pub(crate) fn not_built_message(feature: &str) -> String {
    format!(
        "this stepwise was built without the `{feature}` feature; rebuild with --features {feature}"
    )
}

/// [`not_built_message`] as a usage error.
#[cfg(not(all(
    feature = "postgres",
    feature = "serve",
    feature = "mcp",
    feature = "otel"
)))]
pub(crate) fn not_built(feature: &str) -> CliError {
    CliError::usage(anyhow::anyhow!(not_built_message(feature)))
}

/// A helper's error that no one classified: a failure. (Usage errors are
/// made as such where they are found — [`CliError::usage`] — and travel
/// typed; [`CliError`] is no `std::error::Error`, so it cannot be wrapped
/// into an `anyhow::Error` and lose its kind on the way.)
impl From<anyhow::Error> for CliError {
    fn from(err: anyhow::Error) -> CliError {
        CliError::failed(err)
    }
}

#[cfg(test)]
mod tests {
    use anyhow::anyhow;

    use super::*;

    #[test]
    fn every_kind_has_its_own_code_and_help_line() {
        let codes: Vec<u8> = ErrorKind::ALL.iter().map(|k| k.code()).collect();
        assert_eq!(codes, [1, 2, 3, 4, 5, 130]);
        let expected = [
            (ErrorKind::Failed, 1),
            (ErrorKind::Usage, 2),
            (ErrorKind::NeedsReview, 3),
            (ErrorKind::AwaitingApproval, 4),
            (ErrorKind::Cancelled, 5),
            (ErrorKind::Interrupted, 130),
        ];
        let help = exit_codes_help();
        for (kind, code) in expected {
            assert_eq!(kind.code(), code, "{kind:?}");
            let line = format!("\n  {code}  {}\n", kind.meaning());
            assert!(help.contains(&line), "{kind:?} not in:\n{help}");
        }
        assert!(help.starts_with("Exit status:\n  0  success\n"), "{help}");
    }

    #[test]
    fn run_statuses_map_to_their_kinds() {
        assert_eq!(ErrorKind::of_status(RunStatus::Ok), None);
        let cases = [
            (RunStatus::NeedsReview, 3),
            (RunStatus::AwaitingApproval, 4),
            (RunStatus::Cancelled, 5),
            (RunStatus::Failed, 1),
            (RunStatus::Running, 1),
        ];
        for (status, code) in cases {
            assert_eq!(
                ErrorKind::of_status(status).map(ErrorKind::code),
                Some(code)
            );
        }
    }

    #[test]
    fn usage_errors_keep_their_kind_and_unclassified_ones_are_failures() {
        let usage = CliError::usage(anyhow!("no such folder")).context("task a");
        assert_eq!(usage.kind, ErrorKind::Usage);
        assert_eq!(usage.to_string(), "task a: no such folder");
        assert_eq!(CliError::from(anyhow!("disk full")).kind, ErrorKind::Failed);
        let quiet = CliError::quiet(ErrorKind::NeedsReview);
        assert!(quiet.message().is_none());
    }
}
