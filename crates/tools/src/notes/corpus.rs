//! The corpus: notes with unique ids, sorted by id, indexed for search once
//! so that every tool call after that only reads.

use std::fmt;

use std::sync::atomic::{AtomicU64, Ordering};

use super::error::CorpusError;
use super::note::Note;
use super::search::{PassageIndex, SearchHit};
use super::vocab::Vocabulary;

/// Notes with unique ids, sorted by id, with a passage index for
/// [`search`](Self::search) and their [`Vocabulary`]. Immutable once built:
/// share it in an `Arc`.
pub struct Corpus {
    notes: Vec<Note>,
    index: PassageIndex,
    vocabulary: Vocabulary,
}

/// How far indexing a corpus has got: `done` of `total` bytes of work
/// (each note's text is read twice, once for the passage index and once
/// for the vocabulary, so `total` is twice the text's size).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Indexing {
    /// Notes to index.
    pub notes: usize,
    /// Bytes of work done.
    pub done: u64,
    /// Bytes of work in all.
    pub total: u64,
}

impl fmt::Debug for Corpus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Corpus")
            .field("notes", &self.notes.len())
            .field("passages", &self.index.len())
            .finish()
    }
}

impl Corpus {
    /// A corpus with no notes. Searching it finds nothing; it exists so that
    /// tools can be described (e.g. for `builtin_specs`) without a folder.
    pub fn empty() -> Self {
        Self {
            notes: Vec::new(),
            index: PassageIndex::default(),
            vocabulary: Vocabulary::default(),
        }
    }

    /// A corpus of these notes, sorted by id. Fails on a duplicate id,
    /// naming where both copies came from (the first one in input order is
    /// reported as `first`). An empty list is allowed here; only
    /// [`load`](Self::load) treats an empty folder as a mistake.
    pub fn from_notes(notes: impl IntoIterator<Item = Note>) -> Result<Self, CorpusError> {
        Self::from_notes_with_progress(notes, &|_| {})
    }

    /// [`from_notes`](Self::from_notes), telling `progress` how far
    /// indexing has got as it goes (from two threads: the passage index and
    /// the vocabulary are built side by side).
    pub fn from_notes_with_progress(
        notes: impl IntoIterator<Item = Note>,
        progress: &(dyn Fn(Indexing) + Sync),
    ) -> Result<Self, CorpusError> {
        let mut notes: Vec<Note> = notes.into_iter().collect();
        // Stable sort: of two equal ids, the one given first stays first.
        notes.sort_by(|a, b| a.id.cmp(&b.id));
        if let Some(pair) = notes.windows(2).find(|w| w[0].id == w[1].id) {
            return Err(CorpusError::DuplicateId {
                id: pair[0].id.clone(),
                first: pair[0].origin.clone(),
                second: pair[1].origin.clone(),
            });
        }
        let bytes: u64 = notes.iter().map(|n| n.text.len() as u64).sum();
        let done = AtomicU64::new(0);
        let report = |b: usize| {
            let before = done.fetch_add(b as u64, Ordering::Relaxed);
            progress(Indexing {
                notes: notes.len(),
                done: before + b as u64,
                total: 2 * bytes,
            });
        };
        let (index, vocabulary) = std::thread::scope(|s| {
            let vocabulary = s.spawn(|| Vocabulary::build(&notes, &mut |b| report(b)));
            let index = PassageIndex::build(&notes, &mut |b| report(b));
            match vocabulary.join() {
                Ok(v) => (index, v),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        });
        Ok(Self {
            notes,
            index,
            vocabulary,
        })
    }

    /// Number of notes.
    pub fn len(&self) -> usize {
        self.notes.len()
    }

    /// Whether there are no notes.
    pub fn is_empty(&self) -> bool {
        self.notes.is_empty()
    }

    /// All notes, sorted by id.
    pub fn notes(&self) -> &[Note] {
        &self.notes
    }

    /// All ids, sorted.
    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.notes.iter().map(|n| n.id.as_str())
    }

    /// The note with this id (exact, case-sensitive match).
    pub fn get(&self, id: &str) -> Option<&Note> {
        self.position(id).map(|i| &self.notes[i])
    }

    /// Where the note with this id is in [`notes`](Self::notes).
    pub fn position(&self, id: &str) -> Option<usize> {
        self.notes.binary_search_by(|n| n.id.as_str().cmp(id)).ok()
    }

    /// The words of the notes and which notes use each.
    pub fn vocabulary(&self) -> &Vocabulary {
        &self.vocabulary
    }

    /// The passages of the note at `position` in [`notes`](Self::notes),
    /// in order, each with the heading it sits under unless that heading
    /// is the note's title: [`split_sections`](crate::text::passages::split_sections)
    /// of its text, as indexed.
    pub fn passages(&self, position: usize) -> impl Iterator<Item = (&str, Option<&str>)> {
        self.index.passages_of(position)
    }

    /// The `limit` notes that best match `query`, best first. See
    /// [`search`](super::search) for how notes are ranked; a query with no
    /// searchable terms (empty, punctuation, stop words) finds nothing.
    pub fn search(&self, query: &str, limit: usize) -> Vec<SearchHit> {
        self.index.search(&self.notes, query, limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::notes::note::Origin;

    #[test]
    fn notes_are_sorted_and_found_by_id() {
        let corpus =
            Corpus::from_notes([Note::new("b", "B", "bee"), Note::new("a", "A", "ay")]).unwrap();
        assert_eq!(corpus.ids().collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(corpus.get("b").unwrap().text, "bee");
        assert!(corpus.get("c").is_none());
        assert!(corpus.get("A").is_none());
    }

    #[test]
    fn duplicate_ids_name_both_origins() {
        let first = Note {
            origin: Origin::File("x/a.md".into()),
            ..Note::new("a", "A", "one")
        };
        let second = Note {
            origin: Origin::JsonlLine {
                path: "x/more.jsonl".into(),
                line: 3,
            },
            ..Note::new("a", "A", "two")
        };
        let err = Corpus::from_notes([first, second]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "duplicate note id \"a\": in x/a.md and in x/more.jsonl line 3"
        );
    }

    #[test]
    fn the_empty_corpus_finds_nothing() {
        let corpus = Corpus::empty();
        assert!(corpus.is_empty());
        assert!(corpus.search("anything", 5).is_empty());
        assert_eq!(format!("{corpus:?}"), "Corpus { notes: 0, passages: 0 }");
    }
}
