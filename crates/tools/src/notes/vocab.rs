//! The corpus's vocabulary: every distinct word of its notes (titles and
//! texts) and which notes use it, built in one pass when the corpus is.
//!
//! Two kinds of word, as the two readers of a corpus split text:
//!
//! - **stems**, as [`words`](crate::text::stem::words) gives them (whole words,
//!   Snowball stems, Korean particles stripped), for deciding what a
//!   sentence is about;
//! - **terms**, as [`tokenize`](super::tokenize()) gives them (Korean as
//!   character bigrams), the words of search.
//!
//! Each is kept once, sorted, with the notes that use it (their positions
//! in the corpus, ascending), so a question about the whole corpus — how
//! many notes use a word or a variant of it, which words of the notes are
//! variants of one — costs a look-up, not a pass over every note. Each
//! distinct piece of text is stemmed once for the whole corpus.

use std::ops::Range;

use super::note::Note;
// FxHash, not SipHash: a corpus is the user's own notes, not an adversary's.
use crate::text::stem::piece_word;
use crate::text::tokenize::{for_each_piece, piece_terms};
use rustc_hash::FxHashMap;

/// Words of a corpus, and the notes using each. See the [module docs](self).
#[derive(Debug, Clone, Default)]
pub struct Vocabulary {
    stems: Words,
    terms: Words,
}

/// Distinct words, sorted, each with the notes that use it.
#[derive(Debug, Clone, Default)]
struct Words {
    words: Vec<Box<str>>,
    notes: Vec<Box<[u32]>>,
}

impl Words {
    fn id(&self, word: &str) -> Option<usize> {
        self.words.binary_search_by(|w| (**w).cmp(word)).ok()
    }

    fn starting_with(&self, prefix: &str) -> Range<usize> {
        let start = self.words.partition_point(|w| **w < *prefix);
        let len = self.words[start..]
            .iter()
            .take_while(|w| w.starts_with(prefix))
            .count();
        start..start + len
    }
}

/// Words numbered in the order they were first met, with their notes.
#[derive(Debug, Default)]
struct Interner {
    ids: FxHashMap<Box<str>, u32>,
    words: Vec<Box<str>>,
    notes: Vec<Vec<u32>>,
}

impl Interner {
    fn id(&mut self, word: &str) -> u32 {
        if let Some(&id) = self.ids.get(word) {
            return id;
        }
        let id = u32::try_from(self.words.len()).unwrap_or(u32::MAX);
        self.ids.insert(word.into(), id);
        self.words.push(word.into());
        self.notes.push(Vec::new());
        id
    }

    /// Records that note `note` uses the words `ids` (in any order, repeats allowed).
    fn used_by(&mut self, note: u32, ids: &mut Vec<u32>) {
        ids.sort_unstable();
        ids.dedup();
        for &id in ids.iter() {
            if let Some(notes) = self.notes.get_mut(id as usize) {
                notes.push(note);
            }
        }
        ids.clear();
    }

    /// Sorted by word.
    fn finish(self) -> Words {
        let mut pairs: Vec<(Box<str>, Vec<u32>)> = self.words.into_iter().zip(self.notes).collect();
        pairs.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let (words, notes) = pairs
            .into_iter()
            .map(|(w, n)| (w, n.into_boxed_slice()))
            .unzip();
        Words { words, notes }
    }
}

/// What one distinct piece of text contributes: its stem and its terms.
#[derive(Debug)]
struct Piece {
    stem: Option<u32>,
    terms: Range<usize>,
}

impl Vocabulary {
    /// The vocabulary of `notes` (each note's title and text), in one
    /// pass; `progress` is told the bytes of each note's text once it is
    /// read.
    pub fn build(notes: &[Note], progress: &mut dyn FnMut(usize)) -> Self {
        let mut stems = Interner::default();
        let mut terms = Interner::default();
        let mut pieces: FxHashMap<Box<str>, Piece> = FxHashMap::default();
        // The terms of every distinct piece, end to end.
        let mut piece_term_ids: Vec<u32> = Vec::new();
        let (mut note_stems, mut note_terms) = (Vec::new(), Vec::new());
        for (i, note) in notes.iter().enumerate() {
            let note_pos = u32::try_from(i).unwrap_or(u32::MAX);
            let lowered = format!("{}\n{}", note.title, note.text).to_lowercase();
            for_each_piece(&lowered, |text, cjk| {
                let (stem, range) = match pieces.get(text) {
                    Some(p) => (p.stem, p.terms.clone()),
                    None => {
                        let stem = piece_word(text).map(|s| stems.id(&s));
                        let start = piece_term_ids.len();
                        piece_terms(text, cjk, &mut |t| piece_term_ids.push(terms.id(t)));
                        let range = start..piece_term_ids.len();
                        let piece = Piece {
                            stem,
                            terms: range.clone(),
                        };
                        pieces.insert(text.into(), piece);
                        (stem, range)
                    }
                };
                note_stems.extend(stem);
                note_terms.extend_from_slice(&piece_term_ids[range]);
            });
            stems.used_by(note_pos, &mut note_stems);
            terms.used_by(note_pos, &mut note_terms);
            progress(note.text.len());
        }
        Self {
            stems: stems.finish(),
            terms: terms.finish(),
        }
    }

