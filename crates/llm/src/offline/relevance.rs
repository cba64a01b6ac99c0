//! Relevance you can defend: whether a sentence is *about* a sub-question.
//!
//! - Under a **dimension** ("cost", "staff training"), a sentence must name
//!   the dimension: its words, variants of them (whole-word stems, see
//!   [`stepwise_tools::notes::stem`]) or their [`synonyms`] ("uptime" for
//!   reliability, "bushels per acre" for crop yield), found in the sentence or in what
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
//!   street light conversion"), or whose title names an option a note says
//!   was set aside, is not on topic; nor is a note with a **subject of its
//!   own** (a title word it repeats that no other note uses: MealPay, a
//!   greenhouse, 공영주차장) that names none of the goal's subject terms —
//!   its context words that most notes, but not nearly all, use
//!   (Registrar, irrigation, 자전거) —
//!   unless it names an alternative by name: a different project of the
//!   same organisation shares the organisation's words, not the subject's.
//!
//! The query a step searched for plays no part: a reformulated search is
//! judged against the original question.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, OnceLock};
use stepwise_tools::notes::stem::is_hangul;

use stepwise_tools::notes::Corpus;
use stepwise_tools::notes::stem::{
    mentions, mentions_word, same_stem, stem, variant_prefix, words,
};

use super::asked::Asked;
use super::synonyms;

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

/// Syllables that follow a Korean verbal noun when it is used as a verb
/// (운영*하*다, 도입*했*다, 위탁*되*면): such a noun says what is done, not
/// what the decision is about.
const HANGUL_VERB_SYLLABLES: &[char] =
    &['하', '해', '했', '한', '합', '할', '함', '되', '됐', '된'];

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

/// Korean words (stems, prefixes) that say what to do, besides the verbs
/// that ask for a list ([`super::asked::KO_VERBS`]).
const KO_TASK_PREFIXES: &[&str] = &[
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
        || KO_TASK_PREFIXES
            .iter()
            .chain(super::asked::KO_VERBS)
            .any(|p| s.starts_with(p))
}

/// The content stems of a text: [`words`] without task words.
pub(crate) fn content(text: &str) -> Vec<String> {
    words(text)
        .into_iter()
        .filter(|w| !is_task_word(w))
        .collect()
}

/// What the corpus says about its own words: read from the corpus's
/// [`Vocabulary`] (built with the corpus, once), the rest worked out once,
/// lazily, and what is asked about a term or a note remembered.
#[derive(Debug)]
pub struct Lexicon {
    corpus: Arc<Corpus>,
    built: OnceLock<Built>,
    /// Term → what the notes say about it: asked for every sentence
    /// judged, worked out once per term.
    terms: Mutex<HashMap<String, Arc<TermStats>>>,
    /// By note position: its title's stems, once asked.
    titles: Vec<OnceLock<Vec<String>>>,
    /// By note position: whether it disclaims the decision, once asked.
    disclaiming: Vec<OnceLock<bool>>,
    /// By note position: whether it has a subject of its own, once asked.
    own_subject: Vec<OnceLock<bool>>,
    /// By note position: its distinct Hangul words, sorted, once asked (see
    /// [`Lexicon::note_compounds`]).
    hangul_words: Vec<OnceLock<Vec<Box<str>>>>,
    /// A goal's context words → its subject terms, once asked.
    subjects: Mutex<HashMap<Vec<String>, Arc<Vec<String>>>>,
    /// See [`Lexicon::main_parties`].
    main_parties: OnceLock<Vec<String>>,
    /// By note position: its [`parties`](Lexicon::parties), once asked.
    parties: Vec<OnceLock<Vec<String>>>,
    /// Latin word → whether some note writes it in lower case, once asked.
    lowercase: Mutex<HashMap<String, bool>>,
}

/// What the notes say about one term (a stem).
#[derive(Debug)]
struct TermStats {
    /// The vocabulary's stems that mention it (variants of it, or for a
    /// Korean term, words containing it).
    variants: Vec<usize>,
    /// Whether a note uses it or a variant.
    known: bool,
    /// How many notes use it or a variant.
    users: usize,
    /// Its idf.
    idf: f64,
}

#[derive(Debug, Default)]
struct Built {
    /// (stem, search term) for each search term of the notes (as the
    /// search index tokenises them) written in ASCII letters and digits,
    /// sorted: the terms that have each stem.
    surface: Vec<(Box<str>, u32)>,
    /// By note position: its cohesion, the weight of its words that other
    /// notes use too, as a share of all its words' weight.
    cohesion: Vec<f64>,
    /// The median cohesion of the corpus.
    median_cohesion: f64,
    /// Options some note says were dropped ("… were discussed and set
    /// aside"), as the stems of their names.
    dropped: Vec<Vec<String>>,
    /// Names quoted in a Korean sentence saying an option was dropped
    /// ("'휙'이 낸 협약 방식은 … 이번 검토에서 제외했다"), as written.
    dropped_names: Vec<String>,
}

impl Lexicon {
    /// A lexicon over `corpus`.
    pub fn new(corpus: Arc<Corpus>) -> Self {
        let n = corpus.len();
        Self {
            corpus,
            built: OnceLock::new(),
            terms: Mutex::new(HashMap::new()),
            titles: (0..n).map(|_| OnceLock::new()).collect(),
            disclaiming: (0..n).map(|_| OnceLock::new()).collect(),
            own_subject: (0..n).map(|_| OnceLock::new()).collect(),
            hangul_words: (0..n).map(|_| OnceLock::new()).collect(),
            subjects: Mutex::new(HashMap::new()),
            main_parties: OnceLock::new(),
            parties: (0..n).map(|_| OnceLock::new()).collect(),
            lowercase: Mutex::new(HashMap::new()),
        }
    }

