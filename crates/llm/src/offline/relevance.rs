//! Relevance you can defend: whether a sentence is *about* a sub-question.
//!
//! - Under a **dimension** ("cost", "staff training"), a sentence must name
//!   the dimension: its words, or variants of them (whole-word stems, see
//!   [`stepwise_tools::notes::stem`]), found in the sentence or in what
//!   frames it (its note's title, the heading it sits under), covering at
//!   least [`DIMENSION_SHARE`] of the dimension's weight (rare words weigh
//!   more, by inverse document frequency), with at least one of them in the
//!   sentence itself unless the frame names the whole dimension; or the
//!   sentence names the dimension's head ("yield" for "crop yield") in a
//!   note that names the rest. "Training itself is cheap" (model training)
//!   is not about "staff training"; "the audit trail" is not about
//!   "training" at all.
//! - Under the **goal as a whole** (no dimension asked) or a user's own
//!   sub-question, the sentence's passage with its frame must cover at least
//!   [`GOAL_SHARE`] of the weight of one of the question's clauses
//!   ([`facets`]) and [`BEST_SHARE`] of what the best passage retrieved
//!   covers, and the sentence must hold one of its words or a figure. A
//!   question whose distinctive words the notes never use ("laid off") finds
//!   nothing, whatever else it shares with them.
//! - Either way the note must be **on topic**: it names one of the
//!   alternatives compared, shares at least [`TOPIC_SHARE`] of the weight of
//!   the goal's context words that the notes use at all, or belongs with the
//!   rest of the corpus ([`COHESION_SHARE`]); for a question without
//!   dimensions, it must belong with the corpus or name an alternative (a
//!   question about the office party is not what the notes are for). A note
//!   whose title or opening puts it outside the decision ("separate from the
//!   street light conversion") is not on topic.
//!
//! The query a step searched for plays no part: a reformulated search is
//! judged against the original question.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, OnceLock};

use stepwise_tools::notes::Corpus;
use stepwise_tools::notes::stem::{mentions, same_stem, stem, words};

use super::asked::Asked;

/// Share of a dimension's weight a sentence (with its note's title) must cover.
pub(crate) const DIMENSION_SHARE: f64 = 0.7;
/// Share of a question clause's weight a passage (with its note's title)
/// must cover at least, and share of the best passage's coverage it must
/// reach: only the passages that match the question best are quoted.
pub(crate) const GOAL_SHARE: f64 = 0.5;
/// See [`GOAL_SHARE`].
pub(crate) const BEST_SHARE: f64 = 0.75;
/// Most of a question's weight that may lie in words no note uses.
pub(crate) const MAX_UNKNOWN_SHARE: f64 = 0.34;
/// Share of the goal's context weight an on-topic note covers (when it names
/// none of the alternatives).
pub(crate) const TOPIC_SHARE: f64 = 0.1;

/// A note whose cohesion (see [`Lexicon::on_topic`]) is at least this share
/// of the corpus median belongs with the other notes.
pub(crate) const COHESION_SHARE: f64 = 0.75;

/// Words that say what to do, not what about (stems are compared).
const TASK_WORDS: &[&str] = &[
    "about",
    "adopt",
    "choose",
    "pick",
    "select",
    "switch",
    "prefer",
    "go",
    "opt",
    "advise",
    "analyse",
    "analyze",
    "also",
    "any",
    "assess",
    "because",
    "better",
    "brief",
    "compare",
    "comparison",
    "consider",
    "could",
    "cover",
    "create",
    "decide",
    "describe",
    "detail",
    "discuss",
    "draft",
    "each",
    "evaluate",
    "examine",
    "explain",
    "find",
    "focus",
    "give",
    "identify",
    "including",
    "info",
    "information",
    "know",
    "like",
    "list",
    "look",
    "make",
    "many",
    "much",
    "need",
    "note",
    "option",
    "overview",
    "please",
    "prepare",
    "produce",
    "recommend",
    "regarding",
    "report",
    "research",
    "review",
    "say",
    "short",
    "should",
    "summarise",
    "summarize",
    "summary",
    "tell",
    "term",
    "us",
    "use",
    "weigh",
    "whether",
    "would",
    "write",
];

/// Korean words (stems, prefixes) that say what to do.
const KO_TASK_PREFIXES: &[&str] = &[
    "검토",
    "비교",
    "고려",
    "평가",
    "분석",
    "정리",
    "살펴",
    "조사",
    "확인",
    "설명",
    "해야",
    "하는가",
    "할지",
    "여부",
    "어떤",
    "무엇",
    "얼마",
    "알려",
    "작성",
];