    /// Number of distinct stems.
    pub fn stem_count(&self) -> usize {
        self.stems.words.len()
    }

    /// The stem numbered `id` (`0..stem_count()`, in sorted order).
    pub fn stem(&self, id: usize) -> &str {
        self.stems.words.get(id).map_or("", |w| w)
    }

    /// The number of `stem`, if a note uses it.
    pub fn stem_id(&self, stem: &str) -> Option<usize> {
        self.stems.id(stem)
    }

    /// The numbers of the stems that start with `prefix` (a range, since
    /// they are sorted).
    pub fn stems_starting_with(&self, prefix: &str) -> Range<usize> {
        self.stems.starting_with(prefix)
    }

    /// The numbers of the terms that start with `prefix` (terms are sorted).
    pub fn terms_starting_with(&self, prefix: &str) -> Range<usize> {
        self.terms.starting_with(prefix)
    }

    /// The notes (positions in the corpus, ascending) using stem `id`.
    pub fn stem_notes(&self, id: usize) -> &[u32] {
        self.stems.notes.get(id).map_or(&[], |n| n)
    }

    /// Number of distinct search terms.
    pub fn term_count(&self) -> usize {
        self.terms.words.len()
    }

    /// The search term numbered `id` (`0..term_count()`, in sorted order).
    pub fn term(&self, id: usize) -> &str {
        self.terms.words.get(id).map_or("", |w| w)
    }

    /// The notes (positions in the corpus, ascending) using term `id`.
    pub fn term_notes(&self, id: usize) -> &[u32] {
        self.terms.notes.get(id).map_or(&[], |n| n)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::collections::{BTreeMap, BTreeSet};

    use super::*;
    use crate::text::stem::words;
    use crate::text::tokenize::tokenize;

    fn notes() -> Vec<Note> {
        vec![
            Note::new(
                "a",
                "Costs",
                "The costs rose; costing more.\n\n비용이 든다.",
            ),
            Note::new("b", "Trained staff", "Staff were trained. RAG는 싸다"),
            Note::new("c", "Empty", ""),
            Note::new("d", "Costs", "Cost, cost, COST. 운영비용은 크다"),
        ]
    }

    /// Every word's notes, computed note by note the plain way.
    fn by_hand(split: impl Fn(&str) -> Vec<String>) -> BTreeMap<String, Vec<u32>> {
        let mut out: BTreeMap<String, BTreeSet<u32>> = BTreeMap::new();
        for (i, n) in notes().iter().enumerate() {
            for w in split(&format!("{}\n{}", n.title, n.text)) {
                out.entry(w).or_default().insert(u32::try_from(i).unwrap());
            }
        }
        out.into_iter()
            .map(|(w, n)| (w, n.into_iter().collect()))
            .collect()
    }

    #[test]
    fn stems_and_terms_are_those_of_each_note() {
        let v = Vocabulary::build(&notes(), &mut |_| {});
        let stems: BTreeMap<String, Vec<u32>> = (0..v.stem_count())
            .map(|i| (v.stem(i).to_owned(), v.stem_notes(i).to_vec()))
            .collect();
        assert_eq!(stems, by_hand(words));
        let terms: BTreeMap<String, Vec<u32>> = (0..v.term_count())
            .map(|i| (v.term(i).to_owned(), v.term_notes(i).to_vec()))
            .collect();
        assert_eq!(terms, by_hand(tokenize));
        assert_eq!(
            v.stem_id("cost").map(|i| v.stem_notes(i)),
            Some(&[0, 3][..])
        );
        assert_eq!(v.stem_id("absent"), None);
        let range = v.stems_starting_with("co");
        let found: Vec<&str> = range.map(|i| v.stem(i)).collect();
        assert_eq!(found, ["cost"]);
    }
}