    fn built(&self) -> &Built {
        self.built.get_or_init(|| {
            let vocabulary = self.corpus.vocabulary();
            let notes = self.corpus.len();
            let mut b = Built::default();
            // Cohesion is measured on search terms (Korean as character
            // bigrams), which other notes share whatever particles they
            // attach, so it reads the same in every language. Terms are
            // sorted, so each note's weights add up in the order of its
            // sorted terms.
            let idf = |df: usize| (1.0 + (notes as f64 - df as f64 + 0.5) / (df as f64 + 0.5)).ln();
            let mut total = vec![0.0_f64; notes];
            let mut shared = vec![0.0_f64; notes];
            for id in 0..vocabulary.term_count() {
                let users = vocabulary.term_notes(id);
                let weight = idf(users.len());
                for &note in users {
                    total[note as usize] += weight;
                    if users.len() >= 2 {
                        shared[note as usize] += weight;
                    }
                }
                let term = vocabulary.term(id);
                if term.chars().all(|c| c.is_ascii_alphanumeric()) {
                    let id = u32::try_from(id).unwrap_or(u32::MAX);
                    b.surface.push((stem(term).into_boxed_str(), id));
                }
            }
            // Term numbers follow the terms' order, so this sorts by stem, then term.
            b.surface.sort_unstable();
            b.cohesion = total
                .iter()
                .zip(&shared)
                .map(|(&t, &s)| if t > 0.0 { s / t } else { 0.0 })
                .collect();
            let mut all = b.cohesion.clone();
            all.sort_by(f64::total_cmp);
            b.median_cohesion = all.get(all.len() / 2).copied().unwrap_or(0.0);
            (b.dropped, b.dropped_names) = self.dropped_options();
            b
        })
    }

    /// What the notes say was dropped, note by note: only the notes with a
    /// word that a sentence saying so must hold are read.
    fn dropped_options(&self) -> (Vec<Vec<String>>, Vec<String>) {
        let vocabulary = self.corpus.vocabulary();
        let mut candidates: Vec<u32> = (0..vocabulary.term_count())
            .filter(|&id| {
                let term = vocabulary.term(id);
                super::sentence::DROPPED_WORDS
                    .iter()
                    .chain(super::sentence::KO_DROPPED_WORDS)
                    .any(|w| term.contains(w))
            })
            .flat_map(|id| vocabulary.term_notes(id).iter().copied())
            .collect();
        candidates.sort_unstable();
        candidates.dedup();
        let mut dropped = Vec::new();
        let mut names = Vec::new();
        for note in candidates {
            for (passage, _) in self.corpus.passages(note as usize) {
                for sentence in stepwise_tools::notes::sentences(passage) {
                    if let Some(option) = super::sentence::dropped_option(sentence) {
                        dropped.push(content(&option));
                    }
                    if let Some(name) = super::sentence::dropped_korean_name(sentence) {
                        names.push(name);
                    }
                }
            }
        }
        (dropped, names)
    }

    /// Inverse document frequency of a stem (BM25's, never negative); a
    /// stem no note uses weighs the most.
    pub(crate) fn idf(&self, term: &str) -> f64 {
        self.stats(term).idf
    }

    /// What the notes say about `term`, from the memo or worked out.
    fn stats(&self, term: &str) -> Arc<TermStats> {
        if let Some(s) = self.terms.lock().ok().and_then(|m| m.get(term).cloned()) {
            return s;
        }
        let vocabulary = self.corpus.vocabulary();
        // Every stem that could mention the term, then those that do.
        let candidates = match variant_prefix(term) {
            Some(prefix) => vocabulary.stems_starting_with(prefix),
            None => 0..vocabulary.stem_count(),
        };
        let variants: Vec<usize> = candidates
            .filter(|&id| mentions_word(vocabulary.stem(id), term))
            .collect();
        let n = self.corpus.len() as f64;
        // Notes that use the term or a variant (a Korean term: a word
        // containing it); the idf of an English stem counts the stem itself.
        let users = {
            let mut using: Vec<u32> = variants
                .iter()
                .flat_map(|&id| vocabulary.stem_notes(id).iter().copied())
                .collect();
            using.sort_unstable();
            using.dedup();
            using.len()
        };
        let df = if term.chars().any(|c| ('\u{AC00}'..='\u{D7A3}').contains(&c)) {
            users
        } else {
            vocabulary
                .stem_id(term)
                .map_or(0, |id| vocabulary.stem_notes(id).len())
        } as f64;
        let stats = Arc::new(TermStats {
            known: !variants.is_empty(),
            users,
            idf: (1.0 + (n - df + 0.5) / (df + 0.5)).ln(),
            variants,
        });
        if let Ok(mut m) = self.terms.lock() {
            m.insert(term.to_owned(), Arc::clone(&stats));
        }
        stats
    }

    /// The stems of a note's title (empty for an unknown note).
    pub(crate) fn title_words(&self, note_id: &str) -> &[String] {
        let Some(at) = self.corpus.position(note_id) else {
            return &[];
        };
        self.titles[at].get_or_init(|| words(&self.corpus.notes()[at].title))
    }

    /// What frames a passage: its note's title and the heading it is under.
    pub(crate) fn frame(&self, note_id: &str, passage: &str) -> Wording {
        let Some(at) = self.corpus.position(note_id) else {
            return Wording::default();
        };
        let mut text = self.corpus.notes()[at].title.clone();
        if let Some(h) = self.heading_of(at, passage) {
            text.push_str(" \n ");
            text.push_str(h);
        }
        Wording::of(&text)
    }

    /// The heading a passage of the note at `at` sits under: that of the
    /// last passage with this text that sits under one.
    fn heading_of(&self, at: usize, passage: &str) -> Option<&str> {
        self.corpus
            .passages(at)
            .filter(|(text, heading)| *text == passage && heading.is_some())
            .last()
            .and_then(|(_, heading)| heading)
    }

    /// Whether the note at `at` uses `term` (a stem) or a variant of it.
    fn mentioned_at(&self, at: usize, term: &str) -> bool {
        let vocabulary = self.corpus.vocabulary();
        let Ok(note) = u32::try_from(at) else {
            return false;
        };
        self.stats(term)
            .variants
            .iter()
            .any(|&id| vocabulary.stem_notes(id).binary_search(&note).is_ok())
    }

    /// Whether a note uses `term` (a stem) or a variant of it.
    pub(crate) fn note_mentions(&self, note_id: &str, term: &str) -> bool {
        self.corpus
            .position(note_id)
            .is_some_and(|at| self.mentioned_at(at, term))
    }

    /// Whether a note writes a Korean `term` as the first part of a compound
    /// (행정 in 행정포털): what the note is about, though never a word of its
    /// own there. For a compound dimension's modifiers only, never a
    /// sentence's own words (see [`about_dimension`]).
    pub(crate) fn note_compounds(&self, note_id: &str, term: &str) -> bool {
        term.chars().count() >= 2
            && term.chars().all(is_hangul)
            && self.corpus.position(note_id).is_some_and(|at| {
                let sorted = self.hangul_words[at].get_or_init(|| {
                    let text = &self.corpus.notes()[at].text;
                    let mut ws: Vec<Box<str>> = (text.split(|c: char| !is_hangul(c)))
                        .filter(|w| !w.is_empty())
                        .map(Box::from)
                        .collect();
                    ws.sort_unstable();
                    ws.dedup();
                    ws
                });
                // The words starting with `term` follow it in sorted order.
                let from = sorted.partition_point(|w| &**w < term);
                (sorted[from..].iter())
                    .take_while(|w| w.starts_with(term))
                    .any(|w| w.len() > term.len())
            })
    }

