//! `compare_results`: lines up the results of several `search_notes` steps —
//! which notes each found, which notes several found, and where two notes
//! state different figures about the same thing. Deterministic, no model.
//!
//! # Contradictions
//!
//! Two sentences from different notes contradict when they give different
//! values for **the same attribute of the same subject**. A figure (a number
//! with its unit) is read together with what it measures, and two figures are
//! compared only when every part agrees:
//!
//! - **unit**: the same unit after normalising (`%`/"percent"/"per cent"/
//!   "퍼센트"; `$`/"dollars"/"달러"; `₩`/"원"/"만 원", with the scale applied;
//!   "ms", "weeks", "명", "건", …), including a rate ("$450 per month" and
//!   "월 150만 원" are per month; "$450" is not). A count of people and a share
//!   of managers ("15 of 24 managers") are different units.
//! - **measured phrase**: the content words nearest the figure in its part
//!   of the clause (the noun phrase it quantifies or is predicated of), as
//!   whole-word stems ([`crate::notes::stem`]), after any source frame
//!   ("the data team found that", "데이터팀이 다시 집계한 결과"). The two
//!   phrases share at least two words (a counted noun — "100,000 messages" —
//!   counts as one), and every word around each figure is used somewhere in
//!   the other sentence: "cost of hosting" and "cost of support", "bot
//!   conversations" and "all conversations", differ.
//! - **entity**: the named subjects (capitalised names and acronyms — Kafka,
//!   RabbitMQ, SQS — and Latin names inside Korean text) must be the same set;
//!   in Korean, the topic or subject noun nearest before the figure must be
//!   the same; and notes whose titles name subjects must share one. Two
//!   different named systems never contradict.
//! - **conditions**: the same qualifiers — a maximum, peak, limit, target,
//!   budget, projection, load test, average or median, a change ("rose 12%",
//!   "58 percent less") rather than a level, an old or a new state — or none
//!   on both sides. Periods (months, quarters, years, horizons such as
//!   "three-year") and settings (pilot, production) may be named on one side
//!   only, but never differently on both. A bound ("under 4 minutes", "at
//!   least 30%") or a range ("5 to 10 runs") is not a value and is never
//!   compared.
//!
//! When a pair cannot be told apart this way, nothing is reported: a false
//! contradiction misleads a reader more than a missed one, and the brief
//! quotes both sides of each one it reports.

use std::collections::{BTreeMap, BTreeSet};
use std::future::{Future, ready};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use stepwise_core::{Effects, Tool, ToolContext, ToolError};

use crate::notes::sentences;
use crate::notes::stem::{is_hangul, mentions, stem, words};
use crate::notes::tokenize::{is_cjk, is_stop_word};
use crate::text::figure_words::{FigureWords, figure_words};

/// The figure reader's words (`text/figures-*.toml`).
fn fw() -> &'static FigureWords {
    figure_words()
}

/// Most contradictions reported.
const MAX_CONTRADICTIONS: usize = 5;

/// Compares the outputs of `search_notes` steps.
#[derive(Debug, Clone, Copy, Default)]
pub struct CompareResults;

/// Arguments of `compare_results`.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CompareResultsArgs {
    /// Outputs of earlier `search_notes` steps, usually references such as
    /// `["$q1", "$q2"]`.
    #[schemars(length(min = 1))]
    pub results: Vec<Value>,
}

/// A note and the inputs (by position) that found it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FoundNote {
    /// The note.
    pub note_id: String,
    /// Its title.
    pub title: String,
    /// Positions in `results` of the searches that returned it.
    pub found_by: Vec<usize>,
}

/// One side of a contradiction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Claim {
    /// The note that says it.
    pub note_id: String,
    /// The sentence, verbatim from a retrieved passage.
    pub sentence: String,
}

/// Two notes giving different figures about the same thing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Contradiction {
    /// What both figures measure, in the first sentence's words, with the
    /// entity they are about (if one is named) and the unit:
    /// `"resolved without escalation to a human agent (%)"`,
    /// `"Kafka: messages (messages per second)"`.
    pub term: String,
    /// The two claims.
    pub claims: Vec<Claim>,
}

/// Output of `compare_results`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CompareResultsOutput {
    /// Every note found, in order of first appearance.
    pub sources: Vec<FoundNote>,
    /// Notes found by more than one search.
    pub shared_sources: Vec<String>,
    /// Conflicting figures between notes.
    pub contradictions: Vec<Contradiction>,
}

