//! `compare_results`: lines up the results of several `search_notes` steps —
//! which notes each found, which notes several found, and where two notes
//! state different figures about the same thing. Deterministic, no model.
//!
//! # Contradictions
//!
//! Every figure of a retrieved sentence is read with its unit, the kind of
//! value it is and what it measures ([`figure`]). Two figures from different
//! notes contradict when their values differ (by more than a tenth if
//! either is approximate) and everything else agrees:
//!
//! - **unit**, rate included (`$ per month` is not `$`; weeks are not days);
//! - **qualifiers** of their clauses (a target, a peak, an average, a rise,
//!   a projection: the same on both sides, or none);
//! - **periods** named (two different years, quarters or months never
//!   compare; one side may name fewer);
//! - **subject**: the same named subjects (names the notes capitalise
//!   mid-sentence, acronyms, Latin names in Korean text); when the
//!   sentences name none, their notes' titles do not name different ones;
//! - **what is measured**: at least two content words in common (one, when
//!   neither side has a word the other lacks), and not each side with a
//!   word the other sentence lacks ("the cost of hosting"
//!   and "the cost of support"; 서울 지점 and 부산 지점).
//!
//! When a pair cannot be told apart this way, nothing is reported: a false
//! contradiction misleads a reader more than a missed one, and the brief
//! quotes both sides of each one it reports.

mod figure;

use std::collections::BTreeSet;
use std::future::{Future, ready};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use stepwise_core::{Effects, Tool, ToolContext, ToolError};

use crate::notes::sentences;
use crate::text::cues::tokens;
use crate::text::{is_hangul, is_stop_word};
use figure::{Figure, figures, periods};

/// Most contradictions reported.
const MAX_CONTRADICTIONS: usize = 5;

/// Words two figures' measured phrases share at least.
const MIN_SHARED: usize = 2;

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
    /// subject they are about (if one is named) and the unit:
    /// `"resolved without escalation to a human agent (%)"`.
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

/// One figure of a cited sentence, for a brief's table of figures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FigureRow {
    /// Who or what it is about: the names the sentence gives, else its
    /// note's title.
    pub subject: String,
    /// What it measures, in the sentence's words.
    pub measured: String,
    /// The value as written, with its rate.
    pub value: String,
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

/// A sentence with figures, read once.
struct Statement<'a> {
    note_id: &'a str,
    sentence: &'a str,
    figures: Vec<Figure>,
    periods: BTreeSet<String>,
    /// The names the sentence gives.
    subject: BTreeSet<String>,
    /// The names its note's title gives, when the sentence gives none.
    titled: BTreeSet<String>,
    /// Every stem of the sentence and its note's title.
    said: BTreeSet<String>,
}

/// The names a set of texts uses: words capitalised where a sentence does
/// not start and never written in lower case, and acronyms.
fn names<'a>(texts: impl Iterator<Item = &'a str> + Clone) -> BTreeSet<String> {
    let mut capital = BTreeSet::new();
    let mut lower = BTreeSet::new();
    for text in texts {
        for (i, t) in tokens(text).iter().enumerate() {
            let w = &text[t.start..t.end];
            let Some(first) = w.chars().next() else {
                continue;
            };
            // Codes and periods (Q2, F017) are not names.
            if !first.is_ascii_alphabetic() || w.chars().any(|c| c.is_ascii_digit()) {
                continue;
            }
            let opening = i == 0
                || text[..t.start]
                    .trim_end()
                    .ends_with([':', '.', '!', '?', '-', '*', '#', '\n', '"', '“']);
            if first.is_lowercase() {
                lower.insert(w.to_lowercase());
            } else if acronym(w) || camel(w) || !opening {
                capital.insert(w.to_lowercase());
            }
        }
    }
    capital
        .into_iter()
        .filter(|w| !lower.contains(w) && !is_stop_word(w))
        .collect()
}

/// A name written with inner capitals (RabbitMQ, PostgreSQL).
fn camel(w: &str) -> bool {
    w.chars().skip(1).any(|c| c.is_ascii_uppercase()) && w.chars().any(|c| c.is_ascii_lowercase())
}

/// An acronym: two or more capitals, no digit (RAG, GPU; not Q30).
fn acronym(w: &str) -> bool {
    w.len() >= 2 && w.chars().all(|c| c.is_ascii_uppercase())
}

/// Korean company markers: the word glued to one is a company's name.
const COMPANY_MARKS: [&str; 3] = ["(주)", "㈜", "주식회사"];

/// The subjects a text names, of `known`; in a Korean text every Latin word
/// and every company's name ((주)새솔운수, 대성관광(주)).
fn subjects(text: &str, known: &BTreeSet<String>) -> BTreeSet<String> {
    let korean = text.chars().any(is_hangul);
    let toks = tokens(text);
    let mut out: BTreeSet<String> = BTreeSet::new();
    for mark in COMPANY_MARKS {
        for (at, _) in text.match_indices(mark) {
            let end = at + mark.len();
            let glued = toks.iter().find(|t| {
                (t.end == at || t.start == end || t.start == end + 1)
                    && t.stem.chars().any(is_hangul)
            });
            out.extend(glued.map(|t| text[t.start..t.end].to_owned()));
        }
    }
    out.extend(
        toks.iter()
            .map(|t| &text[t.start..t.end])
            .filter(|w| {
                let lower = w.to_lowercase();
                known.contains(&lower)
                    || korean && w.len() >= 2 && w.chars().all(|c| c.is_ascii_alphabetic())
            })
            .filter(|w| {
                !crate::text::cues::is_cue_word(&crate::text::stem(w), crate::text::Cue::Month)
            })
            .map(str::to_lowercase),
    );
    out
}

