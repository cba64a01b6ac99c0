//! Figures: each number in a sentence read with its unit (`$`, `%`, a
//! counted noun, a rate "per month"), the kind of value it is (the
//! qualifiers of its clause: a target, an average, a rise) and the words
//! that say what it measures — all through the text layer's tokens and cue
//! classes ([`crate::text::cues`]), with no word list of its own beyond the
//! scale and currency tables below.

use std::collections::BTreeSet;

use crate::text::cues::{Cue, Token, is_cue_word, period_of, spans, tokens};
use crate::text::{is_hangul, is_stop_word};

/// English scale words after a number ("1.2 million").
const SCALES: [(&str, f64); 6] = [
    ("thousand", 1e3),
    ("k", 1e3),
    ("million", 1e6),
    ("m", 1e6),
    ("billion", 1e9),
    ("bn", 1e9),
];

/// Korean scale syllables attached to a number (1억 2,000만).
const KOREAN_SCALES: [(char, f64); 4] = [('천', 1e3), ('만', 1e4), ('억', 1e8), ('조', 1e12)];

/// Currency symbols and words, each with its unit.
const CURRENCIES: [(&str, &str); 10] = [
    ("$", "$"),
    ("dollar", "$"),
    ("usd", "$"),
    ("€", "€"),
    ("euro", "€"),
    ("£", "£"),
    ("₩", "원"),
    ("원", "원"),
    ("won", "원"),
    ("달러", "$"),
];

/// Words that make a number a share ("41 percent", "12 퍼센트").
const PERCENT: [&str; 3] = ["percent", "퍼센트", "pct"];

/// One figure of a sentence.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Figure {
    /// The value, scale applied (`1억 2,000만` → 120,000,000).
    pub value: f64,
    /// The unit, with its rate: `$`, `%`, `hour`, `명`, `$ per month`.
    pub unit: String,
    /// The figure as written (`$14,200`, `8.1%`, `1억 2,000만 원`).
    pub text: String,
    /// Said to be approximate: agrees within a tenth.
    pub approx: bool,
    /// The qualifier stems of its clause (target, average, rise, …).
    pub qualifiers: BTreeSet<String>,
    /// What it measures: the content stems of the sentence outside the
    /// clauses of its other figures, its source frame dropped.
    pub words: BTreeSet<String>,
    /// Byte span of the words its clause gives it, for its label.
    pub clause: (usize, usize),
}

/// A number as written: its span and value.
#[derive(Debug, Clone, Copy)]
struct Number {
    start: usize,
    end: usize,
    value: f64,
}

/// Every number of `text`: digits with thousands commas and a decimal point,
/// not glued to a letter before it (`Q30`, `F017` and `N50` are names).
fn numbers(text: &str) -> Vec<Number> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let glued = i > 0
            && text[..i]
                .chars()
                .next_back()
                .is_some_and(char::is_alphanumeric);
        if !bytes[i].is_ascii_digit() || glued {
            i += text[i..].chars().next().map_or(1, char::len_utf8);
            continue;
        }
        let start = i;
        while i < bytes.len() {
            let c = bytes[i];
            let digit_after = |n: usize| bytes.get(i + n).is_some_and(u8::is_ascii_digit);
            let thousands = c == b','
                && (1..=3).all(digit_after)
                && !bytes.get(i + 4).is_some_and(u8::is_ascii_digit);
            if c.is_ascii_digit() || thousands || (c == b'.' && digit_after(1)) {
                i += 1;
            } else {
                break;
            }
        }
        if let Ok(value) = text[start..i].replace(',', "").parse::<f64>() {
            out.push(Number {
                start,
                end: i,
                value,
            });
        }
    }
    out
}

/// The length in bytes of the symbol `text` ends with.
fn sym_len(text: &str) -> usize {
    text.chars().next_back().map_or(0, char::len_utf8)
}

/// The Korean scale syllable `text` starts with, as a factor.
fn korean_scale(text: &str) -> Option<f64> {
    let c = text.chars().next()?;
    KOREAN_SCALES.iter().find(|(k, _)| *k == c).map(|k| k.1)
}

/// The first token at or after byte `at` (skipping spaces only).
fn token_at(toks: &[Token], text: &str, at: usize) -> Option<usize> {
    let i = toks.iter().position(|t| t.start >= at)?;
    text[at..toks[i].start]
        .chars()
        .all(char::is_whitespace)
        .then_some(i)
}

/// The text right after byte `at`, spaces skipped.
fn rest(text: &str, at: usize) -> &str {
    text[at..].trim_start()
}

