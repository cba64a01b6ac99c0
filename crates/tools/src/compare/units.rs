//! Figures: a number read with its unit, scale and rate, before its
//! context is looked at.

use std::collections::{BTreeMap, BTreeSet};

use crate::text::stem::stem;
use crate::text::tokenize::is_stop_word;

use super::markers::{Marker, word_marker};
use super::tokens::{Kind, Token};
use super::words::{
    KOREAN_SCALES, SCALES, class_of, fw, hangul_word, list, listed, lookup, number_word,
};

/// Tokens before a figure searched for a bound ("under the 4") or an
/// approximation ("about").
const NEAR_BEFORE: usize = 3;
/// Tokens searched before or after a figure for its rate ("cost per month
/// was $4,000", "20 hours of data work per month").
const RATE_REACH: usize = 5;

/// How a unit is compared (`key`) and shown (`label`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Unit {
    pub(super) key: String,
    pub(super) label: String,
    /// A counted noun ("450 people", "100,000 messages"): the noun is also
    /// part of what the figure measures.
    pub(super) noun: bool,
}

impl Unit {
    pub(super) fn new(key: &str, label: &str) -> Self {
        Self {
            key: key.to_owned(),
            label: label.to_owned(),
            noun: false,
        }
    }

    pub(super) fn per(self, rate: Option<(String, String)>) -> Self {
        match rate {
            Some((key, label)) => Self {
                key: format!("{}/{key}", self.key),
                label: format!("{} per {label}", self.label),
                noun: self.noun,
            },
            None => self,
        }
    }
}

/// A number read with its unit, before its context is looked at.
#[derive(Debug, Clone)]
pub(super) struct Reading {
    /// Position of the number.
    pub(super) at: usize,
    /// First token of the figure (its currency sign, or the number).
    pub(super) start: usize,
    /// Last token of the figure (its unit or rate).
    pub(super) end: usize,
    pub(super) value: f64,
    pub(super) unit: Unit,
    pub(super) approx: bool,
    /// A bound or a range: not a value, never compared.
    pub(super) bound: bool,
    /// Tokens the figure consumed (unit, scale, rate words).
    pub(super) used: BTreeSet<usize>,
}

/// Every figure of a lexed sentence, in order. Numbers that are periods,
/// ordinals, codes ("E-4012"), denominators of shares or have no unit are
/// not figures.
pub(super) fn readings(tokens: &[Token], marks: &BTreeMap<usize, Marker>) -> Vec<Reading> {
    let ranges = range_numbers(tokens);
    let denominators = share_denominators(tokens);
    let mut out: Vec<Reading> = Vec::new();
    for i in 0..tokens.len() {
        // A number already read as part of another figure: "1억 2,000만 원".
        let taken = out.iter().any(|r| r.used.contains(&i));
        if taken || marks.contains_key(&i) || denominators.contains(&i) || is_code(tokens, i) {
            continue;
        }
        if let Some(mut r) = read_figure(tokens, i) {
            r.bound |= ranges.contains(&i);
            out.push(r);
        }
    }
    out
}

/// A number glued to a word before it by a hyphen or symbol: a code such as
/// "E-4012" or "#12", not a figure.
fn is_code(tokens: &[Token], i: usize) -> bool {
    let Some(t) = tokens.get(i) else {
        return false;
    };
    let before = i.checked_sub(1).and_then(|j| tokens.get(j));
    let joined =
        before.is_some_and(|b| matches!(b.kind, Kind::Symbol('-' | '#' | '_' | '/' | '.')));
    let glued_word = before.is_some_and(|b| b.kind == Kind::Word && !hangul_word(&b.lower));
    t.glued && (joined || glued_word)
}

/// Numbers in a range ("5 to 10 runs", "4–6 seconds", "30~60", "between 3
/// and 5", "from 9 to 7"): a range is not one value.
fn range_numbers(tokens: &[Token]) -> BTreeSet<usize> {
    let mut out = BTreeSet::new();
    let numbers: Vec<usize> = (0..tokens.len())
        .filter(|&i| tokens.get(i).and_then(Token::number).is_some())
        .collect();
    for pair in numbers.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        if b - a > 4 {
            continue;
        }
        let between = &tokens[a + 1..b];
        let connector = between.iter().any(|t| {
            matches!(
                t.kind,
                Kind::Symbol('-' | '–' | '~' | '～') | Kind::Break('–' | '-')
            ) || t.is_word("to")
                || (t.is_word("and")
                    && a > 0
                    && tokens.get(a - 1).is_some_and(|p| p.is_word("between")))
        });
        let other = between.iter().filter(|t| t.kind == Kind::Word).count();
        if connector && other <= 2 {
            out.insert(a);
            out.insert(b);
        }
    }
    out
}