/// Whether a stem is a task word rather than a topic.
pub(crate) fn is_task_word(s: &str) -> bool {
    static STEMS: OnceLock<BTreeSet<String>> = OnceLock::new();
    STEMS
        .get_or_init(|| TASK_WORDS.iter().map(|t| stem(t)).collect())
        .contains(s)
        || KO_TASK_PREFIXES.iter().any(|p| s.starts_with(p))
}

/// The content stems of a text: [`words`] without task words.
pub(crate) fn content(text: &str) -> Vec<String> {
    words(text)
        .into_iter()
        .filter(|w| !is_task_word(w))
        .collect()
}

/// What the corpus says about its own words, built once, lazily.
#[derive(Debug)]
pub struct Lexicon {
    corpus: Arc<Corpus>,
    built: OnceLock<Built>,
    /// Term → (whether a note uses it, its idf): asked for every sentence
    /// judged, computed once per term.
    stats: Mutex<HashMap<String, (bool, f64)>>,
}

#[derive(Debug, Default)]
struct Built {
    notes: usize,
    /// Stem → notes using it.
    df: HashMap<String, usize>,
    /// Note id → its stems (title and text).
    note_words: HashMap<String, Vec<String>>,
    /// Note id → its title's stems.
    titles: HashMap<String, Vec<String>>,
    /// (note id, passage) → the stems of the heading the passage is under.
    headings: HashMap<(String, String), Vec<String>>,
    /// Stem → search terms (as the search index tokenises them) that have it.
    surface: BTreeMap<String, BTreeSet<String>>,
    /// Note id → its cohesion: the weight of its words that other notes
    /// use too, as a share of all its words' weight.
    cohesion: HashMap<String, f64>,
    /// The median cohesion of the corpus.
    median_cohesion: f64,
    /// Notes that say up front they are about something else.
    disclaiming: BTreeSet<String>,
    /// Options some note says were dropped ("… were discussed and set
    /// aside"), as the stems of their names.
    dropped: Vec<Vec<String>>,
}

impl Lexicon {
    /// A lexicon over `corpus`.
    pub fn new(corpus: Arc<Corpus>) -> Self {
        Self {
            corpus,
            built: OnceLock::new(),
            stats: Mutex::new(HashMap::new()),
        }
    }

    fn built(&self) -> &Built {
        self.built.get_or_init(|| {
            let mut b = Built {
                notes: self.corpus.notes().len(),
                ..Built::default()
            };
            // Cohesion is measured on search terms (Korean as character
            // bigrams), which other notes share whatever particles they
            // attach, so it reads the same in every language.
            let mut token_df: HashMap<String, usize> = HashMap::new();
            let mut note_tokens: Vec<(String, Vec<String>)> = Vec::new();
            for note in self.corpus.notes() {
                let all = words(&format!("{}\n{}", note.title, note.text));
                for w in &all {
                    *b.df.entry(w.clone()).or_default() += 1;
                }
                b.note_words.insert(note.id.clone(), all);
                b.titles.insert(note.id.clone(), words(&note.title));
                let opening = stepwise_tools::notes::passages::split_passages(&note.text)
                    .into_iter()
                    .take(2)
                    .collect::<Vec<_>>()
                    .join(" ");
                for passage in stepwise_tools::notes::passages::split_passages(&note.text) {
                    for sentence in stepwise_tools::notes::sentences(&passage) {
                        if let Some(option) = super::sentence::dropped_option(sentence) {
                            b.dropped.push(content(&option));
                        }
                    }
                }
                if super::sentence::out_of_scope(&note.title)
                    || super::sentence::out_of_scope(&opening)
                {
                    b.disclaiming.insert(note.id.clone());
                }
                for (passage, heading) in
                    stepwise_tools::notes::passages::split_sections(&note.text)
                {
                    if let Some(h) = heading.filter(|h| *h != note.title) {
                        b.headings.insert((note.id.clone(), passage), words(&h));
                    }
                }
                let mut tokens: Vec<String> =
                    stepwise_tools::notes::tokenize(&format!("{}\n{}", note.title, note.text));
                for t in &tokens {
                    if t.chars().all(|c| c.is_ascii_alphanumeric()) {
                        b.surface.entry(stem(t)).or_default().insert(t.clone());
                    }
                }
                tokens.sort();
                tokens.dedup();
                for t in &tokens {
                    *token_df.entry(t.clone()).or_default() += 1;
                }
                note_tokens.push((note.id.clone(), tokens));
            }
            let idf =
                |df: usize| (1.0 + (b.notes as f64 - df as f64 + 0.5) / (df as f64 + 0.5)).ln();
            let mut all: Vec<f64> = Vec::new();
            for (id, ts) in &note_tokens {
                let df = |t: &String| token_df.get(t).copied().unwrap_or(0);
                let weight = |t: &String| idf(df(t));
                let total: f64 = ts.iter().map(weight).sum();
                let shared: f64 = ts.iter().filter(|t| df(t) >= 2).map(weight).sum();
                let c = if total > 0.0 { shared / total } else { 0.0 };
                b.cohesion.insert(id.clone(), c);
                all.push(c);
            }
            all.sort_by(f64::total_cmp);
            b.median_cohesion = all.get(all.len() / 2).copied().unwrap_or(0.0);
            b
        })
    }

