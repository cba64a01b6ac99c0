use serde_json::json;

use super::figure::figures;
use super::*;

/// `(value, unit)` of each figure of a sentence.
fn values(sentence: &str) -> Vec<(f64, String)> {
    figures(sentence)
        .into_iter()
        .map(|f| (f.value, f.unit))
        .collect()
}

#[test]
fn figures_are_read_with_their_units_and_rates() {
    let v = values("Support costs $14,200 a year and setup took 3 weeks; 41% resolved.");
    assert_eq!(
        v,
        [
            (14200.0, "$ per year".to_owned()),
            (3.0, "week".to_owned()),
            (41.0, "%".to_owned())
        ]
    );
    let v = values("총사업비는 1억 2,000만 원이고, 월 150만 원의 유지비와 450명이 참석했다.");
    assert_eq!(
        v,
        [
            (120_000_000.0, "원".to_owned()),
            (1_500_000.0, "원 per month".to_owned()),
            (450.0, "명".to_owned())
        ]
    );
}

#[test]
fn bounds_ranges_dates_and_bare_numbers_are_not_figures() {
    for s in [
        "Latency must stay under 4 seconds.",
        "At least 30% of tickets need an agent.",
        "We expect 5 to 10 training runs.",
        "계약 시작일은 2025. 3. 30.이다.",
        "응답 지연은 1.5초 이내여야 한다.",
        "Plate P1 holds isolates F001 to F024 and Q30 matters.",
        "The meeting is on 26 March 2026.",
    ] {
        assert!(values(s).is_empty(), "{s}: {:?}", values(s));
    }
}

fn pair(a: &str, b: &str) -> Vec<Contradiction> {
    let hit =
        |id: &str, p: &str| json!({"note_id": id, "title": id, "score": 1.0, "passages": [p]});
    compare(&[json!({"results": [hit("a", a), hit("b", b)]})]).contradictions
}

#[test]
fn the_same_measure_of_the_same_subject_with_two_values_contradicts() {
    let found = pair(
        "Civiqa's annual subscription is $9,840 a year.",
        "Civiqa's annual subscription comes to $12,360 a year.",
    );
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].term.ends_with("($ per year)"), "{}", found[0].term);
    // Another subject, a target, another unit, another period: not.
    for (a, b) in [
        (
            "Civiqa's annual subscription is $9,840 a year.",
            "Ridgeline's annual subscription is $12,360 a year.",
        ),
        (
            "The target is 30% of conversations resolved without escalation.",
            "41% of conversations were resolved without escalation.",
        ),
        (
            "Onboarding an agent takes 3 weeks.",
            "Onboarding an agent takes 15 days.",
        ),
        (
            "In 2023 the monthly support cost was $12,000.",
            "In 2024 the monthly support cost was $15,000.",
        ),
        (
            "서울 지점의 월 운영 비용은 400만 원이다.",
            "부산 지점의 월 운영 비용은 250만 원이다.",
        ),
    ] {
        assert!(pair(a, b).is_empty(), "{a} / {b}");
    }
}

#[test]
fn figure_rows_name_subject_measure_and_value() {
    let rows = figure_rows("Civiqa quote", "Civiqa's subscription is $9,840 a year.");
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].value, "$9,840 per year");
    assert_eq!(rows[0].subject, "Civiqa quote", "no name found: the title");
}
