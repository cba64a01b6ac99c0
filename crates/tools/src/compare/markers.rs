//! Markers: what a word says about the figures near it (periods,
//! settings, qualifiers, rates).

use std::collections::BTreeMap;

use crate::text::stem::stem;

use super::tokens::{Kind, Token};
use super::words::{
    MEMO_CAP, SETTINGS, class_by_prefix, class_of, fw, hangul_word, list, listed, number_word,
    ordinal_word,
};

/// What a token says about the figures near it, besides being part of
/// their measured phrase.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Marker {
    /// A period or horizon: `m9` (September), `q2`, `y2024`, `year1`
    /// ("the first year"), `h3year` ("three-year").
    Period(String),
    /// A setting: pilot, production.
    Setting(&'static str),
    /// A qualifier class from the qualifiers (figures-*.toml).
    Qualifier(&'static str),
    /// A rate: "monthly" → `month`.
    Rate(&'static str),
    /// An approximation, a bound word, a number word or filler: not part of
    /// any measured phrase.
    Silent,
}

/// Markers of the tokens of a sentence, by position. Numbers that name a
/// period or an ordinal ("9월", "2024", "95th percentile") are marked too,
/// so they are not read as figures.
pub(super) fn markers(tokens: &[Token]) -> BTreeMap<usize, Marker> {
    let mut out = BTreeMap::new();
    for (i, t) in tokens.iter().enumerate() {
        let next = tokens.get(i + 1);
        if let Some(marker) = number_marker(tokens, i) {
            out.insert(i, marker);
            if next.is_some_and(|n| n.glued && n.kind == Kind::Word) {
                out.insert(i + 1, Marker::Silent);
            }
            continue;
        }
        if t.kind != Kind::Word || out.contains_key(&i) {
            continue;
        }
        let marker = if let Some((period, len)) = word_period(tokens, i) {
            for j in i + 1..i + len {
                out.insert(j, Marker::Silent);
            }
            Some(Marker::Period(period))
        } else if matches!(stem(&t.lower).as_str(), "운영" | "기간")
            && i > 0
            && matches!(out.get(&(i - 1)), Some(Marker::Setting(_)))
        {
            // "시범 운영", "파일럿 기간": the pilot itself, one setting.
            Some(Marker::Silent)
        } else if t.is_word("up") && next.is_some_and(|n| n.is_word("front")) {
            // "$5,400 up front": a one-off, not a rise.
            out.insert(i + 1, Marker::Silent);
            Some(Marker::Qualifier("one-off"))
        } else {
            word_marker(t)
        };
        if let Some(marker) = marker {
            out.insert(i, marker);
        }
    }
    out
}

/// A marker for a number that is not a figure: a time of day ("11 p.m.",
/// "10:30"), an ordinal ("95th percentile", "95백분위" → `p95`), a Korean
/// month, quarter or year ("9월", "3분기", "2024년"), a horizon ("3-year",
/// "over 3 years", "3년간", "3년 총비용"), a period compared against ("3개월과
/// 비교해") or a plain year ("in 2024").
fn number_marker(tokens: &[Token], i: usize) -> Option<Marker> {
    let t = tokens.get(i)?;
    let value = t.number()?;
    if is_clock_time(tokens, i) {
        return Some(Marker::Silent);
    }
    let n = if value.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(&value) {
        value as u32
    } else {
        u32::MAX
    };
    let year = (1900..=2100).contains(&n) && !t.text.contains(',');
    let next = tokens.get(i + 1).filter(|n| n.glued);
    if let Some(w) = next
        .filter(|n| n.kind == Kind::Word)
        .map(|n| n.lower.as_str())
    {
        // "1~12월": a span of months (the whole year), not December.
        let span_end = i >= 2
            && matches!(tokens[i - 1].kind, Kind::Symbol('~' | '～' | '-' | '–'))
            && tokens[i - 2].number().is_some();
        if span_end && w.starts_with('월') {
            return Some(Marker::Silent);
        }
        let after = tokens.get(i + 2);
        if let Some(marker) =
            ordinal_marker(w, n, after).or_else(|| korean_period(w, n, year, after))
        {
            return Some(marker);
        }
    }
    if let Some(unit) = horizon_unit(tokens, i) {
        return Some(Marker::Period(format!("h{n}{unit}")));
    }
    let before = i.checked_sub(1).and_then(|j| tokens.get(j));
    let currency = before.is_some_and(|b| matches!(b.kind, Kind::Symbol('$' | '€' | '£' | '₩')));
    let percent = next.is_some_and(|n| n.kind == Kind::Symbol('%'));
    (year && !currency && !percent).then(|| Marker::Period(format!("y{n}")))
}

/// "11 p.m.", "8am", "10:30".
fn is_clock_time(tokens: &[Token], i: usize) -> bool {
    let word = |k: usize| tokens.get(k).map(|n| n.lower.as_str());
    let meridiem = match word(i + 1) {
        Some("am" | "pm") => true,
        Some("a" | "p") => word(i + 2) == Some("."),
        _ => false,
    };
    let colon = tokens
        .get(i + 1)
        .is_some_and(|n| n.glued && n.kind == Kind::Break(':'))
        && tokens.get(i + 2).and_then(Token::number).is_some();
    meridiem || colon
}

/// An ordinal glued to its number: "95th percentile" → `p95`, "3rd" or
/// "1차" → silent.
fn ordinal_marker(w: &str, n: u32, after: Option<&Token>) -> Option<Marker> {
    let english = matches!(w, "st" | "nd" | "rd" | "th");
    if w.starts_with("백분위")
        || (english && after.is_some_and(|p| p.lower.starts_with("percentile")))
    {
        return Some(Marker::Qualifier(percentile_class(n)));
    }
    let silent = english || w.starts_with('차') || w.starts_with('위') || w.starts_with('등');
    silent.then_some(Marker::Silent)
}

/// A Korean period written with its number — "9월", "3분기", "2024년",
/// "3년간", "3년 총비용" (a bare 년 before a noun), "3개월과 비교해" — or a
/// "single" that is part of a phrase ("1회 충전").
fn korean_period(w: &str, n: u32, year: bool, after: Option<&Token>) -> Option<Marker> {
    let period = |key: String| Some(Marker::Period(key));
    let unit = if w.starts_with('년') {
        "year"
    } else {
        "month"
    };
    if w.starts_with("분기") {
        return period(format!("q{n}"));
    }
    if w.starts_with('월') && (1..=12).contains(&n) {
        return period(format!("m{n}"));
    }
    if w.starts_with("년간") || w.starts_with("개월간") {
        return period(format!("h{n}{unit}"));
    }
    if w.starts_with('년') && year {
        return period(format!("y{n}"));
    }
    let compared = after.is_some_and(|a| {
        ["비교", "비해", "대비"]
            .iter()
            .any(|c| a.lower.starts_with(c))
    });
    let duration = ["개월", "년", "주", "일", "시간"]
        .iter()
        .any(|u| w.starts_with(u));
    if duration && (w.ends_with('과') || w.ends_with('와')) && compared {
        return period(format!("ref{n}{}", w.trim_end_matches(['과', '와'])));
    }
    let before_noun = after.is_some_and(|a| !a.glued && hangul_word(&a.lower));
    if matches!(w, "년" | "개월") && before_noun {
        return period(format!("h{n}{unit}"));
    }
    // "1회 충전 주행거리", "1인당": "per single …", not a count of one.
    if n == 1 && before_noun && ["회", "번", "대", "인", "명", "개"].contains(&w) {
        return Some(Marker::Silent);
    }
    None
}

/// The unit of a horizon written with digits: "3-year cost", "over 3
/// years".
fn horizon_unit(tokens: &[Token], i: usize) -> Option<&'static str> {
    let long = |u: &&str| matches!(*u, "year" | "month" | "quarter" | "week");
    let hyphen = tokens
        .get(i + 1)
        .is_some_and(|n| n.glued && n.kind == Kind::Symbol('-'));
    if hyphen {
        return tokens
            .get(i + 2)
            .filter(|u| u.glued)
            .and_then(|u| class_of(&fw().time_units, &u.lower))
            .filter(long);
    }
    let before = i.checked_sub(1).and_then(|j| tokens.get(j))?;
    if !matches!(before.lower.as_str(), "over" | "across" | "for" | "during") {
        return None;
    }
    tokens
        .get(i + 1)
        .and_then(|u| class_of(&fw().time_units, &u.lower))
        .filter(long)
}

fn percentile_class(n: u32) -> &'static str {
    match n {
        50 => "median",
        90 => "p90",
        95 => "p95",
        99 => "p99",
        _ => "percentile",
    }
}

