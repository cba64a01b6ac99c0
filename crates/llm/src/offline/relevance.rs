//! Relevance by measure: what a sentence is about, weighed by how
//! distinctive its words are in this corpus.
//!
//! - A word's weight is its inverse document frequency over the notes
//!   (BM25's), so a word every note uses ("vendor", "시스템") counts for
//!   little and a rare one for much, in any corpus, without a list of
//!   generic words.
//! - A text **covers** a dimension by the share of the dimension's weight
//!   whose words (or a [`synonyms`](super::synonyms) of them) it mentions.
//! - A note is **on the subject** when it mentions one of the goal's subject
//!   words (the goal without its dimensions and task words; the
//!   alternatives weighed as one) and the notes use more than
//!   [`SUBJECT_SHARE`] of the subject's weight (a word no note uses weighs
//!   as the goal's typical word): corpora about something else give no
//!   evidence, and a note sharing nothing with the goal none either.
//! - A word is a **name** when the notes write it capitalised inside
//!   sentences at least [`NAME_SHARE`] of the time.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use stepwise_tools::notes::Corpus;
use stepwise_tools::text::cues::{Cue, is_cue_word};
use stepwise_tools::text::{has_cue, is_hangul, mentions, same_stem, sentences, stem, words};

use super::asked::Asked;
use super::synonyms;

/// Share of a dimension's (or question's) weight a text must cover: more
/// than half of what it asks, the plain majority rule.
pub(crate) const DIMENSION_SHARE: f64 = 0.5;

/// Share of the subject's weight the notes must use, more than which the
/// corpus is on the subject at all.
pub(crate) const SUBJECT_SHARE: f64 = 0.5;

/// Share of its inner-sentence uses a word is capitalised in to be a name.
const NAME_SHARE: f64 = 0.8;

/// The corpus's words and their weights, memoised per word.
#[derive(Debug)]
pub struct Lexicon {
    corpus: Arc<Corpus>,
    /// The notes (positions) mentioning a stem, per stem asked.
    users: Mutex<HashMap<String, Arc<[u32]>>>,
    /// Whether a lowercase word is a name, per word asked.
    names: Mutex<HashMap<String, bool>>,
}

impl Lexicon {
    /// A lexicon over `corpus`.
    pub fn new(corpus: Arc<Corpus>) -> Self {
        Self {
            corpus,
            users: Mutex::new(HashMap::new()),
            names: Mutex::new(HashMap::new()),
        }
    }

    /// The corpus.
    pub(crate) fn corpus(&self) -> &Corpus {
        &self.corpus
    }

    /// The notes whose words mention `term` (a stem): variants by stem,
    /// Korean compounds by their head.
    pub(crate) fn users(&self, term: &str) -> Arc<[u32]> {
        if let Ok(memo) = self.users.lock()
            && let Some(u) = memo.get(term)
        {
            return Arc::clone(u);
        }
        let v = self.corpus.vocabulary();
        let ids: Vec<usize> = if term.chars().any(is_hangul) {
            (0..v.stem_count())
                .filter(|&i| mentions(&[v.stem(i).to_owned()], term))
                .collect()
        } else {
            let prefix = stepwise_tools::notes::stem::variant_prefix(term).unwrap_or("");
            v.stems_starting_with(prefix)
                .filter(|&i| same_stem(v.stem(i), term))
                .collect()
        };
        let mut notes: Vec<u32> = ids
            .iter()
            .flat_map(|&i| v.stem_notes(i).iter().copied())
            .collect();
        notes.sort_unstable();
        notes.dedup();
        let notes: Arc<[u32]> = notes.into();
        if let Ok(mut memo) = self.users.lock() {
            memo.insert(term.to_owned(), Arc::clone(&notes));
        }
        notes
    }

    /// Search terms of the notes that are variants of `term` (a Latin
    /// stem), at most `max`, the most used first.
    pub(crate) fn surface_forms(&self, term: &str, max: usize) -> Vec<String> {
        let v = self.corpus.vocabulary();
        let prefix = stepwise_tools::notes::stem::variant_prefix(term).unwrap_or("");
        let mut forms: Vec<(usize, String)> = v
            .terms_starting_with(prefix)
            .filter(|&i| same_stem(&stem(v.term(i)), term))
            .map(|i| (v.term_notes(i).len(), v.term(i).to_owned()))
            .collect();
        forms.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        forms.into_iter().take(max).map(|(_, f)| f).collect()
    }