/// Denominators of shares, which are part of their numerator's figure:
/// the 24 of "15 of 24 managers", "Nineteen of the 24 agents", "24명 중 15명".
fn share_denominators(tokens: &[Token]) -> BTreeSet<usize> {
    let mut out = BTreeSet::new();
    for (i, t) in tokens.iter().enumerate() {
        if t.number().is_none() {
            continue;
        }
        if share_numerator(tokens, i).is_some() {
            out.insert(i);
        }
        // 24명 중 15명: the first number is the whole.
        let whole = tokens
            .get(i + 2)
            .is_some_and(|w| w.is_word("중") || w.is_word("가운데"))
            && tokens.get(i + 3).and_then(Token::number).is_some();
        if whole {
            out.insert(i);
        }
    }
    out
}

/// For a number preceded by "X of (the)", the value of X: "15 of 24",
/// "Nineteen of the 24".
fn share_numerator(tokens: &[Token], i: usize) -> Option<f64> {
    let mut j = i.checked_sub(1)?;
    if tokens
        .get(j)
        .is_some_and(|t| t.is_word("the") || t.is_word("all"))
    {
        j = j.checked_sub(1)?;
    }
    if !tokens.get(j)?.is_word("of") {
        return None;
    }
    let x = tokens.get(j.checked_sub(1)?)?;
    x.number().or_else(|| number_word(&x.lower).map(f64::from))
}

/// Reads the figure whose number is at `i`, if it has a unit.
fn read_figure(tokens: &[Token], i: usize) -> Option<Reading> {
    let value = tokens.get(i)?.number()?;
    let before = i.checked_sub(1).and_then(|j| tokens.get(j));
    // A day of a month ("2 March", "March 26") dates something; it
    // measures nothing ("Date: 2 March 2026" against "Date: 26 March").
    let month = |t: Option<&Token>| {
        t.is_some_and(|t| t.kind == Kind::Word && listed(fw().months, &t.lower))
    };
    if month(before) || month(tokens.get(i + 1)) {
        return None;
    }
    let currency = before.and_then(|b| match b.kind {
        Kind::Symbol(c @ ('$' | '€' | '£' | '₩')) => Some(c.to_string()),
        Kind::Word => class_of(&fw().currency_words, &b.lower)
            .filter(|_| b.text.chars().all(|c| c.is_ascii_uppercase()))
            .map(str::to_owned),
        _ => None,
    });
    let start = if currency.is_some() { i - 1 } else { i };
    let mut used = BTreeSet::new();
    let (value, unit, end) = match currency {
        Some(c) => {
            let (scale, end) = scale_after(tokens, i, &mut used);
            (value * scale, Unit::new(&c, &c), end)
        }
        None => unit_after(tokens, i, value, &mut used)?,
    };
    let (rate, end) = rate_of(tokens, start, end, &mut used);
    let (approx_after, bound_after, end) = korean_tail(tokens, end, &mut used);
    let before: Vec<&Token> = (start.saturating_sub(NEAR_BEFORE)..start)
        .filter_map(|j| tokens.get(j))
        .collect();
    let approx_before = before
        .iter()
        .any(|t| listed(fw().approx_before, &t.lower) || t.kind == Kind::Symbol('~'));
    Some(Reading {
        at: i,
        start,
        end,
        value,
        unit: unit.per(rate),
        approx: approx_after || approx_before,
        bound: bound_after || is_bound(tokens, &before, end),
        used,
    })
}

/// Whether the figure ending at `end`, after the tokens `before`, is a
/// bound rather than a value: "under 4 minutes", "at least 30%", "up to
/// 50,000", "more than 2", "< 5 ms", "30+", "30 or more".
fn is_bound(tokens: &[Token], before: &[&Token], end: usize) -> bool {
    let word_before = before.iter().any(|t| listed(fw().bound_before, &t.lower));
    let up_to = before
        .windows(2)
        .any(|w| w[0].is_word("up") && w[1].is_word("to"));
    let sign = before
        .iter()
        .any(|t| matches!(t.kind, Kind::Symbol('<' | '>' | '≤' | '≥')));
    let after = tokens.get(end + 1);
    let plus = after.is_some_and(|t| t.glued && t.kind == Kind::Symbol('+'));
    let or_more = after.is_some_and(|t| t.is_word("or") || t.is_word("and"))
        && tokens
            .get(end + 2)
            .is_some_and(|t| listed(fw().bound_after, &t.lower));
    word_before || up_to || sign || plus || or_more
}

