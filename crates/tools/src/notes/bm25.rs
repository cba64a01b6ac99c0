//! Okapi BM25 over pre-tokenised documents.
//!
//! Written here rather than taken from a crate so that tokenisation (see
//! [`tokenize`](mod@crate::text::tokenize)) stays entirely ours and the scores are easy
//! to check by hand: for a query `Q` and a document `D`,
//!
//! ```text
//! score(D, Q) = Σ_{t ∈ Q} idf(t) · tf(t, D) · (k1 + 1)
//!                         / (tf(t, D) + k1 · (1 − b + b · |D| / avgdl))
//! idf(t)      = ln(1 + (N − df(t) + 0.5) / (df(t) + 0.5))
//! ```
//!
//! with `k1 = 1.2`, `b = 0.75` by default. Each *distinct* query term counts
//! once, so repeating a word in a query does not change the ranking.

use std::collections::HashSet;

// FxHash, not SipHash: a corpus is the user's own notes, not an adversary's.
use rustc_hash::FxHashMap;

/// BM25's two tuning constants.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bm25Params {
    /// Term-frequency saturation: how quickly extra occurrences stop helping.
    pub k1: f64,
    /// Length normalisation: 0 ignores document length, 1 normalises fully.
    pub b: f64,
}

impl Default for Bm25Params {
    /// The usual `k1 = 1.2`, `b = 0.75`.
    fn default() -> Self {
        Self { k1: 1.2, b: 0.75 }
    }
}

/// An inverted index over documents numbered `0..len()` in insertion order.
#[derive(Debug, Clone, Default)]
pub struct Bm25Index {
    params: Bm25Params,
    /// term → its number, the position of its postings.
    ids: FxHashMap<Box<str>, u32>,
    /// By term number: (document, term frequency), documents ascending.
    postings: Vec<Box<[(u32, u32)]>>,
    doc_lens: Vec<u32>,
    avg_doc_len: f64,
}

impl Bm25Index {
    /// Indexes `docs` (each a list of terms) with the default parameters.
    pub fn new<I, D>(docs: I) -> Self
    where
        I: IntoIterator<Item = D>,
        D: IntoIterator<Item = String>,
    {
        Self::with_params(docs, Bm25Params::default())
    }

    /// Indexes `docs` with the given parameters.
    pub fn with_params<I, D>(docs: I, params: Bm25Params) -> Self
    where
        I: IntoIterator<Item = D>,
        D: IntoIterator<Item = String>,
    {
        let mut builder = Bm25Builder::default();
        for terms in docs {
            for term in terms {
                builder.term(&term);
            }
            builder.end_doc();
        }
        builder.finish(params)
    }

    /// Number of documents.
    pub fn len(&self) -> usize {
        self.doc_lens.len()
    }

    /// Whether there are no documents.
    pub fn is_empty(&self) -> bool {
        self.doc_lens.is_empty()
    }

    /// Number of distinct terms.
    pub fn terms(&self) -> usize {
        self.postings.len()
    }

    fn postings(&self, term: &str) -> &[(u32, u32)] {
        self.ids
            .get(term)
            .and_then(|&id| self.postings.get(id as usize))
            .map_or(&[][..], |p| &p[..])
    }

    /// Number of documents containing `term`.
    pub fn doc_freq(&self, term: &str) -> usize {
        self.postings(term).len()
    }

    /// `ln(1 + (N − df + 0.5) / (df + 0.5))`: always positive, so a term that
    /// occurs everywhere still counts a little instead of penalising matches.
    pub fn idf(&self, term: &str) -> f64 {
        let n = self.len() as f64;
        let df = self.doc_freq(term) as f64;
        (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
    }

    /// The score of every document for `query`, indexed by document number.
    /// Documents sharing no term with the query score exactly 0.
    pub fn scores(&self, query: &[String]) -> Vec<f64> {
        let mut scores = vec![0.0; self.len()];
        self.add_scores(query, &mut scores, |_| {});
        scores
    }

    /// The documents sharing a term with `query` and their scores (> 0),
    /// by document number: [`scores`](Self::scores) without the documents
    /// that score 0, found through the query's postings alone.
    pub fn matches(&self, query: &[String]) -> Vec<(usize, f64)> {
        let mut scores = vec![0.0; self.len()];
        let mut hit = Vec::new();
        self.add_scores(query, &mut scores, |doc| hit.push(doc));
        hit.sort_unstable();
        hit.dedup();
        hit.into_iter()
            .map(|doc| (doc, scores[doc]))
            .filter(|&(_, score)| score > 0.0)
            .collect()
    }

    /// Adds each query term's share to `scores`, calling `first` with each
    /// document the first time it scores.
    fn add_scores(&self, query: &[String], scores: &mut [f64], mut first: impl FnMut(usize)) {
        let Bm25Params { k1, b } = self.params;
        let mut seen = HashSet::new();
        // Query order, not hash order: float sums must add up the same way every run.
        for term in query {
            if !seen.insert(term.as_str()) {
                continue;
            }
            let postings = self.postings(term);
            if postings.is_empty() {
                continue;
            }
            let idf = self.idf(term);
            for &(doc, tf) in postings {
                let doc = doc as usize;
                let tf = f64::from(tf);
                let len_ratio = if self.avg_doc_len > 0.0 {
                    f64::from(self.doc_lens[doc]) / self.avg_doc_len
                } else {
                    1.0
                };
                let norm = k1 * (1.0 - b + b * len_ratio);
                if scores[doc] == 0.0 {
                    first(doc);
                }
                scores[doc] += idf * tf * (k1 + 1.0) / (tf + norm);
            }
        }
    }
}

/// Builds a [`Bm25Index`] one term at a time, without a `String` per term.
#[derive(Debug, Default)]
pub(crate) struct Bm25Builder {
    ids: FxHashMap<Box<str>, u32>,
    postings: Vec<Vec<(u32, u32)>>,
    doc_lens: Vec<u32>,
    /// The current document's term numbers.
    doc: Vec<u32>,
}

impl Bm25Builder {
    /// Adds a term to the current document.
    pub(crate) fn term(&mut self, term: &str) {
        let id = match self.ids.get(term) {
            Some(&id) => id,
            None => {
                let id = u32::try_from(self.postings.len()).unwrap_or(u32::MAX);
                self.ids.insert(term.into(), id);
                self.postings.push(Vec::new());
                id
            }
        };
        self.doc.push(id);
    }

