//! Dimension synonyms: the words notes write instead of a dimension's own
//! name ("uptime" for reliability, "conversion" for migration, 인건비 for
//! 비용), from a small, general lexicon embedded from `lexicon.toml` (which
//! says how each kind of entry matches).
//!
//! English synonyms match whole words as written — never by stem or prefix,
//! since Snowball stems "important" to "import" — and Korean ones as
//! dimension words do (particles stripped, a compound by its head).

use std::sync::OnceLock;

use serde::Deserialize;
use stepwise_tools::notes::stem::{mentions, same_stem, words};

/// The lexicon, as written.
const LEXICON: &str = include_str!("lexicon.toml");

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    group: Vec<RawGroup>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGroup {
    terms: Vec<String>,
    synonyms: Vec<String>,
}

/// One group: the dimension words it serves (each as its stems: one word,
/// or a whole dimension of several) and their synonyms.
#[derive(Debug)]
struct Group {
    terms: Vec<Vec<String>>,
    synonyms: Vec<Synonym>,
}

/// A synonym: a phrase of one or more words.
#[derive(Debug, Clone)]
pub(crate) struct Synonym {
    /// As written, for a search query.
    pub(crate) text: String,
    /// Its words: lowercased as written (English) or stems (Korean).
    parts: Vec<String>,
    korean: bool,
}

fn is_hangul(s: &str) -> bool {
    s.chars().any(|c| ('\u{AC00}'..='\u{D7A3}').contains(&c))
}

/// A text's words as written, lowercased, in order (for English synonyms).
pub(crate) fn surface(text: &str) -> Vec<String> {
    text.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect()
}

impl Synonym {
    fn new(text: &str) -> Self {
        let korean = is_hangul(text);
        let parts = if korean { words(text) } else { surface(text) };
        Self {
            text: text.to_owned(),
            parts,
            korean,
        }
    }

    /// Whether a text — its words as written (`surface`) and its stems —
    /// says this synonym.
    pub(crate) fn said_in(&self, surface: &[String], stems: &[String]) -> bool {
        if self.parts.is_empty() {
            return false;
        }
        if self.korean {
            // Words in a row ("대기 시간"), each maybe a compound it heads
            // or with its particles: "대기 환자의 입원이 9시간" is no wait time.
            return stems.windows(self.parts.len()).any(|w| {
                w.iter()
                    .zip(&self.parts)
                    .all(|(s, p)| mentions(std::slice::from_ref(s), p))
            });
        }
        surface
            .windows(self.parts.len())
            .any(|w| w.iter().zip(&self.parts).all(|(a, b)| a == b))
    }

    /// Its words as a search index spells them (stems for Korean).
    pub(crate) fn parts(&self) -> &[String] {
        &self.parts
    }
}

/// The lexicon, parsed once. It is part of the binary and a test parses it,
/// so it cannot be malformed at run time; if it were, no synonym would be
/// used (the offline roles fall back to the dimensions' own words).
fn groups() -> &'static [Group] {
    static GROUPS: OnceLock<Vec<Group>> = OnceLock::new();
    GROUPS.get_or_init(|| parse(LEXICON).unwrap_or_default())
}

fn parse(text: &str) -> Result<Vec<Group>, toml::de::Error> {
    let file: File = toml::from_str(text)?;
    Ok(file
        .group
        .into_iter()
        .map(|g| Group {
            terms: g.terms.iter().map(|t| words(t)).collect(),
            synonyms: g.synonyms.iter().map(|s| Synonym::new(s)).collect(),
        })
        .collect())
}

/// Whether two dimension stems are the same word.
fn same_term(a: &str, b: &str) -> bool {
    if is_hangul(a) || is_hangul(b) {
        a == b
    } else {
        same_stem(a, b)
    }
}

/// The synonyms of a dimension word (a stem), from every group serving it.
pub(crate) fn of(term: &str) -> Vec<&'static Synonym> {
    of_words(std::slice::from_ref(&term.to_owned()))
}

/// The synonyms of a dimension written in several words, as a whole (its
/// stems, in order).
pub(crate) fn of_dimension(stems: &[String]) -> Vec<&'static Synonym> {
    if stems.len() < 2 {
        return Vec::new();
    }
    of_words(stems)
}

fn of_words(stems: &[String]) -> Vec<&'static Synonym> {
    groups()
        .iter()
        .filter(|g| {
            g.terms.iter().any(|t| {
                t.len() == stems.len() && t.iter().zip(stems).all(|(a, b)| same_term(a, b))
            })
        })
        .flat_map(|g| &g.synonyms)
        .collect()
}

/// Whether a text says `term` (a stem) by one of its synonyms.
pub(crate) fn says(term: &str, surface: &[String], stems: &[String]) -> bool {
    of(term).iter().any(|s| s.said_in(surface, stems))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use stepwise_tools::notes::stem::stem;

    fn said(term: &str, text: &str) -> bool {
        says(&stem(term), &surface(text), &words(text))
    }

    #[test]
    fn the_lexicon_parses_and_every_entry_means_something() {
        let groups = parse(LEXICON).unwrap();
        assert!(groups.len() >= 10);
        for g in &groups {
            assert!(!g.terms.is_empty() && !g.synonyms.is_empty(), "{g:?}");
            for s in &g.synonyms {
                assert!(!s.parts.is_empty(), "{s:?}");
            }
        }
    }

    #[test]
    fn synonyms_match_whole_words_never_look_alikes() {
        for (term, text, expected) in [
            (
                "reliability",
                "Uptime was 99.95 percent in the pilot.",
                true,
            ),
            ("reliability", "Two outages in March.", true),
            (
                "migration",
                "The conversion of 5,210 records took a week.",
                true,
            ),
            ("migration", "Records were imported in February.", true),
            // Snowball stems "important" to "import": not a synonym.
            ("migration", "It is important to train staff.", false),
            ("productivity", "The pick rate rose to 140 an hour.", true),
            ("productivity", "They pick the rate later.", false),
            ("productivity", "Orders go through the gateway.", false),
            (
                "satisfaction",
                "88 percent were satisfied with the app.",
                true,
            ),
            ("cost", "The price is $9 per student.", true),
            ("cost", "The latency budget is 200 ms.", false),
            ("cost", "Legal expenses come to $2,000 a year.", true),
            ("training", "Trail maps were printed.", false),
            ("비용", "인건비는 연 3억 원이다.", true),
            ("비용", "이용 요금은 1,000원이다.", false),
            ("신뢰성", "3월에 장애가 두 번 있었다.", true),
            ("생산성", "시간당 처리 건수가 12% 늘었다.", true),
        ] {
            assert_eq!(said(term, text), expected, "{term}: {text}");
        }
        // A dimension of two words as a whole.
        let whole = of_dimension(&words("crop yield"));
        let text = "Field 9: 241 bushels per acre in 2024.";
        assert!(
            whole
                .iter()
                .any(|s| s.said_in(&surface(text), &words(text)))
        );
        assert!(of_dimension(&words("staff training")).is_empty());
    }
}
