//! Writing to the terminal without panicking: a closed pipe
//! (`stepwise plan schema | head`) ends output quietly instead of aborting.

use std::io::{self, Write};

/// Writes `text` to stdout. A closed pipe is not an error.
pub(crate) fn stdout(text: &str) -> anyhow::Result<()> {
    let mut out = io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => {
            Err(anyhow::anyhow!("cannot write to standard output: {e}"))
        }
        _ => Ok(()),
    }
}

/// Prints an error as one `error: ...` line on stderr.
pub(crate) fn error(err: &anyhow::Error) {
    let text = format!("{err:#}");
    let one_line: Vec<&str> = text.split_whitespace().collect();
    // Nothing sensible is left to do if stderr is gone.
    let _ = writeln!(io::stderr().lock(), "error: {}", one_line.join(" "));
}

/// Prints a side remark (a skipped file, a written path) as `note: ...` on stderr.
pub(crate) fn note(text: &str) {
    let _ = writeln!(io::stderr().lock(), "note: {text}");
}

/// Prints a warning (something degraded, the command goes on) as `warning: ...` on stderr.
#[cfg(feature = "otel")]
pub(crate) fn warn(text: &str) {
    let _ = writeln!(io::stderr().lock(), "warning: {text}");
}