/// Whether byte `at` lies in one of `spans`.
fn within(spans: &[(usize, usize)], at: usize) -> bool {
    spans.iter().any(|&(s, e)| s <= at && at < e)
}

/// A sentence's clauses as byte spans: split at punctuation and at the
/// clause cue words.
fn clauses(text: &str, toks: &[Token]) -> Vec<(usize, usize)> {
    let mut cuts: Vec<usize> = text
        .char_indices()
        .filter(|&(i, c)| {
            matches!(c, ';' | '(' | ')' | '—' | '–' | '·')
                || (matches!(c, ',' | ':')
                    && !text[i + 1..].starts_with(|d: char| d.is_ascii_digit()))
        })
        .map(|(i, _)| i)
        .collect();
    cuts.extend(
        spans(text, toks, &[Cue::Clause])
            .into_iter()
            .map(|(s, _)| s),
    );
    cuts.sort_unstable();
    let mut out = Vec::new();
    let mut from = 0;
    for cut in cuts {
        if cut > from {
            out.push((from, cut));
        }
        from = cut + 1;
    }
    out.push((from.min(text.len()), text.len()));
    out
}

/// What a number's unit and scale are, reading what follows it.
struct Reading {
    /// Byte where the figure starts (its currency symbol, if one leads).
    start: usize,
    value: f64,
    unit: Option<String>,
    /// Byte just past what was read.
    end: usize,
    /// Token positions used as the unit (not a measured word).
    used: Vec<usize>,
}

/// Reads the unit after a number (and a currency symbol before it).
fn read_unit(text: &str, toks: &[Token], n: Number) -> Reading {
    let mut r = Reading {
        start: n.start,
        value: n.value,
        unit: None,
        end: n.end,
        used: Vec::new(),
    };
    let before = text[..n.start].trim_end();
    if let Some((_, unit)) = CURRENCIES
        .iter()
        .find(|(sym, _)| !sym.chars().any(char::is_alphanumeric) && before.ends_with(*sym))
    {
        r.unit = Some((*unit).to_owned());
        r.start = before.len() - sym_len(before);
    }
    // Korean scales attached (12만, 1억 2,000만): a number and its scale,
    // and the next such pair continues the chain.
    if let Some(scale) = korean_scale(&text[n.end..]) {
        r.value = n.value * scale;
        r.end = n.end + '만'.len_utf8();
        if let Some(m) = numbers(&text[r.end..]).first().copied() {
            let at = r.end;
            if text[at..at + m.start].trim().is_empty()
                && let Some(s2) = korean_scale(&text[at + m.end..])
            {
                r.value += m.value * s2;
                r.end = at + m.end + '만'.len_utf8();
            }
        }
    }
    if rest(text, r.end).starts_with('%') {
        r.end = text.len() - rest(text, r.end).len() + 1;
        r.unit = Some("%".to_owned());
        return r;
    }
    let Some(mut i) = token_at(toks, text, r.end) else {
        return r;
    };
    let raw = |i: usize| text[toks[i].start..toks[i].end].to_lowercase();
    if let Some((_, scale)) = SCALES.iter().find(|(w, _)| raw(i) == *w) {
        r.value *= scale;
        r.used.push(i);
        r.end = toks[i].end;
        match token_at(toks, text, r.end) {
            Some(j) => i = j,
            None => return r,
        }
    }
    let word = raw(i);
    let attached = toks[i].start == r.end;
    if let Some((w, unit)) = CURRENCIES
        .iter()
        .find(|(w, _)| word == *w || word.starts_with(w) && w.chars().all(is_hangul))
    {
        r.unit = Some((*unit).to_owned());
        r.used.push(i);
        r.end = toks[i].start + w.len().min(toks[i].end - toks[i].start);
        return r;
    } else if PERCENT.contains(&word.as_str()) || word == "per" && raw(i + 1).starts_with("cent") {
        r.unit = Some("%".to_owned());
    } else if r.unit.is_some() {
        return r;
    } else if word.chars().any(is_hangul) {
        // A Korean counter is attached (450명이, 20분): its first syllable,
        // the rest its ending.
        if !attached {
            return r;
        }
        r.unit = word.chars().next().map(String::from);
        r.used.push(i);
        r.end = toks[i].start + word.chars().next().map_or(0, char::len_utf8);
        return r;
    } else if word.chars().all(|c| c.is_ascii_alphabetic())
        && !is_stop_word(&word)
        && !is_cue_word(&toks[i].stem, Cue::Month)
    {
        r.unit = Some(toks[i].stem.clone());
    } else {
        return r;
    }
    r.used.push(i);
    r.end = toks[i].end;
    r
}

