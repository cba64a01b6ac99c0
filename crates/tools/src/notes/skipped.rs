//! A folder entry left out of the corpus, and why.

use std::fmt;
use std::path::PathBuf;

/// A folder entry that is not part of the corpus.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedFile {
    /// The entry.
    pub path: PathBuf,
    /// Why it was left out.
    pub reason: SkipReason,
}

impl fmt::Display for SkippedFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.reason)
    }
}

/// Why an entry was left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkipReason {
    /// A folder: only the top level is loaded.
    Subfolder,
    /// A name starting with `.` (editor swap files, `.DS_Store`, `.git`).
    Hidden,
    /// Not `.md`, `.txt` or `.jsonl`; holds the extension, if any.
    UnsupportedExtension(Option<String>),
    /// The name is not valid UTF-8, so it cannot be an id.
    NonUtf8Name,
    /// Not a regular file (a socket, a pipe, a device).
    NotAFile,
    /// A supported file with no text (or a `.jsonl` with only blank lines).
    EmptyFile,
    /// A supported extension, but binary content (it holds NUL bytes).
    Binary,
    /// A supported extension, but not valid UTF-8 text; holds the offset of
    /// the first byte that is not.
    NotUtf8(usize),
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Subfolder => f.write_str("subfolder (only the top level is loaded)"),
            Self::Hidden => f.write_str("hidden file"),
            Self::UnsupportedExtension(Some(ext)) => {
                write!(
                    f,
                    "unsupported extension .{ext} (expected .md, .txt or .jsonl)"
                )
            }
            Self::UnsupportedExtension(None) => {
                f.write_str("no extension (expected .md, .txt or .jsonl)")
            }
            Self::NonUtf8Name => f.write_str("file name is not valid UTF-8"),
            Self::NotAFile => f.write_str("not a regular file"),
            Self::EmptyFile => f.write_str("empty file (no notes in it)"),
            Self::Binary => f.write_str("binary file, not text (it holds NUL bytes)"),
            Self::NotUtf8(at) => write!(
                f,
                "not UTF-8 text (invalid byte at offset {at}); save it as UTF-8 to include it"
            ),
        }
    }
}
