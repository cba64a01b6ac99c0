//! Words and their variants, for deciding what a sentence is *about*.
//!
//! Search ([`tokenize`](mod@super::tokenize)) splits Korean into character
//! bigrams so that a query meets every inflected form; that is right for
//! ranking and wrong for relevance, where "트레이닝" must not match "트레일"
//! and "training" must not match "trail". Relevance works on whole words:
//!
//! - English (and other Latin-script) words are reduced to their Snowball
//!   stem (`rust-stemmers`): `trainings`, `trained`, `training` → `train`.
//!   Two words are variants when their stems are equal, when one stem
//!   extends the other by a derivational ending only (`compli` +
//!   `anc` = `complianc`: comply/compliance), or by the Latin -ain/-en-
//!   alternation (`maintain`/`mainten`ance). `trail` is not `train`, and
//!   `throughput` is not `through` (`put` is a word, not an ending).
//! - Hangul words lose the particles and endings attached to them
//!   (`생산성이` → `생산성`, `보안을` → `보안`, `도입했다` → `도입`), keeping at
//!   least two syllables; a Korean term then matches a compound word whose
//!   head it is (`비용` in `운영비용은`) or that it starts with a known tail
//!   (`보안팀`), not one it merely starts (`안전재고` is stock, not safety).
//!
//! The rules are small enough to predict by hand; the table in the tests is
//! the specification.

use std::collections::HashSet;
use std::sync::OnceLock;

use rust_stemmers::{Algorithm, Stemmer};

use super::tokenize::{for_each_piece, is_stop_word};
use crate::text::words::text_words;

/// Snowball stems of -ity nouns that another, unrelated word shares
/// (integr-ate, author, univers-e, grav-e).
const UNRELATED_ITY: &[&str] = &["integr", "author", "univers", "grav"];

/// Hangul syllables a stripped word keeps at least.
const MIN_HANGUL_SYLLABLES: usize = 2;

fn english() -> &'static Stemmer {
    static STEMMER: OnceLock<Stemmer> = OnceLock::new();
    STEMMER.get_or_init(|| Stemmer::create(Algorithm::English))
}

/// Whether a character is a Hangul syllable.
pub fn is_hangul(c: char) -> bool {
    matches!(c, '\u{AC00}'..='\u{D7A3}')
}

/// A Hangul word without its trailing particles and endings.
fn strip_hangul(word: &str) -> String {
    strip_hangul_to(word, MIN_HANGUL_SYLLABLES)
}

/// A Korean counter glued to a number without its particles and endings,
/// down to one syllable (원으로 → 원, 건에서 → 건, 개월이며 → 개월).
pub fn counter(word: &str) -> String {
    strip_hangul_to(word, 1)
}

/// A Hangul word without the particles and endings after its first `min`
/// syllables.
fn strip_hangul_to(word: &str, min: usize) -> String {
    let mut word = word.to_owned();
    // Endings stack ("보안팀에서는" = 보안팀 + 에서 + 는): strip a few times.
    for _ in 0..3 {
        let Some(ending) = text_words().endings.iter().find(|e| {
            word.strip_suffix(e.as_str())
                .is_some_and(|rest| rest.chars().count() >= min)
        }) else {
            break;
        };
        word.truncate(word.len() - ending.len());
    }
    word
}

/// One word's stem: Snowball for Latin script, particles stripped for
/// Hangul, other scripts lowercased as they are. `word` is one token.
pub fn stem(word: &str) -> String {
    let lower = word.to_lowercase();
    if lower.chars().any(is_hangul) {
        strip_hangul(&lower)
    } else if lower.chars().all(|c| c.is_ascii_alphanumeric()) {
        let stemmed = english().stem(&lower);
        // Nouns in -ity whose Snowball stem is a different word's:
        // integrity is not integrate, authority not author.
        if UNRELATED_ITY.contains(&stemmed.as_ref()) && lower.ends_with("ity") {
            return format!("{stemmed}ity");
        }
        stemmed.into_owned()
    } else {
        lower
    }
}