/// The rate after or before a figure: "per month", "a year", "/yr", 월 …, 초당 ….
fn rate(text: &str, toks: &[Token], start: usize, end: usize) -> Option<&'static str> {
    let after = token_at(toks, text, end).or_else(|| {
        let slash = rest(text, end).strip_prefix('/')?;
        token_at(toks, text, text.len() - slash.len())
    });
    if let Some(i) = after {
        let w = text[toks[i].start..toks[i].end].to_lowercase();
        let j = if matches!(w.as_str(), "per" | "a" | "an" | "each" | "every") {
            i + 1
        } else {
            i
        };
        if let Some(p) = toks.get(j).and_then(|t| period_of(&t.stem)) {
            return Some(p);
        }
    }
    let before = toks.iter().rposition(|t| t.end <= start)?;
    let gap = &text[toks[before].end..start];
    (gap.trim().is_empty() || gap.trim() == "$" || gap.trim() == "₩")
        .then(|| period_of(&toks[before].stem))
        .flatten()
        .filter(|_| toks[before].stem.chars().any(is_hangul))
}

/// Whether a token stands right beside a figure (its rate: "a year", 월).
fn near(t: &Token, start: usize, end: usize) -> bool {
    (t.end <= start && start - t.end <= 2) || (t.start >= end && t.start - end <= 8)
}

/// What a figure is per when its clause says "per" a thing ("cost per
/// resolved conversation", "$52 per sample"): the content words after it.
fn per_what(text: &str, toks: &[Token], (cs, ce): (usize, usize)) -> Option<String> {
    let at = toks.iter().position(|t| {
        t.start >= cs && t.end <= ce && text[t.start..t.end].eq_ignore_ascii_case("per")
    })?;
    let what: Vec<&str> = toks[at + 1..]
        .iter()
        .take_while(|t| {
            let w = text[t.start..t.end].to_lowercase();
            t.end <= ce && !is_stop_word(&w) && !w.starts_with(|c: char| c.is_ascii_digit())
        })
        .take(2)
        .map(|t| t.stem.as_str())
        .collect();
    (!what.is_empty()).then(|| what.join(" "))
}

/// Whether a number is a year (1900–2100, no unit) or a Korean date part
/// (9월, 2024년).
fn is_date(text: &str, n: Number, unit: Option<&str>) -> bool {
    let year = (1900.0..=2100.0).contains(&n.value)
        && n.end - n.start == 4
        && korean_scale(&text[n.end..]).is_none();
    (year && matches!(unit, None | Some("년")))
        || (unit == Some("월") && rest(text, n.end).starts_with('월'))
}