    /// Whether a note says up front — in its title or first two passages —
    /// that it is about something outside the decision ("separate from the
    /// street light conversion", "1차 회의에서 검토 대상에서 제외").
    pub(crate) fn disclaims(&self, note_id: &str) -> bool {
        self.corpus.position(note_id).is_some_and(|at| {
            *self.disclaiming[at].get_or_init(|| {
                let opening = self
                    .corpus
                    .passages(at)
                    .take(2)
                    .map(|(text, _)| text)
                    .collect::<Vec<_>>()
                    .join(" ");
                super::sentence::out_of_scope(&self.corpus.notes()[at].title)
                    || super::sentence::out_of_scope(&opening)
                    || self.titled_for_a_party_that_withdrew(at, &opening)
            })
        })
    }

    /// Whether a note is titled for a party its opening says leaves the
    /// running ("Winter debrief: Bellweather's last season … they are not
    /// bidding again"): the outgoing incumbent's record. Only the title's
    /// party: a kickoff whose opening says the incumbent will not bid again
    /// is still about the decision.
    fn titled_for_a_party_that_withdrew(&self, at: usize, opening: &str) -> bool {
        let title = words(&self.corpus.notes()[at].title);
        let parties: Vec<&String> = self
            .parties(at)
            .iter()
            .filter(|p| mentions(&title, p))
            .collect();
        !parties.is_empty()
            && stepwise_tools::notes::sentences(opening).iter().any(|s| {
                super::sentence::out_of_the_running(s) && {
                    let said = words(s);
                    parties.iter().any(|p| mentions(&said, p))
                }
            })
    }

    /// Whether a note's title names an option another note says was dropped
    /// ("Surge valve retrofit — quote" after "Surge valves … were set
    /// aside"), unless the goal itself asks about that option.
    fn about_a_dropped_option(&self, topic: &Topic, note_id: &str) -> bool {
        let title = self.title_words(note_id);
        let title_text = self
            .corpus
            .position(note_id)
            .map_or("", |at| self.corpus.notes()[at].title.as_str());
        let built = self.built();
        if built
            .dropped_names
            .iter()
            .any(|name| names_word(title_text, name) && !names_word(&topic.goal, name))
        {
            return true;
        }
        built.dropped.iter().any(|option| {
            !option.is_empty()
                && !topic.names_an_entity(option)
                && !option.iter().all(|w| topic.context.contains(w))
                && option.iter().all(|w| mentions(title, w))
        })
    }

    /// The parties a note says up front it is by or about: the names in its
    /// title (a capitalised word no note writes in lower case: Meterix,
    /// Pub/Sub, Tallyworks; not an email's sender line) and the companies
    /// its opening names ("(주)온담푸드", "소담키친(주)", "Arctis Ltd"), each
    /// as its stems.
    fn parties(&self, at: usize) -> &[String] {
        self.parties[at].get_or_init(|| self.parties_uncached(at))
    }

    /// Whether some note writes a Latin word in lower case ("greenhouse",
    /// "survey"): a capitalised title word that none does is a name. Only
    /// the notes that use the word are read (at most 200), once per word.
    fn written_lowercase(&self, word: &str) -> bool {
        let lower = word.to_lowercase();
        if let Some(&known) = self
            .lowercase
            .lock()
            .ok()
            .and_then(|m| m.get(&lower).copied())
            .as_ref()
        {
            return known;
        }
        let vocabulary = self.corpus.vocabulary();
        let notes = self.corpus.notes();
        let found = vocabulary.stem_id(&stem(&lower)).is_some_and(|id| {
            // A name of more than a couple of hundred notes is no minor
            // party; reading that many settles whether it is a name.
            vocabulary.stem_notes(id).iter().take(200).any(|&at| {
                notes.get(at as usize).is_some_and(|note| {
                    [&note.title, &note.text].iter().any(|text| {
                        text.split(|c: char| !c.is_ascii_alphanumeric())
                            .any(|w| w == lower)
                    })
                })
            })
        });
        if let Ok(mut m) = self.lowercase.lock() {
            m.insert(lower, found);
        }
        found
    }

    fn parties_uncached(&self, at: usize) -> Vec<String> {
        let note = &self.corpus.notes()[at];
        let mut out: Vec<String> = Vec::new();
        let mut add = |w: &str| {
            let s = stem(w);
            if !s.is_empty() && !out.contains(&s) {
                out.push(s);
            }
        };
        let title = note.title.trim();
        let sender = ["from:", "보낸 사람", "보낸사람", "to:"]
            .iter()
            .any(|p| title.to_lowercase().starts_with(p));
        let shouting = !title.chars().any(|c| c.is_ascii_lowercase());
        if !sender && !shouting {
            for w in title.split(|c: char| !c.is_ascii_alphanumeric()) {
                let capitalised = w.chars().next().is_some_and(|c| c.is_ascii_uppercase());
                if capitalised
                    && w.chars().count() >= 3
                    && !super::sentence::is_calendar_word(w)
                    && !self.written_lowercase(w)
                {
                    add(w);
                }
            }
        }
        let opening: String = std::iter::once(note.title.as_str())
            .chain(self.corpus.passages(at).take(2).map(|(text, _)| text))
            .collect::<Vec<_>>()
            .join(" ");
        for name in stepwise_tools::notes::company_names(&opening) {
            add(&name);
        }
        out
    }

    /// Whether a note is by or about a party the goal does not compare: one
    /// of its [`parties`](Self::parties) the goal never names and few notes
    /// use (a third bidder, another project's vendor), in a note that
    /// names none of the alternatives. The organisation's own name, which
    /// most notes use, is no such party.
    fn about_another_party(&self, topic: &Topic, at: usize) -> bool {
        let few = (self.corpus.len() / 4).max(2);
        self.parties(at)
            .iter()
            .any(|p| self.notes_using(p) <= few && !mentions(&topic.goal_words, p))
    }

