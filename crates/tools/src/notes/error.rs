//! Why a corpus could not be built. Every variant names the path (and line)
//! involved, because the person reading it has to go and fix a file.

use std::io;
use std::path::PathBuf;

use super::note::Origin;
use super::skipped::SkippedFile;

/// A corpus could not be loaded or built.
#[derive(Debug, thiserror::Error)]
pub enum CorpusError {
    /// The notes folder does not exist.
    #[error("notes folder {} does not exist", path.display())]
    MissingFolder {
        /// The folder asked for.
        path: PathBuf,
    },
    /// The path exists but is a file (or something else), not a folder.
    #[error("{} is not a folder; give the folder that holds the notes", path.display())]
    NotAFolder {
        /// The path asked for.
        path: PathBuf,
    },
    /// The folder exists but could not be listed (e.g. permissions).
    #[error("cannot list notes folder {}: {source}", path.display())]
    ReadFolder {
        /// The folder.
        path: PathBuf,
        /// What the OS said.
        #[source]
        source: io::Error,
    },
    /// The folder holds no notes at its top level.
    #[error(
        "no notes found in {}: expected non-empty .md, .txt or .jsonl files at its top level (subfolders are not searched){}",
        path.display(),
        skipped_summary(skipped)
    )]
    Empty {
        /// The folder.
        path: PathBuf,
        /// What was there instead, with reasons.
        skipped: Vec<SkippedFile>,
    },
    /// A note file could not be read (permissions, not UTF-8, …).
    #[error("cannot read note file {}: {source}", path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        #[source]
        source: io::Error,
    },
    /// A line of a `.jsonl` file is not a valid note.
    #[error("{} line {line}: {message}", path.display())]
    BadJsonl {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong with it.
        message: String,
    },
    /// Two notes share an id.
    #[error("duplicate note id {id:?}: in {first} and in {second}")]
    DuplicateId {
        /// The id.
        id: String,
        /// Where it was first seen.
        first: Origin,
        /// Where it was seen again.
        second: Origin,
    },
}

fn skipped_summary(skipped: &[SkippedFile]) -> String {
    match skipped.len() {
        0 => String::new(),
        1 => format!("; skipped 1 entry: {}", skipped[0]),
        n => format!("; skipped {n} entries, e.g. {}", skipped[0]),
    }
}