/// The figures of one sentence. Numbers without a unit, dates, bounds
/// ("under 4 minutes", 30% 이상) and ranges ("5 to 10 runs") are not figures.
pub(crate) fn figures(sentence: &str) -> Vec<Figure> {
    let toks = tokens(sentence);
    let cue = |c: Cue| spans(sentence, &toks, &[c]);
    let (bounds, approx, qualifiers) = (cue(Cue::Bound), cue(Cue::Approx), cue(Cue::Qualifier));
    let (frames, sources, cuts) = (cue(Cue::Frame), cue(Cue::Source), cue(Cue::Clause));
    let clauses = clauses(sentence, &toks);
    let nums = numbers(sentence);
    let mut read: Vec<(Number, Reading)> = Vec::new();
    let mut skip: BTreeSet<usize> = BTreeSet::new();
    let mut read_to = 0;
    for (k, &n) in nums.iter().enumerate() {
        if n.start < read_to {
            // Read already, as part of the figure before (1억 2,000만).
            skip.insert(k);
        }
        let r = read_unit(sentence, &toks, n);
        read_to = read_to.max(r.end);
        // A range: "5 to 10", "5–10", "1~12월", "between 5 and 10".
        if let Some(m) = nums.get(k + 1) {
            let gap = sentence[r.end.min(m.start)..m.start].trim().to_lowercase();
            if matches!(gap.as_str(), "-" | "–" | "~" | "to" | "and" | "or" | "에서") {
                skip.extend([k, k + 1]);
            }
        }
        read.push((n, r));
    }
    let clause_of = |at: usize| {
        clauses
            .iter()
            .copied()
            .find(|&(s, e)| s <= at && at < e.max(s + 1))
            .unwrap_or((0, sentence.len()))
    };
    let mut out = Vec::new();
    for (k, (n, r)) in read.iter().enumerate() {
        let Some(unit) = r.unit.as_deref() else {
            continue;
        };
        if skip.contains(&k) || is_date(sentence, *n, Some(unit)) {
            continue;
        }
        let (cs, ce) = clause_of(n.start);
        // A bound just before (or a Korean one just after) the figure.
        let near_before = toks
            .iter()
            .filter(|t| t.end <= n.start && t.start >= cs)
            .rev()
            .take(2)
            .any(|t| within(&bounds, t.start));
        let near_after = token_at(&toks, sentence, r.end)
            .is_some_and(|i| within(&bounds, toks[i].start))
            || rest(sentence, r.end).starts_with(['+', '<', '>']);
        if near_before
            || near_after
            || sentence[..n.start]
                .trim_end()
                .ends_with(['<', '>', '≤', '≥'])
        {
            continue;
        }
        let approximate = toks
            .iter()
            .filter(|t| t.end <= n.start && t.start >= cs)
            .rev()
            .take(2)
            .any(|t| within(&approx, t.start))
            || token_at(&toks, sentence, r.end).is_some_and(|i| within(&approx, toks[i].start));
        let unit = match rate(sentence, &toks, n.start, r.end) {
            Some(p) => format!("{unit} per {p}"),
            None => match per_what(sentence, &toks, (cs, ce)) {
                Some(what) => format!("{unit} per {what}"),
                None => unit.to_owned(),
            },
        };
        // The words after a source frame before it, if there is one.
        let from = frames
            .iter()
            .filter(|&&(_, e)| e <= n.start)
            .map(|&(_, e)| e)
            .max();
        let others: Vec<(usize, usize)> = read
            .iter()
            .enumerate()
            .filter(|&(j, (m, mr))| j != k && mr.unit.is_some() && clause_of(m.start) != (cs, ce))
            .map(|(_, (m, _))| clause_of(m.start))
            .collect();
        let mut words = BTreeSet::new();
        let mut quals = BTreeSet::new();
        // A figure's own tokens, and the Korean ending glued to it (32%였다).
        let in_figure = |t: &Token| {
            read.iter().any(|(m, mr)| {
                let end = mr.end.max(m.end);
                m.start.min(mr.start) <= t.start
                    && (t.start < end || t.start == end && t.stem.chars().any(is_hangul))
            })
        };
        for (i, t) in toks.iter().enumerate() {
            if in_figure(t) {
                continue;
            }
            let lower = sentence[t.start..t.end].to_lowercase();
            let in_own = t.start >= cs && t.start < ce;
            if within(&qualifiers, t.start) && in_own {
                quals.insert(t.stem.clone());
                continue;
            }
            let dropped = from.is_some_and(|f| t.start < f)
                || others.iter().any(|&(s, e)| s <= t.start && t.start < e)
                || sources
                    .iter()
                    .any(|&(s, _)| clause_of(s) == clause_of(t.start));
            let noise = r.used.contains(&i)
                || lower.chars().all(|c| c.is_ascii_digit())
                || is_stop_word(&lower)
                || period_of(&t.stem).is_some() && near(t, n.start, r.end)
                || within(&bounds, t.start)
                || within(&approx, t.start)
                || within(&cuts, t.start)
                || t.stem.chars().count() < 2 && !t.stem.chars().any(is_hangul);
            if !dropped && !noise {
                words.insert(t.stem.clone());
            }
        }
        out.push(Figure {
            value: r.value,
            unit,
            text: sentence[r.start.min(r.end)..r.end].to_owned(),
            approx: approximate,
            qualifiers: quals,
            words,
            clause: (from.unwrap_or(cs).max(cs), ce),
        });
    }
    out
}

/// The periods a sentence names: years, quarters (Q2), Korean months (9월).
/// Two figures of different periods are not compared.
pub(crate) fn periods(sentence: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for n in numbers(sentence) {
        if is_date(sentence, n, None) || rest(sentence, n.end).starts_with('월') {
            out.insert(
                sentence[n.start..n.end].to_owned()
                    + &rest(sentence, n.end).chars().take(1).collect::<String>(),
            );
        }
    }
    for t in tokens(sentence) {
        let w = &sentence[t.start..t.end];
        let quarter = w.len() == 2
            && w.starts_with(['Q', 'q'])
            && w[1..].parse::<u8>().is_ok_and(|q| (1..=4).contains(&q));
        let month = w.starts_with(char::is_uppercase) && is_cue_word(&t.stem, Cue::Month);
        if quarter || month {
            out.insert(w.to_lowercase());
        }
    }
    out
}