#[derive(Debug, Deserialize)]
struct Hit {
    note_id: String,
    #[serde(default)]
    title: String,
    #[serde(default)]
    passages: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct SearchOutput {
    results: Vec<Hit>,
}

// ---------------------------------------------------------------------------
// Word lists. Lowercase; Korean entries are stems (particles stripped).
// ---------------------------------------------------------------------------

/// Settings a figure may be measured in, by class; like periods, they may be
/// named on one side only, never differently on both.
const SETTINGS: &[&str] = &[
    "pilot: pilot pilots trial 파일럿 시범",
    "production: production prod",
    "staging: staging",
];

/// Scale words after a number: "$1.2 million", "10k".
const SCALES: &[(&str, f64)] = &[
    ("thousand", 1e3),
    ("k", 1e3),
    ("million", 1e6),
    ("mn", 1e6),
    ("m", 1e6),
    ("billion", 1e9),
    ("bn", 1e9),
];

/// Korean scales glued to a number: "320만", "1억".
const KOREAN_SCALES: &[(char, f64)] = &[('천', 1e3), ('만', 1e4), ('억', 1e8), ('조', 1e12)];

/// Content words nearest a figure that make up its measured phrase.
const PHRASE_WORDS: usize = 5;
/// Tokens before a figure searched for a bound ("under the 4") or an
/// approximation ("about").
const NEAR_BEFORE: usize = 3;
/// Tokens searched before or after a figure for its rate ("cost per month
/// was $4,000", "20 hours of data work per month").
const RATE_REACH: usize = 5;
/// Longest run of words a contradiction's label quotes; a longer one is
/// shown as its shared words only.
const LABEL_SPAN: usize = 10;
/// Relative difference within which an approximate figure ("about 30%")
/// agrees with another.
const APPROX_TOLERANCE: f64 = 0.1;

/// The words of a word list (the lists are written as one string each, to
/// read like the lists they are).
fn list(words: &str) -> impl Iterator<Item = &str> {
    words.split_whitespace()
}

/// Whether a word list holds `word`.
fn listed(words: &str, word: &str) -> bool {
    list(words).any(|w| w == word)
}

/// The value paired with `word` in a table of pairs.
fn lookup<T: Copy>(table: &[(&str, T)], word: &str) -> Option<T> {
    table.iter().find(|(w, _)| *w == word).map(|(_, v)| *v)
}

/// Most words a per-thread lookup memo holds before it starts over.
const MEMO_CAP: usize = 50_000;

/// The class of `word` in a table of `"class: words…"` lines.
fn class_of(groups: &[&'static str], word: &str) -> Option<&'static str> {
    thread_local! {
        /// Classes by (table, word): each table line is split once per
        /// distinct word, not once per token compared.
        static MEMO: std::cell::RefCell<std::collections::HashMap<(usize, String), Option<&'static str>>> =
            std::cell::RefCell::new(std::collections::HashMap::new());
    }
    let key = (groups.as_ptr() as usize, word.to_owned());
    if let Some(c) = MEMO.with(|memo| memo.borrow().get(&key).copied()) {
        return c;
    }
    let class = class_where(groups, |w| w == word);
    MEMO.with(|memo| {
        let mut memo = memo.borrow_mut();
        if memo.len() >= MEMO_CAP {
            memo.clear();
        }
        memo.insert(key, class);
    });
    class
}

/// The class with a root that starts `word`, in a table of `"class:
/// roots…"` lines (Korean roots: "예상된다" → projected).
fn class_by_prefix(groups: &[&'static str], word: &str) -> Option<&'static str> {
    class_where(groups, |root| word.starts_with(root))
}

fn class_where(groups: &[&'static str], hit: impl Fn(&str) -> bool) -> Option<&'static str> {
    groups.iter().find_map(|line| {
        let (class, words) = line.split_once(':')?;
        list(words).any(&hit).then_some(class)
    })
}

/// The value of an English number word: "three" → 3.
fn number_word(word: &str) -> Option<u32> {
    let n = list(fw().number_words).position(|w| w == word)?;
    u32::try_from(n).ok()
}

/// The value of an English ordinal word: "third" → 3.
fn ordinal_word(word: &str) -> Option<u32> {
    let n = list(fw().ordinal_words).position(|w| w == word)?;
    u32::try_from(n + 1).ok()
}

fn hangul_word(word: &str) -> bool {
    word.chars().any(is_hangul)
}

// ---------------------------------------------------------------------------
// Tokens
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Word,
    Number(f64),
    Symbol(char),
    /// Ends a clause: punctuation, or a word of the clause words (figures-*.toml).
    Break(char),
}

/// One token of a sentence.
#[derive(Debug, Clone)]
struct Token {
    /// As written.
    text: String,
    lower: String,
    kind: Kind,
    /// Written right after the previous token, with no space.
    glued: bool,
    /// The first word of the sentence or after a colon, bracket or quote:
    /// its capital letter says nothing about it being a name.
    initial: bool,
}

impl Token {
    fn is_word(&self, word: &str) -> bool {
        self.kind == Kind::Word && self.lower == word
    }

    fn number(&self) -> Option<f64> {
        match self.kind {
            Kind::Number(v) => Some(v),
            _ => None,
        }
    }
}

const BREAK_CHARS: &[char] = &[
    ',', ';', ':', '(', ')', '[', ']', '{', '}', '—', '!', '?', '"', '“', '”', '.', '…', '·', '「',
    '」', '、', '。',
];

/// Breaks after which a capitalised word may just start a sentence.
const OPENING_BREAKS: &[char] = &[':', '(', '[', '"', '“', '.', '!', '?', '—', '「', '-'];

/// Splits a sentence into words, numbers, symbols and clause breaks. Latin
/// letters and digits stay together ("p95", "Q2", "A100"); a number is
/// digits with decimal points and thousands commas ("18,600", "1.5"); a
/// dash with a space beside it is a break, a glued one joins ("fine-tuning",
/// "30-day").
fn lex(sentence: &str) -> Vec<Token> {
    let chars: Vec<char> = sentence.chars().collect();
    let mut tokens: Vec<Token> = Vec::new();
    let mut i = 0;
    let mut glued = false;
    while let Some(&c) = chars.get(i) {
        if c.is_whitespace() {
            glued = false;
            i += 1;
            continue;
        }
        let start = i;
        let kind = if c.is_ascii_digit() {
            i = number_end(&chars, i);
            let digits: String = chars[start..i].iter().filter(|c| **c != ',').collect();
            digits.parse().map_or(Kind::Word, Kind::Number)
        } else if c.is_alphabetic() {
            let hangul = is_hangul(c);
            while chars.get(i).is_some_and(|&d| {
                (d.is_alphabetic() && is_hangul(d) == hangul) || (!hangul && d.is_ascii_digit())
            }) {
                i += 1;
            }
            Kind::Word
        } else if matches!(c, '\'' | '’') {
            // "RabbitMQ's": the possessive says nothing.
            i += 1;
            if chars.get(i) == Some(&'s') && !chars.get(i + 1).is_some_and(|d| d.is_alphabetic()) {
                i += 1;
            }
            continue;
        } else {
            i += 1;
            let spaced = |j: Option<&char>| j.is_none_or(|d| d.is_whitespace());
            let dash = matches!(c, '-' | '–');
            if BREAK_CHARS.contains(&c)
                || (dash
                    && (spaced(start.checked_sub(1).and_then(|j| chars.get(j)))
                        || spaced(chars.get(i))))
            {
                Kind::Break(c)
            } else {
                Kind::Symbol(c)
            }
        };
        let text: String = chars[start..i].iter().collect();
        let lower = text.to_lowercase();
        let kind = if kind == Kind::Word && listed(fw().clause_words, &lower) {
            Kind::Break(',')
        } else {
            kind
        };
        let initial = kind == Kind::Word
            && tokens
                .iter()
                .rev()
                .find(|t| !matches!(t.kind, Kind::Symbol(_)))
                .is_none_or(|t| matches!(t.kind, Kind::Break(b) if OPENING_BREAKS.contains(&b)));
        tokens.push(Token {
            text,
            lower,
            kind,
            glued,
            initial,
        });
        glued = true;
    }
    tokens
}

/// Where the number starting at `i` ends: digits, a decimal point followed
/// by a digit, or a comma followed by exactly three digits.
fn number_end(chars: &[char], mut i: usize) -> usize {
    let digit = |j: usize| chars.get(j).is_some_and(char::is_ascii_digit);
    while let Some(&c) = chars.get(i) {
        if c.is_ascii_digit() || (c == '.' && digit(i + 1)) {
            i += 1;
        } else if c == ',' && digit(i + 1) && digit(i + 2) && digit(i + 3) && !digit(i + 4) {
            i += 4;
        } else {
            break;
        }
    }
    i
}

/// The clause of each token: breaks separate clauses.
fn clauses(tokens: &[Token]) -> Vec<usize> {
    let mut clause = 0;
    tokens
        .iter()
        .map(|t| {
            if matches!(t.kind, Kind::Break(_)) {
                clause += 1;
            }
            clause
        })
        .collect()
}

// ---------------------------------------------------------------------------
// Markers: what a word says about the figures near it
// ---------------------------------------------------------------------------

/// What a token says about the figures near it, besides being part of
/// their measured phrase.
#[derive(Debug, Clone, PartialEq)]
enum Marker {
    /// A period or horizon: `m9` (September), `q2`, `y2024`, `year1`
    /// ("the first year"), `h3year` ("three-year").
    Period(String),
    /// A setting: pilot, production.
    Setting(&'static str),
    /// A qualifier class from the qualifiers (figures-*.toml).
    Qualifier(&'static str),
    /// A rate: "monthly" → `month`.
    Rate(&'static str),
    /// An approximation, a bound word, a number word or filler: not part of
    /// any measured phrase.
    Silent,
}

/// Markers of the tokens of a sentence, by position. Numbers that name a
/// period or an ordinal ("9월", "2024", "95th percentile") are marked too,
/// so they are not read as figures.
fn markers(tokens: &[Token]) -> BTreeMap<usize, Marker> {
    let mut out = BTreeMap::new();
    for (i, t) in tokens.iter().enumerate() {
        let next = tokens.get(i + 1);
        if let Some(marker) = number_marker(tokens, i) {
            out.insert(i, marker);
            if next.is_some_and(|n| n.glued && n.kind == Kind::Word) {
                out.insert(i + 1, Marker::Silent);
            }
            continue;
        }
        if t.kind != Kind::Word || out.contains_key(&i) {
            continue;
        }
        let marker = if let Some((period, len)) = word_period(tokens, i) {
            for j in i + 1..i + len {
                out.insert(j, Marker::Silent);
            }
            Some(Marker::Period(period))
        } else if matches!(stem(&t.lower).as_str(), "운영" | "기간")
            && i > 0
            && matches!(out.get(&(i - 1)), Some(Marker::Setting(_)))
        {
            // "시범 운영", "파일럿 기간": the pilot itself, one setting.
            Some(Marker::Silent)
        } else if t.is_word("up") && next.is_some_and(|n| n.is_word("front")) {
            // "$5,400 up front": a one-off, not a rise.
            out.insert(i + 1, Marker::Silent);
            Some(Marker::Qualifier("one-off"))
        } else {
            word_marker(t)
        };
        if let Some(marker) = marker {
            out.insert(i, marker);
        }
    }
    out
}

/// A marker for a number that is not a figure: a time of day ("11 p.m.",
/// "10:30"), an ordinal ("95th percentile", "95백분위" → `p95`), a Korean
/// month, quarter or year ("9월", "3분기", "2024년"), a horizon ("3-year",
/// "over 3 years", "3년간", "3년 총비용"), a period compared against ("3개월과
/// 비교해") or a plain year ("in 2024").
fn number_marker(tokens: &[Token], i: usize) -> Option<Marker> {
    let t = tokens.get(i)?;
    let value = t.number()?;
    if is_clock_time(tokens, i) {
        return Some(Marker::Silent);
    }
    let n = if value.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(&value) {
        value as u32
    } else {
        u32::MAX
    };
    let year = (1900..=2100).contains(&n) && !t.text.contains(',');
    let next = tokens.get(i + 1).filter(|n| n.glued);
    if let Some(w) = next
        .filter(|n| n.kind == Kind::Word)
        .map(|n| n.lower.as_str())
    {
        // "1~12월": a span of months (the whole year), not December.
        let span_end = i >= 2
            && matches!(tokens[i - 1].kind, Kind::Symbol('~' | '～' | '-' | '–'))
            && tokens[i - 2].number().is_some();
        if span_end && w.starts_with('월') {
            return Some(Marker::Silent);
        }
        let after = tokens.get(i + 2);
        if let Some(marker) =
            ordinal_marker(w, n, after).or_else(|| korean_period(w, n, year, after))
        {
            return Some(marker);
        }
    }
    if let Some(unit) = horizon_unit(tokens, i) {
        return Some(Marker::Period(format!("h{n}{unit}")));
    }
    let before = i.checked_sub(1).and_then(|j| tokens.get(j));
    let currency = before.is_some_and(|b| matches!(b.kind, Kind::Symbol('$' | '€' | '£' | '₩')));
    let percent = next.is_some_and(|n| n.kind == Kind::Symbol('%'));
    (year && !currency && !percent).then(|| Marker::Period(format!("y{n}")))
}

/// "11 p.m.", "8am", "10:30".
fn is_clock_time(tokens: &[Token], i: usize) -> bool {
    let word = |k: usize| tokens.get(k).map(|n| n.lower.as_str());
    let meridiem = match word(i + 1) {
        Some("am" | "pm") => true,
        Some("a" | "p") => word(i + 2) == Some("."),
        _ => false,
    };
    let colon = tokens
        .get(i + 1)
        .is_some_and(|n| n.glued && n.kind == Kind::Break(':'))
        && tokens.get(i + 2).and_then(Token::number).is_some();
    meridiem || colon
}

/// An ordinal glued to its number: "95th percentile" → `p95`, "3rd" or
/// "1차" → silent.
fn ordinal_marker(w: &str, n: u32, after: Option<&Token>) -> Option<Marker> {
    let english = matches!(w, "st" | "nd" | "rd" | "th");
    if w.starts_with("백분위")
        || (english && after.is_some_and(|p| p.lower.starts_with("percentile")))
    {
        return Some(Marker::Qualifier(percentile_class(n)));
    }
    let silent = english || w.starts_with('차') || w.starts_with('위') || w.starts_with('등');
    silent.then_some(Marker::Silent)
}

/// A Korean period written with its number — "9월", "3분기", "2024년",
/// "3년간", "3년 총비용" (a bare 년 before a noun), "3개월과 비교해" — or a
/// "single" that is part of a phrase ("1회 충전").
fn korean_period(w: &str, n: u32, year: bool, after: Option<&Token>) -> Option<Marker> {
    let period = |key: String| Some(Marker::Period(key));
    let unit = if w.starts_with('년') {
        "year"
    } else {
        "month"
    };
    if w.starts_with("분기") {
        return period(format!("q{n}"));
    }
    if w.starts_with('월') && (1..=12).contains(&n) {
        return period(format!("m{n}"));
    }
    if w.starts_with("년간") || w.starts_with("개월간") {
        return period(format!("h{n}{unit}"));
    }
    if w.starts_with('년') && year {
        return period(format!("y{n}"));
    }
    let compared = after.is_some_and(|a| {
        ["비교", "비해", "대비"]
            .iter()
            .any(|c| a.lower.starts_with(c))
    });
    let duration = ["개월", "년", "주", "일", "시간"]
        .iter()
        .any(|u| w.starts_with(u));
    if duration && (w.ends_with('과') || w.ends_with('와')) && compared {
        return period(format!("ref{n}{}", w.trim_end_matches(['과', '와'])));
    }
    let before_noun = after.is_some_and(|a| !a.glued && hangul_word(&a.lower));
    if matches!(w, "년" | "개월") && before_noun {
        return period(format!("h{n}{unit}"));
    }
    // "1회 충전 주행거리", "1인당": "per single …", not a count of one.
    if n == 1 && before_noun && ["회", "번", "대", "인", "명", "개"].contains(&w) {
        return Some(Marker::Silent);
    }
    None
}

/// The unit of a horizon written with digits: "3-year cost", "over 3
/// years".
fn horizon_unit(tokens: &[Token], i: usize) -> Option<&'static str> {
    let long = |u: &&str| matches!(*u, "year" | "month" | "quarter" | "week");
    let hyphen = tokens
        .get(i + 1)
        .is_some_and(|n| n.glued && n.kind == Kind::Symbol('-'));
    if hyphen {
        return tokens
            .get(i + 2)
            .filter(|u| u.glued)
            .and_then(|u| class_of(&fw().time_units, &u.lower))
            .filter(long);
    }
    let before = i.checked_sub(1).and_then(|j| tokens.get(j))?;
    if !matches!(before.lower.as_str(), "over" | "across" | "for" | "during") {
        return None;
    }
    tokens
        .get(i + 1)
        .and_then(|u| class_of(&fw().time_units, &u.lower))
        .filter(long)
}

fn percentile_class(n: u32) -> &'static str {
    match n {
        50 => "median",
        90 => "p90",
        95 => "p95",
        99 => "p99",
        _ => "percentile",
    }
}

/// A period named by words, and how many tokens it spans: a month ("July";
/// "May" only capitalised), a quarter or half ("Q2", "H1", "상반기"), a year
/// relative to now ("last year", "작년"), an ordinal year ("the first year",
/// "첫해"), a horizon in words ("three-year", "over two years").
fn word_period(tokens: &[Token], i: usize) -> Option<(String, usize)> {
    let t = tokens.get(i)?;
    let w = t.lower.as_str();
    let next = tokens.get(i + 1);
    let next_unit = |skip: usize| {
        tokens
            .get(i + 1 + skip)
            .and_then(|n| class_of(&fw().time_units, &n.lower))
            .filter(|u| matches!(*u, "year" | "month" | "quarter" | "week"))
    };
    if let Some(m) = list(fw().months).position(|m| m == w)
        && (w != "may" || (t.text == "May" && !t.initial))
    {
        return Some((format!("m{}", m + 1), 1));
    }
    let bytes = w.as_bytes();
    if bytes.len() == 2 && matches!(bytes[0], b'q' | b'h') && bytes[1].is_ascii_digit() {
        return Some((w.to_owned(), 1));
    }
    if w.starts_with("fy") && w.len() > 2 && w[2..].bytes().all(|b| b.is_ascii_digit()) {
        return Some((w.to_owned(), 1));
    }
    let korean = [
        ("상반기", "h1"),
        ("하반기", "h2"),
        ("올해", "y0"),
        ("금년", "y0"),
        ("작년", "y-1"),
        ("지난해", "y-1"),
        ("전년", "y-1"),
        ("내년", "y+1"),
        ("첫해", "year1"),
    ];
    if let Some((_, key)) = korean.iter().find(|(k, _)| w.starts_with(k)) {
        return Some(((*key).to_owned(), 1));
    }
    let relative = match w {
        "last" | "previous" | "prior" => Some("-1"),
        "this" | "current" => Some("0"),
        "next" | "coming" => Some("+1"),
        _ => None,
    };
    if let (Some(rel), Some(unit)) = (relative, next_unit(0)) {
        return Some((format!("{unit}{rel}"), 2));
    }
    // "first year", "first-year", "three-year", "two years".
    let hyphen = usize::from(next.is_some_and(|n| n.kind == Kind::Symbol('-')));
    let unit = next_unit(hyphen)?;
    if let Some(n) = ordinal_word(w) {
        return Some((format!("{unit}{n}"), 2 + hyphen));
    }
    number_word(w).map(|n| (format!("h{n}{unit}"), 2 + hyphen))
}

/// A word's own marker: a qualifier, setting, rate adjective, or a word
/// that is never part of a measured phrase.
fn word_marker(t: &Token) -> Option<Marker> {
    thread_local! {
        /// Markers by word: the tables are scanned once per distinct word,
        /// not once per token of every sentence compared.
        static MEMO: std::cell::RefCell<std::collections::HashMap<String, Option<Marker>>> =
            std::cell::RefCell::new(std::collections::HashMap::new());
    }
    if let Some(m) = MEMO.with(|memo| memo.borrow().get(&t.lower).cloned()) {
        return m;
    }
    let marker = word_marker_uncached(&t.lower);
    MEMO.with(|memo| {
        let mut memo = memo.borrow_mut();
        if memo.len() >= MEMO_CAP {
            memo.clear(); // a long-lived process sees many corpora: stay bounded
        }
        memo.insert(t.lower.clone(), marker.clone());
    });
    marker
}

fn word_marker_uncached(w: &str) -> Option<Marker> {
    if hangul_word(w) {
        let s = stem(w);
        if s == "더" {
            return Some(Marker::Qualifier("change"));
        }
        if let Some(class) = class_by_prefix(&fw().korean_qualifiers, &s) {
            return Some(Marker::Qualifier(class));
        }
        if let Some(setting) = class_by_prefix(SETTINGS, &s) {
            return Some(Marker::Setting(setting));
        }
        let silent =
            list(fw().korean_filler).any(|f| s.starts_with(f)) || listed(fw().approx_before, &s);
        return silent.then_some(Marker::Silent);
    }
    if let Some(class) = class_of(&fw().qualifiers, w) {
        return Some(Marker::Qualifier(class));
    }
    if let Some(setting) = class_of(SETTINGS, w) {
        return Some(Marker::Setting(setting));
    }
    if let Some(rate) = class_of(&fw().rate_adjectives, w) {
        return Some(Marker::Rate(rate));
    }
    let silent = listed(fw().filler, w)
        || listed(fw().approx_before, w)
        || listed(fw().bound_before, w)
        || number_word(w).is_some()
        || ordinal_word(w).is_some();
    silent.then_some(Marker::Silent)
}

// ---------------------------------------------------------------------------
// Figures
// ---------------------------------------------------------------------------

/// How a unit is compared (`key`) and shown (`label`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Unit {
    key: String,
    label: String,
    /// A counted noun ("450 people", "100,000 messages"): the noun is also
    /// part of what the figure measures.
    noun: bool,
}

impl Unit {
    fn new(key: &str, label: &str) -> Self {
        Self {
            key: key.to_owned(),
            label: label.to_owned(),
            noun: false,
        }
    }

    fn per(self, rate: Option<(String, String)>) -> Self {
        match rate {
            Some((key, label)) => Self {
                key: format!("{}/{key}", self.key),
                label: format!("{} per {label}", self.label),
                noun: self.noun,
            },
            None => self,
        }
    }
}

/// A number read with its unit, before its context is looked at.
#[derive(Debug, Clone)]
struct Reading {
    /// Position of the number.
    at: usize,
    /// First token of the figure (its currency sign, or the number).
    start: usize,
    /// Last token of the figure (its unit or rate).
    end: usize,
    value: f64,
    unit: Unit,
    approx: bool,
    /// A bound or a range: not a value, never compared.
    bound: bool,
    /// Tokens the figure consumed (unit, scale, rate words).
    used: BTreeSet<usize>,
}

/// Every figure of a lexed sentence, in order. Numbers that are periods,
/// ordinals, codes ("E-4012"), denominators of shares or have no unit are
/// not figures.
fn readings(tokens: &[Token], marks: &BTreeMap<usize, Marker>) -> Vec<Reading> {
    let ranges = range_numbers(tokens);
    let denominators = share_denominators(tokens);
    let mut out: Vec<Reading> = Vec::new();
    for i in 0..tokens.len() {
        // A number already read as part of another figure: "1억 2,000만 원".
        let taken = out.iter().any(|r| r.used.contains(&i));
        if taken || marks.contains_key(&i) || denominators.contains(&i) || is_code(tokens, i) {
            continue;
        }
        if let Some(mut r) = read_figure(tokens, i) {
            r.bound |= ranges.contains(&i);
            out.push(r);
        }
    }
    out
}

/// A number glued to a word before it by a hyphen or symbol: a code such as
/// "E-4012" or "#12", not a figure.
fn is_code(tokens: &[Token], i: usize) -> bool {
    let Some(t) = tokens.get(i) else {
        return false;
    };
    let before = i.checked_sub(1).and_then(|j| tokens.get(j));
    let joined =
        before.is_some_and(|b| matches!(b.kind, Kind::Symbol('-' | '#' | '_' | '/' | '.')));
    let glued_word = before.is_some_and(|b| b.kind == Kind::Word && !hangul_word(&b.lower));
    t.glued && (joined || glued_word)
}

/// Numbers in a range ("5 to 10 runs", "4–6 seconds", "30~60", "between 3
/// and 5", "from 9 to 7"): a range is not one value.
fn range_numbers(tokens: &[Token]) -> BTreeSet<usize> {
    let mut out = BTreeSet::new();
    let numbers: Vec<usize> = (0..tokens.len())
        .filter(|&i| tokens.get(i).and_then(Token::number).is_some())
        .collect();
    for pair in numbers.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        if b - a > 4 {
            continue;
        }
        let between = &tokens[a + 1..b];
        let connector = between.iter().any(|t| {
            matches!(
                t.kind,
                Kind::Symbol('-' | '–' | '~' | '～') | Kind::Break('–' | '-')
            ) || t.is_word("to")
                || (t.is_word("and")
                    && a > 0
                    && tokens.get(a - 1).is_some_and(|p| p.is_word("between")))
        });
        let other = between.iter().filter(|t| t.kind == Kind::Word).count();
        if connector && other <= 2 {
            out.insert(a);
            out.insert(b);
        }
    }
    out
}

/// Denominators of shares, which are part of their numerator's figure:
/// the 24 of "15 of 24 managers", "Nineteen of the 24 agents", "24명 중 15명".
fn share_denominators(tokens: &[Token]) -> BTreeSet<usize> {
    let mut out = BTreeSet::new();
    for (i, t) in tokens.iter().enumerate() {
        if t.number().is_none() {
            continue;
        }
        if share_numerator(tokens, i).is_some() {
            out.insert(i);
        }
        // 24명 중 15명: the first number is the whole.
        let whole = tokens
            .get(i + 2)
            .is_some_and(|w| w.is_word("중") || w.is_word("가운데"))
            && tokens.get(i + 3).and_then(Token::number).is_some();
        if whole {
            out.insert(i);
        }
    }
    out
}

/// For a number preceded by "X of (the)", the value of X: "15 of 24",
/// "Nineteen of the 24".
fn share_numerator(tokens: &[Token], i: usize) -> Option<f64> {
    let mut j = i.checked_sub(1)?;
    if tokens
        .get(j)
        .is_some_and(|t| t.is_word("the") || t.is_word("all"))
    {
        j = j.checked_sub(1)?;
    }
    if !tokens.get(j)?.is_word("of") {
        return None;
    }
    let x = tokens.get(j.checked_sub(1)?)?;
    x.number().or_else(|| number_word(&x.lower).map(f64::from))
}

/// Reads the figure whose number is at `i`, if it has a unit.
fn read_figure(tokens: &[Token], i: usize) -> Option<Reading> {
    let value = tokens.get(i)?.number()?;
    let before = i.checked_sub(1).and_then(|j| tokens.get(j));
    // A day of a month ("2 March", "March 26") dates something; it
    // measures nothing ("Date: 2 March 2026" against "Date: 26 March").
    let month = |t: Option<&Token>| {
        t.is_some_and(|t| t.kind == Kind::Word && listed(fw().months, &t.lower))
    };
    if month(before) || month(tokens.get(i + 1)) {
        return None;
    }
    let currency = before.and_then(|b| match b.kind {
        Kind::Symbol(c @ ('$' | '€' | '£' | '₩')) => Some(c.to_string()),
        Kind::Word => class_of(&fw().currency_words, &b.lower)
            .filter(|_| b.text.chars().all(|c| c.is_ascii_uppercase()))
            .map(str::to_owned),
        _ => None,
    });
    let start = if currency.is_some() { i - 1 } else { i };
    let mut used = BTreeSet::new();
    let (value, unit, end) = match currency {
        Some(c) => {
            let (scale, end) = scale_after(tokens, i, &mut used);
            (value * scale, Unit::new(&c, &c), end)
        }
        None => unit_after(tokens, i, value, &mut used)?,
    };
    let (rate, end) = rate_of(tokens, start, end, &mut used);
    let (approx_after, bound_after, end) = korean_tail(tokens, end, &mut used);
    let before: Vec<&Token> = (start.saturating_sub(NEAR_BEFORE)..start)
        .filter_map(|j| tokens.get(j))
        .collect();
    let approx_before = before
        .iter()
        .any(|t| listed(fw().approx_before, &t.lower) || t.kind == Kind::Symbol('~'));
    Some(Reading {
        at: i,
        start,
        end,
        value,
        unit: unit.per(rate),
        approx: approx_after || approx_before,
        bound: bound_after || is_bound(tokens, &before, end),
        used,
    })
}

/// Whether the figure ending at `end`, after the tokens `before`, is a
/// bound rather than a value: "under 4 minutes", "at least 30%", "up to
/// 50,000", "more than 2", "< 5 ms", "30+", "30 or more".
fn is_bound(tokens: &[Token], before: &[&Token], end: usize) -> bool {
    let word_before = before.iter().any(|t| listed(fw().bound_before, &t.lower));
    let up_to = before
        .windows(2)
        .any(|w| w[0].is_word("up") && w[1].is_word("to"));
    let sign = before
        .iter()
        .any(|t| matches!(t.kind, Kind::Symbol('<' | '>' | '≤' | '≥')));
    let after = tokens.get(end + 1);
    let plus = after.is_some_and(|t| t.glued && t.kind == Kind::Symbol('+'));
    let or_more = after.is_some_and(|t| t.is_word("or") || t.is_word("and"))
        && tokens
            .get(end + 2)
            .is_some_and(|t| listed(fw().bound_after, &t.lower));
    word_before || up_to || sign || plus || or_more
}

/// A scale word after a number ("million", glued "k"), its factor and the
/// figure's last token.
fn scale_after(tokens: &[Token], i: usize, used: &mut BTreeSet<usize>) -> (f64, usize) {
    let Some(next) = tokens.get(i + 1).filter(|t| t.kind == Kind::Word) else {
        return (1.0, i);
    };
    let short = matches!(next.lower.as_str(), "k" | "m" | "mn" | "bn");
    match lookup(SCALES, &next.lower) {
        Some(f) if !short || next.glued => {
            used.insert(i + 1);
            (f, i + 1)
        }
        _ => (1.0, i),
    }
}

/// The unit after the number at `i` (with any scale applied to `value`),
/// and the figure's last token. `None` when the number has no unit.
fn unit_after(
    tokens: &[Token],
    i: usize,
    value: f64,
    used: &mut BTreeSet<usize>,
) -> Option<(f64, Unit, usize)> {
    if let Some(w) = tokens
        .get(i + 1)
        .filter(|t| t.glued && hangul_word(&t.lower))
    {
        return korean_unit(tokens, i, value, &w.lower, used);
    }
    let (scale, at) = scale_after(tokens, i, used);
    let value = value * scale;
    let next = tokens.get(at + 1)?;
    let word = |k: usize| tokens.get(at + k).map(|t| t.lower.as_str());
    let take = |used: &mut BTreeSet<usize>, n: usize| {
        used.extend(at + 1..=at + n);
        at + n
    };
    if next.kind == Kind::Symbol('%') {
        let points = matches!(word(2), Some("p" | "포인트" | "points" | "point"));
        let end = take(used, 1 + usize::from(points));
        let unit = if points { "pp" } else { "%" };
        return Some((value, Unit::new(unit, unit), end));
    }
    // "1.5-second budget", "30-day window".
    let (next, at) = match next.kind {
        Kind::Symbol('-') if next.glued => {
            used.insert(at + 1);
            (tokens.get(at + 2).filter(|t| t.glued)?, at + 1)
        }
        _ => (next, at),
    };
    if next.kind != Kind::Word {
        return None;
    }
    let w = next.lower.as_str();
    let follow = tokens.get(at + 2).map(|t| t.lower.as_str());
    let (unit, len) = match (w, follow) {
        ("percent" | "pct", _) | ("per", Some("cent")) => {
            (Unit::new("%", "%"), if w == "per" { 2 } else { 1 })
        }
        ("percentage", Some("point" | "points")) => (Unit::new("pp", "percentage points"), 2),
        ("pp", _) => (Unit::new("pp", "percentage points"), 1),
        ("out", Some("of")) => {
            let of = tokens.get(at + 3)?.number()?;
            (Unit::new(&format!("/{of}"), &format!("out of {of}")), 3)
        }
        ("times", _) | ("x", _) => (Unit::new("times", "times"), 1),
        ("of", _) => return share_after(tokens, at + 1, value, used),
        _ => {
            let unit = class_of(&fw().time_units, w).or_else(|| class_of(&fw().measures, w));
            // A one-letter unit glued ("1.2s") or alone before a break ("1.2 s.").
            let alone = tokens
                .get(at + 2)
                .is_none_or(|t| matches!(t.kind, Kind::Break(_)));
            if let Some(key) = unit.filter(|_| next.glued || alone || w.len() > 1) {
                (Unit::new(key, w), 1)
            } else if let Some(c) = class_of(&fw().currency_words, w) {
                (Unit::new(c, c), 1)
            } else if matches!(w, "st" | "nd" | "rd" | "th") || next.glued {
                return None;
            } else {
                return counted_noun(tokens, at + 1, value, used);
            }
        }
    };
    Some((value, unit, take(used, len)))
}

/// A share after its numerator: "15 of 24 managers" → 0.625 "share of
/// manag", a different unit from a count of managers.
fn share_after(
    tokens: &[Token],
    of: usize,
    value: f64,
    used: &mut BTreeSet<usize>,
) -> Option<(f64, Unit, usize)> {
    let the = tokens
        .get(of + 1)
        .is_some_and(|t| t.is_word("the") || t.is_word("all"));
    let whole_at = of + 1 + usize::from(the);
    let whole = tokens.get(whole_at)?.number().filter(|w| *w != 0.0)?;
    let (whole, unit, end) = unit_after(tokens, whole_at, whole, used)?;
    used.extend(of..=whole_at);
    let unit = Unit::new(
        &format!("share of {}", unit.key),
        &format!("share of {}", unit.label),
    );
    Some((value / whole, unit, end))
}

/// The noun a count counts: the last of up to three content words after the
/// number, stopping before a verb-like word ("450 people attended" →
/// "people"; "400 real tickets" → "tickets").
fn counted_noun(
    tokens: &[Token],
    from: usize,
    value: f64,
    used: &mut BTreeSet<usize>,
) -> Option<(f64, Unit, usize)> {
    let mut last = None;
    for j in from..from + 3 {
        let Some(t) = tokens.get(j).filter(|t| t.kind == Kind::Word) else {
            break;
        };
        let w = t.lower.as_str();
        let verb_like = j > from && (w.ends_with("ed") || w.ends_with("ing"));
        let letter = w.chars().count() < 2;
        if is_stop_word(w)
            || hangul_word(w)
            || verb_like
            || letter
            || word_marker(t).is_some()
            || w == "per"
        {
            break;
        }
        if j > from && !t.glued && tokens.get(j - 1).is_some_and(|p| p.kind != Kind::Word) {
            break;
        }
        last = Some(j);
    }
    let end = last?;
    used.extend(from..=end);
    let noun = tokens.get(end)?;
    let unit = Unit {
        noun: true,
        ..Unit::new(&stem(&noun.lower), &noun.lower)
    };
    Some((value, unit, end))
}

/// A Korean unit glued to the number at `i` ("35%" is handled elsewhere):
/// "1.4초", "320만 원", "12만원", "6,000건", "24명 중 15명" (a share).
fn korean_unit(
    tokens: &[Token],
    i: usize,
    value: f64,
    word: &str,
    used: &mut BTreeSet<usize>,
) -> Option<(f64, Unit, usize)> {
    used.insert(i + 1);
    let mut rest = word;
    let mut value = value;
    let mut end = i + 1;
    if let Some((c, f)) = KOREAN_SCALES.iter().find(|(c, _)| rest.starts_with(*c)) {
        value *= f;
        rest = &rest[c.len_utf8()..];
        if rest.is_empty() {
            let next = tokens.get(i + 2)?;
            if let Some(more) = next.number() {
                // "1억 2,000만 원": the smaller part and the unit follow.
                used.insert(i + 2);
                let word = tokens.get(i + 3).filter(|t| t.glued)?.lower.as_str();
                let (rest_value, unit, end) = korean_unit(tokens, i + 2, more, word, used)?;
                return Some((value + rest_value, unit, end));
            }
            // "320만 원": the unit is the next word.
            rest = Some(next.lower.as_str()).filter(|w| hangul_word(w))?;
            end = i + 2;
            used.insert(end);
        }
    }
    let (prefix, key) = fw()
        .korean_units
        .iter()
        .find(|(p, _)| rest.starts_with(p))?;
    // 24명 중 15명
    let whole = (i >= 3)
        .then(|| tokens.get(i - 1))
        .flatten()
        .filter(|t| t.is_word("중") || t.is_word("가운데"))
        .and_then(|_| tokens.get(i - 3)?.number());
    Some(match whole {
        Some(w) if w != 0.0 => (
            value / w,
            Unit::new(&format!("share of {key}"), &format!("share of {prefix}")),
            end,
        ),
        _ => (value, Unit::new(key, prefix), end),
    })
}

/// The rate of a figure: "per month" / "a month" / "/month" after it, "per
/// month" just before it ("cost per month was $4,000"), or a Korean rate
/// word before it ("월 150만 원", "회당 2만 원"). Returns `(key, label)` and
/// the figure's new last token.
fn rate_of(
    tokens: &[Token],
    start: usize,
    end: usize,
    used: &mut BTreeSet<usize>,
) -> (Option<(String, String)>, usize) {
    // After: "$1,100 per month", "30,000 conversations a month", "$70/month".
    for j in end + 1..=end + RATE_REACH {
        let Some(t) = tokens.get(j) else { break };
        if matches!(
            t.kind,
            Kind::Number(_) | Kind::Break(_) | Kind::Symbol('$' | '€' | '£' | '₩')
        ) {
            break;
        }
        let per = t.is_word("per") || (t.kind == Kind::Symbol('/') && j == end + 1);
        let article = j == end + 1 && matches!(t.lower.as_str(), "a" | "an" | "each" | "every");
        if (per || article)
            && let Some((rate, last)) = rate_words(tokens, j + 1, article)
        {
            used.extend(j..=last);
            return (Some(rate), last.max(end));
        }
    }
    // Before: "cost per month was $4,000".
    for j in (start.saturating_sub(RATE_REACH)..start).rev() {
        let Some(t) = tokens.get(j) else { continue };
        if matches!(t.kind, Kind::Number(_) | Kind::Break(_)) {
            break;
        }
        if t.is_word("per")
            && let Some((rate, last)) = rate_words(tokens, j + 1, false).filter(|(_, l)| *l < start)
        {
            used.extend(j..=last);
            return (Some(rate), end);
        }
    }
    (korean_rate(tokens, start, used), end)
}

/// The words after "per": a time unit ("month"), or up to two content
/// words ("resolved conversation", "agent hour"). With `time_only` (after
/// "a"/"each"), only a time unit.
fn rate_words(tokens: &[Token], from: usize, time_only: bool) -> Option<((String, String), usize)> {
    let first = tokens.get(from).filter(|t| t.kind == Kind::Word)?;
    if let Some(key) = class_of(&fw().time_units, &first.lower) {
        return Some(((key.to_owned(), key.to_owned()), from));
    }
    if time_only {
        return None;
    }
    // "per resolved conversation", "per agent-hour"; not "per broker would".
    let mut last = from;
    let joined = tokens
        .get(from + 1)
        .is_some_and(|t| t.kind == Kind::Symbol('-'));
    let second = from + 1 + usize::from(joined);
    if let Some(t) = tokens.get(second).filter(|t| t.kind == Kind::Word) {
        let w = t.lower.as_str();
        let noun = !is_stop_word(w)
            && word_marker(t).is_none()
            && !w.ends_with("ed")
            && !w.ends_with("ing");
        if noun {
            last = second;
        }
    }
    let span: Vec<&Token> = tokens[from..=last]
        .iter()
        .filter(|t| t.kind == Kind::Word)
        .collect();
    let key = span
        .iter()
        .map(|t| stem(&t.lower))
        .collect::<Vec<_>>()
        .join(" ");
    let label = span
        .iter()
        .map(|t| t.lower.as_str())
        .collect::<Vec<_>>()
        .join(" ");
    Some(((key, label), last))
}

/// A Korean rate word right before a figure, skipping an approximation
/// ("월 약 12만 원"): "월", "연간", or a word ending in "당" ("회당", "초당").
fn korean_rate(
    tokens: &[Token],
    start: usize,
    used: &mut BTreeSet<usize>,
) -> Option<(String, String)> {
    let mut j = start.checked_sub(1)?;
    while tokens
        .get(j)
        .is_some_and(|t| listed(fw().approx_before, &t.lower))
    {
        j = j.checked_sub(1)?;
    }
    let t = tokens.get(j).filter(|t| hangul_word(&t.lower))?;
    let w = t.lower.as_str();
    let rate = if let Some(key) = class_of(&fw().korean_rates, w) {
        (key.to_owned(), key.to_owned())
    } else {
        let per = w.strip_suffix('당').filter(|p| !p.is_empty())?;
        let key = lookup(&fw().korean_units, per).unwrap_or(per);
        (key.to_owned(), per.to_owned())
    };
    used.insert(j);
    Some(rate)
}

/// What a Korean figure's glued ending or next word says: approximate
/// ("2만 원 안팎", "약 5시간 정도") or a bound ("1.5초 안에", "25%를 넘었고",
/// "1.2초보다"). Returns `(approx, bound, last token)`.
fn korean_tail(tokens: &[Token], end: usize, used: &mut BTreeSet<usize>) -> (bool, bool, usize) {
    let mut approx = false;
    let mut bound = false;
    let mut last = end;
    // The unit's own word may carry the ending: "초보다", "점으로".
    let unit_word = tokens.get(end).filter(|t| hangul_word(&t.lower));
    let unit_rest = unit_word.map(|t| {
        let w = t.lower.as_str();
        fw().korean_units
            .iter()
            .find_map(|(p, _)| w.strip_prefix(p))
            .unwrap_or("")
    });
    let mut check = |s: &str| {
        // One-syllable "여" ("10여 건") only alone: "여유", "여러" are words.
        approx |=
            list(fw().approx_after).any(|a| s == a || (a.chars().count() > 1 && s.starts_with(a)));
        bound |= list(fw().korean_bounds).any(|b| s.starts_with(b)) || s == "안" || s == "내";
    };
    if let Some(rest) = unit_rest {
        check(rest);
    }
    for j in end + 1..end + 3 {
        let Some(t) = tokens
            .get(j)
            .filter(|t| t.kind == Kind::Word && hangul_word(&t.lower))
        else {
            break;
        };
        check(&t.lower);
        if t.glued {
            // A particle or copula glued to the figure: "35%였다", "25%를".
            used.insert(j);
            last = j;
        } else {
            break;
        }
    }
    (approx, bound, last)
}

// ---------------------------------------------------------------------------
// Figures in context
// ---------------------------------------------------------------------------

/// A word of a measured phrase: its stem and where it stands.
#[derive(Debug, Clone)]
struct PhraseWord {
    stem: String,
    at: usize,
}

/// A figure with what it measures.
#[derive(Debug, Clone)]
struct Figure {
    /// The tokens of the figure itself: its number, unit and rate.
    span: (usize, usize),
    value: f64,
    approx: bool,
    bound: bool,
    unit: Unit,
    qualifiers: BTreeSet<&'static str>,
    periods: BTreeSet<String>,
    settings: BTreeSet<&'static str>,
    /// Named subjects, lowercased, with their spelling.
    entities: BTreeMap<String, String>,
    /// The Korean topic or subject noun nearest before the figure.
    subject: Option<String>,
    /// The words nearest the figure: what it measures.
    phrase: Vec<PhraseWord>,
    /// Every content word of its part of the clause and of the clauses
    /// framing the sentence: a word here that the other sentence lacks may
    /// name a different thing ("for the night shift").
    scope: Vec<PhraseWord>,
}

/// A sentence with its figures.
#[derive(Debug)]
struct Statement {
    note_id: String,
    sentence: String,
    tokens: Vec<Token>,
    /// Every content word of the sentence, as stems.
    words: Vec<String>,
    figures: Vec<Figure>,
    /// The subjects its note's title names ("Load test report: MSK and SQS").
    title_entities: BTreeSet<String>,
    /// The companies among them ("(주)물빛스포츠 — … 제안서").
    title_companies: BTreeSet<String>,
}

/// Reads a sentence of the note `note_id` titled `title`, telling names
/// from common words by how the inputs write them ([`Vocabulary`]): a
/// capitalised first word the inputs also write in lowercase ("Latency",
/// "Fine") is a common word.
fn statement(note_id: &str, title: &str, sentence: &str, vocabulary: &Vocabulary) -> Statement {
    let tokens = lex(sentence);
    let figures = figures(&tokens, &vocabulary.lowercase);
    Statement {
        note_id: note_id.to_owned(),
        sentence: sentence.to_owned(),
        words: words(sentence),
        tokens,
        figures,
        title_entities: named_in(title, vocabulary),
        title_companies: companies_in(title, vocabulary),
    }
}

/// How the inputs write their words, for telling names from common words.
#[derive(Debug, Default)]
struct Vocabulary {
    /// Words written in lowercase somewhere.
    lowercase: BTreeSet<String>,
    /// Words (lowercased) written capitalised inside a sentence somewhere:
    /// names the notes use ("on Kafka", "the Seoul office").
    names: BTreeSet<String>,
    /// Korean companies some sentence or title names by their marker
    /// ("(주)한솔유니폼"): a title naming one bare ("평택2공장 통화 메모
    /// (한솔유니폼 사용 경험)") names that subject.
    companies: BTreeSet<String>,
}

impl Vocabulary {
    fn of<'a>(sentences: impl Iterator<Item = &'a str> + Clone) -> Self {
        let lowercase = sentences
            .clone()
            .flat_map(|s| s.split(|c: char| !c.is_alphanumeric()))
            .filter(|w| w.chars().next().is_some_and(char::is_lowercase) && !w.chars().any(is_cjk))
            .map(str::to_owned)
            .collect();
        let names = sentences
            .flat_map(lex)
            .filter(|t| {
                t.kind == Kind::Word
                    && !t.initial
                    && t.text.chars().next().is_some_and(char::is_uppercase)
            })
            .map(|t| t.lower)
            .collect();
        Self {
            lowercase,
            names,
            companies: BTreeSet::new(),
        }
    }

    /// Also learns the companies `texts` name by their marker.
    fn with_companies<'a>(mut self, texts: impl Iterator<Item = &'a str>) -> Self {
        self.companies = texts.flat_map(crate::notes::company_names).collect();
        self
    }
}

/// The subjects a title names, lowercased. Titles capitalise common words
/// ("Pilot Results", "Support metrics review"), and one wrongly taken for a
/// name would keep its note from every comparison, so only strong signs
/// count: an acronym or inner capital ("RAG", "MSK", "RabbitMQ"), a name
/// the notes capitalise inside sentences, or a Korean organisation name.
fn named_in(title: &str, vocabulary: &Vocabulary) -> BTreeSet<String> {
    // An email's subject tags ("[위탁 TF] …", "[External] …") file the
    // message; they name no subject of it.
    let mut title = title.trim_start();
    while let Some(rest) = title.strip_prefix('[').and_then(|r| r.split_once(']')) {
        title = rest.1.trim_start();
    }
    let tokens = lex(title);
    let marks = markers(&tokens);
    let strong = |t: &Token| {
        let inner = t.text.chars().skip(1).any(char::is_uppercase);
        let digit = t.text.chars().any(|c| c.is_ascii_digit());
        inner || digit || hangul_word(&t.text) || vocabulary.names.contains(&t.lower)
    };
    let mut named: BTreeSet<String> = (0..tokens.len())
        .filter(|j| tokens.get(*j).is_some_and(strong))
        .filter_map(|j| entity_of(&tokens, j, &marks, &vocabulary.lowercase))
        .map(|(key, _)| key)
        .collect();
    // A company the title names, by its marker ("대성관광(주) 제안서 요약")
    // or bare where some note gives the marker ("평택 통화 메모 (한솔유니폼
    // 사용 경험)"): the vocabulary's companies include the titles' own.
    named.extend(companies_in(title, vocabulary));
    // A title headed by a name before its colon or dash ("Northfield
    // Mechanical: proposal summary"): capitalised words no passage writes
    // in lower case.
    let head = title
        .split([':', '—', '–'])
        .next()
        .filter(|h| h.len() < title.len())
        .unwrap_or("");
    let head_words: Vec<&str> = head.split_whitespace().collect();
    let capitalised = |w: &str| w.chars().next().is_some_and(char::is_uppercase);
    if (1..=3).contains(&head_words.len()) && head_words.iter().all(|w| capitalised(w)) {
        for w in head_words {
            let lower = w.to_lowercase();
            if lower.chars().all(char::is_alphanumeric)
                && !vocabulary.lowercase.contains(&lower)
                && !is_stop_word(&lower)
                && !listed(fw().not_entities, &lower)
                && !listed(fw().months, &lower)
            {
                named.insert(lower);
            }
        }
    }
    named
}

/// The companies a title names, by their marker ("대성관광(주) 제안서 요약")
/// or bare where some note gives the marker ("평택 통화 메모 (한솔유니폼
/// 사용 경험)"): the vocabulary's companies include the titles' own.
fn companies_in(title: &str, vocabulary: &Vocabulary) -> BTreeSet<String> {
    vocabulary
        .companies
        .iter()
        .filter(|c| title.contains(c.as_str()))
        .map(|name| stem(&name.to_lowercase()))
        .collect()
}

/// A lexed sentence and what its figures are read against.
struct Reader<'a> {
    tokens: &'a [Token],
    marks: BTreeMap<usize, Marker>,
    clause_of: Vec<usize>,
    /// Tokens some figure consumed (units, scales, rates).
    used: BTreeSet<usize>,
    lowercase: &'a BTreeSet<String>,
    /// Tokens of clauses without a figure: they frame every figure of the
    /// sentence ("In the load test, …", "Over three years, …").
    context: Vec<usize>,
    /// Of those, the clauses that are not a source frame ("According to
    /// the data team, …"): their words are part of what is measured.
    own_context: Vec<usize>,
}

/// Words that open a clause naming where a figure comes from, not what it
/// measures.
const SOURCE_OPENERS: &str = "according based as per citing following";

/// Korean endings that close a source frame: "데이터팀이 다시 집계한 결과",
/// "일지를 모아 보니", "자기 팀 집계로는", "보고서에 따르면".
const KOREAN_FRAME_ENDS: &str = "결과 보니 따르면 의하면 로는 보면";

/// Whether a token closes a frame before the figure: a Korean source frame,
/// or English "that" ("the data team found that 27% …").
fn ends_frame(t: &Token) -> bool {
    t.kind == Kind::Word
        && (t.lower == "that" || list(KOREAN_FRAME_ENDS).any(|e| t.lower.ends_with(e)))
}

impl<'a> Reader<'a> {
    fn new(
        tokens: &'a [Token],
        readings: &[Reading],
        marks: BTreeMap<usize, Marker>,
        lowercase: &'a BTreeSet<String>,
    ) -> Self {
        let clause_of = clauses(tokens);
        let used = readings
            .iter()
            .flat_map(|r| r.used.iter().copied())
            .collect();
        let with_figures: BTreeSet<usize> = readings
            .iter()
            .filter_map(|r| clause_of.get(r.at).copied())
            .collect();
        let context: Vec<usize> = (0..tokens.len())
            .filter(|j| !with_figures.contains(&clause_of[*j]))
            .collect();
        // Clauses whose figure comes after a frame that ends in them ("로
        // 보면 2024년 이직률은 41%"): a frame split by a parenthesis
        // ("인력 현황표(2024년 1~12월)로 보면") began in the clauses before.
        let framed_from: BTreeSet<usize> = readings
            .iter()
            .filter(|r| {
                let c = clause_of[r.at];
                (0..r.start).any(|j| clause_of[j] == c && tokens.get(j).is_some_and(ends_frame))
            })
            .map(|r| clause_of[r.at])
            .collect();
        let last_clause = clause_of.last().copied().unwrap_or(0);
        let valued: BTreeSet<usize> = readings
            .iter()
            .filter(|r| !r.bound)
            .map(|r| clause_of[r.at])
            .collect();
        let source = |c: usize| {
            let words: Vec<&Token> = (0..tokens.len())
                .filter(|j| clause_of[*j] == c)
                .filter_map(|j| tokens.get(j).filter(|t| t.kind == Kind::Word))
                .collect();
            let opens = words
                .first()
                .is_some_and(|t| listed(SOURCE_OPENERS, &t.lower));
            // The next clause with a figure opens with the rest of a frame.
            // (A bound or a range, "1~12월", is no figure to stop at.)
            let frame_goes_on = (c + 1..=last_clause)
                .find(|n| valued.contains(n))
                .is_some_and(|n| framed_from.contains(&n));
            opens || words.last().is_some_and(|t| ends_frame(t)) || frame_goes_on
        };
        let own_context = context
            .iter()
            .copied()
            .filter(|j| !source(clause_of[*j]))
            .collect();
        Self {
            tokens,
            marks,
            clause_of,
            used,
            lowercase,
            context,
            own_context,
        }
    }

    fn entity(&self, j: usize) -> Option<(String, String)> {
        if self.used.contains(&j) {
            return None;
        }
        entity_of(self.tokens, j, &self.marks, self.lowercase)
    }

    fn entities(&self, positions: &[usize]) -> BTreeMap<String, String> {
        positions.iter().filter_map(|j| self.entity(*j)).collect()
    }

    /// The markers at `positions` that `pick` keeps.
    fn marked<T: Ord>(
        &self,
        positions: &[usize],
        pick: impl Fn(&Marker) -> Option<T>,
    ) -> BTreeSet<T> {
        positions
            .iter()
            .filter_map(|j| self.marks.get(j))
            .filter_map(pick)
            .collect()
    }

    /// Tokens of the figure's clause that belong to it (they are nearer it
    /// than any other figure of the clause), and of those, the ones after a
    /// frame closed before it.
    fn segment(&self, r: &Reading, anchors: &[(usize, usize)]) -> (Vec<usize>, Vec<usize>) {
        let clause = self.clause_of[r.at];
        let segment: Vec<usize> = (0..self.tokens.len())
            .filter(|j| {
                self.clause_of[*j] == clause && nearest_anchor(anchors, *j, clause) == Some(r.at)
            })
            .collect();
        let frame_end = segment
            .iter()
            .copied()
            .filter(|j| *j < r.start && self.tokens.get(*j).is_some_and(ends_frame))
            .max();
        let own = segment
            .iter()
            .copied()
            .filter(|j| frame_end.is_none_or(|f| *j > f))
            .collect();
        (segment, own)
    }

    /// Whether `clause` follows a Korean clause ending in a connective
    /// (-며, -고) and a comma: the same subject goes on.
    fn joined_to_previous(&self, clause: usize) -> bool {
        let Some(first) = (0..self.tokens.len()).find(|j| self.clause_of[*j] == clause) else {
            return false;
        };
        // The break that opened this clause, and the word before it.
        let before = first
            .checked_sub(1)
            .and_then(|j| self.tokens.get(j))
            .filter(|t| t.kind == Kind::Word);
        let at_break = self
            .tokens
            .get(first)
            .is_some_and(|t| matches!(t.kind, Kind::Break(',')));
        at_break
            && before.is_some_and(|t| {
                t.text.chars().any(is_hangul) && (t.text.ends_with('며') || t.text.ends_with('고'))
            })
    }

    fn figure(&self, r: &Reading, anchors: &[(usize, usize)]) -> Figure {
        let clause = self.clause_of[r.at];
        let in_clause: Vec<usize> = (0..self.tokens.len())
            .filter(|j| self.clause_of[*j] == clause)
            .collect();
        let (segment, own) = self.segment(r, anchors);
        let clause_rest: Vec<usize> = in_clause
            .iter()
            .copied()
            .filter(|j| own.first().is_none_or(|f| j >= f))
            .collect();
        let mut entities = self.entities(&own);
        if entities.is_empty() {
            entities = self.entities(&clause_rest);
        }
        if entities.is_empty() {
            entities = self.entities(&self.own_context);
        }
        // "둔산 센터의 평균 근속은 27개월이며, 이직률은 32%였다": a Korean
        // clause joined to the one before by a connective ending (-며, -고)
        // and naming no subject goes on with that clause's.
        if entities.is_empty() && self.joined_to_previous(clause) {
            let earlier: Vec<usize> = (0..self.tokens.len())
                .filter(|j| self.clause_of[*j] + 1 == clause)
                .collect();
            entities = self.entities(&earlier);
        }
        // A Korean source frame before the figure may name its subject ("둔산
        // 센터 인력 현황표로 보면 …"); an English one opens with a capital
        // that names nothing ("According to …").
        if entities.is_empty() {
            let sources: Vec<usize> = self
                .context
                .iter()
                .copied()
                .filter(|j| !self.own_context.contains(j))
                .collect();
            entities = self.entities(&sources);
            entities.retain(|key, _| key.chars().any(is_hangul));
        }
        let skip = |j: &usize| {
            self.used.contains(j) || self.marks.contains_key(j) || self.entity(*j).is_some()
        };
        let mut phrase = phrase_words(self.tokens, &own, r, &skip);
        if phrase.len() < 2 {
            phrase.extend(phrase_words(self.tokens, &self.own_context, r, &skip));
            phrase.truncate(PHRASE_WORDS);
        }
        let scope: Vec<PhraseWord> = own
            .iter()
            .chain(&self.own_context)
            .filter(|j| !skip(j))
            .filter_map(|&at| {
                let stem = content_stem(self.tokens.get(at)?)?;
                Some(PhraseWord { stem, at })
            })
            .collect();
        let framing: Vec<usize> = segment.iter().chain(&self.context).copied().collect();
        let around: Vec<usize> = in_clause.iter().chain(&self.context).copied().collect();
        let rate = self.marked(&framing, |m| match m {
            Marker::Rate(rate) => Some(*rate),
            _ => None,
        });
        let unit = match rate.first() {
            Some(rate) if !r.unit.key.contains('/') => r
                .unit
                .clone()
                .per(Some(((*rate).to_owned(), (*rate).to_owned()))),
            _ => r.unit.clone(),
        };
        Figure {
            span: (r.start, r.end),
            value: r.value,
            approx: r.approx,
            bound: r.bound,
            unit,
            qualifiers: self.marked(&framing, |m| match m {
                Marker::Qualifier(q) => Some(*q),
                _ => None,
            }),
            periods: self.marked(&around, |m| match m {
                Marker::Period(p) => Some(p.clone()),
                _ => None,
            }),
            settings: self.marked(&around, |m| match m {
                Marker::Setting(s) => Some(*s),
                _ => None,
            }),
            entities,
            subject: korean_subject(self.tokens, &own, r.start),
            phrase,
            scope,
        }
    }
}

/// The figures of a lexed sentence, each with its measured phrase,
/// qualifiers, periods, settings, entities and Korean subject.
fn figures(tokens: &[Token], lowercase: &BTreeSet<String>) -> Vec<Figure> {
    let marks = markers(tokens);
    let readings = readings(tokens, &marks);
    let reader = Reader::new(tokens, &readings, marks, lowercase);
    let anchors: Vec<(usize, usize)> = readings
        .iter()
        .map(|r| (r.at, reader.clause_of[r.at]))
        .collect();
    readings
        .iter()
        .map(|r| reader.figure(r, &anchors))
        .collect()
}

/// The figure a token belongs to: the nearest one in its clause (a tie goes
/// to the later one — a Korean subject comes before its figure).
fn nearest_anchor(anchors: &[(usize, usize)], j: usize, clause: usize) -> Option<usize> {
    anchors
        .iter()
        .filter(|(_, c)| *c == clause)
        .min_by_key(|(at, _)| (at.abs_diff(j), usize::MAX - at))
        .map(|(at, _)| *at)
}

/// A word's stem, unless it is a stop word, filler or a lone particle.
fn content_stem(t: &Token) -> Option<String> {
    if t.kind != Kind::Word {
        return None;
    }
    words(&t.text).into_iter().find(|s| !listed(fw().filler, s))
}

/// The content words of `positions` nearest the figure, at most
/// [`PHRASE_WORDS`] distinct stems.
fn phrase_words(
    tokens: &[Token],
    positions: &[usize],
    figure: &Reading,
    skip: &dyn Fn(&usize) -> bool,
) -> Vec<PhraseWord> {
    let mut candidates: Vec<(usize, PhraseWord)> = positions
        .iter()
        .filter(|j| !skip(j))
        .filter_map(|&j| {
            let s = content_stem(tokens.get(j)?)?;
            let distance = if j < figure.start {
                figure.start - j
            } else {
                j.saturating_sub(figure.end)
            };
            Some((distance, PhraseWord { stem: s, at: j }))
        })
        .collect();
    candidates.sort_by_key(|(d, w)| (*d, w.at));
    let mut out: Vec<PhraseWord> = Vec::new();
    for (_, w) in candidates {
        if out.len() < PHRASE_WORDS && !out.iter().any(|o| o.stem == w.stem) {
            out.push(w);
        }
    }
    out
}

/// A named subject at `j`: an acronym or a name with inner capitals
/// ("SQS", "RabbitMQ", "A100"), a capitalised word inside a sentence
/// ("Kafka", "English"), or a capitalised first word that the inputs never
/// write in lowercase and that is not a label ("Headline:").
fn entity_of(
    tokens: &[Token],
    j: usize,
    marks: &BTreeMap<usize, Marker>,
    lowercase: &BTreeSet<String>,
) -> Option<(String, String)> {
    let t = tokens.get(j).filter(|t| t.kind == Kind::Word)?;
    if matches!(
        marks.get(&j),
        Some(Marker::Period(_) | Marker::Qualifier(_))
    ) {
        return None;
    }
    if hangul_word(&t.text) {
        return korean_entity(tokens, j).map(|e| (e.clone(), e));
    }
    let mut letters = t.text.chars().filter(|c| c.is_alphabetic());
    let first_upper = letters.next().is_some_and(char::is_uppercase);
    let inner_upper = letters.any(char::is_uppercase);
    let digit = t.text.chars().any(|c| c.is_ascii_digit());
    if !first_upper && !inner_upper {
        return None;
    }
    if listed(fw().not_entities, &t.lower) || listed(fw().months, &t.lower) {
        return None;
    }
    let name = inner_upper || (first_upper && digit) || !t.initial || {
        let label = tokens
            .get(j + 1)
            .is_some_and(|n| n.kind == Kind::Break(':'));
        !label
            && !is_stop_word(&t.lower)
            && !lowercase.contains(&t.lower)
            && marks.get(&j).is_none()
    };
    name.then(|| (t.lower.clone(), t.text.clone()))
}

/// A Korean name at `j` (Hangul has no capitals): a compound ending in an
/// organisation noun with at least two syllables before it ("고객지원팀"),
/// or the word right before a separate organisation noun ("서울 지점").
fn korean_entity(tokens: &[Token], j: usize) -> Option<String> {
    let s = stem(&tokens.get(j)?.lower);
    let compound = list(fw().korean_org_nouns).any(|o| {
        s.strip_suffix(o)
            .is_some_and(|rest| rest.chars().count() >= 2)
    });
    let before_org = tokens
        .get(j + 1)
        .filter(|n| !n.glued && n.kind == Kind::Word)
        .is_some_and(|n| listed(fw().korean_org_nouns, &stem(&n.lower)));
    (compound || before_org).then_some(s)
}

/// The Korean topic or subject noun nearest before `start` in the clause:
/// a word ending in 은/는/이/가 whose stem keeps two syllables ("대화는" →
/// "대화", "카프카는" → "카프카"; not "없이", not "파일럿에서는").
fn korean_subject(tokens: &[Token], clause: &[usize], start: usize) -> Option<String> {
    const ADVERBIAL: &[&str] = &[
        "에는",
        "에서는",
        "으로는",
        "로는",
        "와는",
        "과는",
        "보다는",
        "까지는",
        "부터는",
        "에게는",
    ];
    clause.iter().rev().filter(|j| **j < start).find_map(|&j| {
        let t = tokens
            .get(j)
            .filter(|t| t.kind == Kind::Word && hangul_word(&t.lower))?;
        let w = t.lower.as_str();
        if ADVERBIAL.iter().any(|a| w.ends_with(a)) {
            return None;
        }
        let noun = ['은', '는', '이', '가']
            .iter()
            .find_map(|m| w.strip_suffix(*m))
            .filter(|n| n.chars().count() >= 2)?;
        Some(stem(noun))
    })
}

// ---------------------------------------------------------------------------
// The rule
// ---------------------------------------------------------------------------

/// Whether two figures measure the same attribute of the same subject under
/// compatible conditions; if so, how many phrase words they share.
fn same_attribute(a: &Figure, sa: &Statement, b: &Figure, sb: &Statement) -> Option<usize> {
    fn one_sided<T: Ord>(x: &BTreeSet<T>, y: &BTreeSet<T>) -> bool {
        x.is_empty() || y.is_empty() || x == y
    }
    let subjects_fit = match (&a.subject, &b.subject) {
        (Some(x), Some(y)) => x.contains(y.as_str()) || y.contains(x.as_str()),
        _ => true,
    };
    // Notes whose titles name different subjects ("RabbitMQ spike", "MSK
    // load test") are about different things even where a sentence names
    // none.
    // Two companies' own documents ("(주)물빛스포츠 — 제안서", "한결레저(주)
    // 제안서") differ in subject even where both titles name the site.
    let titles_fit = (sa.title_entities.is_empty()
        || sb.title_entities.is_empty()
        || !sa.title_entities.is_disjoint(&sb.title_entities))
        && (sa.title_companies.is_empty()
            || sb.title_companies.is_empty()
            || !sa.title_companies.is_disjoint(&sb.title_companies));
    let comparable = !a.bound
        && !b.bound
        && a.unit.key == b.unit.key
        && a.qualifiers == b.qualifiers
        && one_sided(&a.periods, &b.periods)
        && one_sided(&a.settings, &b.settings)
        && a.entities.keys().eq(b.entities.keys())
        && subjects_fit
        && titles_fit;
    if !comparable {
        return None;
    }
    // A counted noun is a word both phrases share ("100,000 messages").
    let noun = usize::from(a.unit.noun);
    same_phrase(a, sa, b, sb).filter(|shared| shared + noun >= 2)
}

/// Whether two measured phrases can name the same attribute, and how many
/// words they share (the caller asks for two, a counted noun included):
/// some shared word, and every word around each figure (its part of the
/// clause and the framing clauses) used somewhere in the other sentence. A
/// word only one side uses may name a different thing — "cost of hosting" /
/// "cost of support", "bot conversations" / "all conversations", "서울
/// 지점" / "부산 지점", "for the night shift" / "for the day shift" — and
/// telling which extra words are harmless needs more than word lists.
fn same_phrase(a: &Figure, sa: &Statement, b: &Figure, sb: &Statement) -> Option<usize> {
    let stems = |p: &[PhraseWord]| p.iter().map(|w| w.stem.clone()).collect::<Vec<_>>();
    let (a_stems, b_stems) = (stems(&a.phrase), stems(&b.phrase));
    let shared = a_stems.iter().filter(|s| mentions(&b_stems, s)).count();
    let shared_back = b_stems.iter().filter(|s| mentions(&a_stems, s)).count();
    let shared = shared.min(shared_back);
    if shared == 0 {
        return None;
    }
    let used_by =
        |scope: &[PhraseWord], other: &[String]| scope.iter().all(|w| mentions(other, &w.stem));
    (used_by(&a.scope, &sb.words) && used_by(&b.scope, &sa.words)).then_some(shared)
}

/// Whether two values agree: equal, or within [`APPROX_TOLERANCE`] when
/// either is approximate.
fn agree(a: &Figure, b: &Figure) -> bool {
    let scale = a.value.abs().max(b.value.abs()).max(f64::MIN_POSITIVE);
    let diff = (a.value - b.value).abs() / scale;
    diff < 1e-9 || ((a.approx || b.approx) && diff <= APPROX_TOLERANCE)
}

/// The first pair of figures of `a` and `b` that measure the same thing
/// with values that disagree — when neither figure agrees with another
/// figure of the other sentence about the same thing — and how strongly
/// their phrases match.
fn clash<'a>(a: &'a Statement, b: &'a Statement) -> Option<(usize, &'a Figure)> {
    let matches = |x: &Figure, sx: &Statement, other: &'a Statement| {
        other
            .figures
            .iter()
            .filter_map(move |y| same_attribute(x, sx, y, other).map(|s| (s, y)))
            .collect::<Vec<_>>()
    };
    a.figures.iter().find_map(|fa| {
        let with_b = matches(fa, a, b);
        if with_b.iter().any(|(_, fb)| agree(fa, fb)) {
            return None;
        }
        with_b.into_iter().find_map(|(strength, fb)| {
            let agrees_back = matches(fb, b, a).iter().any(|(_, x)| agree(fb, x));
            (!agrees_back).then_some((strength, fa))
        })
    })
}

