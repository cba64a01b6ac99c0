//! Loading a notes folder, with progress on stderr once it takes long: a
//! large corpus (tens of thousands of notes, or one note of tens of MB)
//! takes seconds to read and index, and silence for that long looks like a
//! hang. Nothing is shown for a load that is done within [`SHOW_AFTER`].

use std::io::Write;
use std::path::Path;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use stepwise_tools::notes::{Corpus, CorpusError, LoadProgress, LoadedCorpus};

use crate::progress::Mode;

/// How long a load goes on before its progress is shown.
pub(crate) const SHOW_AFTER: Duration = Duration::from_secs(1);

/// How often the progress line is brought up to date on a terminal.
const TICK: Duration = Duration::from_millis(200);

/// How often a new progress line is written when stderr is not a terminal
/// (a log, where lines cannot be redrawn).
const PLAIN_EVERY: Duration = Duration::from_secs(5);

/// Loads the notes in `dir`, showing progress on stderr (unless `quiet`)
/// if it takes longer than [`SHOW_AFTER`].
pub(crate) fn load(dir: &Path, quiet: bool) -> Result<LoadedCorpus, CorpusError> {
    let start = Instant::now();
    let mode = Mode::detect(quiet);
    if mode == Mode::Quiet {
        return Corpus::load(dir);
    }
    let latest: Arc<Mutex<Option<LoadProgress>>> = Arc::new(Mutex::new(None));
    let (done, stop) = mpsc::channel::<()>();
    let shown = Arc::clone(&latest);
    let reporter = std::thread::spawn(move || report(&shown, &stop, start, mode));
    let result = Corpus::load_with_progress(dir, &|p| {
        if let Ok(mut latest) = latest.lock() {
            *latest = Some(p);
        }
    });
    drop(done);
    let _ = reporter.join();
    result
}

/// Writes the progress line while the load goes on, and a last line saying
/// what was loaded, if a line was written at all.
fn report(
    latest: &Mutex<Option<LoadProgress>>,
    stop: &mpsc::Receiver<()>,
    start: Instant,
    mode: Mode,
) {
    let mut err = std::io::stderr();
    let mut last_line: Option<Instant> = None;
    loop {
        let finished = match stop.recv_timeout(TICK) {
            Err(RecvTimeoutError::Timeout) => false,
            Ok(()) | Err(RecvTimeoutError::Disconnected) => true,
        };
        let now = latest.lock().ok().and_then(|p| *p);
        if finished {
            if last_line.is_some() {
                let text = now.map_or_else(String::new, |p| done_line(p, start.elapsed()));
                let _ = match mode {
                    Mode::Live => write!(err, "\r\x1b[K{text}\n"),
                    _ => writeln!(err, "{text}"),
                };
            }
            return;
        }
        let due = match (mode, last_line) {
            (_, None) => start.elapsed() >= SHOW_AFTER,
            // On a terminal the line is redrawn each tick: its clock moves
            // even while one large note is indexed.
            (Mode::Live, Some(_)) => true,
            (_, Some(at)) => at.elapsed() >= PLAIN_EVERY,
        };
        if let (true, Some(p)) = (due, now) {
            let text = line(p, start.elapsed());
            let _ = match mode {
                Mode::Live => write!(err, "\r\x1b[K{text}"),
                _ => writeln!(err, "{text}"),
            };
            let _ = err.flush();
            last_line = Some(Instant::now());
        }
    }
}

/// `loading notes: 12,000 of 30,000 files read (9.6 MB) · 1.2 s`.
fn line(p: LoadProgress, elapsed: Duration) -> String {
    let time = crate::render::duration(millis(elapsed));
    match p {
        LoadProgress::Reading { entries, of, bytes } => format!(
            "loading notes: {} of {} files read ({}) · {time}",
            thousands(entries as u64),
            thousands(of as u64),
            megabytes(bytes)
        ),
        LoadProgress::Indexing(i) => {
            let percent = (i.done * 100).checked_div(i.total).unwrap_or(100);
            format!(
                "indexing notes: {} ({}), {percent}% · {time}",
                notes(i.notes),
                megabytes(i.total / 2)
            )
        }
    }
}

/// `loaded 30,000 notes (24.1 MB) in 1.4 s`.
fn done_line(p: LoadProgress, elapsed: Duration) -> String {
    let time = crate::render::duration(millis(elapsed));
    match p {
        LoadProgress::Indexing(i) => format!(
            "loaded {} ({}) in {time}",
            notes(i.notes),
            megabytes(i.total / 2)
        ),
        LoadProgress::Reading { .. } => format!("stopped loading notes after {time}"),
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// `9.6 MB` (decimal megabytes, one decimal), `512 KB` under one MB.
fn megabytes(bytes: u64) -> String {
    if bytes < 1_000_000 {
        format!("{} KB", bytes.div_ceil(1_000))
    } else {
        format!("{}.{} MB", bytes / 1_000_000, (bytes % 1_000_000) / 100_000)
    }
}

/// `1 note`, `30,000 notes`.
fn notes(n: usize) -> String {
    match n {
        1 => "1 note".to_owned(),
        _ => format!("{} notes", thousands(n as u64)),
    }
}

/// `30,000`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use stepwise_tools::notes::Indexing;

    use super::*;

    #[test]
    fn progress_lines_say_how_far_a_load_got() {
        let reading = LoadProgress::Reading {
            entries: 12_000,
            of: 30_000,
            bytes: 9_640_000,
        };
        assert_eq!(
            line(reading, Duration::from_millis(1_240)),
            "loading notes: 12,000 of 30,000 files read (9.6 MB) · 1.2 s"
        );
        let indexing = LoadProgress::Indexing(Indexing {
            notes: 1,
            done: 30_000_000,
            total: 100_000_000,
        });
        assert_eq!(
            line(indexing, Duration::from_secs(3)),
            "indexing notes: 1 note (50.0 MB), 30% · 3.0 s"
        );
        assert_eq!(
            done_line(indexing, Duration::from_millis(4_500)),
            "loaded 1 note (50.0 MB) in 4.5 s"
        );
        assert_eq!(megabytes(1_500), "2 KB");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }
}
