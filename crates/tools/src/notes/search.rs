//! Ranking notes by their title and their best passage.
//!
//! Two BM25 indexes: one over passages (see [`passages`](super::passages)),
//! one over note titles. A note's score is its title's score plus the score
//! of its best passage — the best one, not a sum, so a long note does not win
//! by having many weak matches; the title, because a note *about* the query
//! should beat one that mentions it in passing. The passages quoted with a
//! result are the note's best-scoring ones by their own text, so the evidence
//! shown actually contains the query's words (or its section heading does);
//! a note matched by its title
//! alone is shown with its first passage. Ties break by note id, then by
//! position in the note, so the same query over the same corpus always gives
//! the same answer.

use std::collections::BTreeMap;

use super::bm25::Bm25Index;
use super::corpus::Note;
use super::passages::split_sections;
use super::tokenize::tokenize;

/// At most this many passages are returned per note.
pub const MAX_PASSAGES_PER_NOTE: usize = 3;

/// One matching note.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchHit {
    /// The note's id.
    pub note_id: String,
    /// The note's title.
    pub title: String,
    /// Title score plus best passage score (always > 0).
    pub score: f64,
    /// Its best matching passages, best first, at most
    /// [`MAX_PASSAGES_PER_NOTE`]; empty only for a note without text.
    pub passages: Vec<String>,
}

/// A passage and the note (by position in the corpus) it belongs to.
#[derive(Debug, Clone)]
struct Passage {
    note: usize,
    text: String,
}

/// A passage's score for the current query.
#[derive(Debug, Clone, Copy)]
struct PassageScore {
    score: f64,
    passage: usize,
}

/// A note that matched: its title score and its matching passages.
#[derive(Debug, Clone, Default)]
struct Candidate {
    title_score: f64,
    /// Sorted best first before ranking.
    passages: Vec<PassageScore>,
}

impl Candidate {
    /// Title score plus best passage score.
    fn total(&self) -> f64 {
        let best = self.passages.iter().map(|p| p.score).fold(0.0, f64::max);
        self.title_score + best
    }
}

/// The passages and titles of a list of notes, indexed.
#[derive(Debug, Clone, Default)]
pub(crate) struct PassageIndex {
    passages: Vec<Passage>,
    /// One document per passage, in `passages` order.
    bodies: Bm25Index,
    /// One document per note, in note order.
    titles: Bm25Index,
}

impl PassageIndex {
    /// Splits every note into passages and indexes them and the titles.
    pub(crate) fn build(notes: &[Note]) -> Self {
        let mut passages = Vec::new();
        let mut indexed = Vec::new();
        for (i, note) in notes.iter().enumerate() {
            for (text, heading) in split_sections(&note.text) {
                // A passage is scored with the heading it sits under (unless
                // that is the title, scored on its own): a paragraph under
                // "## Durability" is found by a search for durability.
                let heading = heading.filter(|h| *h != note.title);
                indexed.push(match heading {
                    Some(h) => tokenize(&format!("{h}\n{text}")),
                    None => tokenize(&text),
                });
                passages.push(Passage { note: i, text });
            }
        }
        Self {
            bodies: Bm25Index::new(indexed),
            titles: Bm25Index::new(notes.iter().map(|n| tokenize(&n.title))),
            passages,
        }
    }

    /// Number of passages.
    pub(crate) fn len(&self) -> usize {
        self.passages.len()
    }

    /// The best `limit` notes for `query`. `notes` must be the list the
    /// index was built from.
    pub(crate) fn search(&self, notes: &[Note], query: &str, limit: usize) -> Vec<SearchHit> {
        let terms = tokenize(query);
        if terms.is_empty() || limit == 0 {
            return Vec::new();
        }
        let mut by_note: BTreeMap<usize, Candidate> = BTreeMap::new();
        for (note, score) in self.titles.scores(&terms).into_iter().enumerate() {
            if score > 0.0 {
                by_note.entry(note).or_default().title_score = score;
            }
        }
        for (passage, score) in self.bodies.scores(&terms).into_iter().enumerate() {
            if score > 0.0 {
                let note = self.passages[passage].note;
                by_note
                    .entry(note)
                    .or_default()
                    .passages
                    .push(PassageScore { score, passage });
            }
        }
        let mut ranked: Vec<(usize, Candidate)> = by_note.into_iter().collect();
        for (_, candidate) in &mut ranked {
            candidate
                .passages
                .sort_by(|a, b| b.score.total_cmp(&a.score).then(a.passage.cmp(&b.passage)));
        }
        // Notes are sorted by id, so the note position is the id tie-breaker.
        ranked.sort_by(|(a_note, a), (b_note, b)| {
            b.total().total_cmp(&a.total()).then(a_note.cmp(b_note))
        });
        ranked
            .into_iter()
            .take(limit)
            .filter_map(|(note, candidate)| {
                let note_ref = notes.get(note)?;
                let mut passages: Vec<String> = candidate
                    .passages
                    .iter()
                    .take(MAX_PASSAGES_PER_NOTE)
                    .map(|p| self.passages[p.passage].text.clone())
                    .collect();
                if passages.is_empty() {
                    // Matched by title only: show how the note begins.
                    passages.extend(self.first_passage(note).map(str::to_owned));
                }
                Some(SearchHit {
                    note_id: note_ref.id.clone(),
                    title: note_ref.title.clone(),
                    score: candidate.total(),
                    passages,
                })
            })
            .collect()
    }

