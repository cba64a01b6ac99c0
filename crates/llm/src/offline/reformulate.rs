//! Reformulating a sub-question's query from the corpus vocabulary. Shared by
//! the assessor (is a gap recoverable?), the replanner (what to try next?)
//! and the ReAct actor, so all give the same answer.
//!
//! A new query only ever uses variants of the sub-question's own words
//! (same stem: "maintenance" → "maintain", never "training" → "trail") and
//! the synonyms of a dimension's words the notes use ("uptime" for
//! reliability, from [`synonyms`]), and none at all when the notes lack
//! enough of them to meet the relevance rule: no wording can find what the
//! notes never mention.

use std::sync::Arc;

use stepwise_core::{RunState, Step};
use stepwise_tools::notes::stem::stem;

use super::judge::{Lens, query_of};
use super::planner::search_words;
use super::relevance::{DIMENSION_SHARE, Lexicon, content};
use super::synonyms;

/// Surface forms tried per word.
const FORMS_PER_WORD: usize = 2;

/// Proposes new queries for a sub-question from the words the corpus uses.
#[derive(Debug)]
pub struct Reformulator {
    lexicon: Arc<Lexicon>,
}

impl Reformulator {
    /// A reformulator over this lexicon.
    pub fn new(lexicon: Arc<Lexicon>) -> Self {
        Self { lexicon }
    }

    /// The lexicon it reads.
    pub(crate) fn lexicon(&self) -> &Lexicon {
        &self.lexicon
    }

    /// The corpus's spellings of a stem: its variants as the notes write them.
    fn forms(&self, term: &str) -> Vec<String> {
        if term.chars().any(|c| ('\u{AC00}'..='\u{D7A3}').contains(&c)) {
            return if self.lexicon.knows(term) {
                vec![term.to_owned()]
            } else {
                Vec::new()
            };
        }
        self.lexicon.surface_forms(term, FORMS_PER_WORD)
    }

    /// Candidate queries, best first; empty when the words the notes know
    /// cover less of the sub-question's weight than the judge needs.
    fn candidates(&self, lens: &Lens<'_>, description: &str) -> Vec<String> {
        let terms = match lens.asked.dimension_of(description) {
            Some(d) if !content(d).is_empty() => content(d),
            Some(d) => stepwise_tools::text::words(d),
            None => content(description),
        };
        let known = |p: &String| self.lexicon.knows(&stem(p));
        let mut forms: Vec<String> = Vec::new();
        let mut said: Vec<&String> = Vec::new();
        for t in &terms {
            let mut f = self.forms(t);
            // A synonym the notes use ("uptime" for reliability) is a way
            // to say the term; the judge still reads the sentence found.
            f.extend(
                synonyms::of(t)
                    .into_iter()
                    .filter(|s| s.parts().iter().all(known))
                    .map(|s| s.text.clone()),
            );
            if !f.is_empty() {
                said.push(t);
            }
            for w in f {
                if !forms.contains(&w) {
                    forms.push(w);
                }
            }
        }
        for s in synonyms::of_dimension(&terms) {
            if s.parts().iter().all(known) && !forms.contains(&s.text) {
                forms.push(s.text.clone());
                said = terms.iter().collect();
            }
        }
        if forms.is_empty()
            || self.lexicon.share(&terms, |t| said.iter().any(|s| *s == t)) < DIMENSION_SHARE
        {
            return Vec::new();
        }
        let entities: Vec<String> = lens
            .asked
            .entities
            .iter()
            .flat_map(|e| search_words(e))
            .filter(|w| self.lexicon.knows(&stem(w)))
            .collect();
        let mut out = vec![forms.join(" ")];
        if !entities.is_empty() {
            out.push(
                forms
                    .iter()
                    .chain(&entities)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(" "),
            );
        }
        out
    }

    /// The next query to try for `step`'s sub-question: the first candidate
    /// no step of this run has searched for yet. Only search steps have a
    /// query to reword.
    pub fn next_query(&self, state: &RunState, step: &Step) -> Option<String> {
        if step.tool != "search_notes" {
            return None;
        }
        let tried: Vec<String> = state
            .plan
            .steps
            .iter()
            // A query run on sources since replaced is not tried on these.
            .filter(|s| s.description == step.description && !state.stale_steps.contains(&s.id))
            .map(query_of)
            .collect();
        let lens = Lens::new(&self.lexicon, state);
        self.candidates(&lens, &step.description)
            .into_iter()
            .find(|q| !tried.contains(q))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use stepwise_core::Constraints;
    use stepwise_tools::notes::{Corpus, Note};

    use super::*;

    /// Notes that use look-alikes of the asked words, and one real variant
    /// or synonym each.
    fn reformulator() -> Reformulator {
        let corpus = Corpus::from_notes([
            Note::new("audit", "Audit", "The audit trail is kept for seven years."),
            Note::new(
                "route",
                "Routing",
                "Orders go through the gateway before the queue.",
            ),
            Note::new(
                "upkeep",
                "Index",
                "One person maintains the index every week.",
            ),
            Note::new("survey", "설문", "시범 기간에 생산성이 9% 올랐다."),
            Note::new(
                "pilot",
                "Pilot",
                "Uptime was 99.9% and it is important to import data.",
            ),
        ])
        .unwrap();
        Reformulator::new(Arc::new(Lexicon::new(Arc::new(corpus))))
    }

    #[test]
    fn a_reformulation_never_changes_a_terms_stem() {
        let r = reformulator();
        for (dimension, expected) in [
            ("training", None),
            ("throughput", None),
            ("maintenance", Some("maintain")),
            ("생산성", Some("생산성")),
            // A synonym the notes use, as written.
            ("reliability", Some("uptime")),
            // Neither the word nor a synonym ("scale") in the notes.
            ("scalability", None),
        ] {
            let c = Constraints {
                comparison_dimensions: vec![dimension.to_owned()],
                ..Constraints::default()
            };
            let lens = Lens::for_goal(r.lexicon(), "Should we change?", &c);
            let first = r.candidates(&lens, dimension).into_iter().next();
            assert_eq!(first.as_deref(), expected, "{dimension}");
        }
    }
}
