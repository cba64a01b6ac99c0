//! Loading a corpus from a folder.
//!
//! Only the folder's top level is read: a notes folder is usually flat, and
//! recursing would silently pull in drafts, archives or a `.git` directory.
//! Subfolders are reported as skipped instead, like every other entry that is
//! not loaded — nothing is ignored silently, so a caller can tell the user why
//! a note they expected is missing.
//!
//! - `.md` / `.txt`: one note per file; id = file stem; title = the first
//!   Markdown heading (`#` … `######`, outside code fences), else the first
//!   non-empty line; text = the whole file.
//! - `.jsonl`: one `{"id", "title", "text"}` object per line; blank lines are
//!   ignored; `title` may be omitted (then it is derived from `text` as above);
//!   other fields are ignored, so exports with extra metadata load as is.
//!
//! Extensions match case-insensitively. Files are read in name order, so
//! which of two duplicate ids is reported first is deterministic.
//!
//! A note file that is not text — binary (it holds NUL bytes) or not valid
//! UTF-8 — is skipped and reported like any other entry left out; one such
//! file never stops the others from loading.

use std::fs;
use std::io;
use std::path::Path;

use serde_json::Value;

use super::corpus::{Corpus, Indexing};
use super::error::CorpusError;
use super::note::{Note, Origin};
use super::skipped::{SkipReason, SkippedFile};
use crate::text::passages::heading_text;

/// Titles longer than this many characters are cut (with `…`): a title
/// taken from a first line may really be a whole paragraph.
pub const MAX_TITLE_CHARS: usize = 120;

/// A loaded corpus and the folder entries that were not loaded.
#[derive(Debug)]
pub struct LoadedCorpus {
    /// The notes.
    pub corpus: Corpus,
    /// Entries left out, with why, in name order.
    pub skipped: Vec<SkippedFile>,
}

/// How far [`Corpus::load_with_progress`] has got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadProgress {
    /// Reading the folder: `entries` of `of` entries looked at, `bytes`
    /// read from them.
    Reading {
        /// Entries looked at.
        entries: usize,
        /// Entries in the folder.
        of: usize,
        /// Bytes read so far.
        bytes: u64,
    },
    /// Indexing the notes read.
    Indexing(Indexing),
}

/// What kind of note file an entry is.
enum Kind {
    Text,
    Jsonl,
}

impl Corpus {
    /// Loads the notes at the top level of `dir` (see the [module
    /// docs](self) for the formats). Fails if the folder is missing, is not
    /// a folder, holds no notes, or a note file is unreadable or malformed,
    /// or two notes share an id. Files that are not text are skipped.
    pub fn load(dir: impl AsRef<Path>) -> Result<LoadedCorpus, CorpusError> {
        Self::load_with_progress(dir, &|_| {})
    }

    /// [`load`](Self::load), telling `progress` how far it has got after
    /// each entry read and as the notes are indexed, so a caller can show
    /// a long load (many notes, or one very large one) as it goes.
    pub fn load_with_progress(
        dir: impl AsRef<Path>,
        progress: &(dyn Fn(LoadProgress) + Sync),
    ) -> Result<LoadedCorpus, CorpusError> {
        let dir = dir.as_ref();
        let meta = fs::metadata(dir).map_err(|source| match source.kind() {
            io::ErrorKind::NotFound => CorpusError::MissingFolder { path: dir.into() },
            _ => CorpusError::ReadFolder {
                path: dir.into(),
                source,
            },
        })?;
        if !meta.is_dir() {
            return Err(CorpusError::NotAFolder { path: dir.into() });
        }
        let read_folder = |source| CorpusError::ReadFolder {
            path: dir.into(),
            source,
        };
        let mut paths = Vec::new();
        for entry in fs::read_dir(dir).map_err(read_folder)? {
            paths.push(entry.map_err(read_folder)?.path());
        }
        paths.sort();

        let mut notes = Vec::new();
        let mut skipped = Vec::new();
        let of = paths.len();
        let mut bytes = 0;
        for (entry, path) in paths.into_iter().enumerate() {
            progress(LoadProgress::Reading {
                entries: entry,
                of,
                bytes,
            });
            let text = match classify(&path).map(|kind| (kind, read(&path))) {
                Ok((kind, Ok(Ok(text)))) => (kind, text),
                Ok((_, Err(e))) => return Err(e),
                Err(reason) | Ok((_, Ok(Err(reason)))) => {
                    skipped.push(SkippedFile { path, reason });
                    continue;
                }
            };
            bytes += text.1.len() as u64;
            let loaded = match text {
                (Kind::Text, text) => text_note(&path, text).map(|n| vec![n]),
                (Kind::Jsonl, text) => Some(parse_jsonl(&path, &text)?).filter(|n| !n.is_empty()),
            };
            match loaded {
                Some(more) => notes.extend(more),
                None => skipped.push(SkippedFile {
                    path,
                    reason: SkipReason::EmptyFile,
                }),
            }
        }
        if notes.is_empty() {
            return Err(CorpusError::Empty {
                path: dir.into(),
                skipped,
            });
        }
        progress(LoadProgress::Reading {
            entries: of,
            of,
            bytes,
        });
        let corpus =
            Corpus::from_notes_with_progress(notes, &|i| progress(LoadProgress::Indexing(i)))?;
        Ok(LoadedCorpus { corpus, skipped })
    }
}