/// The contradiction's label: what the first figure measures, in its own
/// sentence's words (from the first to the last of its words the other
/// sentence shares, or just those words if that span is long), the entity,
/// the unit and the kind of figure.
fn label(a: &Statement, fa: &Figure, b: &Statement) -> String {
    let mut shared: Vec<&PhraseWord> = fa
        .scope
        .iter()
        .filter(|w| mentions(&b.words, &w.stem))
        .collect();
    shared.sort_by_key(|w| w.at);
    // Words only, outside the figure, without endings glued to a number
    // ("3년" → no "년").
    let shown = |j: &usize| {
        let figure = (fa.span.0..=fa.span.1).contains(j);
        let after_number = j
            .checked_sub(1)
            .and_then(|p| a.tokens.get(p))
            .is_some_and(|p| p.number().is_some());
        a.tokens
            .get(*j)
            .is_some_and(|t| t.kind == Kind::Word && !(t.glued && after_number))
            && !figure
    };
    let render = |j: usize| {
        let t = a.tokens.get(j)?;
        Some(if hangul_word(&t.lower) {
            stem(&t.lower)
        } else {
            t.lower.clone()
        })
    };
    let positions: Vec<usize> = match (shared.first(), shared.last()) {
        (Some(first), Some(last)) if last.at - first.at < LABEL_SPAN => {
            (first.at..=last.at).collect()
        }
        _ => shared.iter().map(|w| w.at).collect(),
    };
    let about = positions
        .into_iter()
        .filter(shown)
        .filter_map(render)
        .collect::<Vec<_>>()
        .join(" ");
    let entity: Vec<&str> = fa.entities.values().map(String::as_str).collect();
    // What kind of figure both are, when not a plain level: "(%; fall)".
    let kind: Vec<&str> = fa.qualifiers.iter().map(|q| qualifier_name(q)).collect();
    let unit = if kind.is_empty() {
        fa.unit.label.clone()
    } else {
        format!("{}; {}", fa.unit.label, kind.join(", "))
    };
    if entity.is_empty() {
        format!("{about} ({unit})")
    } else {
        format!("{}: {about} ({unit})", entity.join(", "))
    }
}

