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

use super::bm25::{Bm25Builder, Bm25Index, Bm25Params};
use super::note::Note;
use crate::text::passages::split_sections;
use crate::text::tokenize::{for_each_term, tokenize};

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

/// A passage, the note (by position in the corpus) it belongs to, and the
/// heading it is scored with (by position in [`PassageIndex::headings`]).
#[derive(Debug, Clone)]
struct Passage {
    note: u32,
    heading: Option<u32>,
    text: Box<str>,
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
    /// In note order, each note's in the order of its text.
    passages: Vec<Passage>,
    /// The headings passages sit under (other than their note's title);
    /// consecutive passages under one heading share it.
    headings: Vec<Box<str>>,
    /// One document per passage, in `passages` order.
    bodies: Bm25Index,
    /// One document per note, in note order.
    titles: Bm25Index,
}

impl PassageIndex {
    /// Splits every note into passages and indexes them and the titles;
    /// `progress` is told the bytes of each note's text once it is indexed.
    pub(crate) fn build(notes: &[Note], progress: &mut dyn FnMut(usize)) -> Self {
        let mut passages = Vec::new();
        let mut headings: Vec<Box<str>> = Vec::new();
        let mut bodies = Bm25Builder::default();
        let mut titles = Bm25Builder::default();
        for (i, note) in notes.iter().enumerate() {
            let note_pos = u32::try_from(i).unwrap_or(u32::MAX);
            for (text, heading) in split_sections(&note.text) {
                // A passage is scored with the heading it sits under (unless
                // that is the title, scored on its own): a paragraph under
                // "## Durability" is found by a search for durability.
                let heading = heading.filter(|h| *h != note.title);
                let lowered = match &heading {
                    Some(h) => format!("{h}\n{text}").to_lowercase(),
                    None => text.to_lowercase(),
                };
                for_each_term(&lowered, |t| bodies.term(t));
                bodies.end_doc();
                let heading = heading.map(|h| {
                    let same = passages
                        .last()
                        .filter(|p: &&Passage| p.note == note_pos)
                        .and_then(|p| p.heading)
                        .filter(|&at| headings.get(at as usize).is_some_and(|x| **x == *h));
                    same.unwrap_or_else(|| {
                        headings.push(h.into_boxed_str());
                        u32::try_from(headings.len() - 1).unwrap_or(u32::MAX)
                    })
                });
                passages.push(Passage {
                    note: note_pos,
                    heading,
                    text: text.into_boxed_str(),
                });
            }
            for_each_term(&note.title.to_lowercase(), |t| titles.term(t));
            titles.end_doc();
            progress(note.text.len());
        }
        passages.shrink_to_fit();
        headings.shrink_to_fit();
        Self {
            bodies: bodies.finish(Bm25Params::default()),
            titles: titles.finish(Bm25Params::default()),
            passages,
            headings,
        }
    }

    /// Number of passages.
    pub(crate) fn len(&self) -> usize {
        self.passages.len()
    }

    /// The passages of the note at position `note`, in order, each with the
    /// heading it sits under unless that is the note's title: what
    /// [`split_sections`] gives for its text.
    pub(crate) fn passages_of(&self, note: usize) -> impl Iterator<Item = (&str, Option<&str>)> {
        let start = self.passages.partition_point(|p| (p.note as usize) < note);
        self.passages[start..]
            .iter()
            .take_while(move |p| p.note as usize == note)
            .map(|p| {
                let heading = p
                    .heading
                    .and_then(|h| self.headings.get(h as usize))
                    .map(|h| &**h);
                (&*p.text, heading)
            })
    }

    /// The best `limit` notes for `query`. `notes` must be the list the
    /// index was built from.
    pub(crate) fn search(&self, notes: &[Note], query: &str, limit: usize) -> Vec<SearchHit> {
        let terms = tokenize(query);
        if terms.is_empty() || limit == 0 {
            return Vec::new();
        }
        let mut by_note: BTreeMap<usize, Candidate> = BTreeMap::new();
        for (note, score) in self.titles.matches(&terms) {
            by_note.entry(note).or_default().title_score = score;
        }
        for (passage, score) in self.bodies.matches(&terms) {
            let note = self.passages[passage].note as usize;
            by_note
                .entry(note)
                .or_default()
                .passages
                .push(PassageScore { score, passage });
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
                    .map(|p| self.passages[p.passage].text.to_string())
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
        self.passages_of(note).next().map(|(text, _)| text)
    }
}

#[cfg(test)]
mod tests {
    use crate::notes::bm25::Bm25Index;
    use crate::notes::{Corpus, Note};
    use crate::text::tokenize::tokenize;

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