    /// Inverse document frequency of a stem (BM25's, never negative); a
    /// stem no note uses weighs the most.
    pub(crate) fn idf(&self, term: &str) -> f64 {
        self.stats(term).1
    }

    /// Whether a note uses `term` and its idf, from the memo or computed.
    fn stats(&self, term: &str) -> (bool, f64) {
        if let Some(s) = self.stats.lock().ok().and_then(|m| m.get(term).copied()) {
            return s;
        }
        let b = self.built();
        let n = b.notes as f64;
        // Notes that use the term or a variant (a Korean term: a word
        // containing it); the idf of an English stem counts the stem itself.
        let using = b
            .note_words
            .values()
            .filter(|ws| mentions(ws, term))
            .count();
        let df = if term.chars().any(|c| ('\u{AC00}'..='\u{D7A3}').contains(&c)) {
            using
        } else {
            b.df.get(term).copied().unwrap_or(0)
        } as f64;
        let stats = (using > 0, (1.0 + (n - df + 0.5) / (df + 0.5)).ln());
        if let Ok(mut m) = self.stats.lock() {
            m.insert(term.to_owned(), stats);
        }
        stats
    }

    /// The stems of a note's title (empty for an unknown note).
    pub(crate) fn title_words(&self, note_id: &str) -> &[String] {
        self.built()
            .titles
            .get(note_id)
            .map_or(&[][..], Vec::as_slice)
    }

    /// The stems of what frames a passage: its note's title and the heading
    /// it is under.
    pub(crate) fn frame_words(&self, note_id: &str, passage: &str) -> Vec<String> {
        let mut out = self.title_words(note_id).to_vec();
        if let Some(h) = self
            .built()
            .headings
            .get(&(note_id.to_owned(), passage.to_owned()))
        {
            out.extend(h.iter().cloned());
        }
        out
    }

    /// Whether a note uses `term` (a stem) or a variant of it.
    pub(crate) fn note_mentions(&self, note_id: &str, term: &str) -> bool {
        self.built()
            .note_words
            .get(note_id)
            .is_some_and(|ws| mentions(ws, term))
    }

    /// Whether a note says up front — in its title or first two passages —
    /// that it is about something outside the decision ("separate from the
    /// street light conversion", "1차 회의에서 검토 대상에서 제외").
    pub(crate) fn disclaims(&self, note_id: &str) -> bool {
        self.built().disclaiming.contains(note_id)
    }

    /// Whether a note's title names an option another note says was dropped
    /// ("Surge valve retrofit — quote" after "Surge valves … were set
    /// aside"), unless the goal itself asks about that option.
    fn about_a_dropped_option(&self, topic: &Topic, note_id: &str) -> bool {
        let title = self.title_words(note_id);
        self.built().dropped.iter().any(|option| {
            !option.is_empty()
                && !topic.names_an_entity(option)
                && !option.iter().all(|w| topic.context.contains(w))
                && option.iter().all(|w| mentions(title, w))
        })
    }

    /// Whether a note belongs with the rest of the corpus (see [`Lexicon::on_topic`]).
    pub(crate) fn cohesive(&self, note_id: &str) -> bool {
        let b = self.built();
        b.cohesion.get(note_id).copied().unwrap_or(0.0) >= COHESION_SHARE * b.median_cohesion
    }

    /// Whether any note uses `term` (a stem) or a variant of it.
    pub(crate) fn knows(&self, term: &str) -> bool {
        self.stats(term).0
    }