/// A scale word after a number ("million", glued "k"), its factor and the
/// figure's last token.
fn scale_after(tokens: &[Token], i: usize, used: &mut BTreeSet<usize>) -> (f64, usize) {
    let Some(next) = tokens.get(i + 1).filter(|t| t.kind == Kind::Word) else {
        return (1.0, i);
    };
    let short = matches!(next.lower.as_str(), "k" | "m" | "mn" | "bn");
    match lookup(SCALES, &next.lower) {
        Some(f) if !short || next.glued => {
            used.insert(i + 1);
            (f, i + 1)
        }
        _ => (1.0, i),
    }
}

/// The unit after the number at `i` (with any scale applied to `value`),
/// and the figure's last token. `None` when the number has no unit.
fn unit_after(
    tokens: &[Token],
    i: usize,
    value: f64,
    used: &mut BTreeSet<usize>,
) -> Option<(f64, Unit, usize)> {
    if let Some(w) = tokens
        .get(i + 1)
        .filter(|t| t.glued && hangul_word(&t.lower))
    {
        return korean_unit(tokens, i, value, &w.lower, used);
    }
    let (scale, at) = scale_after(tokens, i, used);
    let value = value * scale;
    let next = tokens.get(at + 1)?;
    let word = |k: usize| tokens.get(at + k).map(|t| t.lower.as_str());
    let take = |used: &mut BTreeSet<usize>, n: usize| {
        used.extend(at + 1..=at + n);
        at + n
    };
    if next.kind == Kind::Symbol('%') {
        let points = matches!(word(2), Some("p" | "포인트" | "points" | "point"));
        let end = take(used, 1 + usize::from(points));
        let unit = if points { "pp" } else { "%" };
        return Some((value, Unit::new(unit, unit), end));
    }
    // "1.5-second budget", "30-day window".
    let (next, at) = match next.kind {
        Kind::Symbol('-') if next.glued => {
            used.insert(at + 1);
            (tokens.get(at + 2).filter(|t| t.glued)?, at + 1)
        }
        _ => (next, at),
    };
    if next.kind != Kind::Word {
        return None;
    }
    let w = next.lower.as_str();
    let follow = tokens.get(at + 2).map(|t| t.lower.as_str());
    let (unit, len) = match (w, follow) {
        ("percent" | "pct", _) | ("per", Some("cent")) => {
            (Unit::new("%", "%"), if w == "per" { 2 } else { 1 })
        }
        ("percentage", Some("point" | "points")) => (Unit::new("pp", "percentage points"), 2),
        ("pp", _) => (Unit::new("pp", "percentage points"), 1),
        ("out", Some("of")) => {
            let of = tokens.get(at + 3)?.number()?;
            (Unit::new(&format!("/{of}"), &format!("out of {of}")), 3)
        }
        ("times", _) | ("x", _) => (Unit::new("times", "times"), 1),
        ("of", _) => return share_after(tokens, at + 1, value, used),
        _ => {
            let unit = class_of(&fw().time_units, w).or_else(|| class_of(&fw().measures, w));
            // A one-letter unit glued ("1.2s") or alone before a break ("1.2 s.").
            let alone = tokens
                .get(at + 2)
                .is_none_or(|t| matches!(t.kind, Kind::Break(_)));
            if let Some(key) = unit.filter(|_| next.glued || alone || w.len() > 1) {
                (Unit::new(key, w), 1)
            } else if let Some(c) = class_of(&fw().currency_words, w) {
                (Unit::new(c, c), 1)
            } else if matches!(w, "st" | "nd" | "rd" | "th") || next.glued {
                return None;
            } else {
                return counted_noun(tokens, at + 1, value, used);
            }
        }
    };
    Some((value, unit, take(used, len)))
}

/// A share after its numerator: "15 of 24 managers" → 0.625 "share of
/// manag", a different unit from a count of managers.
fn share_after(
    tokens: &[Token],
    of: usize,
    value: f64,
    used: &mut BTreeSet<usize>,
) -> Option<(f64, Unit, usize)> {
    let the = tokens
        .get(of + 1)
        .is_some_and(|t| t.is_word("the") || t.is_word("all"));
    let whole_at = of + 1 + usize::from(the);
    let whole = tokens.get(whole_at)?.number().filter(|w| *w != 0.0)?;
    let (whole, unit, end) = unit_after(tokens, whole_at, whole, used)?;
    used.extend(of..=whole_at);
    let unit = Unit::new(
        &format!("share of {}", unit.key),
        &format!("share of {}", unit.label),
    );
    Some((value / whole, unit, end))
}