    /// The parties the notes keep naming (more than a few notes, not
    /// nearly all: the options, not the organisation), named up front by
    /// two notes or more ([`parties`](Self::parties)), once.
    fn main_parties(&self) -> &[String] {
        self.main_parties.get_or_init(|| {
            let n = self.corpus.len();
            let few = (n / 4).max(2);
            let most = n * 3 / 4;
            // Named up front by two notes or more (a proposal and a call
            // about it), not only used: "RFID" in one title is no party.
            let mut named: HashMap<String, usize> = HashMap::new();
            // A party a note of its own says is out ("Bellweather's contract
            // ends 30 April and they are not bidding again"): the outgoing
            // incumbent, not an option.
            let mut out_of_it: BTreeSet<String> = BTreeSet::new();
            for at in 0..n {
                for p in self.parties(at) {
                    *named.entry(p.clone()).or_default() += 1;
                    if self.corpus.passages(at).any(|(text, _)| {
                        super::sentence::out_of_the_running(text) && mentions(&words(text), p)
                    }) {
                        out_of_it.insert(p.clone());
                    }
                }
            }
            let mut out: Vec<String> = named
                .into_iter()
                .filter(|(p, titles)| {
                    let using = self.notes_using(p);
                    *titles >= 2 && using > few && using <= most && !out_of_it.contains(p)
                })
                .map(|(p, _)| p)
                .collect();
            out.sort();
            out
        })
    }

    /// Whether a note by or about another party ([`about_another_party`](Self::about_another_party))
    /// says anywhere that the party's option is set aside ("Google Cloud Pub/Sub quote … We are
    /// not pursuing it"), unless the goal names that party.
    fn sets_its_party_aside(&self, topic: &Topic, at: usize) -> bool {
        self.about_another_party(topic, at)
            && self
                .corpus
                .passages(at)
                .any(|(text, _)| super::sentence::sets_aside(text))
    }

    /// The heading a passage of a note sits under, if any.
    pub(crate) fn heading(&self, note_id: &str, passage: &str) -> Option<&str> {
        self.corpus
            .position(note_id)
            .and_then(|at| self.heading_of(at, passage))
    }

    /// Whether a note names one of the alternatives compared.
    pub(crate) fn names_an_entity_in(&self, topic: &Topic, note_id: &str) -> bool {
        self.corpus
            .position(note_id)
            .is_some_and(|at| topic.names_an_entity_where(|t| self.mentioned_at(at, t)))
    }

    /// Whether a note belongs with the rest of the corpus (see [`Lexicon::on_topic`]).
    pub(crate) fn cohesive(&self, note_id: &str) -> bool {
        let b = self.built();
        let cohesion = self
            .corpus
            .position(note_id)
            .and_then(|at| b.cohesion.get(at))
            .copied()
            .unwrap_or(0.0);
        cohesion >= COHESION_SHARE * b.median_cohesion
    }

    /// Whether any note uses `term` (a stem) or a variant of it.
    pub(crate) fn knows(&self, term: &str) -> bool {
        self.stats(term).known
    }