    /// Search terms in the notes that are variants of `term` (a stem),
    /// at most `max`, the most frequent first.
    pub(crate) fn surface_forms(&self, term: &str, max: usize) -> Vec<String> {
        let b = self.built();
        let mut forms: Vec<(usize, String)> = b
            .surface
            .iter()
            .filter(|(s, _)| same_stem(s, term))
            .flat_map(|(s, set)| {
                let df = b.df.get(s).copied().unwrap_or(0);
                set.iter().map(move |f| (df, f.clone()))
            })
            .collect();
        forms.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        forms.into_iter().map(|(_, f)| f).take(max).collect()
    }

    /// Share of `terms`' weight that `found` mentions.
    fn share(&self, terms: &[String], found: &dyn Fn(&str) -> bool) -> f64 {
        let total: f64 = terms.iter().map(|t| self.idf(t)).sum();
        if total <= 0.0 {
            return 0.0;
        }
        let covered: f64 = terms.iter().filter(|t| found(t)).map(|t| self.idf(t)).sum();
        covered / total
    }

    /// Whether a note is on the goal's topic: it names an alternative the
    /// goal compares, shares enough of the goal's context, or belongs with
    /// the rest of the corpus — most of its words' weight is in words other
    /// notes use too. A note on something else entirely (an office party in
    /// a folder of broker notes) uses words no other note does.
    pub(crate) fn on_topic(&self, topic: &Topic, note_id: &str) -> bool {
        let Some(note) = self.built().note_words.get(note_id) else {
            return false;
        };
        if self.disclaims(note_id) || self.about_a_dropped_option(topic, note_id) {
            return false;
        }
        if topic.names_an_entity(note) {
            return true;
        }
        // Words no note uses say nothing about which notes are on topic.
        let known: Vec<String> = topic
            .context
            .iter()
            .filter(|t| self.knows(t))
            .cloned()
            .collect();
        known.is_empty()
            || self.cohesive(note_id)
            || self.share(&known, &|t| mentions(note, t)) >= TOPIC_SHARE
    }
}

/// The goal's topic: what every cited note must be about.
#[derive(Debug, Clone, Default)]
pub(crate) struct Topic {
    /// The alternatives compared, each as its stems.
    pub(crate) entities: Vec<Vec<String>>,
    /// The goal's other content stems (not dimensions, not task words).
    pub(crate) context: Vec<String>,
}

impl Topic {
    /// Whether `words` (stems) name one of the alternatives compared.
    pub(crate) fn names_an_entity(&self, words: &[String]) -> bool {
        self.entities
            .iter()
            .any(|e| !e.is_empty() && e.iter().all(|t| mentions(words, t)))
    }

    /// The topic of a goal and what it asks.
    pub(crate) fn of(goal: &str, asked: &Asked) -> Self {
        let dimension_words: Vec<String> = asked.dimensions.iter().flat_map(|d| words(d)).collect();
        let goal_words = content(goal);
        Topic {
            entities: asked.entities.iter().map(|e| content(e)).collect(),
            context: goal_words
                .iter()
                .filter(|w| !dimension_words.contains(w))
                .cloned()
                .collect(),
        }
    }
}

/// Whether a sentence (its stems) of note `note_id` is about `dimension`;
/// what frames its passage (`frame`: [`Lexicon::frame_words`]) counts as
/// naming it.
pub(crate) fn about_dimension(
    lexicon: &Lexicon,
    dimension: &str,
    sentence: &[String],
    frame: &[String],
    note_id: &str,
) -> bool {
    let terms = content(dimension);
    let terms = if terms.is_empty() {
        words(dimension)
    } else {
        terms
    };
    if terms.is_empty() {
        return false;
    }
    let frame_names_it = terms.iter().all(|t| mentions(frame, t));
    let in_sentence = terms.iter().any(|t| mentions(sentence, t));
    if (in_sentence || frame_names_it)
        && lexicon.share(&terms, &|t| mentions(sentence, t) || mentions(frame, t))
            >= DIMENSION_SHARE
    {
        return true;
    }
    // A compound dimension by its head ("crop yield" → "Field 9 yielded 241
    // bushels"): the head in the sentence, every other word in its note.
    match terms.split_last() {
        Some((head, modifiers)) if !modifiers.is_empty() => {
            mentions(sentence, head) && modifiers.iter().all(|m| lexicon.note_mentions(note_id, m))
        }
        _ => false,
    }
}

