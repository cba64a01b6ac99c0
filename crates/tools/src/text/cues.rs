//! Cue classes: the words by which a sentence says it is not a statement
//! about the decision (it defers, holds no result, is a byline, is about
//! another project, sets an option aside), and the words by which a goal
//! asks. The entries are data, one file per language (`cues-en.toml`,
//! `cues-ko.toml`, documented at their tops), matched by stem: one entry
//! covers its inflections.

use std::sync::OnceLock;

use serde::Deserialize;

use crate::text::stem::{is_hangul, stem};

/// What a cue says of the sentence holding it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cue {
    /// The topic is put off: no result yet.
    Deferral,
    /// The sentence says it holds no evidence.
    NoResult,
    /// The note is about something other than the decision.
    SelfExclusion,
    /// An option is dropped from the comparison.
    SetAside,
    /// A header, byline or attendance line.
    Byline,
    /// A word that asks for the brief rather than naming its subject.
    Task,
    /// A word after (English) or before (Korean) which a goal lists its
    /// dimensions.
    List,
    /// A goal whose next step depends on what the last one found.
    Exploratory,
}

/// One cue file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct CueFile {
    deferral: Vec<String>,
    no_result: Vec<String>,
    self_exclusion: Vec<String>,
    set_aside: Vec<String>,
    byline: Vec<String>,
    task: Vec<String>,
    list: Vec<String>,
    #[serde(default)]
    exploratory: Vec<String>,
}

/// One entry, analysed.
#[derive(Debug)]
struct Entry {
    cue: Cue,
    words: Vec<String>,
    /// Only at the sentence's start.
    anchored: bool,
    /// Only with a colon right after it.
    colon: bool,
}

/// A word of a text: its stem and where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    /// The word's stem ([`stem`]).
    pub stem: String,
    /// Byte offset of its start.
    pub start: usize,
    /// Byte offset just past it.
    pub end: usize,
}

/// The words of `text` in order, stop words kept: split at every
/// non-alphanumeric character and where Hangul meets another script.
pub fn tokens(text: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let mut start: Option<(usize, bool)> = None;
    let push = |from: usize, to: usize, out: &mut Vec<Token>| {
        out.push(Token {
            stem: stem(&text[from..to]),
            start: from,
            end: to,
        });
    };
    for (i, c) in text.char_indices() {
        let word = c.is_alphanumeric();
        match start {
            Some((s, hangul)) if !word || is_hangul(c) != hangul => {
                push(s, i, &mut out);
                start = word.then_some((i, is_hangul(c)));
            }
            None if word => start = Some((i, is_hangul(c))),
            _ => {}
        }
    }
    if let Some((s, _)) = start {
        push(s, text.len(), &mut out);
    }
    out
}

fn entries() -> &'static [Entry] {
    static ENTRIES: OnceLock<Vec<Entry>> = OnceLock::new();
    ENTRIES.get_or_init(|| {
        let mut out = Vec::new();
        for source in [include_str!("cues-en.toml"), include_str!("cues-ko.toml")] {
            // The files are part of the build; a malformed one is caught by
            // the tests below, and reads as no cues rather than a panic.
            let file: CueFile = toml::from_str(source).unwrap_or_default();
            let classes = [
                (Cue::Deferral, file.deferral),
                (Cue::NoResult, file.no_result),
                (Cue::SelfExclusion, file.self_exclusion),
                (Cue::SetAside, file.set_aside),
                (Cue::Byline, file.byline),
                (Cue::Task, file.task),
                (Cue::List, file.list),
                (Cue::Exploratory, file.exploratory),
            ];
            for (cue, phrases) in classes {
                for p in phrases {
                    let anchored = p.starts_with('^');
                    let colon = p.ends_with(':');
                    let words: Vec<String> = tokens(p.trim_matches(['^', ':']))
                        .into_iter()
                        .map(|t| t.stem)
                        .collect();
                    if !words.is_empty() {
                        out.push(Entry {
                            cue,
                            words,
                            anchored,
                            colon,
                        });
                    }
                }
            }
        }
        out
    })
}