    /// Search terms in the notes that are variants of `term` (a stem),
    /// at most `max`, the most frequent first.
    pub(crate) fn surface_forms(&self, term: &str, max: usize) -> Vec<String> {
        let b = self.built();
        let vocabulary = self.corpus.vocabulary();
        let df = |s: &str| {
            vocabulary
                .stem_id(s)
                .map_or(0, |id| vocabulary.stem_notes(id).len())
        };
        // Every variant of a term starts with its prefix (see `variant_prefix`).
        let from = variant_prefix(term).unwrap_or("");
        let start = b.surface.partition_point(|(s, _)| **s < *from);
        let mut forms: Vec<(usize, String)> = b.surface[start..]
            .iter()
            .take_while(|(s, _)| s.starts_with(from))
            .filter(|(s, _)| same_stem(s, term))
            .map(|(s, id)| (df(s), vocabulary.term(*id as usize).to_owned()))
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

    /// How many notes use `term` (a stem) or a variant of it.
    fn notes_using(&self, term: &str) -> usize {
        self.stats(term).users
    }

    /// The head of a Korean compound as the notes write it on its own:
    /// its longest proper ending of two syllables or more that is a word of
    /// the notes (공공자전거 → 자전거). Korean compounds are headed last.
    fn hangul_head(&self, term: &str) -> Option<String> {
        if !term.chars().all(|c| ('\u{AC00}'..='\u{D7A3}').contains(&c)) {
            return None;
        }
        let chars: Vec<char> = term.chars().collect();
        let vocabulary = self.corpus.vocabulary();
        (1..chars.len().saturating_sub(1))
            .map(|from| chars[from..].iter().collect::<String>())
            .find(|tail| vocabulary.stem_id(tail).is_some())
    }

    /// Whether the notes use a Korean term as a verb (운영하면서, 도입했다).
    fn verbal(&self, term: &str) -> bool {
        if !term.chars().any(|c| ('\u{AC00}'..='\u{D7A3}').contains(&c)) {
            return false;
        }
        let vocabulary = self.corpus.vocabulary();
        vocabulary.stems_starting_with(term).any(|id| {
            vocabulary.stem(id)[term.len()..]
                .chars()
                .next()
                .is_some_and(|c| HANGUL_VERB_SYLLABLES.contains(&c))
        })
    }

    /// The goal's subject terms: its context words (not a dimension, not an
    /// alternative's name, not a verb), and a Korean compound's head too,
    /// that most of the notes use but not nearly all — what the
    /// notes on this decision talk about ("Registrar", "irrigation",
    /// 서하바이크, 자전거).
    fn subject_terms(&self, topic: &Topic) -> Arc<Vec<String>> {
        if let Some(s) = self
            .subjects
            .lock()
            .ok()
            .and_then(|m| m.get(&topic.context).cloned())
        {
            return s;
        }
        let n = self.corpus.len();
        // A word nearly every note uses (the organisation's: "student" in a
        // school district's notes) does not tell one project from another.
        let most = n * 3 / 4;
        let mut out: Vec<String> = Vec::new();
        for t in &topic.context {
            if topic.entities.iter().any(|e| e.contains(t)) {
                continue;
            }
            for candidate in std::iter::once(t.clone()).chain(self.hangul_head(t)) {
                let using = self.notes_using(&candidate);
                if !out.contains(&candidate)
                    && !self.verbal(&candidate)
                    && using * 2 > n
                    && using <= most
                {
                    out.push(candidate);
                }
            }
        }
        let out = Arc::new(out);
        if let Ok(mut m) = self.subjects.lock() {
            m.insert(topic.context.clone(), Arc::clone(&out));
        }
        out
    }

    /// Whether a note is about the goal's subject: it names at least
    /// [`SUBJECT_SHARE`] of the weight of the goal's subject terms (rare
    /// ones weigh more; a word every note uses says nothing). A note on a
    /// different project of the same organisation — a cafeteria's payment
    /// system beside the student records system, a car park's operator
    /// beside the bike scheme's — shares the organisation's words, not the
    /// subject's.
    fn on_subject(&self, topic: &Topic, at: usize) -> bool {
        let subject = self.subject_terms(topic);
        subject.is_empty()
            || !self.has_own_subject(at)
            || subject.iter().any(|t| self.mentioned_at(at, t))
    }

    /// Whether a note has a subject of its own that the corpus is not
    /// about: a word of its title, repeated in its text, that no other note
    /// uses (MealPay, the greenhouse, 공영주차장). A note on the
    /// decision that merely words it differently has no such title.
    fn has_own_subject(&self, at: usize) -> bool {
        *self.own_subject[at].get_or_init(|| {
            let note = &self.corpus.notes()[at];
            let body: Vec<Vec<String>> = self
                .corpus
                .passages(at)
                .filter(|(text, _)| *text != note.title)
                .map(|(text, _)| words(text))
                .collect();
            words(&note.title).iter().any(|w| {
                !is_task_word(w)
                    && !w.chars().any(|c| c.is_ascii_digit())
                    && self.notes_using(w) == 1
                    && body.iter().any(|p| mentions(p, w))
            })
        })
    }

    /// Whether a note is on the goal's topic: it names an alternative the
    /// goal compares, shares enough of the goal's context, or belongs with
    /// the rest of the corpus — most of its words' weight is in words other
    /// notes use too. A note on something else entirely (an office party in
    /// a folder of broker notes) uses words no other note does.
    pub(crate) fn on_topic(&self, topic: &Topic, note_id: &str) -> bool {
        let Some(at) = self.corpus.position(note_id) else {
            return false;
        };
        if self.disclaims(note_id)
            || self.about_a_dropped_option(topic, note_id)
            || self.sets_its_party_aside(topic, at)
        {
            return false;
        }
        // A note naming an alternative by its name (Kafka, Ledgerline) is
        // about it; one that only shares a generic alternative's words (민간
        // 위탁, "center pivot") must be about the goal's subject too.
        let names = |entities: &[Vec<String>]| {
            entities
                .iter()
                .any(|e| !e.is_empty() && e.iter().all(|t| self.mentioned_at(at, t)))
        };
        if names(&topic.named) {
            return true;
        }
        // A goal that compares alternatives is answered by notes on them,
        // or on the decision as a whole; a note naming none that is by or
        // about another party (a third bidder's quote, another project's
        // vendor), or has a subject of its own (the greenhouse, the staff
        // picnic), is about something else.
        // (An "alternative" nearly every note names — the organisation,
        // "Brenmoor, AquaSense or FlowPoint" — tells no note apart.)
        // A goal that names no alternative ("Which payroll vendor should
        // replace Keystone?") compares the parties the notes keep naming.
        if self.about_another_party(topic, at) || self.has_own_subject(at) {
            let most = self.corpus.len() * 3 / 4;
            let distinctive: Vec<Vec<String>> = if topic.entities.is_empty() {
                self.main_parties()
                    .iter()
                    .map(|p| vec![p.clone()])
                    .collect()
            } else {
                topic
                    .entities
                    .iter()
                    .filter(|e| e.iter().any(|t| self.notes_using(t) <= most))
                    .cloned()
                    .collect()
            };
            if !distinctive.is_empty() && !names(&distinctive) {
                return false;
            }
        }
        if !self.on_subject(topic, at) {
            return false;
        }
        if names(&topic.entities) {
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
            || self.share(&known, &|t| self.mentioned_at(at, t)) >= TOPIC_SHARE
    }
}

/// One-syllable Korean particles that may follow a name (휙*이*, 휙*의*).
const PARTICLES: &[char] = &[
    '이', '가', '은', '는', '을', '를', '의', '와', '과', '도', '에',
];

/// Whether `text` holds `name` as a word of its own, maybe with a particle:
/// not inside a longer run of letters (휙 in '휙' 협약 and 휙이, not in 휙휙).
fn names_word(text: &str, name: &str) -> bool {
    text.match_indices(name).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + name.len()..].chars().next();
        before.is_none_or(|c| !c.is_alphanumeric())
            && after.is_none_or(|c| !c.is_alphanumeric() || PARTICLES.contains(&c))
    })
}

/// The goal's topic: what every cited note must be about.
#[derive(Debug, Clone, Default)]
pub(crate) struct Topic {
    /// The alternatives compared, each as its stems.
    pub(crate) entities: Vec<Vec<String>>,
    /// The goal's other content stems (not dimensions, not task words).
    pub(crate) context: Vec<String>,
    /// The alternatives written as names (Kafka, Ledgerline), as stems.
    pub(crate) named: Vec<Vec<String>>,
    /// The leading name of an alternative written in several capitalised
    /// words ("Stratus" of "Stratus Backup Business"), which notes use on
    /// its own; none when two alternatives share it.
    brands: Vec<String>,
    /// The goal as written.
    pub(crate) goal: String,
    /// The goal's stems, every word (task words too).
    pub(crate) goal_words: Vec<String>,
}

impl Topic {
    /// Whether `words` (stems) name one of the alternatives compared.
    pub(crate) fn names_an_entity(&self, words: &[String]) -> bool {
        self.names_an_entity_where(|t| mentions(words, t))
    }

    /// Whether what `mentions` a term names one of the alternatives compared.
    fn names_an_entity_where(&self, mentions: impl Fn(&str) -> bool) -> bool {
        self.entities
            .iter()
            .any(|e| !e.is_empty() && e.iter().all(|t| mentions(t)))
            || self.brands.iter().any(|b| mentions(b))
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
            named: asked
                .entities
                .iter()
                .filter(|e| e.split_whitespace().any(super::sentence::is_name_word))
                .map(|e| content(e))
                .collect(),
            brands: brands(&asked.entities, &dimension_words),
            goal: goal.to_owned(),
            goal_words: words(goal),
        }
    }
}

/// See [`Topic::brands`].
fn brands(entities: &[String], dimension_words: &[String]) -> Vec<String> {
    let lead = |e: &String| {
        let ws: Vec<&str> = e.split_whitespace().collect();
        (ws.len() >= 2 && ws.iter().all(|w| super::sentence::is_name_word(w)))
            .then(|| stem(&ws[0].to_lowercase()))
    };
    let leads: Vec<String> = entities.iter().filter_map(lead).collect();
    let firsts: Vec<String> = entities
        .iter()
        .filter_map(|e| e.split_whitespace().next().map(|w| stem(&w.to_lowercase())))
        .collect();
    leads
        .into_iter()
        .filter(|b| {
            b.chars().count() >= 3
                && firsts.iter().filter(|f| *f == b).count() == 1
                && !dimension_words.contains(b)
        })
        .collect()
}

