//! `compare_results`: lines up the results of several `search_notes` steps —
//! which notes each found, which notes several found, and where two notes
//! state different figures about the same thing. Deterministic, no model.
//!
//! A *contradiction* is a pair of sentences from different notes that share
//! at least [`MIN_SHARED_TERMS`] content words and both give a number with the
//! same unit (`%`, `ms`, `weeks`, `$`, …) but no value in common. That is a
//! flag for a reader, not a verdict: the brief quotes both sides.

use std::collections::{BTreeMap, BTreeSet};
use std::future::{Future, ready};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use stepwise_core::{Effects, Tool, ToolContext, ToolError};

use crate::notes::sentences;
use crate::notes::tokenize::{is_cjk, is_stop_word, tokenize};

/// Content words two sentences must share to be about the same thing.
pub const MIN_SHARED_TERMS: usize = 4;
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
    /// What both sentences are about (their shared words) and the unit.
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

/// A sentence with what it is about and the figures it gives.
struct Statement {
    note_id: String,
    sentence: String,
    terms: BTreeSet<String>,
    figures: BTreeMap<String, BTreeSet<String>>,
}

/// Figures in a sentence, by unit: `"40%"` → `("%", "40")`, `"$1.2"` → `("$", "1.2")`,
/// `"3 weeks"` → `("week", "3")`. A number with no unit is not a figure.
fn figures(sentence: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let chars: Vec<char> = sentence.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if !chars[i].is_ascii_digit()
            || (i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '.'))
        {
            i += 1;
            continue;
        }
        let start = i;
        while i < chars.len()
            && (chars[i].is_ascii_digit()
                || ((chars[i] == '.' || chars[i] == ',')
                    && chars.get(i + 1).is_some_and(char::is_ascii_digit)))
        {
            i += 1;
        }
        let value: String = chars[start..i].iter().filter(|c| **c != ',').collect();
        let before = start.checked_sub(1).map(|j| chars[j]);
        let unit = if let Some(sym @ ('$' | '€' | '£' | '₩')) = before {
            Some(sym.to_string())
        } else {
            let rest: String = chars[i..].iter().collect();
            let rest = rest.trim_start();
            if rest.starts_with('%') {
                Some("%".to_owned())
            } else {
                let word: String = rest
                    .chars()
                    .take_while(|c| c.is_alphabetic())
                    .collect::<String>()
                    .to_lowercase();
                let word = word
                    .strip_suffix('s')
                    .filter(|w| w.len() > 1)
                    .unwrap_or(&word)
                    .to_owned();
                (!word.is_empty() && !is_stop_word(&word)).then_some(word)
            }
        };
        if let Some(unit) = unit {
            out.entry(unit).or_default().insert(value);
        }
    }
    out
}

fn statement(note_id: &str, sentence: &str) -> Statement {
    let terms = tokenize(sentence)
        .into_iter()
        // Short Latin words ("per", "at") say little; Korean and CJK terms are
        // character bigrams, so two characters is their full size.
        .filter(|t| {
            (t.chars().count() >= 3 || t.chars().all(is_cjk))
                && !t.chars().any(|c| c.is_ascii_digit())
        })
        .collect();
    Statement {
        note_id: note_id.to_owned(),
        sentence: sentence.to_owned(),
        terms,
        figures: figures(sentence),
    }
}

/// What two sentences are about, in the first one's own words: its first
/// three words that hold a shared term ("conversations resolved without",
/// "상담원 연결 없이") — readable where bare terms or bigrams would not be.
fn label(sentence: &str, shared: &[&String]) -> String {
    let words: Vec<&str> = sentence
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()))
        .filter(|w| !w.is_empty() && tokenize(w).iter().any(|t| shared.contains(&t)))
        .take(3)
        .collect();
    words.join(" ")
}

/// Compares search outputs; inputs that are not search output count as finding nothing.
pub fn compare(results: &[Value]) -> CompareResultsOutput {
    let mut sources: Vec<FoundNote> = Vec::new();
    let mut statements: Vec<Statement> = Vec::new();
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
                    if !statements
                        .iter()
                        .any(|s| s.note_id == hit.note_id && s.sentence == sentence)
                    {
                        statements.push(statement(&hit.note_id, sentence));
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
    let mut found: Vec<(usize, Contradiction)> = Vec::new();
    for (i, a) in statements.iter().enumerate() {
        for b in statements
            .iter()
            .skip(i + 1)
            .filter(|b| b.note_id != a.note_id)
        {
            let shared: Vec<&String> = a.terms.intersection(&b.terms).collect();
            if shared.len() < MIN_SHARED_TERMS {
                continue;
            }
            let clash = a.figures.iter().find(|(unit, values)| {
                b.figures
                    .get(*unit)
                    .is_some_and(|other| other.is_disjoint(values))
            });
            if let Some((unit, _)) = clash {
                let about = label(&a.sentence, &shared);
                found.push((
                    shared.len(),
                    Contradiction {
                        term: format!("{about} ({unit})"),
                        claims: vec![
                            Claim {
                                note_id: a.note_id.clone(),
                                sentence: a.sentence.clone(),
                            },
                            Claim {
                                note_id: b.note_id.clone(),
                                sentence: b.sentence.clone(),
                            },
                        ],
                    },
                ));
            }
        }
    }
    found.sort_by_key(|x| std::cmp::Reverse(x.0));
    let contradictions = found
        .into_iter()
        .map(|(_, c)| c)
        .take(MAX_CONTRADICTIONS)
        .collect();
    CompareResultsOutput {
        sources,
        shared_sources,
        contradictions,
    }
}

impl Tool for CompareResults {
    const NAME: &'static str = "compare_results";
    type Args = CompareResultsArgs;
    type Output = CompareResultsOutput;

    fn description(&self) -> String {
        "Compare the outputs of several search_notes steps: the notes each found, notes found by more than one, \
         and sentences from different notes that give conflicting figures about the same thing."
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

    #[test]
    fn figures_are_read_with_their_units() {
        let f = figures("Latency rose to 450 ms, costs fell 30% and setup took 3 weeks at $1,200.");
        assert_eq!(f["ms"], BTreeSet::from(["450".to_owned()]));
        assert_eq!(f["%"], BTreeSet::from(["30".to_owned()]));
        assert_eq!(f["week"], BTreeSet::from(["3".to_owned()]));
        assert_eq!(f["$"], BTreeSet::from(["1200".to_owned()]));
        assert!(figures("Version 2 of the model.").is_empty());
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
        assert!(c.term.ends_with("($)"), "{}", c.term);
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
}