    /// Ends the current document: the next term starts the next one.
    pub(crate) fn end_doc(&mut self) {
        let doc = u32::try_from(self.doc_lens.len()).unwrap_or(u32::MAX);
        self.doc_lens
            .push(u32::try_from(self.doc.len()).unwrap_or(u32::MAX));
        self.doc.sort_unstable();
        for run in self.doc.chunk_by(|a, b| a == b) {
            let tf = u32::try_from(run.len()).unwrap_or(u32::MAX);
            if let Some(p) = self.postings.get_mut(run[0] as usize) {
                p.push((doc, tf));
            }
        }
        self.doc.clear();
    }

    /// The index.
    pub(crate) fn finish(self, params: Bm25Params) -> Bm25Index {
        let total: u64 = self.doc_lens.iter().map(|&l| u64::from(l)).sum();
        let avg_doc_len = if self.doc_lens.is_empty() {
            0.0
        } else {
            total as f64 / self.doc_lens.len() as f64
        };
        let mut ids = self.ids;
        ids.shrink_to_fit();
        let mut doc_lens = self.doc_lens;
        doc_lens.shrink_to_fit();
        Bm25Index {
            params,
            ids,
            postings: self
                .postings
                .into_iter()
                .map(Vec::into_boxed_slice)
                .collect(),
            doc_lens,
            avg_doc_len,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_owned).collect()
    }

    /// The formula, written out once more independently of the index.
    fn expected(tf: f64, doc_len: f64, avgdl: f64, n: f64, df: f64) -> f64 {
        let (k1, b) = (1.2, 0.75);
        let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
        idf * tf * (k1 + 1.0) / (tf + k1 * (1.0 - b + b * doc_len / avgdl))
    }

    fn close(actual: f64, expected: f64) {
        assert!(
            (actual - expected).abs() < 1e-9,
            "{actual} is not {expected}"
        );
    }

    #[test]
    fn matches_hand_computed_scores_on_a_toy_corpus() {
        // d0: 4 terms, d1: 2 terms, d2: 3 terms → avgdl = 3.
        let index = Bm25Index::new([
            terms("rag cost cost latency"),
            terms("rag tuning"),
            terms("tuning cost eval"),
        ]);
        let (n, avgdl) = (3.0, 3.0);
        // df: rag = 2 (d0, d1), cost = 2 (d0, d2), tuning = 2, eval = 1.
        close(index.idf("cost"), (1.0 + (3.0 - 2.0 + 0.5) / 2.5_f64).ln());
        close(index.idf("eval"), (1.0 + 2.5 / 1.5_f64).ln());
        close(index.idf("absent"), (1.0 + 3.5 / 0.5_f64).ln());

        let scores = index.scores(&terms("cost tuning"));
        // d0: cost tf 2 (len 4); d1: tuning tf 1 (len 2); d2: cost + tuning, tf 1 each (len 3).
        close(scores[0], expected(2.0, 4.0, avgdl, n, 2.0));
        close(scores[1], expected(1.0, 2.0, avgdl, n, 2.0));
        close(
            scores[2],
            expected(1.0, 3.0, avgdl, n, 2.0) + expected(1.0, 3.0, avgdl, n, 2.0),
        );
        // And the numbers themselves, so a shared mistake in both formulas shows:
        // idf(cost) = ln(1.6) = 0.470003629..., d2 = 2 · idf · 2.2 / 2.2.
        close(scores[2], 2.0 * 1.6_f64.ln());

        let rare = index.scores(&terms("eval"));
        close(rare[2], expected(1.0, 3.0, avgdl, n, 1.0));
        assert_eq!((rare[0], rare[1]), (0.0, 0.0));
    }

    #[test]
    fn repeated_query_terms_count_once() {
        let index = Bm25Index::new([terms("a b"), terms("b c")]);
        assert_eq!(index.scores(&terms("a a b")), index.scores(&terms("a b")));
    }

    #[test]
    fn empty_index_and_empty_documents_score_zero() {
        let empty = Bm25Index::new(Vec::<Vec<String>>::new());
        assert!(empty.is_empty());
        assert!(empty.scores(&terms("x")).is_empty());

        let blank = Bm25Index::new([Vec::new(), Vec::new()]);
        assert_eq!(blank.scores(&terms("x")), [0.0, 0.0]);
    }
}
