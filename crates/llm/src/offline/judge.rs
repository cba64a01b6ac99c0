//! Judging a search step's evidence: the acceptance rule shared by the
//! assessor (is the step done?), the reformulator (what could fix it?) and
//! the synthesizer (which sentences may back a section?).
//!
//! A `search_notes` step meets its criteria when
//! - at least one result scores [`MIN_SCORE`] or more,
//! - the passages of those results cover at least [`MIN_COVERAGE`] of the
//!   query's key terms, and
//! - for a sub-question about one constraint dimension or section ("cost:
//!   …"), every *focus* term of that dimension appears in the evidence, either
//!   as itself or as the corpus variant the query searched for (a
//!   reformulated query may say "maintain" for "maintenance": same first
//!   [`STEM_CHARS`] letters). Otherwise topic words alone could "answer" a
//!   question about a dimension the notes never mention.

use serde_json::Value;
use stepwise_core::{Constraints, Step};

use super::search::{Hit, hits, key_terms};
use super::{MIN_COVERAGE, MIN_SCORE};

/// Letters two words must share at the start to count as variants.
pub(crate) const STEM_CHARS: usize = 4;

/// Whether `a` and `b` are variants of one word (same first [`STEM_CHARS`] letters).
pub(crate) fn same_stem(a: &str, b: &str) -> bool {
    let prefix = |s: &str| s.chars().take(STEM_CHARS).collect::<String>();
    a.chars().count() >= STEM_CHARS && b.chars().count() >= STEM_CHARS && prefix(a) == prefix(b)
}

/// The query a step searched for.
pub(crate) fn query_of(step: &Step) -> String {
    step.args
        .get("query")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// The focus terms of a sub-question: the key terms of the constraint
/// section or dimension it was planned for, if any.
pub(crate) fn focus_of(constraints: &Constraints, description: &str) -> Vec<String> {
    constraints
        .required_sections
        .iter()
        .chain(&constraints.comparison_dimensions)
        .find(|d| {
            description
                .strip_prefix(d.as_str())
                .is_some_and(|rest| rest.starts_with(": "))
        })
        .map(|d| key_terms(d))
        .unwrap_or_default()
}

/// What a search step's output shows.
#[derive(Debug, Clone)]
pub(crate) struct Judgement {
    /// Results scoring at least [`MIN_SCORE`].
    pub(crate) good: Vec<Hit>,
    /// Share of the query's key terms found in their passages.
    pub(crate) coverage: f64,
    /// Focus terms found neither as themselves nor as a searched variant.
    pub(crate) missing_focus: Vec<String>,
    /// Terms that count as the focus in this step's evidence (focus terms and
    /// the variants the query used for them).
    pub(crate) focus_words: Vec<String>,
}

impl Judgement {
    /// Whether the step meets its acceptance criteria.
    pub(crate) fn met(&self) -> bool {
        !self.good.is_empty() && self.coverage >= MIN_COVERAGE && self.missing_focus.is_empty()
    }

    /// Why it does not, for a person.
    pub(crate) fn shortfall(&self, query: &str) -> String {
        if self.good.is_empty() {
            format!("no passage scored >= {MIN_SCORE} for {query:?}")
        } else if !self.missing_focus.is_empty() {
            format!("no passage mentions {}", self.missing_focus.join(", "))
        } else {
            format!(
                "the evidence covers only {:.0}% of the key terms of {query:?}",
                self.coverage * 100.0
            )
        }
    }
}

/// Judges one search step's output.
pub(crate) fn judge(constraints: &Constraints, step: &Step, output: &Value) -> Judgement {
    let good: Vec<Hit> = hits(output)
        .into_iter()
        .filter(|h| h.score >= MIN_SCORE)
        .collect();
    let mut text = String::new();
    for h in &good {
        text.push_str(&h.title);
        text.push('\n');
        for p in &h.passages {
            text.push_str(p);
            text.push('\n');
        }
    }
    let found = key_terms(&text);
    let query_terms = key_terms(&query_of(step));
    let coverage = if query_terms.is_empty() {
        0.0
    } else {
        query_terms.iter().filter(|t| found.contains(t)).count() as f64 / query_terms.len() as f64
    };
    let focus = focus_of(constraints, &step.description);
    let mut focus_words = Vec::new();
    let mut missing_focus = Vec::new();
    for f in &focus {
        let variants: Vec<&String> = query_terms
            .iter()
            .filter(|q| *q == f || same_stem(q, f))
            .filter(|q| found.contains(q))
            .collect();
        if found.contains(f) {
            focus_words.push(f.clone());
        }
        focus_words.extend(variants.iter().map(|v| (*v).clone()));
        if !found.contains(f) && variants.is_empty() {
            missing_focus.push(f.clone());
        }
    }
    Judgement {
        good,
        coverage,
        missing_focus,
        focus_words,
    }
}
