//! The rule: when two figures measure the same attribute of the same
//! subject and disagree, and how the contradiction is labelled.

use std::collections::BTreeSet;

use crate::text::stem::{mentions, stem};

use super::phrases::{Figure, PhraseWord, Statement};
use super::tokens::Kind;
use super::words::hangul_word;

/// Longest run of words a contradiction's label quotes; a longer one is
/// shown as its shared words only.
const LABEL_SPAN: usize = 10;
/// Relative difference within which an approximate figure ("about 30%")
/// agrees with another.
const APPROX_TOLERANCE: f64 = 0.1;

/// Whether two figures measure the same attribute of the same subject under
/// compatible conditions; if so, how many phrase words they share.
fn same_attribute(a: &Figure, sa: &Statement, b: &Figure, sb: &Statement) -> Option<usize> {
    fn one_sided<T: Ord>(x: &BTreeSet<T>, y: &BTreeSet<T>) -> bool {
        x.is_empty() || y.is_empty() || x == y
    }
    let subjects_fit = match (&a.subject, &b.subject) {
        (Some(x), Some(y)) => x.contains(y.as_str()) || y.contains(x.as_str()),
        _ => true,
    };
    // Notes whose titles name different subjects ("RabbitMQ spike", "MSK
    // load test") are about different things even where a sentence names
    // none.
    // Two companies' own documents ("(주)물빛스포츠 — 제안서", "한결레저(주)
    // 제안서") differ in subject even where both titles name the site.
    let titles_fit = (sa.title_entities.is_empty()
        || sb.title_entities.is_empty()
        || !sa.title_entities.is_disjoint(&sb.title_entities))
        && (sa.title_companies.is_empty()
            || sb.title_companies.is_empty()
            || !sa.title_companies.is_disjoint(&sb.title_companies));
    let comparable = !a.bound
        && !b.bound
        && a.unit.key == b.unit.key
        && a.qualifiers == b.qualifiers
        && one_sided(&a.periods, &b.periods)
        && one_sided(&a.settings, &b.settings)
        && a.entities.keys().eq(b.entities.keys())
        && subjects_fit
        && titles_fit;
    if !comparable {
        return None;
    }
    // A counted noun is a word both phrases share ("100,000 messages").
    let noun = usize::from(a.unit.noun);
    same_phrase(a, sa, b, sb).filter(|shared| shared + noun >= 2)
}

/// Whether two measured phrases can name the same attribute, and how many
/// words they share (the caller asks for two, a counted noun included):
/// some shared word, and every word around each figure (its part of the
/// clause and the framing clauses) used somewhere in the other sentence. A
/// word only one side uses may name a different thing — "cost of hosting" /
/// "cost of support", "bot conversations" / "all conversations", "서울
/// 지점" / "부산 지점", "for the night shift" / "for the day shift" — and
/// telling which extra words are harmless needs more than word lists.
fn same_phrase(a: &Figure, sa: &Statement, b: &Figure, sb: &Statement) -> Option<usize> {
    let stems = |p: &[PhraseWord]| p.iter().map(|w| w.stem.clone()).collect::<Vec<_>>();
    let (a_stems, b_stems) = (stems(&a.phrase), stems(&b.phrase));
    let shared = a_stems.iter().filter(|s| mentions(&b_stems, s)).count();
    let shared_back = b_stems.iter().filter(|s| mentions(&a_stems, s)).count();
    let shared = shared.min(shared_back);
    if shared == 0 {
        return None;
    }
    let used_by =
        |scope: &[PhraseWord], other: &[String]| scope.iter().all(|w| mentions(other, &w.stem));
    (used_by(&a.scope, &sb.words) && used_by(&b.scope, &sa.words)).then_some(shared)
}

/// Whether two values agree: equal, or within [`APPROX_TOLERANCE`] when
/// either is approximate.
fn agree(a: &Figure, b: &Figure) -> bool {
    let scale = a.value.abs().max(b.value.abs()).max(f64::MIN_POSITIVE);
    let diff = (a.value - b.value).abs() / scale;
    diff < 1e-9 || ((a.approx || b.approx) && diff <= APPROX_TOLERANCE)
}

/// The first pair of figures of `a` and `b` that measure the same thing
/// with values that disagree — when neither figure agrees with another
/// figure of the other sentence about the same thing — and how strongly
/// their phrases match.
pub(super) fn clash<'a>(a: &'a Statement, b: &'a Statement) -> Option<(usize, &'a Figure)> {
    let matches = |x: &Figure, sx: &Statement, other: &'a Statement| {
        other
            .figures
            .iter()
            .filter_map(move |y| same_attribute(x, sx, y, other).map(|s| (s, y)))
            .collect::<Vec<_>>()
    };
    a.figures.iter().find_map(|fa| {
        let with_b = matches(fa, a, b);
        if with_b.iter().any(|(_, fb)| agree(fa, fb)) {
            return None;
        }
        with_b.into_iter().find_map(|(strength, fb)| {
            let agrees_back = matches(fb, b, a).iter().any(|(_, x)| agree(fb, x));
            (!agrees_back).then_some((strength, fa))
        })
    })
}

/// The contradiction's label: what the first figure measures, in its own
/// sentence's words (from the first to the last of its words the other
/// sentence shares, or just those words if that span is long), the entity,
/// the unit and the kind of figure.
pub(super) fn label(a: &Statement, fa: &Figure, b: &Statement) -> String {
    let mut shared: Vec<&PhraseWord> = fa
        .scope
        .iter()
        .filter(|w| mentions(&b.words, &w.stem))
        .collect();
    shared.sort_by_key(|w| w.at);
    // Words only, outside the figure, without endings glued to a number
    // ("3년" → no "년").
    let shown = |j: &usize| {
        let figure = (fa.span.0..=fa.span.1).contains(j);
        let after_number = j
            .checked_sub(1)
            .and_then(|p| a.tokens.get(p))
            .is_some_and(|p| p.number().is_some());
        a.tokens
            .get(*j)
            .is_some_and(|t| t.kind == Kind::Word && !(t.glued && after_number))
            && !figure
    };
    let render = |j: usize| {
        let t = a.tokens.get(j)?;
        Some(if hangul_word(&t.lower) {
            stem(&t.lower)
        } else {
            t.lower.clone()
        })
    };
    let positions: Vec<usize> = match (shared.first(), shared.last()) {
        (Some(first), Some(last)) if last.at - first.at < LABEL_SPAN => {
            (first.at..=last.at).collect()
        }
        _ => shared.iter().map(|w| w.at).collect(),
    };
    let about = positions
        .into_iter()
        .filter(shown)
        .filter_map(render)
        .collect::<Vec<_>>()
        .join(" ");
    let entity: Vec<&str> = fa.entities.values().map(String::as_str).collect();
    // What kind of figure both are, when not a plain level: "(%; fall)".
    let kind: Vec<&str> = fa.qualifiers.iter().map(|q| qualifier_name(q)).collect();
    let unit = if kind.is_empty() {
        fa.unit.label.clone()
    } else {
        format!("{}; {}", fa.unit.label, kind.join(", "))
    };
    if entity.is_empty() {
        format!("{about} ({unit})")
    } else {
        format!("{}: {about} ({unit})", entity.join(", "))
    }
}

/// How a qualifier class reads in a label.
fn qualifier_name(class: &str) -> &str {
    match class {
        "up" => "rise",
        "down" => "fall",
        "max" => "maximum",
        "min" => "minimum",
        "load" => "load test",
        "mean" => "average",
        other => other,
    }
}