/// How a qualifier class reads in a label.
fn qualifier_name(class: &str) -> &str {
    match class {
        "up" => "rise",
        "down" => "fall",
        "max" => "maximum",
        "min" => "minimum",
        "load" => "load test",
        "mean" => "average",
        other => other,
    }
}

/// Compares search outputs; inputs that are not search output count as finding nothing.
pub fn compare(results: &[Value]) -> CompareResultsOutput {
    let mut sources: Vec<FoundNote> = Vec::new();
    let mut said: Vec<(String, String)> = Vec::new();
    for (i, value) in results.iter().enumerate() {
        let hits = serde_json::from_value::<SearchOutput>(value.clone())
            .map(|o| o.results)
            .unwrap_or_default();
        for hit in hits {
            match sources.iter_mut().find(|s| s.note_id == hit.note_id) {
                Some(s) if !s.found_by.contains(&i) => s.found_by.push(i),
                Some(_) => {}
                None => sources.push(FoundNote {
                    note_id: hit.note_id.clone(),
                    title: hit.title.clone(),
                    found_by: vec![i],
                }),
            }
            for passage in &hit.passages {
                for sentence in sentences(passage) {
                    if !said.iter().any(|(n, s)| *n == hit.note_id && s == sentence) {
                        said.push((hit.note_id.clone(), sentence.to_owned()));
                    }
                }
            }
        }
    }
    let shared_sources = sources
        .iter()
        .filter(|s| s.found_by.len() > 1)
        .map(|s| s.note_id.clone())
        .collect();
    let vocabulary = Vocabulary::of(said.iter().map(|(_, s)| s.as_str())).with_companies(
        said.iter()
            .map(|(_, s)| s.as_str())
            .chain(sources.iter().map(|s| s.title.as_str())),
    );
    let title_of = |note: &str| {
        sources
            .iter()
            .find(|s| s.note_id == note)
            .map_or("", |s| s.title.as_str())
    };
    let statements: Vec<Statement> = said
        .iter()
        .map(|(note, sentence)| statement(note, title_of(note), sentence, &vocabulary))
        .filter(|s| !s.figures.is_empty())
        .collect();
    CompareResultsOutput {
        sources,
        shared_sources,
        contradictions: contradictions(&statements),
    }
}