    /// The first passage of a note. Passages are stored in note order.
    fn first_passage(&self, note: usize) -> Option<&str> {
        let start = self.passages.partition_point(|p| p.note < note);
        self.passages
            .get(start)
            .filter(|p| p.note == note)
            .map(|p| p.text.as_str())
    }
}

#[cfg(test)]
mod tests {
    use crate::notes::bm25::Bm25Index;
    use crate::notes::tokenize::tokenize;
    use crate::notes::{Corpus, Note};

    fn corpus() -> Corpus {
        Corpus::from_notes([
            Note::new(
                "b-costs",
                "Fine-tuning cost",
                "# Fine-tuning cost\n\nShort one.\n\nTraining runs cost money.\n\nWeather.",
            ),
            Note::new(
                "a-rag",
                "RAG",
                "Retrieval keeps cost low.\n\nLatency is fine.",
            ),
            Note::new("c-ko", "비용", "파인튜닝 비용은 크다."),
            Note::new("d-same", "Same", "identical words"),
            Note::new("e-same", "Same", "identical words"),
            Note::new(
                "f-title",
                "Zebra crossings",
                "Nothing else here.\n\nOr here.",
            ),
        ])
        .unwrap()
    }

    #[test]
    fn the_note_whose_title_and_passage_match_ranks_first() {
        let hits = corpus().search("fine-tuning cost", 5);
        let ids: Vec<_> = hits.iter().map(|h| h.note_id.as_str()).collect();
        assert_eq!(ids, ["b-costs", "a-rag"]);
        assert!(hits[0].score > hits[1].score);
        // Only passages that contain query words are quoted, best first.
        assert_eq!(hits[0].passages, ["Training runs cost money."]);
        assert_eq!(
            hits[1].passages,
            ["Latency is fine.", "Retrieval keeps cost low."]
        );
    }

    #[test]
    fn a_score_is_the_title_score_plus_the_best_passage_score() {
        let corpus = corpus();
        let query = tokenize("cost money");
        let titles = Bm25Index::new(corpus.notes().iter().map(|n| tokenize(&n.title)));
        let title_score = titles.scores(&query)[1]; // b-costs is the second note by id
        // Passages in note order: a-rag (2), b-costs (3), c-ko, d, e, f-title (2).
        let passages = [
            "Retrieval keeps cost low.",
            "Latency is fine.",
            "Short one.",
            "Training runs cost money.",
            "Weather.",
            "파인튜닝 비용은 크다.",
            "identical words",
            "identical words",
            "Nothing else here.",
            "Or here.",
        ];
        let bodies = Bm25Index::new(passages.iter().map(|p| tokenize(p)));
        let best_passage = bodies.scores(&query)[3];
        let hit = &corpus.search("cost money", 1)[0];
        assert_eq!(hit.note_id, "b-costs");
        assert!((hit.score - (title_score + best_passage)).abs() < 1e-9);
    }

    #[test]
    fn a_title_only_match_shows_the_first_passage() {
        let hits = corpus().search("zebra", 5);
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].passages, ["Nothing else here."]);
    }

    #[test]
    fn korean_queries_match_inflected_forms() {
        let hits = corpus().search("비용", 5);
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].note_id, "c-ko");
        assert_eq!(hits[0].passages, ["파인튜닝 비용은 크다."]);
    }

    #[test]
    fn ties_break_by_id_and_limit_applies() {
        let hits = corpus().search("identical", 5);
        let ids: Vec<_> = hits.iter().map(|h| h.note_id.as_str()).collect();
        assert_eq!(ids, ["d-same", "e-same"]);
        assert_eq!(hits[0].score, hits[1].score);
        assert_eq!(corpus().search("identical", 1).len(), 1);
    }

    #[test]
    fn queries_without_terms_or_matches_find_nothing() {
        assert!(corpus().search("the of", 5).is_empty());
        assert!(corpus().search("giraffe", 5).is_empty());
        assert!(corpus().search("cost", 0).is_empty());
    }

    #[test]
    fn a_note_without_text_can_still_match_by_title() {
        let corpus = Corpus::from_notes([Note::new("x", "Empty note", "")]).unwrap();
        let hits = corpus.search("empty", 5);
        assert_eq!(hits.len(), 1);
        assert!(hits[0].passages.is_empty());
    }
}
