//! Tokenisation shared by indexing and querying, so both sides agree on what
//! a "term" is.
//!
//! English (and any other script written with spaces) is lowercased, split on
//! every non-alphanumeric character and filtered through a small stop-word
//! list. Korean, Chinese and Japanese have no reliable word boundaries at this
//! level — Korean attaches particles to nouns (`비용이`, `비용을`) — so their
//! runs become overlapping character bigrams (`비용이` → `비용`, `용이`): a
//! query for `비용` then matches every inflected form without a morphological
//! analyser. A run of a single CJK character becomes that character.
//!
//! There is no stemming beyond folding regular English plurals (`costs` →
//! `cost`, `queries` → `query`), so that a query and a note that use the two
//! forms still meet; the rule stays small enough to predict by hand.

use std::borrow::Cow;

use crate::text::words::{key, text_words};

/// Whether `word` (already lowercased) is on the English stop-word list
/// (`text/words-en.toml`).
pub fn is_stop_word(word: &str) -> bool {
    // Asked of every word of a corpus: most are longer than any stop word,
    // and the rest are compared as numbers, not strings.
    let w = text_words();
    word.len() <= w.longest_stop_word && w.stop_keys.binary_search(&key(word.as_bytes())).is_ok()
}

/// Whether `c` belongs to a script that is tokenised into character bigrams:
/// Hangul (syllables and jamo), CJK ideographs, Hiragana and Katakana.
pub fn is_cjk(c: char) -> bool {
    matches!(
        c,
        '\u{1100}'..='\u{11FF}'     // Hangul Jamo
        | '\u{3040}'..='\u{309F}'   // Hiragana
        | '\u{30A0}'..='\u{30FF}'   // Katakana
        | '\u{3130}'..='\u{318F}'   // Hangul Compatibility Jamo
        | '\u{3400}'..='\u{4DBF}'   // CJK Extension A
        | '\u{4E00}'..='\u{9FFF}'   // CJK Unified Ideographs
        | '\u{A960}'..='\u{A97F}'   // Hangul Jamo Extended-A
        | '\u{AC00}'..='\u{D7A3}'   // Hangul Syllables
        | '\u{D7B0}'..='\u{D7FF}'   // Hangul Jamo Extended-B
        | '\u{F900}'..='\u{FAFF}'   // CJK Compatibility Ideographs
        | '\u{20000}'..='\u{3FFFF}' // CJK Extensions B and later
    )
}

/// Splits `text` into search terms, in order of appearance (duplicates kept,
/// because BM25 counts them).
///
/// ```
/// use stepwise_tools::notes::tokenize;
/// assert_eq!(tokenize("The cost of Fine-tuning"), ["cost", "fine", "tuning"]);
/// assert_eq!(tokenize("파인튜닝 비용은"), ["파인", "인튜", "튜닝", "비용", "용은"]);
/// assert_eq!(tokenize("RAG는 싸다"), ["rag", "는", "싸다"]);
/// ```
pub fn tokenize(text: &str) -> Vec<String> {
    let mut terms = Vec::new();
    for_each_term(&text.to_lowercase(), |term| terms.push(term.to_owned()));
    terms
}

/// Calls `f` with each search term of `lowered` (a text already
/// lowercased), in order: [`tokenize`] without a `String` per term, for
/// indexing a whole corpus.
pub(crate) fn for_each_term(lowered: &str, mut f: impl FnMut(&str)) {
    for_each_piece(lowered, |piece, cjk| piece_terms(piece, cjk, &mut f));
}

/// Calls `f` with each same-script piece of `lowered` and whether it is
/// CJK: the text split at every non-alphanumeric character, then where it
/// switches between CJK and other scripts (`rag는` → `rag`, `는`). Search
/// terms ([`tokenize`]) and relevance words ([`words`](super::stem::words))
/// are both made of these pieces.
pub(crate) fn for_each_piece<'t>(lowered: &'t str, mut f: impl FnMut(&'t str, bool)) {
    for run in lowered.split(|c: char| !c.is_alphanumeric()) {
        let mut start = 0;
        let mut current: Option<bool> = None;
        for (i, c) in run.char_indices() {
            let cjk = is_cjk(c);
            if current.is_some_and(|was| was != cjk) {
                f(&run[start..i], current == Some(true));
                start = i;
            }
            current = Some(cjk);
        }
        if let Some(cjk) = current {
            f(&run[start..], cjk);
        }
    }
}

