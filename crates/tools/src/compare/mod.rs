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
//!   whole-word stems ([`crate::text::stem`]), after any source frame
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

use std::future::{Future, ready};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use stepwise_core::{Effects, Tool, ToolContext, ToolError};

use crate::notes::sentences;

mod entities;
mod markers;
mod phrases;
mod rule;
#[cfg(test)]
mod tests;
mod tokens;
mod units;
mod words;

use entities::Vocabulary;
use phrases::{Figure, Statement, statement};
use rule::{clash, label};
use words::hangul_word;

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
                crate::text::stem::counter(&word)
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