/// One figure of a cited sentence, for a brief's table of figures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FigureRow {
    /// Who or what it is about: the names the sentence gives, else its
    /// note's title.
    pub subject: String,
    /// What it measures, in the sentence's words.
    pub measured: String,
    /// The value as written, with its unit and rate.
    pub value: String,
}

/// The figures of one sentence of the note titled `title`, read as the
/// contradictions are (bounds and ranges left out: they are no values).
pub fn figure_rows(title: &str, sentence: &str) -> Vec<FigureRow> {
    let vocabulary =
        Vocabulary::of(std::iter::once(sentence)).with_companies([sentence, title].into_iter());
    let s = statement("", title, sentence, &vocabulary);
    let written = |from: usize, to: usize| {
        let mut out = String::new();
        for t in s.tokens.get(from..=to).unwrap_or_default() {
            if !out.is_empty() && !t.glued {
                out.push(' ');
            }
            out.push_str(&t.text);
        }
        out
    };
    // A figure ends at its unit, without the particle glued to it (원으로 → 원).
    let value = |f: &Figure| {
        let mut text = written(f.span.0, f.span.1.saturating_sub(1).max(f.span.0));
        if f.span.1 > f.span.0 {
            let last = s.tokens.get(f.span.1);
            if last.is_some_and(|t| !t.glued) {
                text.push(' ');
            }
            let word = last.map_or(String::new(), |t| t.text.clone());
            text.push_str(&if hangul_word(&word) {
                crate::notes::stem::counter(&word)
            } else {
                word
            });
        }
        text
    };
    s.figures
        .iter()
        .filter(|f| !f.bound)
        .map(|f| {
            let mut at: Vec<usize> = f
                .phrase
                .iter()
                .map(|w| w.at)
                .filter(|j| !(f.span.0..=f.span.1).contains(j))
                .collect();
            at.sort_unstable();
            at.dedup();
            let measured: Vec<String> = at.iter().map(|&j| written(j, j)).collect();
            let names: Vec<&str> = f.entities.values().map(String::as_str).collect();
            let subject = if !names.is_empty() {
                names.join(", ")
            } else if let Some(k) = &f.subject {
                k.clone()
            } else {
                title.to_owned()
            };
            FigureRow {
                subject,
                measured: measured.join(" "),
                value: value(f),
            }
        })
        .collect()
}