/// A text as relevance reads it: its stems, and its words as written (for
/// the [`synonyms`] that match only as written).
#[derive(Debug, Clone, Default)]
pub(crate) struct Wording {
    pub(crate) stems: Vec<String>,
    surface: Vec<String>,
}

impl Wording {
    pub(crate) fn of(text: &str) -> Self {
        Self {
            stems: words(text),
            surface: synonyms::surface(text),
        }
    }

    /// Whether it names a dimension word (a stem): the word, a variant of
    /// it, or one of its synonyms.
    pub(crate) fn names(&self, term: &str) -> bool {
        mentions(&self.stems, term) || synonyms::says(term, &self.surface, &self.stems)
    }

    /// The wording without a phrasal noun's verb where its particle does
    /// not follow it: for "check-in", "check your bags" names no "check",
    /// "checked in at the pier" does.
    fn with_phrasal(&self, phrasal: &[(String, &str)]) -> Self {
        let mut out = Self {
            stems: self.stems.clone(),
            surface: self.surface.clone(),
        };
        for (verb, particle) in phrasal {
            let said = (self.surface.windows(2)).any(|w| w[1] == *particle && stem(&w[0]) == *verb);
            if !said {
                out.stems.retain(|s| !mentions_word(s, verb));
            }
        }
        out
    }

    /// Whether it gives a duration: a number with a unit of time ("3 h 50
    /// min", "2 business days", "45분", "3~4주").
    fn has_duration(&self) -> bool {
        const UNITS: &[&str] = &[
            "s", "sec", "secs", "second", "seconds", "min", "mins", "minute", "minutes", "h", "hr",
            "hrs", "hour", "hours", "day", "days", "week", "weeks", "month", "months", "business",
            "working",
        ];
        const KO_UNITS: &[&str] = &["초", "분", "시간", "일", "주", "개월", "영업일"];
        // "two business days", "half a day" (not "a day": once a day).
        const COUNTS: &[&str] = &[
            "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "twelve",
        ];
        let unit_at = |i: usize| {
            self.surface
                .get(i)
                .is_some_and(|u| UNITS.contains(&u.as_str()))
        };
        self.surface.iter().enumerate().any(|(i, w)| {
            if COUNTS.contains(&w.as_str()) {
                return unit_at(i + 1);
            }
            if w == "half" && self.surface.get(i + 1).is_some_and(|a| a == "a") {
                return unit_at(i + 2);
            }
            let rest = w.trim_start_matches(|c: char| c.is_ascii_digit());
            if rest.len() == w.len() {
                return false;
            }
            if rest.is_empty() {
                return unit_at(i + 1);
            }
            UNITS.contains(&rest) || KO_UNITS.iter().any(|u| rest.starts_with(u))
        })
    }

    /// Whether it names a dimension of several words (its stems) by a
    /// synonym of the whole.
    fn names_dimension(&self, terms: &[String]) -> bool {
        synonyms::of_dimension(terms)
            .iter()
            .any(|s| s.said_in(&self.surface, &self.stems))
    }
}

/// Words that, beside another, only say "how it is handled" or "all of
/// it": "temperature *control*", "breakdown *response*", "*tool*
/// integration", "*total* cost", "안전 *관리*", "관람객 *유치*", "강사
/// *운영*", "요원 *배치*". A note on temperature control says
/// "temperature", rarely "control"; one on total cost gives the sums.
const GENERIC_PARTS: &[&str] = &[
    "total",
    "overall",
    "tool",
    "tools",
    "control",
    "management",
    "response",
    "handling",
    "level",
    "levels",
    "process",
    "experience",
    "workflow",
    "job",
    "contract",
    "vendor",
    "vendors",
    "관리",
    "시스템",
    "사용",
    "업체",
    "도입",
    "부담",
    "운영",
    "배치",
    "대응",
    "유치",
    "수준",
    "참여",
    "체계",
];

/// Whether a dimension is a length of time ("job turnaround time",
/// "restore speed", "turnaround"): its head is a duration head or
/// turnaround.
pub(crate) fn measures_elapsed_time(dimension: &str) -> bool {
    dimension_terms(dimension)
        .last()
        .is_some_and(|h| duration_heads().contains(h) || h == "turnaround")
}

/// Heads of compound dimensions that a length of time measures.
const DURATION_HEADS: &[&str] = &[
    "speed",
    "time",
    "times",
    "turnaround",
    "effort",
    "workload",
    "속도",
    "시간",
    "기간",
    "부담",
];

/// [`DURATION_HEADS`] as stems, worked out once.
pub(crate) fn duration_heads() -> &'static [String] {
    static STEMS: OnceLock<Vec<String>> = OnceLock::new();
    STEMS.get_or_init(|| DURATION_HEADS.iter().map(|h| stem(h)).collect())
}

/// The words a sentence must name to be about a dimension: its content
/// words, without the [`GENERIC_PARTS`] of a compound (stems).
pub(crate) fn dimension_terms(dimension: &str) -> Vec<String> {
    let terms = content(dimension);
    let terms = if terms.is_empty() {
        words(dimension)
    } else {
        terms
    };
    let generic: Vec<String> = GENERIC_PARTS.iter().map(|g| stem(g)).collect();
    let key: Vec<String> = terms
        .iter()
        .filter(|t| !generic.contains(t))
        .cloned()
        .collect();
    if key.is_empty() { terms } else { key }
}

/// Whether a heading names a dimension: every one of its
/// [`dimension_terms`], or a synonym of the whole.
pub(crate) fn heading_names(heading: &Wording, dimension: &str) -> bool {
    let terms = dimension_terms(dimension);
    (!terms.is_empty() && terms.iter().all(|t| heading.names(t)))
        || heading.names_dimension(&words(dimension))
}

/// Particles that make a hyphenated verb a noun of its own: check-in,
/// sign-up, roll-out, drop-off.
const PARTICLES_OF_PHRASAL: &[&str] = &["in", "out", "up", "off", "over", "down"];