/// Decides whether an entry is a note file, or why not.
fn classify(path: &Path) -> Result<Kind, SkipReason> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or(SkipReason::NonUtf8Name)?;
    if name.starts_with('.') {
        return Err(SkipReason::Hidden);
    }
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    let kind = match ext.as_deref() {
        Some("md" | "txt") => Some(Kind::Text),
        Some("jsonl") => Some(Kind::Jsonl),
        _ => None,
    };
    // `metadata` follows links: a link to a note file is a note file. If it
    // fails (e.g. a broken link) a note file falls through to being read, so
    // the user gets the read error naming it rather than a quiet skip.
    match fs::metadata(path) {
        Ok(meta) if meta.is_dir() => Err(SkipReason::Subfolder),
        Ok(meta) if !meta.is_file() => Err(SkipReason::NotAFile),
        _ => kind.ok_or(SkipReason::UnsupportedExtension(ext)),
    }
}

/// A note file's text; why it is skipped if it is not text; an error if
/// it cannot be read at all.
fn read(path: &Path) -> Result<Result<String, SkipReason>, CorpusError> {
    let bytes = fs::read(path).map_err(|source| CorpusError::Unreadable {
        path: path.into(),
        source,
    })?;
    Ok(decode(bytes))
}

/// UTF-8 text without its byte-order mark, or why the bytes are not text.
fn decode(bytes: Vec<u8>) -> Result<String, SkipReason> {
    if bytes.contains(&0) {
        return Err(SkipReason::Binary);
    }
    let text =
        String::from_utf8(bytes).map_err(|e| SkipReason::NotUtf8(e.utf8_error().valid_up_to()))?;
    // A byte-order mark would otherwise end up in the first title.
    Ok(match text.strip_prefix('\u{feff}') {
        Some(rest) => rest.to_owned(),
        None => text,
    })
}

/// A `.md` / `.txt` note, or `None` if the file is blank.
fn text_note(path: &Path, text: String) -> Option<Note> {
    let title = derive_title(&text)?;
    // `classify` checked the name is UTF-8, so the stem is too.
    let id = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or_default()
        .to_owned();
    Some(Note {
        id,
        title,
        text,
        origin: Origin::File(path.into()),
    })
}

fn parse_jsonl(path: &Path, content: &str) -> Result<Vec<Note>, CorpusError> {
    let mut notes = Vec::new();
    for (i, line) in content.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let note = parse_jsonl_line(line).map_err(|message| CorpusError::BadJsonl {
            path: path.into(),
            line: i + 1,
            message,
        })?;
        notes.push(Note {
            origin: Origin::JsonlLine {
                path: path.into(),
                line: i + 1,
            },
            ..note
        });
    }
    Ok(notes)
}

/// One JSONL line as a note, or a message saying what is wrong with it.
/// Checked by hand rather than with a derived `Deserialize` so the message
/// names the field (serde's type errors do not).
fn parse_jsonl_line(line: &str) -> Result<Note, String> {
    let value: Value = serde_json::from_str(line).map_err(|e| format!("invalid JSON: {e}"))?;
    let Value::Object(object) = value else {
        return Err(format!(
            "expected an object like {{\"id\": …, \"title\": …, \"text\": …}}, found {}",
            kind_of(&value)
        ));
    };
    let field = |name: &str| -> Result<Option<String>, String> {
        match object.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(format!(
                "\"{name}\" must be a string, found {}",
                kind_of(other)
            )),
        }
    };
    let id = field("id")?.ok_or("missing \"id\"")?;
    if id.trim().is_empty() {
        return Err("\"id\" is empty".to_owned());
    }
    let text = field("text")?.ok_or("missing \"text\"")?;
    let derived = derive_title(&text).ok_or("\"text\" is empty")?;
    let title = field("title")?
        .map(|t| t.trim().to_owned())
        .filter(|t| !t.is_empty())
        .unwrap_or(derived);
    Ok(Note::new(id, title, text))
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The first Markdown heading outside code fences, else an email's subject
/// line, else the first non-empty line, cut to [`MAX_TITLE_CHARS`]; `None`
/// for a blank text.
pub fn derive_title(text: &str) -> Option<String> {
    let mut in_fence = false;
    let mut heading = None;
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            in_fence = !in_fence;
        } else if !in_fence && let Some(h) = heading_text(trimmed).filter(|h| !h.is_empty()) {
            heading = Some(h);
            break;
        }
    }
    let title = heading
        .or_else(|| subject_line(text))
        .or_else(|| text.lines().map(str::trim).find(|l| !l.is_empty()))?;
    Some(truncate(title, MAX_TITLE_CHARS))
}