/// Contradictions between statements of different notes, strongest first.
fn contradictions(statements: &[Statement]) -> Vec<Contradiction> {
    let mut found: Vec<(usize, Contradiction)> = Vec::new();
    for (i, a) in statements.iter().enumerate() {
        for b in statements[i + 1..]
            .iter()
            .filter(|b| b.note_id != a.note_id)
        {
            let Some((strength, fa)) = clash(a, b) else {
                continue;
            };
            let claim = |s: &Statement| Claim {
                note_id: s.note_id.clone(),
                sentence: s.sentence.clone(),
            };
            let c = Contradiction {
                term: label(a, fa, b),
                claims: vec![claim(a), claim(b)],
            };
            // The same disagreement said twice in each note is one.
            let notes = |c: &Contradiction| -> Vec<String> {
                c.claims.iter().map(|cl| cl.note_id.clone()).collect()
            };
            if !found
                .iter()
                .any(|(_, f)| f.term == c.term && notes(f) == notes(&c))
            {
                found.push((strength, c));
            }
        }
    }
    found.sort_by_key(|x| std::cmp::Reverse(x.0));
    found
        .into_iter()
        .map(|(_, c)| c)
        .take(MAX_CONTRADICTIONS)
        .collect()
}

impl Tool for CompareResults {
    const NAME: &'static str = "compare_results";
    type Args = CompareResultsArgs;
    type Output = CompareResultsOutput;