/// The content words of `text` as stems, in order, duplicates dropped:
/// split at every non-alphanumeric character and where the script switches
/// between Hangul/CJK and others (`RAG는` → `rag`, `는`); English stop words
/// and lone particles dropped.
pub fn words(text: &str) -> Vec<String> {
    let lowered = text.to_lowercase();
    let mut out: Vec<String> = Vec::new();
    if lowered.len() <= SHORT_TEXT {
        for_each_piece(&lowered, |piece, _| {
            if let Some(s) = piece_word(piece).filter(|s| !out.contains(s)) {
                out.push(s);
            }
        });
        return out;
    }
    // A long text repeats its words: each distinct piece is stemmed once,
    // and each distinct stem kept once, without a scan of those kept.
    let mut pieces: HashSet<&str> = HashSet::new();
    let mut kept: HashSet<String> = HashSet::new();
    for_each_piece(&lowered, |piece, _| {
        if !pieces.insert(piece) {
            return;
        }
        if let Some(s) = piece_word(piece).filter(|s| !kept.contains(s)) {
            kept.insert(s.clone());
            out.push(s);
        }
    });
    out
}

/// Texts up to this many bytes are deduplicated by a scan of the words
/// kept so far, which is faster than hashing for a sentence.
const SHORT_TEXT: usize = 1024;

/// The word a same-script piece of a lowercased text stands for in
/// [`words`]: its stem, or `None` for a stop word, a lone particle or
/// nothing.
pub(crate) fn piece_word(piece: &str) -> Option<String> {
    if piece.is_empty() || is_stop_word(piece) {
        return None;
    }
    let s = stem(piece);
    let single_hangul = s.chars().count() == 1 && s.chars().all(is_hangul);
    (!s.is_empty() && !single_hangul).then_some(s)
}

/// Whether two stems (from [`stem`] or [`words`]) are variants of one word.
pub fn same_stem(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    if a.chars().any(is_hangul) || b.chars().any(is_hangul) {
        return false;
    }
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    if short.len() < 3 {
        return false;
    }
    if let Some(tail) = long.strip_prefix(short) {
        return text_words().derivational_tails.iter().any(|t| t == tail);
    }
    // Siblings: complian|c|e / complian|t, both one ending from `compli`.
    if root(a) == root(b) && root(a).len() < a.len().max(b.len()) {
        return true;
    }
    // maintain / mainten(ance), sustain / susten(ance).
    let alternation = |x: &str, y: &str| {
        x.strip_suffix("ain")
            .zip(y.strip_suffix("en"))
            .is_some_and(|(p, q)| p == q && p.len() >= 3)
    };
    alternation(a, b) || alternation(b, a)
}

/// A stem without its longest derivational ending, if at least
/// [`MIN_ROOT`] letters remain.
fn root(stem: &str) -> &str {
    text_words()
        .derivational_tails
        .iter()
        .filter_map(|t| stem.strip_suffix(t.as_str()))
        .filter(|r| r.len() >= MIN_ROOT)
        .min_by_key(|r| r.len())
        .unwrap_or(stem)
}

/// Letters a [`root`] keeps at least.
const MIN_ROOT: usize = 5;

/// Whether a Hangul word mentions a Korean term: it is the term, ends with
/// it (the compound's head), or is the term followed by one of
/// the compound tails of `text/words-ko.toml`.
fn hangul_mentions(word: &str, term: &str) -> bool {
    word.ends_with(term)
        || word.strip_prefix(term).is_some_and(|rest| {
            rest.is_empty() || text_words().compound_tails.iter().any(|t| t == rest)
        })
}

/// Whether `term` (a stem) is mentioned by one of `words` (stems): a
/// variant of it, or for a Korean term, a word containing it.
pub fn mentions(words: &[String], term: &str) -> bool {
    if term.chars().any(is_hangul) {
        return words.iter().any(|w| hangul_mentions(w, term));
    }
    words.iter().any(|w| same_stem(w, term))
}