/// A period named by words, and how many tokens it spans: a month ("July";
/// "May" only capitalised), a quarter or half ("Q2", "H1", "상반기"), a year
/// relative to now ("last year", "작년"), an ordinal year ("the first year",
/// "첫해"), a horizon in words ("three-year", "over two years").
fn word_period(tokens: &[Token], i: usize) -> Option<(String, usize)> {
    let t = tokens.get(i)?;
    let w = t.lower.as_str();
    let next = tokens.get(i + 1);
    let next_unit = |skip: usize| {
        tokens
            .get(i + 1 + skip)
            .and_then(|n| class_of(&fw().time_units, &n.lower))
            .filter(|u| matches!(*u, "year" | "month" | "quarter" | "week"))
    };
    if let Some(m) = list(fw().months).position(|m| m == w)
        && (w != "may" || (t.text == "May" && !t.initial))
    {
        return Some((format!("m{}", m + 1), 1));
    }
    let bytes = w.as_bytes();
    if bytes.len() == 2 && matches!(bytes[0], b'q' | b'h') && bytes[1].is_ascii_digit() {
        return Some((w.to_owned(), 1));
    }
    if w.starts_with("fy") && w.len() > 2 && w[2..].bytes().all(|b| b.is_ascii_digit()) {
        return Some((w.to_owned(), 1));
    }
    let korean = [
        ("상반기", "h1"),
        ("하반기", "h2"),
        ("올해", "y0"),
        ("금년", "y0"),
        ("작년", "y-1"),
        ("지난해", "y-1"),
        ("전년", "y-1"),
        ("내년", "y+1"),
        ("첫해", "year1"),
    ];
    if let Some((_, key)) = korean.iter().find(|(k, _)| w.starts_with(k)) {
        return Some(((*key).to_owned(), 1));
    }
    let relative = match w {
        "last" | "previous" | "prior" => Some("-1"),
        "this" | "current" => Some("0"),
        "next" | "coming" => Some("+1"),
        _ => None,
    };
    if let (Some(rel), Some(unit)) = (relative, next_unit(0)) {
        return Some((format!("{unit}{rel}"), 2));
    }
    // "first year", "first-year", "three-year", "two years".
    let hyphen = usize::from(next.is_some_and(|n| n.kind == Kind::Symbol('-')));
    let unit = next_unit(hyphen)?;
    if let Some(n) = ordinal_word(w) {
        return Some((format!("{unit}{n}"), 2 + hyphen));
    }
    number_word(w).map(|n| (format!("h{n}{unit}"), 2 + hyphen))
}

