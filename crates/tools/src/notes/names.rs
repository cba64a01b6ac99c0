//! Company names a text gives by a company marker: "(주)온담푸드",
//! "다온푸드서비스(주)", "Meterix Systems LLC". Read by the offline roles (a
//! note by another party) and by `compare_results` (a note's subject).

use crate::text::stem::is_hangul;

/// One-syllable particles a Korean name may carry.
const KO_PARTICLES: &[char] = &[
    '은', '는', '이', '가', '을', '를', '의', '와', '과', '도', '에',
];

/// Korean company markers, before or after the name ("(주)온담푸드",
/// "다온푸드서비스(주)").
const KO_COMPANY_MARKS: &[&str] = &["(주)", "㈜", "주식회사 ", "(유)", "(사)"];

/// Latin company suffixes after the name ("Meterix Systems LLC").
const COMPANY_SUFFIXES: &[&str] = &["LLC", "Inc", "Ltd", "Corp", "GmbH", "plc", "PLC", "LLP"];

/// The companies a text names by a company marker: the Hangul word a
/// Korean marker is attached to, the capitalised words before a Latin
/// suffix ("Meterix Systems LLC" → Meterix, Systems).
pub fn company_names(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for mark in KO_COMPANY_MARKS {
        for (at, _) in text.match_indices(mark) {
            let after: String = text[at + mark.len()..]
                .chars()
                .take_while(|&c| is_hangul(c))
                .collect();
            let before: String = {
                let mut v: Vec<char> = text[..at]
                    .chars()
                    .rev()
                    .take_while(|&c| is_hangul(c))
                    .collect();
                v.reverse();
                v.into_iter().collect()
            };
            // "(주)온담푸드는": the name without its particle.
            let after = match after.chars().last() {
                Some(c) if after.chars().count() >= 3 && KO_PARTICLES.contains(&c) => {
                    after[..after.len() - c.len_utf8()].to_owned()
                }
                _ => after,
            };
            for name in [after, before] {
                if name.chars().count() >= 2 {
                    out.push(name);
                }
            }
        }
    }
    let words: Vec<&str> = text
        .split(|c: char| c.is_whitespace() || matches!(c, ',' | '.' | '(' | ')'))
        .filter(|w| !w.is_empty())
        .collect();
    for (i, w) in words.iter().enumerate() {
        if COMPANY_SUFFIXES.contains(w) {
            for name in words[..i].iter().rev().take(2) {
                if name.chars().next().is_some_and(|c| c.is_ascii_uppercase()) {
                    out.push((*name).to_owned());
                }
            }
        }
    }
    out
}
