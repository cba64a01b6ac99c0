//! Unit tests of the figure reader and the contradiction rule.

use serde_json::json;

use super::entities::{Vocabulary, named_in};
use super::phrases::{Figure, figures};
use super::tokens::lex;
use super::*;

fn search(hits: &[(&str, &str)]) -> Value {
    json!({"query": "q", "results": hits.iter().map(|(id, p)| json!({"note_id": id, "title": id, "score": 1.0, "passages": [p]})).collect::<Vec<_>>()})
}

fn read(sentence: &str) -> Vec<Figure> {
    figures(
        &lex(sentence),
        &Vocabulary::of(std::iter::once(sentence)).lowercase,
    )
}

/// `(value, unit key)` of each figure.
fn values(sentence: &str) -> Vec<(f64, String)> {
    read(sentence)
        .into_iter()
        .map(|f| (f.value, f.unit.key))
        .collect()
}

#[test]
fn figure_rows_give_subject_measure_and_value_as_written() {
    let rows = figure_rows(
        "Civiqa quote",
        "Civiqa's annual subscription is $9,840 a year, and onboarding takes 3 weeks.",
    );
    let values: Vec<&str> = rows.iter().map(|r| r.value.as_str()).collect();
    assert_eq!(values, ["$9,840 a year", "3 weeks"], "{rows:?}");
    assert!(rows[0].measured.contains("subscription"), "{rows:?}");
    // A bound is no value.
    assert!(figure_rows("t", "Latency must stay under 4 seconds.").is_empty());
}

#[test]
fn figures_are_read_with_their_units() {
    for (sentence, expected) in [
        (
            "Latency rose to 450 ms, costs fell 30% and setup took 3 weeks at $1,200.",
            vec![(450.0, "ms"), (30.0, "%"), (3.0, "week"), (1200.0, "$")],
        ),
        ("It cost $1.2 million.", vec![(1.2e6, "$")]),
        ("Use fell 12 per cent.", vec![(12.0, "%")]),
        ("Use fell 12 percent.", vec![(12.0, "%")]),
        ("사용량이 12퍼센트 줄었다.", vec![(12.0, "%")]),
        ("It costs 40 dollars.", vec![(40.0, "$")]),
        ("초기 비용은 약 5,400달러다.", vec![(5400.0, "$")]),
        ("인건비로 약 320만 원이 든다.", vec![(3.2e6, "₩")]),
        ("월 약 12만원이다.", vec![(1.2e5, "₩/month")]),
        ("총비용은 1억 2,000만 원이다.", vec![(1.2e8, "₩")]),
        (
            "A GPU endpoint costs $1,100 per month.",
            vec![(1100.0, "$/month")],
        ),
        (
            "전용 GPU 서빙 비용이 월 150만 원 정도 든다.",
            vec![(1.5e6, "₩/month")],
        ),
        (
            "We handle 30,000 conversations a month.",
            vec![(30000.0, "convers/month")],
        ),
        ("GPU 학습 비용은 회당 2만 원이다.", vec![(2e4, "₩/회")]),
        ("The monthly cost is $450.", vec![(450.0, "$/month")]),
        (
            "Fine-tuning cost per month was $4,000.",
            vec![(4000.0, "$/month")],
        ),
        (
            "The cluster handled 42,000 msg/s.",
            vec![(42000.0, "messag/second")],
        ),
        ("It drew 450 people.", vec![(450.0, "peopl")]),
        (
            "Then 15 of 24 managers agreed.",
            vec![(0.625, "share of manag")],
        ),
        (
            "관리자 24명 중 15명이 동의했다.",
            vec![(0.625, "share of 명")],
        ),
        ("Satisfaction was 4.2 out of 5.", vec![(4.2, "/5")]),
        ("응답 지연은 1.4초였다.", vec![(1.4, "second")]),
        ("Metered use fell from 61,300 kWh.", vec![(61300.0, "kwh")]),
    ] {
        let expected: Vec<(f64, String)> = expected
            .into_iter()
            .map(|(v, u)| (v, u.to_owned()))
            .collect();
        assert_eq!(values(sentence), expected, "{sentence}");
    }
}

#[test]
fn numbers_that_are_not_figures_are_skipped() {
    for sentence in [
        "Version 2 of the model.",
        "Error E-4012 came back.",
        "In 2024 we moved.",
        "9월에 시작했다.",
        "3분기에 시작한다.",
        "Budget at the 95th percentile.",
        "Dimmed after 11 p.m. each night.",
        "An open 8B model on an A100.",
        "The call was at 10:30.",
        "The three-year plan.",
    ] {
        assert!(
            values(sentence).is_empty(),
            "{sentence}: {:?}",
            values(sentence)
        );
    }
}