    fn description(&self) -> String {
        "Compare the outputs of several search_notes steps: the notes each found, notes found by more than one, \
         and sentences from different notes that give conflicting figures for the same measured attribute of \
         the same subject."
            .to_owned()
    }

    fn effects(&self) -> Effects {
        Effects {
            side_effect: false,
            idempotent: true,
            timeout_ms: None,
        }
    }

    fn call(
        &self,
        _ctx: &ToolContext,
        args: Self::Args,
    ) -> impl Future<Output = Result<Self::Output, ToolError>> + Send {
        ready(if args.results.is_empty() {
            Err(ToolError::persistent(
                "compare_results needs at least one search output in `results`",
            ))
        } else {
            Ok(compare(&args.results))
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn search(hits: &[(&str, &str)]) -> Value {
        json!({"query": "q", "results": hits.iter().map(|(id, p)| json!({"note_id": id, "title": id, "score": 1.0, "passages": [p]})).collect::<Vec<_>>()})
    }

    fn read(sentence: &str) -> Vec<Figure> {
        figures(
            &lex(sentence),
            &Vocabulary::of(std::iter::once(sentence)).lowercase,
        )
    }

    /// `(value, unit key)` of each figure.
    fn values(sentence: &str) -> Vec<(f64, String)> {
        read(sentence)
            .into_iter()
            .map(|f| (f.value, f.unit.key))
            .collect()
    }

    #[test]
    fn figure_rows_give_subject_measure_and_value_as_written() {
        let rows = figure_rows(
            "Civiqa quote",
            "Civiqa's annual subscription is $9,840 a year, and onboarding takes 3 weeks.",
        );
        let values: Vec<&str> = rows.iter().map(|r| r.value.as_str()).collect();
        assert_eq!(values, ["$9,840 a year", "3 weeks"], "{rows:?}");
        assert!(rows[0].measured.contains("subscription"), "{rows:?}");
        // A bound is no value.
        assert!(figure_rows("t", "Latency must stay under 4 seconds.").is_empty());
    }

    #[test]
    fn figures_are_read_with_their_units() {
        for (sentence, expected) in [
            (
                "Latency rose to 450 ms, costs fell 30% and setup took 3 weeks at $1,200.",
                vec![(450.0, "ms"), (30.0, "%"), (3.0, "week"), (1200.0, "$")],
            ),
            ("It cost $1.2 million.", vec![(1.2e6, "$")]),
            ("Use fell 12 per cent.", vec![(12.0, "%")]),
            ("Use fell 12 percent.", vec![(12.0, "%")]),
            ("사용량이 12퍼센트 줄었다.", vec![(12.0, "%")]),
            ("It costs 40 dollars.", vec![(40.0, "$")]),
            ("초기 비용은 약 5,400달러다.", vec![(5400.0, "$")]),
            ("인건비로 약 320만 원이 든다.", vec![(3.2e6, "₩")]),
            ("월 약 12만원이다.", vec![(1.2e5, "₩/month")]),
            ("총비용은 1억 2,000만 원이다.", vec![(1.2e8, "₩")]),
            (
                "A GPU endpoint costs $1,100 per month.",
                vec![(1100.0, "$/month")],
            ),
            (
                "전용 GPU 서빙 비용이 월 150만 원 정도 든다.",
                vec![(1.5e6, "₩/month")],
            ),
            (
                "We handle 30,000 conversations a month.",
                vec![(30000.0, "convers/month")],
            ),
            ("GPU 학습 비용은 회당 2만 원이다.", vec![(2e4, "₩/회")]),
            ("The monthly cost is $450.", vec![(450.0, "$/month")]),
            (
                "Fine-tuning cost per month was $4,000.",
                vec![(4000.0, "$/month")],
            ),
            (
                "The cluster handled 42,000 msg/s.",
                vec![(42000.0, "messag/second")],
            ),
            ("It drew 450 people.", vec![(450.0, "peopl")]),
            (
                "Then 15 of 24 managers agreed.",
                vec![(0.625, "share of manag")],
            ),
            (
                "관리자 24명 중 15명이 동의했다.",
                vec![(0.625, "share of 명")],
            ),
            ("Satisfaction was 4.2 out of 5.", vec![(4.2, "/5")]),
            ("응답 지연은 1.4초였다.", vec![(1.4, "second")]),
            ("Metered use fell from 61,300 kWh.", vec![(61300.0, "kwh")]),
        ] {
            let expected: Vec<(f64, String)> = expected
                .into_iter()
                .map(|(v, u)| (v, u.to_owned()))
                .collect();
            assert_eq!(values(sentence), expected, "{sentence}");
        }
    }

    #[test]
    fn numbers_that_are_not_figures_are_skipped() {
        for sentence in [
            "Version 2 of the model.",
            "Error E-4012 came back.",
            "In 2024 we moved.",
            "9월에 시작했다.",
            "3분기에 시작한다.",
            "Budget at the 95th percentile.",
            "Dimmed after 11 p.m. each night.",
            "An open 8B model on an A100.",
            "The call was at 10:30.",
            "The three-year plan.",
        ] {
            assert!(
                values(sentence).is_empty(),
                "{sentence}: {:?}",
                values(sentence)
            );
        }
    }

    #[test]
    fn conditions_are_read_around_each_figure() {
        let quals = |s: &str| -> Vec<Vec<&'static str>> {
            read(s)
                .into_iter()
                .map(|f| f.qualifiers.into_iter().collect())
                .collect()
        };
        assert_eq!(
            quals("Headline: 41% were resolved, against a target of 30%."),
            [vec![], vec!["target"]]
        );
        assert_eq!(
            quals("In the load test, it handled 48,000 messages per second."),
            [vec!["load"]]
        );
        assert_eq!(
            quals("AWS gives a maximum of 95,000 messages per second."),
            [vec!["max"]]
        );
        assert_eq!(quals("Sky brightness rose 12 percent."), [vec!["up"]]);
        assert_eq!(
            quals("It uses 58 percent less electricity."),
            [vec!["down"]]
        );
        assert_eq!(quals("목표로 잡았던 25%였다."), [vec!["target"]]);
        assert_eq!(quals("월 약 12만 원으로 예상된다."), [vec!["projected"]]);
        assert_eq!(quals("처리 건수가 12% 늘었다."), [vec!["up"]]);
        assert_eq!(quals("The p95 latency is 1.2 s."), [vec!["p95"]]);

        let bound = |s: &str| read(s).iter().map(|f| f.bound).collect::<Vec<_>>();
        assert_eq!(bound("Keep it under 4 minutes."), [true]);
        assert_eq!(bound("At least 30% need an agent."), [true]);
        assert_eq!(
            bound("It handles up to 50,000 messages per second."),
            [true]
        );
        assert_eq!(bound("We expect 5 to 10 runs."), [true]);
        assert_eq!(bound("응답 지연은 1.5초 이내여야 한다."), [true]);
        assert_eq!(bound("영어 파일럿의 1.2초보다 조금 길다."), [true]);
        assert_eq!(bound("It took 4 minutes."), [false]);

        let approx = |s: &str| read(s).iter().map(|f| f.approx).collect::<Vec<_>>();
        assert_eq!(approx("It costs about $70 per month."), [true]);
        assert_eq!(approx("2만 원 안팎이다."), [true]);
        assert_eq!(approx("It costs $70 per month."), [false]);

        let periods =
            |s: &str| -> Vec<String> { read(s).into_iter().flat_map(|f| f.periods).collect() };
        assert_eq!(periods("In Q2, 41% were resolved."), ["q2"]);
        assert_eq!(periods("9월 파일럿에서 해결된 대화는 35%였다."), ["m9"]);
        assert_eq!(periods("The three-year cost is $95,000."), ["h3year"]);
        assert_eq!(periods("Over three years, it costs $120,000."), ["h3year"]);
        assert_eq!(periods("The first-year cost is $40,000."), ["year1"]);
        assert_eq!(periods("In July, it cost $500."), ["m7"]);
        // A span of months is the year it spans, not its last month.
        assert_eq!(
            periods("현황표(2024년 1~12월)로 보면 2024년 이직률은 41%입니다."),
            ["y2024"]
        );

        // A Korean clause joined by -며 goes on with the subject before it.
        let entities = |s: &str| -> Vec<Vec<String>> {
            read(s)
                .into_iter()
                .map(|f| f.entities.into_keys().collect())
                .collect()
        };
        assert_eq!(
            entities(
                "둔산 센터 상담사의 평균 근속은 27개월이며, 2024년 연간 이직률은 32%였습니다."
            ),
            [vec!["둔산".to_owned()], vec!["둔산".to_owned()]]
        );
    }

    #[test]
    fn subjects_are_named_entities_and_korean_topics() {
        let named = |s: &str| -> Vec<String> {
            read(s)
                .into_iter()
                .flat_map(|f| f.entities.into_keys())
                .collect()
        };
        assert_eq!(
            named("Kafka sustained 100,000 messages per second."),
            ["kafka"]
        );
        assert_eq!(
            named("In our test, RabbitMQ's queues took 7,800 messages per second."),
            ["rabbitmq"]
        );
        assert_eq!(named("SQS delivered 3,000 messages per second."), ["sqs"]);
        assert_eq!(named("RAG는 월 12만 원이 든다."), ["rag"]);
        // A label or a sentence's first common word is not a name.
        assert!(named("Headline: 41% of conversations were resolved.").is_empty());
        assert!(named("Of 18,600 bot conversations, 27% were resolved.").is_empty());
        // A unit in capitals is not a name.
        assert!(named("It stores 2 TB per broker.").is_empty());

        // Hangul has no capitals: a place or team before or in an
        // organisation noun is a name.
        assert_eq!(named("서울 지점의 월 운영 비용은 400만 원이다."), ["서울"]);
        assert_eq!(named("고객지원팀의 처리 건수가 4% 늘었다."), ["고객지원팀"]);

        let subject = |s: &str| read(s).into_iter().find_map(|f| f.subject);
        assert_eq!(
            subject("카프카는 초당 10만 건을 처리했다.").as_deref(),
            Some("카프카")
        );
        assert_eq!(subject("해결된 대화는 35%였다.").as_deref(), Some("대화"));
        assert_eq!(subject("상담원 연결 없이 35%였다."), None);
    }

    #[test]
    fn conflicting_figures_between_notes_are_flagged() {
        let out = compare(&[
            search(&[(
                "a",
                "Fine-tuning cost per month was $4,000 for the pilot. Other text.",
            )]),
            search(&[
                (
                    "b",
                    "The pilot showed fine-tuning cost per month of $9,000.",
                ),
                ("a", "Fine-tuning cost per month was $4,000 for the pilot."),
            ]),
        ]);
        assert_eq!(out.shared_sources, ["a"]);
        assert_eq!(out.sources.len(), 2);
        assert_eq!(out.contradictions.len(), 1);
        let c = &out.contradictions[0];
        assert!(c.term.ends_with("($ per month)"), "{}", c.term);
        assert_eq!(
            c.claims[0].sentence,
            "Fine-tuning cost per month was $4,000 for the pilot."
        );
        assert_eq!(c.claims[1].note_id, "b");
    }

    #[test]
    fn korean_figures_are_compared_too() {
        let out = compare(&[search(&[
            (
                "ko-a",
                "9월 파일럿에서 상담원 연결 없이 해결된 대화는 35%였다.",
            ),
            (
                "ko-b",
                "데이터팀이 다시 집계한 결과 상담원 연결 없이 해결된 대화는 22%였다.",
            ),
        ])]);
        assert_eq!(out.contradictions.len(), 1, "{:?}", out.contradictions);
        assert!(out.contradictions[0].term.ends_with("(%)"));
    }

    #[test]
    fn agreeing_or_unrelated_figures_are_not_contradictions() {
        let out = compare(&[search(&[
            ("a", "Retrieval latency is 200 ms on average."),
            ("b", "Retrieval latency is 200 ms in our tests."),
            ("c", "Onboarding takes 3 weeks."),
        ])]);
        assert!(out.contradictions.is_empty(), "{:?}", out.contradictions);
    }

    #[test]
    fn notes_titled_for_different_systems_are_not_compared() {
        let hit = |id: &str, title: &str, p: &str| json!({"note_id": id, "title": title, "score": 1.0, "passages": [p]});
        let found = |t1: &str, t2: &str| {
            compare(&[json!({"query": "q", "results": [
                hit("a", t1, "Throughput held at 42,000 messages per second for thirty minutes."),
                hit("b", t2, "Throughput held at 7,800 messages per second for thirty minutes."),
            ]})])
            .contradictions
            .len()
        };
        assert_eq!(found("Load test: MSK", "RabbitMQ spike"), 0);
        assert_eq!(found("Load test: MSK", "MSK retest"), 1);
        assert_eq!(found("Load test notes", "Retest notes"), 1);
    }

    #[test]
    fn an_emails_subject_tag_names_no_subject() {
        let title = "[위탁 TF] 두 업체 상담 인력 자료 검토 의견";
        let vocabulary = Vocabulary::of(std::iter::once(title));
        assert!(named_in(title, &vocabulary).is_empty());
        let tagged = "[External] Kestrel quote";
        let vocabulary = Vocabulary::of(std::iter::once(tagged));
        assert_eq!(named_in(tagged, &vocabulary).len(), 1);
    }

    #[test]
    fn a_title_naming_a_company_bare_names_that_subject() {
        let hit = |id: &str, title: &str, p: &str| json!({"note_id": id, "title": title, "score": 1.0, "passages": [p]});
        let found = |t1: &str, t2: &str| {
            compare(&[json!({"query": "q", "results": [
                hit("a", t1, "동계 상의 단가는 27,000원(부가세 포함)이었다."),
                hit("b", t2, "동계 상의 단가는 24,000원(부가세 포함)."),
                hit("c", "업체 목록", "후보는 (주)한솔유니폼과 (주)청우복장이다."),
            ]})])
            .contradictions
            .len()
        };
        // 한솔유니폼 has no marker in the first title, but a note names it by one.
        assert_eq!(
            found("평택 통화 메모 (한솔유니폼 사용 경험)", "(주)청우복장 견적"),
            0
        );
        assert_eq!(
            found("평택 통화 메모 (한솔유니폼 사용 경험)", "한솔유니폼 재견적"),
            1
        );
        // Both titles name the site too: the companies still differ.
        assert_eq!(
            found(
                "(주)한솔유니폼 — 평택2공장 근무복 제안서",
                "(주)청우복장 제안서 — 평택2공장 근무복"
            ),
            0
        );
    }
}