    /// Whether some note uses `term` (a stem) or a variant of it.
    pub(crate) fn knows(&self, term: &str) -> bool {
        !self.users(term).is_empty()
    }

    /// BM25's inverse document frequency of a stem; highest for a word no
    /// note uses.
    pub(crate) fn idf(&self, term: &str) -> f64 {
        let n = self.corpus.len() as f64;
        let df = self.users(term).len() as f64;
        (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
    }

    /// Share of `terms`' weight for which `found` holds.
    pub(crate) fn share(&self, terms: &[String], found: impl Fn(&str) -> bool) -> f64 {
        let total: f64 = terms.iter().map(|t| self.idf(t)).sum();
        let covered: f64 = terms.iter().filter(|t| found(t)).map(|t| self.idf(t)).sum();
        if total > 0.0 { covered / total } else { 0.0 }
    }

    /// A note's title, if the note is in the corpus.
    pub(crate) fn title(&self, note_id: &str) -> &str {
        self.corpus.get(note_id).map_or("", |n| n.title.as_str())
    }

    /// The heading a passage of a note sits under, if any.
    pub(crate) fn heading(&self, note_id: &str, passage: &str) -> Option<&str> {
        let at = self.corpus.position(note_id)?;
        self.corpus
            .passages(at)
            .find(|(p, _)| *p == passage)
            .and_then(|(_, h)| h)
    }

    /// Whether a note says, in its first passage, that it is about
    /// something other than the decision.
    pub(crate) fn excluded(&self, note_id: &str) -> bool {
        self.corpus.position(note_id).is_some_and(|at| {
            self.corpus
                .passages(at)
                .next()
                .is_some_and(|(p, _)| has_cue(p, Cue::SelfExclusion))
        })
    }

    /// Whether a word (as written) is a name: the notes that use it write
    /// it capitalised inside sentences at least [`NAME_SHARE`] of the time.
    /// A word the notes never use inside a sentence is a name when it is
    /// capitalised where it stands.
    pub(crate) fn is_name(&self, word: &str) -> bool {
        let capital = word.chars().next().is_some_and(char::is_uppercase);
        if !capital || word.chars().any(is_hangul) || word.chars().all(|c| c.is_ascii_digit()) {
            return false;
        }
        let lower = word.to_lowercase();
        if let Ok(memo) = self.names.lock()
            && let Some(&n) = memo.get(&lower)
        {
            return n;
        }
        let (mut upper, mut all) = (0usize, 0usize);
        for &note in self.users(&stem(&lower)).iter() {
            let Some(n) = self.corpus.notes().get(note as usize) else {
                continue;
            };
            for s in sentences(&n.text) {
                for (i, w) in s.split_whitespace().enumerate() {
                    let bare = w.trim_matches(|c: char| !c.is_alphanumeric());
                    if i > 0 && bare.to_lowercase() == lower {
                        all += 1;
                        upper += usize::from(bare.chars().next().is_some_and(char::is_uppercase));
                    }
                }
            }
        }
        let name = all == 0 || upper as f64 >= NAME_SHARE * all as f64;
        if let Ok(mut memo) = self.names.lock() {
            memo.insert(lower, name);
        }
        name
    }

    /// The names a sentence mentions inside it (never its first word, nor
    /// a word opening a part after a colon or a bullet).
    pub(crate) fn names_in(&self, sentence: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut opens = true;
        for w in sentence.split_whitespace() {
            let bare = w
                .trim_matches(|c: char| !c.is_alphanumeric())
                .trim_end_matches("'s")
                .trim_end_matches("’s");
            if !opens && self.is_name(bare) {
                out.push(stem(bare));
            }
            opens = w.ends_with([':', '.']) || w.chars().all(|c| !c.is_alphanumeric());
        }
        out
    }
}

/// A stem that asks for the brief rather than naming its subject.
pub(crate) fn is_task_word(s: &str) -> bool {
    is_cue_word(s, Cue::Task)
}

/// The content stems of a text without task words.
pub(crate) fn content(text: &str) -> Vec<String> {
    words(text)
        .into_iter()
        .filter(|w| !is_task_word(w))
        .collect()
}

/// Whether a text (its surface words and stems) mentions a dimension word,
/// itself or by a synonym.
pub(crate) fn says(term: &str, surface: &[String], stems: &[String]) -> bool {
    mentions(stems, term) || synonyms::says(term, surface, stems)
}

/// Share of a dimension's weight a text covers; a synonym of the whole
/// dimension ("bushels per acre" for crop yield) covers all of it.
pub(crate) fn coverage(lexicon: &Lexicon, terms: &[String], text: &str) -> f64 {
    let surface = synonyms::surface(text);
    let stems = words(text);
    if synonyms::of_dimension(terms)
        .iter()
        .any(|s| s.said_in(&surface, &stems))
    {
        return 1.0;
    }
    lexicon.share(terms, |t| says(t, &surface, &stems))
}

/// The goal's subject and names, weighed over the corpus.
#[derive(Debug)]
pub(crate) struct Topic {
    /// Each name the goal mentions, as stems.
    pub(crate) entities: Vec<Vec<String>>,
    /// The subject's stems: the goal without dimensions and task words.
    pub(crate) subject: Vec<String>,
    /// Subject weight per note (position), for the notes that have any.
    weight: HashMap<u32, f64>,
    /// The least weight a note on the subject has; infinite when even the
    /// best note covers too little of the subject.
    needed: f64,
}

impl Topic {
    /// The topic of `goal`, over the lexicon's corpus.
    pub(crate) fn of(lexicon: &Lexicon, goal: &str, asked: &Asked) -> Self {
        let dimension_words: Vec<String> = asked.dimensions.iter().flat_map(|d| words(d)).collect();
        let subject: Vec<String> = content(goal)
            .into_iter()
            .filter(|w| !dimension_words.contains(w))
            .collect();
        // The alternatives are weighed as one: a note on any of them is on
        // the subject as much as a note on all (each proposal names its own).
        // Of a name's words, those the notes use and write as names
        // ("Compare Alpha" opening a goal is Alpha).
        let entities: Vec<Vec<String>> = asked
            .entities
            .iter()
            .map(|e| {
                let kept: Vec<&str> = e
                    .split_whitespace()
                    .filter(|w| {
                        let w = w.trim_matches(|c: char| !c.is_alphanumeric());
                        w.chars().any(is_hangul) || (lexicon.knows(&stem(w)) && lexicon.is_name(w))
                    })
                    .collect();
                words(&kept.join(" "))
            })
            .filter(|e| !e.is_empty())
            .collect();
        let in_entity = |t: &String| entities.iter().flatten().any(|e| e == t);
        // A word no note uses weighs as a typical known word of the goal
        // (the median): "ethanol" counts against a corpus without it, but
        // a goal's ordinary words ("kept up") do not outweigh its subject.
        let mut known: Vec<f64> = subject
            .iter()
            .filter(|t| lexicon.knows(t))
            .map(|t| lexicon.idf(t))
            .collect();
        known.sort_by(f64::total_cmp);
        let typical = known.get(known.len() / 2).copied().unwrap_or(1.0);
        let weigh = |t: &String| {
            if lexicon.knows(t) {
                lexicon.idf(t)
            } else {
                typical
            }
        };
        let mut weight: HashMap<u32, f64> = HashMap::new();
        for t in subject.iter().filter(|t| !in_entity(t)) {
            let idf = lexicon.idf(t);
            for &n in lexicon.users(t).iter() {
                *weight.entry(n).or_default() += idf;
            }
        }
        let mut best_entity: HashMap<u32, f64> = HashMap::new();
        let mut entity_total = 0.0_f64;
        for e in &entities {
            let mut of_e: HashMap<u32, f64> = HashMap::new();
            for t in e {
                let idf = lexicon.idf(t);
                for &n in lexicon.users(t).iter() {
                    *of_e.entry(n).or_default() += idf;
                }
            }
            entity_total = entity_total.max(e.iter().map(weigh).sum());
            for (n, w) in of_e {
                let b = best_entity.entry(n).or_default();
                *b = b.max(w);
            }
        }
        for (n, w) in best_entity {
            *weight.entry(n).or_default() += w;
        }
        let total: f64 = subject
            .iter()
            .filter(|t| !in_entity(t))
            .map(weigh)
            .sum::<f64>()
            + entity_total;
        // Words the notes use, their weight, the alternatives as one.
        let known_weight: f64 = subject
            .iter()
            .filter(|t| !in_entity(t) && lexicon.knows(t))
            .map(|t| lexicon.idf(t))
            .sum::<f64>()
            + entities
                .iter()
                .map(|e| {
                    e.iter()
                        .filter(|t| lexicon.knows(t))
                        .map(|t| lexicon.idf(t))
                        .sum::<f64>()
                })
                .fold(0.0, f64::max);
        let needed = if subject.is_empty() {
            0.0
        } else if known_weight > SUBJECT_SHARE * total {
            f64::MIN_POSITIVE
        } else {
            f64::INFINITY
        };
        Topic {
            entities,
            subject,
            weight,
            needed,
        }
    }