#[test]
fn conditions_are_read_around_each_figure() {
    let quals = |s: &str| -> Vec<Vec<&'static str>> {
        read(s)
            .into_iter()
            .map(|f| f.qualifiers.into_iter().collect())
            .collect()
    };
    assert_eq!(
        quals("Headline: 41% were resolved, against a target of 30%."),
        [vec![], vec!["target"]]
    );
    assert_eq!(
        quals("In the load test, it handled 48,000 messages per second."),
        [vec!["load"]]
    );
    assert_eq!(
        quals("AWS gives a maximum of 95,000 messages per second."),
        [vec!["max"]]
    );
    assert_eq!(quals("Sky brightness rose 12 percent."), [vec!["up"]]);
    assert_eq!(
        quals("It uses 58 percent less electricity."),
        [vec!["down"]]
    );
    assert_eq!(quals("목표로 잡았던 25%였다."), [vec!["target"]]);
    assert_eq!(quals("월 약 12만 원으로 예상된다."), [vec!["projected"]]);
    assert_eq!(quals("처리 건수가 12% 늘었다."), [vec!["up"]]);
    assert_eq!(quals("The p95 latency is 1.2 s."), [vec!["p95"]]);

    let bound = |s: &str| read(s).iter().map(|f| f.bound).collect::<Vec<_>>();
    assert_eq!(bound("Keep it under 4 minutes."), [true]);
    assert_eq!(bound("At least 30% need an agent."), [true]);
    assert_eq!(
        bound("It handles up to 50,000 messages per second."),
        [true]
    );
    assert_eq!(bound("We expect 5 to 10 runs."), [true]);
    assert_eq!(bound("응답 지연은 1.5초 이내여야 한다."), [true]);
    assert_eq!(bound("영어 파일럿의 1.2초보다 조금 길다."), [true]);
    assert_eq!(bound("It took 4 minutes."), [false]);

    let approx = |s: &str| read(s).iter().map(|f| f.approx).collect::<Vec<_>>();
    assert_eq!(approx("It costs about $70 per month."), [true]);
    assert_eq!(approx("2만 원 안팎이다."), [true]);
    assert_eq!(approx("It costs $70 per month."), [false]);

    let periods =
        |s: &str| -> Vec<String> { read(s).into_iter().flat_map(|f| f.periods).collect() };
    assert_eq!(periods("In Q2, 41% were resolved."), ["q2"]);
    assert_eq!(periods("9월 파일럿에서 해결된 대화는 35%였다."), ["m9"]);
    assert_eq!(periods("The three-year cost is $95,000."), ["h3year"]);
    assert_eq!(periods("Over three years, it costs $120,000."), ["h3year"]);
    assert_eq!(periods("The first-year cost is $40,000."), ["year1"]);
    assert_eq!(periods("In July, it cost $500."), ["m7"]);
    // A span of months is the year it spans, not its last month.
    assert_eq!(
        periods("현황표(2024년 1~12월)로 보면 2024년 이직률은 41%입니다."),
        ["y2024"]
    );

    // A Korean clause joined by -며 goes on with the subject before it.
    let entities = |s: &str| -> Vec<Vec<String>> {
        read(s)
            .into_iter()
            .map(|f| f.entities.into_keys().collect())
            .collect()
    };
    assert_eq!(
        entities("둔산 센터 상담사의 평균 근속은 27개월이며, 2024년 연간 이직률은 32%였습니다."),
        [vec!["둔산".to_owned()], vec!["둔산".to_owned()]]
    );
}

#[test]
fn subjects_are_named_entities_and_korean_topics() {
    let named = |s: &str| -> Vec<String> {
        read(s)
            .into_iter()
            .flat_map(|f| f.entities.into_keys())
            .collect()
    };
    assert_eq!(
        named("Kafka sustained 100,000 messages per second."),
        ["kafka"]
    );
    assert_eq!(
        named("In our test, RabbitMQ's queues took 7,800 messages per second."),
        ["rabbitmq"]
    );
    assert_eq!(named("SQS delivered 3,000 messages per second."), ["sqs"]);
    assert_eq!(named("RAG는 월 12만 원이 든다."), ["rag"]);
    // A label or a sentence's first common word is not a name.
    assert!(named("Headline: 41% of conversations were resolved.").is_empty());
    assert!(named("Of 18,600 bot conversations, 27% were resolved.").is_empty());
    // A unit in capitals is not a name.
    assert!(named("It stores 2 TB per broker.").is_empty());

    // Hangul has no capitals: a place or team before or in an
    // organisation noun is a name.
    assert_eq!(named("서울 지점의 월 운영 비용은 400만 원이다."), ["서울"]);
    assert_eq!(named("고객지원팀의 처리 건수가 4% 늘었다."), ["고객지원팀"]);

    let subject = |s: &str| read(s).into_iter().find_map(|f| f.subject);
    assert_eq!(
        subject("카프카는 초당 10만 건을 처리했다.").as_deref(),
        Some("카프카")
    );
    assert_eq!(subject("해결된 대화는 35%였다.").as_deref(), Some("대화"));
    assert_eq!(subject("상담원 연결 없이 35%였다."), None);
}

