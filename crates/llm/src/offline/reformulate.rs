//! Reformulating a sub-question's query from the corpus vocabulary. Shared by
//! the assessor (is a gap recoverable?) and the replanner (what to try next?),
//! so both give the same answer.

use std::collections::BTreeSet;
use std::sync::{Arc, OnceLock};

use stepwise_core::{RunState, Step};
use stepwise_tools::notes::Corpus;

use super::judge::{STEM_CHARS, focus_of, query_of, same_stem};
use super::search::key_terms;

/// Proposes new queries for a sub-question from the words the corpus uses.
#[derive(Debug)]
pub struct Reformulator {
    corpus: Arc<Corpus>,
    vocabulary: OnceLock<BTreeSet<String>>,
}

impl Reformulator {
    /// A reformulator over this corpus.
    pub fn new(corpus: Arc<Corpus>) -> Self {
        Self {
            corpus,
            vocabulary: OnceLock::new(),
        }
    }

    fn vocabulary(&self) -> &BTreeSet<String> {
        self.vocabulary.get_or_init(|| {
            self.corpus
                .notes()
                .iter()
                .flat_map(|n| stepwise_tools::notes::tokenize(&format!("{}\n{}", n.title, n.text)))
                .collect()
        })
    }

    /// Corpus words for `term`: itself if the corpus has it, else up to
    /// three variants with the same stem ("maintenance" → "maintain", …).
    fn corpus_words(&self, term: &str) -> Vec<String> {
        let vocab = self.vocabulary();
        if vocab.contains(term) {
            return vec![term.to_owned()];
        }
        if term.chars().count() < STEM_CHARS {
            return Vec::new();
        }
        vocab
            .iter()
            .filter(|v| same_stem(v, term))
            .take(3)
            .cloned()
            .collect()
    }

    /// Candidate queries, best first. A sub-question about a dimension
    /// searches for the dimension's corpus words alone, then with the topic's;
    /// any sub-question then tries the terms the corpus knows plus corpus
    /// variants of the others, the known terms alone, and each known term.
    /// Empty when a focus term has no word in the corpus at all: no wording
    /// can find what the notes never mention.
    fn candidates(&self, focus: &[String], sub_question: &str, query: &str) -> Vec<String> {
        let mut terms = key_terms(query);
        for t in key_terms(sub_question) {
            if !terms.contains(&t) {
                terms.push(t);
            }
        }
        let mut focused: Vec<String> = Vec::new();
        for f in focus {
            let words = self.corpus_words(f);
            if words.is_empty() {
                return Vec::new();
            }
            focused.extend(words);
        }
        let known: Vec<String> = terms
            .iter()
            .filter(|t| self.vocabulary().contains(*t) && !focus.contains(t))
            .cloned()
            .collect();
        let mut expanded = focused.clone();
        for t in terms.iter().filter(|t| !focus.contains(t)) {
            for w in self.corpus_words(t) {
                if !expanded.contains(&w) {
                    expanded.push(w);
                }
            }
        }
        let mut out = Vec::new();
        if !focused.is_empty() {
            out.push(focused.join(" "));
            out.push(
                focused
                    .iter()
                    .chain(&known)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(" "),
            );
        }
        out.push(expanded.join(" "));
        out.push(
            focused
                .iter()
                .chain(&known)
                .cloned()
                .collect::<Vec<_>>()
                .join(" "),
        );
        if focused.is_empty() {
            out.extend(known.iter().cloned());
        }
        out.retain(|q| !q.is_empty());
        out
    }

    /// The next query to try for `step`'s sub-question: the first candidate
    /// no step of this run has searched for yet.
    /// Only search steps have a query to reword.
    pub fn next_query(&self, state: &RunState, step: &Step) -> Option<String> {
        if step.tool != "search_notes" {
            return None;
        }
        let tried: Vec<String> = state
            .plan
            .steps
            .iter()
            .filter(|s| s.description == step.description)
            .map(query_of)
            .collect();
        let focus = focus_of(&state.constraints, &step.description);
        self.candidates(&focus, &step.description, &query_of(step))
            .into_iter()
            .find(|q| !tried.contains(q))
    }
}