    /// Whether a note is on the goal's subject.
    pub(crate) fn on_topic(&self, lexicon: &Lexicon, note_id: &str) -> bool {
        let Some(at) = lexicon.corpus().position(note_id) else {
            return false;
        };
        let w = u32::try_from(at)
            .ok()
            .and_then(|at| self.weight.get(&at))
            .copied()
            .unwrap_or(0.0);
        w >= self.needed && !lexicon.excluded(note_id)
    }

    /// Whether the notes are on the goal's subject at all.
    pub(crate) fn corpus_on_subject(&self) -> bool {
        self.needed.is_finite()
    }

    /// Whether stems name one of the goal's names (all its words).
    pub(crate) fn names_an_entity(&self, stems: &[String]) -> bool {
        self.entities
            .iter()
            .any(|e| e.iter().all(|t| mentions(stems, t)))
    }

    /// Whether a stem is part of one of the goal's names.
    pub(crate) fn is_entity_word(&self, stem: &str) -> bool {
        self.entities.iter().flatten().any(|t| same_stem(t, stem))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use stepwise_core::Constraints;
    use stepwise_tools::notes::Note;

    fn lexicon() -> Lexicon {
        let corpus = Corpus::from_notes([
            Note::new(
                "a",
                "Alpha pricing",
                "Alpha costs $4,200 a year. The vendor support line is open 24/7.",
            ),
            Note::new(
                "b",
                "Beta notes",
                "Beta uptime was 99.5% last quarter. Unlike Alpha, the vendor replied in an hour.",
            ),
            Note::new(
                "c",
                "Lunch",
                "The retirement lunch is on Friday. Bring a dish.",
            ),
            Note::new("d", "Vendor list", "Every vendor sent a vendor form."),
        ])
        .unwrap_or_else(|_| Corpus::empty());
        Lexicon::new(Arc::new(corpus))
    }

    #[test]
    fn rare_words_weigh_more_than_common_ones() {
        let l = lexicon();
        assert!(l.idf("uptim") > l.idf("vendor"));
        let terms = words("vendor support");
        assert!(coverage(&l, &terms, "The support line is open.") > DIMENSION_SHARE);
        assert!(coverage(&l, &terms, "The vendor replied.") < DIMENSION_SHARE);
    }

    #[test]
    fn synonyms_cover_their_dimension() {
        let l = lexicon();
        assert!(coverage(&l, &words("reliability"), "Beta uptime was 99.5%.") >= 1.0);
    }

    #[test]
    fn notes_off_the_subject_and_corpora_off_it() {
        let l = lexicon();
        let goal = "Compare Alpha and Beta on cost and reliability.";
        let asked = Asked::from_parts(goal, &Constraints::default());
        let t = Topic::of(&l, goal, &asked);
        assert!(t.on_topic(&l, "a") && t.on_topic(&l, "b"));
        assert!(!t.on_topic(&l, "c"));
        let other = "Which snowplow vendor should the county pick? cost, latency";
        let asked = Asked::from_parts(other, &Constraints::default());
        let t = Topic::of(&l, other, &asked);
        assert!(!t.on_topic(&l, "a") && !t.on_topic(&l, "d"));
    }

    #[test]
    fn names_are_words_the_notes_capitalise() {
        let l = lexicon();
        assert_eq!(
            l.names_in("Prices for Alpha rose. The Vendor was late."),
            ["alpha"]
        );
        assert!(!l.is_name("Vendor"));
    }
}