/// Whether a word of the text (a stem) is the entry's word: the same stem,
/// or for Korean, a word that starts with it (endings follow the stem).
fn word_is(entry_word: &str, word: &str) -> bool {
    if entry_word.chars().any(is_hangul) {
        word.starts_with(entry_word)
    } else {
        word == entry_word
    }
}

/// Where cues of class `cue` occur in `text`: the byte span of each match,
/// in order.
pub fn find(text: &str, cue: Cue) -> Vec<(usize, usize)> {
    spans(text, &tokens(text), &[cue])
}

/// The spans of cues of any class in `cues`, over `text`'s tokens.
fn spans(text: &str, toks: &[Token], cues: &[Cue]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for e in entries().iter().filter(|e| cues.contains(&e.cue)) {
        let n = e.words.len();
        for at in 0..toks.len().saturating_sub(n - 1) {
            if e.anchored && at > 0 {
                break;
            }
            let window = &toks[at..at + n];
            let end = window[n - 1].end;
            if window
                .iter()
                .zip(&e.words)
                .all(|(t, w)| word_is(w, &t.stem))
                && (!e.colon || text[end..].trim_start().starts_with(':'))
            {
                out.push((window[0].start, end));
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Whether `text` holds a cue of class `cue`.
pub fn has_cue(text: &str, cue: Cue) -> bool {
    has_any_cue(text, &[cue])
}

/// Whether `text` holds a cue of any class in `cues` (its words analysed once).
pub fn has_any_cue(text: &str, cues: &[Cue]) -> bool {
    !spans(text, &tokens(text), cues).is_empty()
}

/// Whether one stem is a one-word entry of class `cue` (a task word).
pub fn is_cue_word(stem: &str, cue: Cue) -> bool {
    entries()
        .iter()
        .any(|e| e.cue == cue && e.words.len() == 1 && word_is(&e.words[0], stem))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cue_files_parse() {
        for source in [include_str!("cues-en.toml"), include_str!("cues-ko.toml")] {
            let parsed: Result<CueFile, _> = toml::from_str(source);
            assert!(parsed.is_ok(), "{parsed:?}");
        }
    }

    #[test]
    fn cues_match_by_stem_in_either_language() {
        assert!(has_cue("Vendor support didn't come up.", Cue::NoResult));
        assert!(has_cue("We will check pricing with them.", Cue::Deferral));
        assert!(has_cue("It waits until the next meeting.", Cue::Deferral));
        assert!(has_cue(
            "비용은 다음 회의에서 확인하기로 했다.",
            Cue::Deferral
        ));
        assert!(has_cue("이 건은 별개 사업이다.", Cue::SelfExclusion));
        assert!(has_cue(
            "NorthDoc was dropped at the kickoff.",
            Cue::SetAside
        ));
        assert!(!has_cue("Support costs $4,200 a year.", Cue::Deferral));
        assert!(!has_cue("The pump test passed.", Cue::SetAside));
    }

    #[test]
    fn anchored_cues_need_the_start_and_their_colon() {
        assert!(has_cue("From: Dana Park <dana@example.org>", Cue::Byline));
        assert!(has_cue("참석자: 김민지, 박서준", Cue::Byline));
        assert!(!has_cue("To cut costs we batch jobs.", Cue::Byline));
        assert!(!has_cue("Mail from: the vendor", Cue::Byline));
    }

    #[test]
    fn spans_point_at_the_cue() {
        let text = "Compare A and B on cost and latency";
        let spans = find(text, Cue::List);
        assert_eq!(spans.last().map(|&(s, e)| &text[s..e]), Some("on"));
        assert!(is_cue_word(&stem("comparing"), Cue::Task));
        assert!(is_cue_word(&stem("비교하라"), Cue::Task));
    }
}
