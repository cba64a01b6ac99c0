//! The words of the figure reader of `compare_results`, from one data file
//! per language (`figures-en.toml`, `figures-ko.toml`, documented at their
//! tops): clause breaks, qualifiers, bounds, approximations, units, rates.
//! Read once; the strings live as long as the program.

use std::sync::OnceLock;

use serde::Deserialize;

/// One figure-words file; a key a language does not use is left out.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct File {
    clause_words: String,
    qualifiers: Vec<String>,
    approx_before: String,
    approx_after: String,
    bound_before: String,
    bound_after: String,
    filler: String,
    number_words: String,
    ordinal_words: String,
    months: String,
    not_entities: String,
    time_units: Vec<String>,
    measures: Vec<String>,
    currency_words: Vec<String>,
    rates: Vec<String>,
    units: Vec<(String, String)>,
    org_nouns: String,
}

/// The figure reader's words, both languages.
#[derive(Debug)]
pub struct FigureWords {
    /// Words that end a clause as a comma does (both languages).
    pub clause_words: &'static str,
    /// English qualifier classes ("max: maximum peak …").
    pub qualifiers: Vec<&'static str>,
    /// Korean qualifier classes, matched at the start of a stem.
    pub korean_qualifiers: Vec<&'static str>,
    /// Words right before a figure that make it approximate (both).
    pub approx_before: &'static str,
    /// Korean words right after a figure that make it approximate.
    pub approx_after: &'static str,
    /// English words right before a figure that make it a bound.
    pub bound_before: &'static str,
    /// English words after a figure that make it a bound.
    pub bound_after: &'static str,
    /// Korean endings or words after a figure that make it a bound.
    pub korean_bounds: &'static str,
    /// English words that say little about what a figure measures.
    pub filler: &'static str,
    /// Korean ones, matched at the start of a stem.
    pub korean_filler: &'static str,
    /// English number words, by position.
    pub number_words: &'static str,
    /// English ordinal words, by position.
    pub ordinal_words: &'static str,
    /// English month names, by position.
    pub months: &'static str,
    /// Capitalised words that name no subject.
    pub not_entities: &'static str,
    /// Units of time, by key.
    pub time_units: Vec<&'static str>,
    /// Other units of measure, by key.
    pub measures: Vec<&'static str>,
    /// Currency words and codes, by symbol.
    pub currency_words: Vec<&'static str>,
    /// Korean units after a number: `(prefix, key)`.
    pub korean_units: Vec<(&'static str, &'static str)>,
    /// Korean words before a figure that make it a rate, by period.
    pub korean_rates: Vec<&'static str>,
    /// English adjectives that make a nearby figure a rate, by period.
    pub rate_adjectives: Vec<&'static str>,
    /// Korean organisation nouns ("팀", "지점").
    pub korean_org_nouns: &'static str,
}

/// A string that lives as long as the program (the tables are read once).
fn keep(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

fn keep_all(v: Vec<String>) -> Vec<&'static str> {
    v.into_iter().map(keep).collect()
}

/// The figure reader's words, read from the data files once.
pub fn figure_words() -> &'static FigureWords {
    static WORDS: OnceLock<FigureWords> = OnceLock::new();
    WORDS.get_or_init(|| {
        // The files are part of the build; a malformed one is caught by the
        // test below, and reads as no words rather than a panic.
        let en: File = toml::from_str(include_str!("figures-en.toml")).unwrap_or_default();
        let ko: File = toml::from_str(include_str!("figures-ko.toml")).unwrap_or_default();
        FigureWords {
            clause_words: keep(format!("{} {}", en.clause_words, ko.clause_words)),
            qualifiers: keep_all(en.qualifiers),
            korean_qualifiers: keep_all(ko.qualifiers),
            approx_before: keep(format!("{} {}", en.approx_before, ko.approx_before)),
            approx_after: keep(ko.approx_after),
            bound_before: keep(en.bound_before),
            bound_after: keep(en.bound_after),
            korean_bounds: keep(ko.bound_after),
            filler: keep(en.filler),
            korean_filler: keep(ko.filler),
            number_words: keep(en.number_words),
            ordinal_words: keep(en.ordinal_words),
            months: keep(en.months),
            not_entities: keep(en.not_entities),
            time_units: keep_all(en.time_units),
            measures: keep_all(en.measures),
            currency_words: keep_all(en.currency_words),
            korean_units: ko
                .units
                .into_iter()
                .map(|(p, k)| (keep(p), keep(k)))
                .collect(),
            korean_rates: keep_all(ko.rates),
            rate_adjectives: keep_all(en.rates),
            korean_org_nouns: keep(ko.org_nouns),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_figure_word_files_parse_and_fill_every_table() {
        for source in [
            include_str!("figures-en.toml"),
            include_str!("figures-ko.toml"),
        ] {
            let parsed: Result<File, _> = toml::from_str(source);
            assert!(parsed.is_ok(), "{parsed:?}");
        }
        let w = figure_words();
        assert!(w.clause_words.contains("against") && w.clause_words.contains("반면"));
        assert!(!w.qualifiers.is_empty() && !w.korean_qualifiers.is_empty());
        assert!(w.korean_units.iter().any(|(p, k)| *p == "원" && *k == "₩"));
        assert!(!w.rate_adjectives.is_empty() && !w.korean_rates.is_empty());
        assert_eq!(w.months.split_whitespace().count(), 12);
    }
}
