//! The figure reader's word lists and lookups. Lowercase; Korean entries
//! are stems (particles stripped).

use crate::text::figure_words::{FigureWords, figure_words};
use crate::text::stem::is_hangul;

/// The figure reader's words (`text/figures-*.toml`).
pub(super) fn fw() -> &'static FigureWords {
    figure_words()
}

/// Settings a figure may be measured in, by class; like periods, they may be
/// named on one side only, never differently on both.
pub(super) const SETTINGS: &[&str] = &[
    "pilot: pilot pilots trial 파일럿 시범",
    "production: production prod",
    "staging: staging",
];

/// Scale words after a number: "$1.2 million", "10k".
pub(super) const SCALES: &[(&str, f64)] = &[
    ("thousand", 1e3),
    ("k", 1e3),
    ("million", 1e6),
    ("mn", 1e6),
    ("m", 1e6),
    ("billion", 1e9),
    ("bn", 1e9),
];

/// Korean scales glued to a number: "320만", "1억".
pub(super) const KOREAN_SCALES: &[(char, f64)] =
    &[('천', 1e3), ('만', 1e4), ('억', 1e8), ('조', 1e12)];

/// The words of a word list (the lists are written as one string each, to
/// read like the lists they are).
pub(super) fn list(words: &str) -> impl Iterator<Item = &str> {
    words.split_whitespace()
}

/// Whether a word list holds `word`.
pub(super) fn listed(words: &str, word: &str) -> bool {
    list(words).any(|w| w == word)
}

/// The value paired with `word` in a table of pairs.
pub(super) fn lookup<T: Copy>(table: &[(&str, T)], word: &str) -> Option<T> {
    table.iter().find(|(w, _)| *w == word).map(|(_, v)| *v)
}

/// Most words a per-thread lookup memo holds before it starts over.
pub(super) const MEMO_CAP: usize = 50_000;

/// The class of `word` in a table of `"class: words…"` lines.
pub(super) fn class_of(groups: &[&'static str], word: &str) -> Option<&'static str> {
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
pub(super) fn class_by_prefix(groups: &[&'static str], word: &str) -> Option<&'static str> {
    class_where(groups, |root| word.starts_with(root))
}

fn class_where(groups: &[&'static str], hit: impl Fn(&str) -> bool) -> Option<&'static str> {
    groups.iter().find_map(|line| {
        let (class, words) = line.split_once(':')?;
        list(words).any(&hit).then_some(class)
    })
}

/// The value of an English number word: "three" → 3.
pub(super) fn number_word(word: &str) -> Option<u32> {
    let n = list(fw().number_words).position(|w| w == word)?;
    u32::try_from(n).ok()
}

/// The value of an English ordinal word: "third" → 3.
pub(super) fn ordinal_word(word: &str) -> Option<u32> {
    let n = list(fw().ordinal_words).position(|w| w == word)?;
    u32::try_from(n + 1).ok()
}

pub(super) fn hangul_word(word: &str) -> bool {
    word.chars().any(is_hangul)
}