/// The terms of a same-script piece: CJK as bigrams (or the lone
/// character), other scripts as one word unless it is a stop word.
pub(crate) fn piece_terms(piece: &str, cjk: bool, f: &mut impl FnMut(&str)) {
    if piece.is_empty() {
        return;
    }
    if !cjk {
        if !is_stop_word(piece) {
            f(&fold_plural(piece));
        }
        return;
    }
    // Character boundaries: a bigram is the slice from one to the one after next.
    let bounds: Vec<usize> = piece
        .char_indices()
        .map(|(i, _)| i)
        .chain([piece.len()])
        .collect();
    if bounds.len() == 2 {
        f(piece);
        return;
    }
    for w in bounds.windows(3) {
        f(&piece[w[0]..w[2]]);
    }
}

/// `costs` → `cost`, `queries` → `query`; leaves `process`, `status`,
/// `analysis`, short words and anything not plain ASCII letters alone.
fn fold_plural(word: &str) -> Cow<'_, str> {
    let plain = word.len() > 3 && word.bytes().all(|b| b.is_ascii_lowercase());
    if !plain
        || !word.ends_with('s')
        || ["ss", "us", "is", "as", "os"]
            .iter()
            .any(|e| word.ends_with(e))
    {
        return Cow::Borrowed(word);
    }
    match word.strip_suffix("ies") {
        Some(stem) if word.len() > 4 => Cow::Owned(format!("{stem}y")),
        _ => Cow::Borrowed(&word[..word.len() - 1]),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn regular_plurals_fold_to_the_singular() {
        assert_eq!(
            tokenize("costs notes queries tickets"),
            ["cost", "note", "query", "ticket"]
        );
        assert_eq!(
            tokenize("process status analysis bias ms gas"),
            ["process", "status", "analysis", "bias", "ms", "gas"]
        );
    }

    use super::*;

    #[test]
    fn stop_words_are_sorted_and_unique() {
        let w = text_words();
        assert!(w.stop_words.windows(2).all(|p| p[0] < p[1]));
        // `is_stop_word` compares keys: they must sort as the words do.
        assert!(w.stop_keys.windows(2).all(|k| k[0] < k[1]));
        assert!(w.stop_words.iter().all(|s| is_stop_word(s)));
        for word in ["", "ab", "thee", "with7", "costs", "t", "z", "the", "which"] {
            assert_eq!(
                is_stop_word(word),
                w.stop_words.iter().any(|s| s == word),
                "{word}"
            );
        }
    }

    #[test]
    fn english_is_lowercased_split_and_filtered() {
        assert_eq!(
            tokenize("What is the COST of fine-tuning a 7B model? ($1,200)"),
            ["cost", "fine", "tuning", "7b", "model", "1", "200"]
        );
    }

    #[test]
    fn empty_and_punctuation_only_text_has_no_terms() {
        assert!(tokenize("").is_empty());
        assert!(tokenize("  --- ?! ").is_empty());
        assert!(tokenize("the of and").is_empty());
    }

    #[test]
    fn korean_runs_become_bigrams() {
        assert_eq!(tokenize("고객지원"), ["고객", "객지", "지원"]);
        assert_eq!(tokenize("비용이 든다"), ["비용", "용이", "든다"]);
    }

    #[test]
    fn a_single_korean_character_is_a_unigram() {
        assert_eq!(tokenize("돈 과 시간"), ["돈", "과", "시간"]);
    }

    #[test]
    fn mixed_scripts_split_at_the_boundary() {
        assert_eq!(
            tokenize("RAG는 검색증강생성(retrieval)이다"),
            [
                "rag",
                "는",
                "검색",
                "색증",
                "증강",
                "강생",
                "생성",
                "retrieval",
                "이다"
            ]
        );
        assert_eq!(tokenize("gpt4o모델"), ["gpt4o", "모델"]);
    }

    #[test]
    fn chinese_and_japanese_are_bigrams_too() {
        assert_eq!(tokenize("检索增强"), ["检索", "索增", "增强"]);
        assert_eq!(tokenize("カスタマー"), ["カス", "スタ", "タマ", "マー"]);
    }

    #[test]
    fn other_letters_stay_whole_words() {
        assert_eq!(tokenize("Café Übersicht"), ["café", "übersicht"]);
    }
}