/// The noun a count counts: the last of up to three content words after the
/// number, stopping before a verb-like word ("450 people attended" →
/// "people"; "400 real tickets" → "tickets").
fn counted_noun(
    tokens: &[Token],
    from: usize,
    value: f64,
    used: &mut BTreeSet<usize>,
) -> Option<(f64, Unit, usize)> {
    let mut last = None;
    for j in from..from + 3 {
        let Some(t) = tokens.get(j).filter(|t| t.kind == Kind::Word) else {
            break;
        };
        let w = t.lower.as_str();
        let verb_like = j > from && (w.ends_with("ed") || w.ends_with("ing"));
        let letter = w.chars().count() < 2;
        if is_stop_word(w)
            || hangul_word(w)
            || verb_like
            || letter
            || word_marker(t).is_some()
            || w == "per"
        {
            break;
        }
        if j > from && !t.glued && tokens.get(j - 1).is_some_and(|p| p.kind != Kind::Word) {
            break;
        }
        last = Some(j);
    }
    let end = last?;
    used.extend(from..=end);
    let noun = tokens.get(end)?;
    let unit = Unit {
        noun: true,
        ..Unit::new(&stem(&noun.lower), &noun.lower)
    };
    Some((value, unit, end))
}

/// A Korean unit glued to the number at `i` ("35%" is handled elsewhere):
/// "1.4초", "320만 원", "12만원", "6,000건", "24명 중 15명" (a share).
fn korean_unit(
    tokens: &[Token],
    i: usize,
    value: f64,
    word: &str,
    used: &mut BTreeSet<usize>,
) -> Option<(f64, Unit, usize)> {
    used.insert(i + 1);
    let mut rest = word;
    let mut value = value;
    let mut end = i + 1;
    if let Some((c, f)) = KOREAN_SCALES.iter().find(|(c, _)| rest.starts_with(*c)) {
        value *= f;
        rest = &rest[c.len_utf8()..];
        if rest.is_empty() {
            let next = tokens.get(i + 2)?;
            if let Some(more) = next.number() {
                // "1억 2,000만 원": the smaller part and the unit follow.
                used.insert(i + 2);
                let word = tokens.get(i + 3).filter(|t| t.glued)?.lower.as_str();
                let (rest_value, unit, end) = korean_unit(tokens, i + 2, more, word, used)?;
                return Some((value + rest_value, unit, end));
            }
            // "320만 원": the unit is the next word.
            rest = Some(next.lower.as_str()).filter(|w| hangul_word(w))?;
            end = i + 2;
            used.insert(end);
        }
    }
    let (prefix, key) = fw()
        .korean_units
        .iter()
        .find(|(p, _)| rest.starts_with(p))?;
    // 24명 중 15명
    let whole = (i >= 3)
        .then(|| tokens.get(i - 1))
        .flatten()
        .filter(|t| t.is_word("중") || t.is_word("가운데"))
        .and_then(|_| tokens.get(i - 3)?.number());
    Some(match whole {
        Some(w) if w != 0.0 => (
            value / w,
            Unit::new(&format!("share of {key}"), &format!("share of {prefix}")),
            end,
        ),
        _ => (value, Unit::new(key, prefix), end),
    })
}

/// The rate of a figure: "per month" / "a month" / "/month" after it, "per
/// month" just before it ("cost per month was $4,000"), or a Korean rate
/// word before it ("월 150만 원", "회당 2만 원"). Returns `(key, label)` and
/// the figure's new last token.
fn rate_of(
    tokens: &[Token],
    start: usize,
    end: usize,
    used: &mut BTreeSet<usize>,
) -> (Option<(String, String)>, usize) {
    // After: "$1,100 per month", "30,000 conversations a month", "$70/month".
    for j in end + 1..=end + RATE_REACH {
        let Some(t) = tokens.get(j) else { break };
        if matches!(
            t.kind,
            Kind::Number(_) | Kind::Break(_) | Kind::Symbol('$' | '€' | '£' | '₩')
        ) {
            break;
        }
        let per = t.is_word("per") || (t.kind == Kind::Symbol('/') && j == end + 1);
        let article = j == end + 1 && matches!(t.lower.as_str(), "a" | "an" | "each" | "every");
        if (per || article)
            && let Some((rate, last)) = rate_words(tokens, j + 1, article)
        {
            used.extend(j..=last);
            return (Some(rate), last.max(end));
        }
    }
    // Before: "cost per month was $4,000".
    for j in (start.saturating_sub(RATE_REACH)..start).rev() {
        let Some(t) = tokens.get(j) else { continue };
        if matches!(t.kind, Kind::Number(_) | Kind::Break(_)) {
            break;
        }
        if t.is_word("per")
            && let Some((rate, last)) = rate_words(tokens, j + 1, false).filter(|(_, l)| *l < start)
        {
            used.extend(j..=last);
            return (Some(rate), end);
        }
    }
    (korean_rate(tokens, start, used), end)
}