/// A dimension's phrasal nouns as (verb stem, particle): "dockside
/// check-in" → ("check", "in"). Only hyphenated ones: "time in port" is no
/// phrasal noun.
fn phrasal_nouns(dimension: &str) -> Vec<(String, &'static str)> {
    (dimension.split_whitespace())
        .filter_map(|w| {
            let (verb, particle) = w.to_lowercase().split_once('-').map(|(v, p)| {
                let p = p.trim_matches(|c: char| !c.is_alphanumeric()).to_owned();
                (v.to_owned(), p)
            })?;
            let particle = PARTICLES_OF_PHRASAL.iter().find(|p| **p == particle)?;
            (!verb.is_empty()).then(|| (stem(&verb), *particle))
        })
        .collect()
}

/// Whether a sentence of note `note_id` is about `dimension`; what frames
/// its passage (`frame`: [`Lexicon::frame`]) counts as naming it. A
/// dimension word is named by itself, a variant or a synonym.
/// `of_an_alternative`: the sentence, its frame or its note names one of
/// the alternatives compared.
pub(crate) fn about_dimension(
    lexicon: &Lexicon,
    dimension: &str,
    sentence: &Wording,
    frame: &Wording,
    note_id: &str,
    of_an_alternative: bool,
) -> bool {
    if let Some(parts) = conjuncts(dimension) {
        return parts.iter().any(|part| {
            about_dimension(lexicon, part, sentence, frame, note_id, of_an_alternative)
        });
    }
    // "Dockside check-in" is not named by "check the manifest".
    let phrasal = phrasal_nouns(dimension);
    let (owned_sentence, owned_frame);
    let (sentence, frame) = if phrasal.is_empty() {
        (sentence, frame)
    } else {
        owned_sentence = sentence.with_phrasal(&phrasal);
        owned_frame = frame.with_phrasal(&phrasal);
        (&owned_sentence, &owned_frame)
    };
    let whole = content(dimension);
    let whole = if whole.is_empty() {
        words(dimension)
    } else {
        whole
    };
    if whole.is_empty() {
        return false;
    }
    // A synonym of the whole dimension ("bushels per acre" for crop yield;
    // "ease of use", whose "use" is no content word, by all its words).
    if sentence.names_dimension(&whole) || sentence.names_dimension(&words(dimension)) {
        return true;
    }
    let terms = dimension_terms(dimension);
    let frame_names_it = terms.iter().all(|t| frame.names(t));
    // "Response time" whose generic "response" was dropped is not named by
    // any "time" ("time and materials"): a length of time, or every word.
    let bare_duration = terms.len() == 1
        && whole.len() > 1
        && duration_heads().contains(&terms[0])
        && !sentence.has_duration()
        && !whole.iter().all(|t| sentence.names(t));
    // Nor is "job turnaround time" named by "Sam's time" alone: a head that
    // is a length of time needs another of its words beside it.
    let bare_head = terms.len() > 1
        && terms.last().is_some_and(|h| duration_heads().contains(h))
        && !terms[..terms.len() - 1]
            .iter()
            .any(|t| sentence.names(t) || frame.names(t));
    let in_sentence = !bare_duration && !bare_head && terms.iter().any(|t| sentence.names(t));
    if (in_sentence || frame_names_it)
        && lexicon.share(&terms, &|t| sentence.names(t) || frame.names(t)) >= DIMENSION_SHARE
    {
        return true;
    }
    // A compound dimension by its head ("crop yield" → "Field 9 yielded 241
    // bushels"): the head in the sentence, every other word in its note; a
    // head that is a length of time ("restore *speed*", "admin *effort*")
    // by a duration beside the other words and an alternative ("Stratus: a
    // full restore took 3 h 50 min"; the nurse-call bell's 응답 시간 is
    // about no option).
    match terms.split_last() {
        Some((head, modifiers)) if !modifiers.is_empty() => {
            // A head that is a length of time says little alone (see
            // `bare_head`).
            (sentence.names(head)
                && modifiers.iter().all(|m| {
                    lexicon.note_mentions(note_id, m) || lexicon.note_compounds(note_id, m)
                })
                && !bare_head)
                || (of_an_alternative
                    && duration_heads().contains(head)
                    && sentence.has_duration()
                    && modifiers
                        .iter()
                        .all(|m| sentence.names(m) || frame.names(m)))
        }
        _ => false,
    }
}