#[test]
fn conflicting_figures_between_notes_are_flagged() {
    let out = compare(&[
        search(&[(
            "a",
            "Fine-tuning cost per month was $4,000 for the pilot. Other text.",
        )]),
        search(&[
            (
                "b",
                "The pilot showed fine-tuning cost per month of $9,000.",
            ),
            ("a", "Fine-tuning cost per month was $4,000 for the pilot."),
        ]),
    ]);
    assert_eq!(out.shared_sources, ["a"]);
    assert_eq!(out.sources.len(), 2);
    assert_eq!(out.contradictions.len(), 1);
    let c = &out.contradictions[0];
    assert!(c.term.ends_with("($ per month)"), "{}", c.term);
    assert_eq!(
        c.claims[0].sentence,
        "Fine-tuning cost per month was $4,000 for the pilot."
    );
    assert_eq!(c.claims[1].note_id, "b");
}

#[test]
fn korean_figures_are_compared_too() {
    let out = compare(&[search(&[
        (
            "ko-a",
            "9월 파일럿에서 상담원 연결 없이 해결된 대화는 35%였다.",
        ),
        (
            "ko-b",
            "데이터팀이 다시 집계한 결과 상담원 연결 없이 해결된 대화는 22%였다.",
        ),
    ])]);
    assert_eq!(out.contradictions.len(), 1, "{:?}", out.contradictions);
    assert!(out.contradictions[0].term.ends_with("(%)"));
}

#[test]
fn agreeing_or_unrelated_figures_are_not_contradictions() {
    let out = compare(&[search(&[
        ("a", "Retrieval latency is 200 ms on average."),
        ("b", "Retrieval latency is 200 ms in our tests."),
        ("c", "Onboarding takes 3 weeks."),
    ])]);
    assert!(out.contradictions.is_empty(), "{:?}", out.contradictions);
}

#[test]
fn notes_titled_for_different_systems_are_not_compared() {
    let hit = |id: &str, title: &str, p: &str| json!({"note_id": id, "title": title, "score": 1.0, "passages": [p]});
    let found = |t1: &str, t2: &str| {
        compare(&[json!({"query": "q", "results": [
            hit("a", t1, "Throughput held at 42,000 messages per second for thirty minutes."),
            hit("b", t2, "Throughput held at 7,800 messages per second for thirty minutes."),
        ]})])
        .contradictions
        .len()
    };
    assert_eq!(found("Load test: MSK", "RabbitMQ spike"), 0);
    assert_eq!(found("Load test: MSK", "MSK retest"), 1);
    assert_eq!(found("Load test notes", "Retest notes"), 1);
}

#[test]
fn an_emails_subject_tag_names_no_subject() {
    let title = "[위탁 TF] 두 업체 상담 인력 자료 검토 의견";
    let vocabulary = Vocabulary::of(std::iter::once(title));
    assert!(named_in(title, &vocabulary).is_empty());
    let tagged = "[External] Kestrel quote";
    let vocabulary = Vocabulary::of(std::iter::once(tagged));
    assert_eq!(named_in(tagged, &vocabulary).len(), 1);
}

#[test]
fn a_title_naming_a_company_bare_names_that_subject() {
    let hit = |id: &str, title: &str, p: &str| json!({"note_id": id, "title": title, "score": 1.0, "passages": [p]});
    let found = |t1: &str, t2: &str| {
        compare(&[json!({"query": "q", "results": [
            hit("a", t1, "동계 상의 단가는 27,000원(부가세 포함)이었다."),
            hit("b", t2, "동계 상의 단가는 24,000원(부가세 포함)."),
            hit("c", "업체 목록", "후보는 (주)한솔유니폼과 (주)청우복장이다."),
        ]})])
        .contradictions
        .len()
    };
    // 한솔유니폼 has no marker in the first title, but a note names it by one.
    assert_eq!(
        found("평택 통화 메모 (한솔유니폼 사용 경험)", "(주)청우복장 견적"),
        0
    );
    assert_eq!(
        found("평택 통화 메모 (한솔유니폼 사용 경험)", "한솔유니폼 재견적"),
        1
    );
    // Both titles name the site too: the companies still differ.
    assert_eq!(
        found(
            "(주)한솔유니폼 — 평택2공장 근무복 제안서",
            "(주)청우복장 제안서 — 평택2공장 근무복"
        ),
        0
    );
}