/// The words after "per": a time unit ("month"), or up to two content
/// words ("resolved conversation", "agent hour"). With `time_only` (after
/// "a"/"each"), only a time unit.
fn rate_words(tokens: &[Token], from: usize, time_only: bool) -> Option<((String, String), usize)> {
    let first = tokens.get(from).filter(|t| t.kind == Kind::Word)?;
    if let Some(key) = class_of(&fw().time_units, &first.lower) {
        return Some(((key.to_owned(), key.to_owned()), from));
    }
    if time_only {
        return None;
    }
    // "per resolved conversation", "per agent-hour"; not "per broker would".
    let mut last = from;
    let joined = tokens
        .get(from + 1)
        .is_some_and(|t| t.kind == Kind::Symbol('-'));
    let second = from + 1 + usize::from(joined);
    if let Some(t) = tokens.get(second).filter(|t| t.kind == Kind::Word) {
        let w = t.lower.as_str();
        let noun = !is_stop_word(w)
            && word_marker(t).is_none()
            && !w.ends_with("ed")
            && !w.ends_with("ing");
        if noun {
            last = second;
        }
    }
    let span: Vec<&Token> = tokens[from..=last]
        .iter()
        .filter(|t| t.kind == Kind::Word)
        .collect();
    let key = span
        .iter()
        .map(|t| stem(&t.lower))
        .collect::<Vec<_>>()
        .join(" ");
    let label = span
        .iter()
        .map(|t| t.lower.as_str())
        .collect::<Vec<_>>()
        .join(" ");
    Some(((key, label), last))
}

/// A Korean rate word right before a figure, skipping an approximation
/// ("월 약 12만 원"): "월", "연간", or a word ending in "당" ("회당", "초당").
fn korean_rate(
    tokens: &[Token],
    start: usize,
    used: &mut BTreeSet<usize>,
) -> Option<(String, String)> {
    let mut j = start.checked_sub(1)?;
    while tokens
        .get(j)
        .is_some_and(|t| listed(fw().approx_before, &t.lower))
    {
        j = j.checked_sub(1)?;
    }
    let t = tokens.get(j).filter(|t| hangul_word(&t.lower))?;
    let w = t.lower.as_str();
    let rate = if let Some(key) = class_of(&fw().korean_rates, w) {
        (key.to_owned(), key.to_owned())
    } else {
        let per = w.strip_suffix('당').filter(|p| !p.is_empty())?;
        let key = lookup(&fw().korean_units, per).unwrap_or(per);
        (key.to_owned(), per.to_owned())
    };
    used.insert(j);
    Some(rate)
}

/// What a Korean figure's glued ending or next word says: approximate
/// ("2만 원 안팎", "약 5시간 정도") or a bound ("1.5초 안에", "25%를 넘었고",
/// "1.2초보다"). Returns `(approx, bound, last token)`.
fn korean_tail(tokens: &[Token], end: usize, used: &mut BTreeSet<usize>) -> (bool, bool, usize) {
    let mut approx = false;
    let mut bound = false;
    let mut last = end;
    // The unit's own word may carry the ending: "초보다", "점으로".
    let unit_word = tokens.get(end).filter(|t| hangul_word(&t.lower));
    let unit_rest = unit_word.map(|t| {
        let w = t.lower.as_str();
        fw().korean_units
            .iter()
            .find_map(|(p, _)| w.strip_prefix(p))
            .unwrap_or("")
    });
    let mut check = |s: &str| {
        // One-syllable "여" ("10여 건") only alone: "여유", "여러" are words.
        approx |=
            list(fw().approx_after).any(|a| s == a || (a.chars().count() > 1 && s.starts_with(a)));
        bound |= list(fw().korean_bounds).any(|b| s.starts_with(b)) || s == "안" || s == "내";
    };
    if let Some(rest) = unit_rest {
        check(rest);
    }
    for j in end + 1..end + 3 {
        let Some(t) = tokens
            .get(j)
            .filter(|t| t.kind == Kind::Word && hangul_word(&t.lower))
        else {
            break;
        };
        check(&t.lower);
        if t.glued {
            // A particle or copula glued to the figure: "35%였다", "25%를".
            used.insert(j);
            last = j;
        } else {
            break;
        }
    }
    (approx, bound, last)
}