/// A word's own marker: a qualifier, setting, rate adjective, or a word
/// that is never part of a measured phrase.
pub(super) fn word_marker(t: &Token) -> Option<Marker> {
    thread_local! {
        /// Markers by word: the tables are scanned once per distinct word,
        /// not once per token of every sentence compared.
        static MEMO: std::cell::RefCell<std::collections::HashMap<String, Option<Marker>>> =
            std::cell::RefCell::new(std::collections::HashMap::new());
    }
    if let Some(m) = MEMO.with(|memo| memo.borrow().get(&t.lower).cloned()) {
        return m;
    }
    let marker = word_marker_uncached(&t.lower);
    MEMO.with(|memo| {
        let mut memo = memo.borrow_mut();
        if memo.len() >= MEMO_CAP {
            memo.clear(); // a long-lived process sees many corpora: stay bounded
        }
        memo.insert(t.lower.clone(), marker.clone());
    });
    marker
}

fn word_marker_uncached(w: &str) -> Option<Marker> {
    if hangul_word(w) {
        let s = stem(w);
        if s == "더" {
            return Some(Marker::Qualifier("change"));
        }
        if let Some(class) = class_by_prefix(&fw().korean_qualifiers, &s) {
            return Some(Marker::Qualifier(class));
        }
        if let Some(setting) = class_by_prefix(SETTINGS, &s) {
            return Some(Marker::Setting(setting));
        }
        let silent =
            list(fw().korean_filler).any(|f| s.starts_with(f)) || listed(fw().approx_before, &s);
        return silent.then_some(Marker::Silent);
    }
    if let Some(class) = class_of(&fw().qualifiers, w) {
        return Some(Marker::Qualifier(class));
    }
    if let Some(setting) = class_of(SETTINGS, w) {
        return Some(Marker::Setting(setting));
    }
    if let Some(rate) = class_of(&fw().rate_adjectives, w) {
        return Some(Marker::Rate(rate));
    }
    let silent = listed(fw().filler, w)
        || listed(fw().approx_before, w)
        || listed(fw().bound_before, w)
        || number_word(w).is_some()
        || ordinal_word(w).is_some();
    silent.then_some(Marker::Silent)
}