/// The facets of a question: its clauses ("What is the latency budget,
/// and what did the pilot measure at p95?" has two), each as its content
/// stems. A clause of fewer than two words is no facet of its own.
pub(crate) fn facets(question: &str) -> Vec<Vec<String>> {
    let mut parts: Vec<String> = vec![question.to_owned()];
    for sep in ["?", ";", ", and ", ", but ", " 그리고 "] {
        parts = parts
            .iter()
            .flat_map(|p| p.split(sep).map(str::to_owned).collect::<Vec<_>>())
            .collect();
    }
    let mut out: Vec<Vec<String>> = parts
        .iter()
        .map(|p| content(p))
        .filter(|f| f.len() >= 2)
        .collect();
    let whole = content(question);
    if !whole.is_empty() && !out.contains(&whole) {
        out.push(whole);
    }
    out
}

/// Whether the notes could answer a facet at all: no more than
/// [`MAX_UNKNOWN_SHARE`] of its weight lies in words no note uses. "How
/// many agents will be laid off?" over notes that never say "laid off" is
/// never answered, whatever else it shares with them.
pub(crate) fn answerable(lexicon: &Lexicon, facet: &[String]) -> bool {
    !facet.is_empty() && lexicon.share(facet, &|t| !lexicon.knows(t)) <= MAX_UNKNOWN_SHARE
}

/// The share of a facet's weight a passage (its stems) with what frames it
/// ([`Lexicon::frame_words`]) covers.
pub(crate) fn coverage(
    lexicon: &Lexicon,
    facet: &[String],
    passage: &[String],
    frame: &[String],
) -> f64 {
    lexicon.share(facet, &|t| mentions(passage, t) || mentions(frame, t))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use stepwise_tools::notes::Note;

    use super::*;

    fn lexicon() -> Lexicon {
        Lexicon::new(Arc::new(
            Corpus::from_notes([
                Note::new(
                    "audit",
                    "Compliance notes",
                    "Kafka keeps an audit trail for seven years.",
                ),
                Note::new(
                    "train",
                    "Staff training plan",
                    "Engineers spend two days on the Kafka course.",
                ),
                Note::new(
                    "model",
                    "Model training",
                    "Training itself is cheap for Kafka consumers.",
                ),
                Note::new("party", "Office party", "The party cost $300 for catering."),
                Note::new(
                    "cost",
                    "Broker cost",
                    "SQS costs $40 a month; Kafka costs $900 a month.",
                ),
                Note::new(
                    "load",
                    "Broker load test",
                    "Kafka brokers held 40,000 messages a second; SQS queues held 9,000 messages a second.",
                ),
                Note::new(
                    "ops",
                    "Broker operations",
                    "Kafka brokers need partition work every month; SQS queues need alarms and engineers.",
                ),
            ])
            .unwrap(),
        ))
    }

    #[test]
    fn a_dimension_needs_its_own_words() {
        let lx = lexicon();
        let about = |d: &str, s: &str, id: &str| {
            about_dimension(&lx, d, &words(s), &lx.frame_words(id, s), id)
        };
        assert!(!about(
            "staff training",
            "Kafka keeps an audit trail for seven years.",
            "audit"
        ));
        assert!(!about(
            "staff training",
            "Training itself is cheap for Kafka consumers.",
            "model"
        ));
        // The title names the dimension.
        assert!(about(
            "staff training",
            "Engineers spend two days on the Kafka course.",
            "train"
        ));
        assert!(about(
            "cost",
            "SQS costs $40 a month; Kafka costs $900 a month.",
            "cost"
        ));
    }

    #[test]
    fn off_topic_notes_and_nonsense_find_nothing() {
        let lx = lexicon();
        let asked = Asked {
            dimensions: vec!["cost".into()],
            entities: vec!["Kafka".into(), "SQS".into()],
        };
        let topic = Topic::of("Kafka or SQS? Consider cost.", &asked);
        assert!(lx.on_topic(&topic, "cost"));
        assert!(!lx.on_topic(&topic, "party"));
        let nonsense = facets("How many engineers will be laid off in 2025?");
        assert!(nonsense.iter().all(|f| !answerable(&lx, f)), "{nonsense:?}");
        let two = facets("What does SQS cost a month, and how many Kafka messages a second?");
        assert_eq!(two.len(), 3, "{two:?}");
        let passage = words("Kafka brokers held 40,000 messages a second.");
        assert!(answerable(&lx, &two[1]));
        assert!(coverage(&lx, &two[1], &passage, &lx.frame_words("load", "")) > 0.99);
    }
}