/// The dimensions a dimension joined by "and" is made of: a sentence on
/// the EHR, or on phone integration, is about "EHR and phone integration".
/// None for a dimension without "and".
fn conjuncts(dimension: &str) -> Option<Vec<&str>> {
    let parts: Vec<&str> = dimension.split(" and ").map(str::trim).collect();
    (parts.len() > 1 && parts.iter().all(|p| !p.is_empty())).then_some(parts)
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
/// ([`Lexicon::frame`]) covers.
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
    fn a_dimension_joined_by_and_is_each_of_its_parts() {
        assert_eq!(
            conjuncts("EHR and phone integration").unwrap(),
            ["EHR", "phone integration"]
        );
        assert_eq!(conjuncts("total cost"), None);
    }

    #[test]
    fn durations_are_numbers_with_a_unit_of_time() {
        for (text, expected) in [
            ("A full restore took 3 h 50 min.", true),
            ("Back within 2 business days.", true),
            ("Standard payouts: two business days after capture.", true),
            ("Setup is half a day.", true),
            ("주문 후 3~4주가 걸립니다.", true),
            ("대당 45분 내외.", true),
            ("Backed up three times a day.", false),
            ("60 users at $3.00.", false),
            ("Stratus's own figures.", false),
        ] {
            assert_eq!(Wording::of(text).has_duration(), expected, "{text}");
        }
    }

    #[test]
    fn a_duration_names_a_compound_whose_head_is_a_length_of_time() {
        let lx = lexicon();
        let about = |d: &str, s: &str, alternative: bool| {
            about_dimension(
                &lx,
                d,
                &Wording::of(s),
                &Wording::of(""),
                "audit",
                alternative,
            )
        };
        let restore = "Kafka: restoring the 400 GB folder took 3 h 50 min.";
        assert!(about("restore speed", restore, true));
        // Of no alternative (the nurse-call bell's response time), or with
        // no duration, or without the other words, it is not.
        assert!(!about("restore speed", restore, false));
        assert!(!about(
            "restore speed",
            "Kafka restores single files from the console.",
            true
        ));
        assert!(!about(
            "restore speed",
            "Kafka copied the folder in 3 h 50 min.",
            true
        ));
        // "time" alone is no turnaround time.
        assert!(!about(
            "job turnaround time",
            "Enabling it is configuration on our interface engine plus a joint test, most of Sam's time.",
            true
        ));
    }

    #[test]
    fn a_korean_modifier_counts_where_a_note_compounds_it() {
        let lx = Lexicon::new(Arc::new(
            Corpus::from_notes([Note::new(
                "portal",
                "연동 시험",
                "행정포털과 인사DB를 매일 밤 맞춘다.",
            )])
            .unwrap(),
        ));
        assert!(lx.note_compounds("portal", "행정"));
        // "인사DB" is 인사 and DB: no Hangul compound.
        assert!(!lx.note_compounds("portal", "인사"));
        // A word of its own is no compound; nor is a word the note lacks.
        assert!(!lx.note_compounds("portal", "매일"));
        assert!(!lx.note_compounds("portal", "보안"));
        assert!(!lx.note_compounds("nosuch", "행정"));
    }

    #[test]
    fn a_phrasal_noun_is_named_with_its_particle() {
        assert_eq!(
            phrasal_nouns("dockside check-in"),
            [("check".to_owned(), "in")]
        );
        assert!(phrasal_nouns("time in port").is_empty());
        let lx = lexicon();
        let about = |d: &str, s: &str| {
            about_dimension(&lx, d, &Wording::of(s), &Wording::of(""), "audit", true)
        };
        assert!(about(
            "check-in",
            "Kafka passengers check in at the kiosk in 40 seconds."
        ));
        assert!(about("check-in", "Kafka check-in closes 20 minutes early."));
        assert!(!about(
            "check-in",
            "Kafka staff check the manifest against the booking list."
        ));
    }

    #[test]
    fn a_dimension_needs_its_own_words() {
        let lx = lexicon();
        let about = |d: &str, s: &str, id: &str| {
            about_dimension(&lx, d, &Wording::of(s), &lx.frame(id, s), id, false)
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
    fn a_note_on_another_project_of_the_same_organisation_is_off_subject() {
        let lx = Lexicon::new(Arc::new(
            Corpus::from_notes([
                Note::new("quote", "Ledgerline quote", "Registrar replacement: $9 per student a year."),
                Note::new("pilot", "Pilot report", "The Registrar import took two weeks; cost was on budget."),
                Note::new("call", "Call with Pell County", "Pell County left Registrar in 2023 for Ledgerline."),
                Note::new("memo", "Finance memo", "Registrar support ends in June; the cost of staying is $40,000."),
                Note::new(
                    "mealpay",
                    "MealPay rollout",
                    "MealPay cost $38,500 for the cafeterias. Student balances moved to MealPay in March.",
                ),
                Note::new("survey", "From the parents' evening", "The district's families want grades on their phones; cost was not asked."),
            ])
            .unwrap(),
        ));
        let asked = Asked {
            dimensions: vec!["cost".into()],
            entities: Vec::new(),
        };
        let topic = Topic::of(
            "Should the district replace Registrar? Consider cost.",
            &asked,
        );
        assert!(lx.on_topic(&topic, "memo"));
        // A note that never names Registrar but has no subject of its own
        // (no title word that it repeats and no other note uses).
        assert!(lx.on_topic(&topic, "survey"));
        // MealPay is the note's own subject, and it never names Registrar.
        assert!(!lx.on_topic(&topic, "mealpay"));
        // Unless the goal is about it.
        let topic = Topic::of(
            "Should the district keep MealPay? Consider cost.",
            &Asked {
                entities: vec!["MealPay".into()],
                ..asked
            },
        );
        assert!(lx.on_topic(&topic, "mealpay"));
    }

    #[test]
    fn a_note_by_another_party_is_not_evidence_on_the_alternatives() {
        let lx = Lexicon::new(Arc::new(
            Corpus::from_notes([
                Note::new("kq", "Kafka quote", "Kafka on MSK costs $2,950 a month."),
                Note::new(
                    "sq",
                    "SQS design",
                    "SQS costs $210 a month for our traffic.",
                ),
                Note::new(
                    "kc",
                    "Kafka reference call",
                    "Their Kafka bill is $3,100 a month.",
                ),
                Note::new(
                    "sc",
                    "SQS reference call",
                    "Their SQS bill is $190 a month.",
                ),
                Note::new(
                    "memo",
                    "Finance memo",
                    "Kafka and SQS are both on AWS; the budget is $4,000.",
                ),
                Note::new(
                    "pubsy",
                    "Pubsy Cloud quote",
                    "Pubsy Cloud priced our traffic at $640 a month. Pubsy scales without limits.",
                ),
                Note::new(
                    "kick",
                    "Kickoff",
                    "Pubsy was mentioned; Kafka and SQS are on the list.",
                ),
                Note::new(
                    "ops",
                    "Operations",
                    "Kafka needs partition work; SQS needs alarms.",
                ),
            ])
            .unwrap(),
        ));
        let asked = Asked {
            dimensions: vec!["cost".into()],
            entities: vec!["Kafka".into(), "SQS".into()],
        };
        let topic = Topic::of("Kafka or SQS? Consider cost.", &asked);
        assert!(lx.on_topic(&topic, "memo"));
        // Its title names a party few notes use and the goal does not, and
        // it names neither alternative.
        assert!(!lx.on_topic(&topic, "pubsy"));
        // A goal that names no alternative compares the parties the notes
        // keep naming up front (Kafka, SQS): the Pubsy quote is still out.
        let none = Asked {
            dimensions: vec!["cost".into()],
            entities: Vec::new(),
        };
        let topic = Topic::of("Which broker should we use? Consider cost.", &none);
        assert!(lx.on_topic(&topic, "kq"));
        assert!(!lx.on_topic(&topic, "pubsy"));
    }

    #[test]
    fn an_alternative_of_several_names_is_named_by_its_leading_one() {
        let asked = Asked {
            dimensions: vec!["cost".into()],
            entities: vec![
                "Stratus Backup Business".into(),
                "Harbor Cloud Backup".into(),
            ],
        };
        let topic = Topic::of("Stratus Backup Business or Harbor Cloud Backup?", &asked);
        assert!(topic.names_an_entity(&words("Stratus restored it in 9 minutes.")));
        assert!(!topic.names_an_entity(&words("The backup took 9 minutes.")));
        // Two alternatives that share their leading name are named in full.
        let asked = Asked {
            dimensions: vec!["cost".into()],
            entities: vec!["Google Cloud".into(), "Google Workspace".into()],
        };
        let topic = Topic::of("Google Cloud or Google Workspace?", &asked);
        assert!(!topic.names_an_entity(&words("Google raised its prices.")));
        assert!(topic.names_an_entity(&words("Google Cloud raised its prices.")));
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
        assert!(coverage(&lx, &two[1], &passage, &lx.frame("load", "").stems) > 0.99);
    }
}
