//! The text layer's word tables, from one data file per language
//! (`words-en.toml`: stop words, derivational endings; `words-ko.toml`:
//! particles and endings, compound tails). Read once.

use std::sync::OnceLock;

use serde::Deserialize;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct File {
    stop_words: Vec<String>,
    derivational_tails: Vec<String>,
    endings: Vec<String>,
    compound_tails: Vec<String>,
}

/// The tables, both languages.
#[derive(Debug)]
pub struct TextWords {
    /// English stop words, sorted, as [`key`]s for a fast lookup.
    pub stop_keys: Vec<u64>,
    /// The longest stop word, in bytes.
    pub longest_stop_word: usize,
    /// The stop words themselves, sorted.
    pub stop_words: Vec<String>,
    /// Endings a Snowball stem may gain without changing its word.
    pub derivational_tails: Vec<String>,
    /// Korean particles and endings, longest first.
    pub endings: Vec<String>,
    /// Korean compound tails that keep a compound about its term.
    pub compound_tails: Vec<String>,
}

/// A word of at most eight bytes as a number that sorts as the word does
/// (big-endian, zero-padded: no word holds a zero byte).
pub fn key(word: &[u8]) -> u64 {
    let mut out = 0;
    for i in 0..8 {
        out <<= 8;
        if let Some(b) = word.get(i) {
            out |= u64::from(*b);
        }
    }
    out
}

/// The text layer's word tables, read from the data files once.
pub fn text_words() -> &'static TextWords {
    static WORDS: OnceLock<TextWords> = OnceLock::new();
    WORDS.get_or_init(|| {
        // Part of the build; a malformed file is caught by the test below
        // and reads as no words rather than a panic.
        let en: File = toml::from_str(include_str!("words-en.toml")).unwrap_or_default();
        let ko: File = toml::from_str(include_str!("words-ko.toml")).unwrap_or_default();
        let mut stop_words = en.stop_words;
        stop_words.sort_unstable();
        stop_words.dedup();
        let mut endings = ko.endings;
        // Longest first, so 에서는 is stripped before 는.
        endings.sort_by_key(|e| std::cmp::Reverse(e.chars().count()));
        TextWords {
            stop_keys: stop_words.iter().map(|w| key(w.as_bytes())).collect(),
            longest_stop_word: stop_words.iter().map(String::len).max().unwrap_or(0),
            stop_words,
            derivational_tails: en.derivational_tails,
            endings,
            compound_tails: ko.compound_tails,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_word_files_parse_and_fill_every_table() {
        for source in [include_str!("words-en.toml"), include_str!("words-ko.toml")] {
            let parsed: Result<File, _> = toml::from_str(source);
            assert!(parsed.is_ok(), "{parsed:?}");
        }
        let w = text_words();
        assert!(w.stop_words.len() > 40 && w.longest_stop_word <= 8);
        assert!(!w.derivational_tails.is_empty() && !w.compound_tails.is_empty());
        assert_eq!(w.endings.first().map(|e| e.chars().count()), Some(3));
    }
}