/// An email's subject among its first header lines ("Subject: …",
/// "제목: …"): a better title for a pasted email than its "From:" line.
fn subject_line(text: &str) -> Option<&str> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .take(6)
        .find_map(|l| {
            ["Subject:", "subject:", "SUBJECT:", "제목:"]
                .iter()
                .find_map(|p| l.strip_prefix(p))
                .map(str::trim)
                .filter(|s| !s.is_empty())
        })
}

fn truncate(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        None => text.to_owned(),
        Some((cut, _)) => format!("{}…", text[..cut].trim_end()),
    }
}

impl LoadedCorpus {
    /// A fingerprint of the notes' content (ids, titles, texts), so a
    /// caller can tell later whether the folder changed: the same notes give
    /// the same fingerprint wherever and however they are stored.
    pub fn fingerprint(&self) -> String {
        use sha2::{Digest, Sha256};
        let mut hasher = Sha256::new();
        for note in self.corpus.notes() {
            for part in [&note.id, &note.title, &note.text] {
                hasher.update((part.len() as u64).to_le_bytes());
                hasher.update(part.as_bytes());
            }
        }
        hasher
            .finalize()
            .iter()
            .take(16)
            .map(|b| format!("{b:02x}"))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_and_non_utf8_bytes_are_not_text() {
        assert_eq!(decode(b"a\0b".to_vec()), Err(SkipReason::Binary));
        assert_eq!(decode(b"ok \xff".to_vec()), Err(SkipReason::NotUtf8(3)));
        assert_eq!(decode("\u{feff}# T".as_bytes().to_vec()).unwrap(), "# T");
        assert!(SkipReason::NotUtf8(3).to_string().contains("offset 3"));
    }

    #[test]
    fn an_emails_title_is_its_subject() {
        assert_eq!(
            derive_title("From: Tom <t@x>\nTo: Ann\nSubject: Re: pivot quote\n\nHi Ann,").unwrap(),
            "Re: pivot quote"
        );
        assert_eq!(
            derive_title("보낸 사람: 김\n제목: 응답 시간 측정\n\n본문").unwrap(),
            "응답 시간 측정"
        );
    }

    #[test]
    fn title_is_the_first_heading_else_the_first_line() {
        assert_eq!(derive_title("intro\n\n## Costs\ntext").unwrap(), "Costs");
        assert_eq!(
            derive_title("\n\n  First line  \nsecond").unwrap(),
            "First line"
        );
        assert_eq!(
            derive_title("```\n# not a title\n```\n# Real").unwrap(),
            "Real"
        );
        assert_eq!(derive_title("#tag line").unwrap(), "#tag line");
        assert_eq!(derive_title(" \n\t\n"), None);
    }

    #[test]
    fn long_titles_are_cut_on_a_character_boundary() {
        let title = derive_title(&"가".repeat(200)).unwrap();
        assert_eq!(title.chars().count(), MAX_TITLE_CHARS + 1);
        assert!(title.ends_with('…'));
    }

    #[test]
    fn jsonl_lines_say_what_is_wrong() {
        let err = |line: &str| parse_jsonl_line(line).unwrap_err();
        assert!(err("{\"id\": \"a\"").starts_with("invalid JSON: "));
        assert!(err("[1]").contains("found an array"));
        assert_eq!(err(r#"{"text": "x"}"#), "missing \"id\"");
        assert_eq!(
            err(r#"{"id": 3, "text": "x"}"#),
            "\"id\" must be a string, found a number"
        );
        assert_eq!(err(r#"{"id": " ", "text": "x"}"#), "\"id\" is empty");
        assert_eq!(err(r#"{"id": "a"}"#), "missing \"text\"");
        assert_eq!(err(r#"{"id": "a", "text": ""}"#), "\"text\" is empty");
    }

    #[test]
    fn jsonl_title_is_optional_and_extra_fields_are_ignored() {
        let note = parse_jsonl_line(r#"{"id": "a", "text": "Hello\nworld", "url": "x"}"#).unwrap();
        assert_eq!((note.id.as_str(), note.title.as_str()), ("a", "Hello"));
        let note = parse_jsonl_line(r#"{"id": "b", "title": "T", "text": "body"}"#).unwrap();
        assert_eq!(note.title, "T");
    }
}