/// Whether one word (a stem) mentions `term`: [`mentions`] for one word,
/// so `mentions(words, t)` is `words.iter().any(|w| mentions_word(w, t))`.
pub fn mentions_word(word: &str, term: &str) -> bool {
    if term.chars().any(is_hangul) {
        hangul_mentions(word, term)
    } else {
        same_stem(word, term)
    }
}

/// What every word [`mentions_word`] finds for `term` starts with, if
/// anything narrower than every word: its first three bytes (cut back to a
/// character boundary), for a term without Hangul. Variants share at least
/// that much: the shorter of two stems starts the longer (at least three
/// bytes long), or both start with a root of five, or with the three-letter
/// stem of an -ain/-en pair. A Korean term is found at the end of a
/// compound too, so it has no such prefix.
pub fn variant_prefix(term: &str) -> Option<&str> {
    if term.chars().any(is_hangul) {
        return None;
    }
    let cut = (0..=term.len().min(3))
        .rev()
        .find(|&i| term.is_char_boundary(i))
        .unwrap_or(0);
    Some(&term[..cut])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn variants(a: &str, b: &str) -> bool {
        same_stem(&stem(a), &stem(b))
    }

    #[test]
    fn variants_keep_the_stem_of_the_original_term() {
        for (a, b, same) in [
            ("training", "trained", true),
            ("training", "trainer", true),
            ("training", "trail", false),
            ("throughput", "through", false),
            ("integrity", "integrate", false),
            ("integrity", "integration", false),
            ("authority", "author", false),
            ("university", "universe", false),
            ("gravity", "grave", false),
            ("security", "secure", true),
            ("throughput", "throughputs", true),
            ("maintenance", "maintain", true),
            ("maintenance", "maintained", true),
            ("compliance", "comply", true),
            ("compliance", "compliant", true),
            ("cost", "costs", true),
            ("cost", "costly", true),
            ("latency", "latencies", true),
            ("payment", "pay", true),
            ("satisfaction", "satisfied", false),
            ("contain", "content", false),
            ("operation", "operating", true),
            ("licence", "license", false),
            ("license", "licensing", true),
        ] {
            assert_eq!(variants(a, b), same, "{a} / {b}: {} / {}", stem(a), stem(b));
        }
    }

    #[test]
    fn hangul_words_lose_their_particles() {
        assert_eq!(stem("생산성이"), "생산성");
        assert_eq!(stem("생산성"), "생산성");
        assert_eq!(stem("보안을"), "보안");
        assert_eq!(stem("비용은"), "비용");
        assert_eq!(stem("보안팀에서는"), "보안팀");
        assert_eq!(stem("도입했다"), "도입");
        assert_eq!(stem("만족도를"), "만족도");
        // Two syllables stay: 나이 is not 나 + 이.
        assert_eq!(stem("나이"), "나이");
        assert!(mentions(&words("운영비용은 월 300만 원이다"), "비용"));
        assert!(mentions(&words("생산성이 12% 올랐다"), &stem("생산성")));
        assert!(!mentions(&words("보안 점검을 마쳤다"), "비용"));
        assert!(mentions(&words("보안팀은 점검을 마쳤다"), "보안"));
        assert!(!mentions(&words("안전재고를 7일분으로 늘린다"), "안전"));
        assert!(!mentions(&words("생산직 직원의 불만"), &stem("생산성")));
    }

    #[test]
    fn words_are_stems_without_stop_words() {
        assert_eq!(words("The trained staff"), ["train", "staff"]);
        assert_eq!(words("RAG는 싸다"), ["rag", "싸다"]);
        assert_eq!(words("audit trail"), ["audit", "trail"]);
        assert!(!mentions(
            &words("The audit trail is kept."),
            &stem("training")
        ));
        assert!(mentions(
            &words("Staff were trained in May."),
            &stem("training")
        ));
    }
}
