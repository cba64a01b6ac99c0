//! Tokens: a sentence split into words, numbers, symbols and clause breaks.

use crate::text::stem::is_hangul;

use super::words::{fw, listed};

#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Kind {
    Word,
    Number(f64),
    Symbol(char),
    /// Ends a clause: punctuation, or a word of the clause words (figures-*.toml).
    Break(char),
}

/// One token of a sentence.
#[derive(Debug, Clone)]
pub(super) struct Token {
    /// As written.
    pub(super) text: String,
    pub(super) lower: String,
    pub(super) kind: Kind,
    /// Written right after the previous token, with no space.
    pub(super) glued: bool,
    /// The first word of the sentence or after a colon, bracket or quote:
    /// its capital letter says nothing about it being a name.
    pub(super) initial: bool,
}

impl Token {
    pub(super) fn is_word(&self, word: &str) -> bool {
        self.kind == Kind::Word && self.lower == word
    }

    pub(super) fn number(&self) -> Option<f64> {
        match self.kind {
            Kind::Number(v) => Some(v),
            _ => None,
        }
    }
}

const BREAK_CHARS: &[char] = &[
    ',', ';', ':', '(', ')', '[', ']', '{', '}', '—', '!', '?', '"', '“', '”', '.', '…', '·', '「',
    '」', '、', '。',
];

/// Breaks after which a capitalised word may just start a sentence.
const OPENING_BREAKS: &[char] = &[':', '(', '[', '"', '“', '.', '!', '?', '—', '「', '-'];

/// Splits a sentence into words, numbers, symbols and clause breaks. Latin
/// letters and digits stay together ("p95", "Q2", "A100"); a number is
/// digits with decimal points and thousands commas ("18,600", "1.5"); a
/// dash with a space beside it is a break, a glued one joins ("fine-tuning",
/// "30-day").
pub(super) fn lex(sentence: &str) -> Vec<Token> {
    let chars: Vec<char> = sentence.chars().collect();
    let mut tokens: Vec<Token> = Vec::new();
    let mut i = 0;
    let mut glued = false;
    while let Some(&c) = chars.get(i) {
        if c.is_whitespace() {
            glued = false;
            i += 1;
            continue;
        }
        let start = i;
        let kind = if c.is_ascii_digit() {
            i = number_end(&chars, i);
            let digits: String = chars[start..i].iter().filter(|c| **c != ',').collect();
            digits.parse().map_or(Kind::Word, Kind::Number)
        } else if c.is_alphabetic() {
            let hangul = is_hangul(c);
            while chars.get(i).is_some_and(|&d| {
                (d.is_alphabetic() && is_hangul(d) == hangul) || (!hangul && d.is_ascii_digit())
            }) {
                i += 1;
            }
            Kind::Word
        } else if matches!(c, '\'' | '’') {
            // "RabbitMQ's": the possessive says nothing.
            i += 1;
            if chars.get(i) == Some(&'s') && !chars.get(i + 1).is_some_and(|d| d.is_alphabetic()) {
                i += 1;
            }
            continue;
        } else {
            i += 1;
            let spaced = |j: Option<&char>| j.is_none_or(|d| d.is_whitespace());
            let dash = matches!(c, '-' | '–');
            if BREAK_CHARS.contains(&c)
                || (dash
                    && (spaced(start.checked_sub(1).and_then(|j| chars.get(j)))
                        || spaced(chars.get(i))))
            {
                Kind::Break(c)
            } else {
                Kind::Symbol(c)
            }
        };
        let text: String = chars[start..i].iter().collect();
        let lower = text.to_lowercase();
        let kind = if kind == Kind::Word && listed(fw().clause_words, &lower) {
            Kind::Break(',')
        } else {
            kind
        };
        let initial = kind == Kind::Word
            && tokens
                .iter()
                .rev()
                .find(|t| !matches!(t.kind, Kind::Symbol(_)))
                .is_none_or(|t| matches!(t.kind, Kind::Break(b) if OPENING_BREAKS.contains(&b)));
        tokens.push(Token {
            text,
            lower,
            kind,
            glued,
            initial,
        });
        glued = true;
    }
    tokens
}

/// Where the number starting at `i` ends: digits, a decimal point followed
/// by a digit, or a comma followed by exactly three digits.
fn number_end(chars: &[char], mut i: usize) -> usize {
    let digit = |j: usize| chars.get(j).is_some_and(char::is_ascii_digit);
    while let Some(&c) = chars.get(i) {
        if c.is_ascii_digit() || (c == '.' && digit(i + 1)) {
            i += 1;
        } else if c == ',' && digit(i + 1) && digit(i + 2) && digit(i + 3) && !digit(i + 4) {
            i += 4;
        } else {
            break;
        }
    }
    i
}

/// The clause of each token: breaks separate clauses.
pub(super) fn clauses(tokens: &[Token]) -> Vec<usize> {
    let mut clause = 0;
    tokens
        .iter()
        .map(|t| {
            if matches!(t.kind, Kind::Break(_)) {
                clause += 1;
            }
            clause
        })
        .collect()
}
