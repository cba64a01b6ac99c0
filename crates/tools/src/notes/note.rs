//! A note and where it came from.

use std::fmt;
use std::path::PathBuf;

/// Where a note came from, so errors and citations can point at it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A `.md` or `.txt` file: the whole file is the note.
    File(PathBuf),
    /// One line of a `.jsonl` file.
    JsonlLine {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
    },
    /// Built in code (tests, other sources) rather than loaded from disk.
    Inline,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::File(path) => write!(f, "{}", path.display()),
            Self::JsonlLine { path, line } => write!(f, "{} line {line}", path.display()),
            Self::Inline => f.write_str("a note built in code"),
        }
    }
}

/// One note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    /// Stable identifier: the file stem, or the `id` of a JSONL line.
    pub id: String,
    /// A short human title.
    pub title: String,
    /// The full text (for Markdown files, including the heading).
    pub text: String,
    /// Where it came from.
    pub origin: Origin,
}

impl Note {
    /// A note built in code.
    pub fn new(id: impl Into<String>, title: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            title: title.into(),
            text: text.into(),
            origin: Origin::Inline,
        }
    }
}