fn statement<'a>(
    note_id: &'a str,
    title: &str,
    sentence: &'a str,
    known: &BTreeSet<String>,
) -> Statement<'a> {
    let subject = subjects(sentence, known);
    let titled = if subject.is_empty() {
        subjects(title, known)
    } else {
        BTreeSet::new()
    };
    let said: BTreeSet<String> = tokens(sentence)
        .into_iter()
        .chain(tokens(title))
        .map(|t| t.stem)
        .collect();
    Statement {
        note_id,
        sentence,
        figures: figures(sentence),
        periods: periods(sentence),
        subject,
        titled,
        said,
    }
}

/// Whether two values differ: exactly, or by more than a tenth when either
/// is approximate.
fn differ(a: &Figure, b: &Figure) -> bool {
    let tolerance = if a.approx || b.approx { 0.1 } else { 1e-9 };
    (a.value - b.value).abs() > tolerance * a.value.abs().max(b.value.abs())
}

/// How strongly figure `a` of `sa` and `b` of `sb` measure the same thing
/// (the words they share), if they do.
fn same_thing(sa: &Statement<'_>, a: &Figure, sb: &Statement<'_>, b: &Figure) -> Option<usize> {
    if a.unit != b.unit
        || a.qualifiers != b.qualifiers
        || sa.subject != sb.subject
        || (!sa.titled.is_empty() && !sb.titled.is_empty() && sa.titled != sb.titled)
        || !(sa.periods.is_subset(&sb.periods) || sb.periods.is_subset(&sa.periods))
    {
        return None;
    }
    let shared = a.words.intersection(&b.words).count();
    let extra = |f: &Figure, other: &Statement<'_>| f.words.iter().any(|w| !other.said.contains(w));
    let (extra_a, extra_b) = (extra(a, sb), extra(b, sa));
    let same = shared >= MIN_SHARED && !(extra_a && extra_b) || shared >= 1 && !extra_a && !extra_b;
    same.then_some(shared)
}

/// What a figure measures, in its clause's words, without the figure.
fn measured(sentence: &str, f: &Figure) -> String {
    let clause = sentence.get(f.clause.0..f.clause.1).unwrap_or_default();
    let text = clause.replacen(&f.text, " ", 1);
    let kept: Vec<&str> = text
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()))
        .filter(|w| !w.is_empty() && !w.chars().all(|c| c.is_ascii_digit()))
        .take(12)
        .collect();
    kept.join(" ")
}

fn label(s: &Statement<'_>, f: &Figure) -> String {
    let subject: Vec<&str> = s.subject.iter().map(String::as_str).collect();
    let mut tail = f.unit.clone();
    for q in &f.qualifiers {
        tail.push_str("; ");
        tail.push_str(q);
    }
    let what = measured(s.sentence, f);
    if subject.is_empty() {
        format!("{what} ({tail})")
    } else {
        format!("{}: {what} ({tail})", subject.join(", "))
    }
}

/// The figures of one cited sentence, for a brief's table.
pub fn figure_rows(title: &str, sentence: &str) -> Vec<FigureRow> {
    let known = names([title, sentence].into_iter());
    let s = statement("", title, sentence, &known);
    s.figures
        .iter()
        .map(|f| FigureRow {
            subject: if s.subject.is_empty() {
                title.to_owned()
            } else {
                s.subject.iter().cloned().collect::<Vec<_>>().join(", ")
            },
            measured: measured(sentence, f),
            value: match f.unit.split_once(" per ") {
                Some((_, period)) => format!("{} per {period}", f.text.trim()),
                None => f.text.trim().to_owned(),
            },
        })
        .collect()
}

/// Compares `search_notes` outputs (others are skipped).
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
    let known = names(
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
    let statements: Vec<Statement<'_>> = said
        .iter()
        .map(|(note, sentence)| statement(note, title_of(note), sentence, &known))
        .filter(|s| !s.figures.is_empty())
        .collect();
    CompareResultsOutput {
        contradictions: contradictions(&statements),
        sources,
        shared_sources,
    }
}

/// Contradictions between statements of different notes, strongest first.
fn contradictions(statements: &[Statement<'_>]) -> Vec<Contradiction> {
    let mut found: Vec<(usize, Contradiction)> = Vec::new();
    for (i, a) in statements.iter().enumerate() {
        for b in statements[i + 1..]
            .iter()
            .filter(|b| b.note_id != a.note_id)
        {
            let clash = a.figures.iter().find_map(|fa| {
                let strength = b
                    .figures
                    .iter()
                    .filter_map(|fb| same_thing(a, fa, b, fb).map(|s| (s, differ(fa, fb))))
                    .max_by_key(|&(s, _)| s)?;
                // A figure that agrees with one of the other's is not in conflict.
                let agrees = b
                    .figures
                    .iter()
                    .any(|fb| same_thing(a, fa, b, fb).is_some() && !differ(fa, fb));
                (strength.1 && !agrees).then_some((strength.0, fa))
            });
            let Some((strength, fa)) = clash else {
                continue;
            };
            let claim = |s: &Statement<'_>| Claim {
                note_id: s.note_id.to_owned(),
                sentence: s.sentence.to_owned(),
            };
            let c = Contradiction {
                term: label(a, fa),
                claims: vec![claim(a), claim(b)],
            };
            // The same pair of notes disagreeing twice on one thing is one.
            if !found.iter().any(|(_, f)| {
                f.claims[0].note_id == c.claims[0].note_id
                    && f.claims[1].note_id == c.claims[1].note_id
                    && f.term == c.term
            }) {
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
mod tests;
