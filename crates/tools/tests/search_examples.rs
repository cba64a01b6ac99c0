//! Ranking sanity over the example corpora in `examples/notes` and `examples/notes-ko`.
// Test helpers outside #[test] fns: clippy's allow-*-in-tests does not reach them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use stepwise_tools::notes::Corpus;

fn load(folder: &str) -> Corpus {
    Corpus::load(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../examples")
            .join(folder),
    )
    .unwrap()
    .corpus
}

fn corpus() -> Corpus {
    load("notes")
}

fn ids(corpus: &Corpus, query: &str, limit: usize) -> Vec<String> {
    corpus
        .search(query, limit)
        .into_iter()
        .map(|h| h.note_id)
        .collect()
}

#[test]
fn a_fine_tuning_cost_query_ranks_the_cost_note_first() {
    let corpus = corpus();
    let hits = corpus.search("fine-tuning cost", 5);
    assert_eq!(hits[0].note_id, "fine-tuning-cost", "{hits:#?}");
    assert!(hits.len() <= 5);
    assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
    assert!(hits.iter().all(|h| h.score > 0.0 && !h.passages.is_empty()));
    assert!(hits[0].passages.len() <= 3);
}

#[test]
fn korean_queries_find_the_korean_notes() {
    let corpus = load("notes-ko");
    assert_eq!(ids(&corpus, "파인튜닝 비용", 3)[0], "ko-fine-tuning-cost");
    assert_eq!(
        ids(&corpus, "한국어 답변의 응답 지연", 3)[0],
        "ko-evaluation-latency"
    );
    assert_eq!(ids(&corpus, "고객 지원 챗봇 도입", 3)[0], "ko-rag-support");
}

#[test]
fn english_queries_find_their_topics() {
    let corpus = corpus();
    assert_eq!(
        ids(&corpus, "latency budget first token", 3)[0],
        "latency-budget"
    );
    assert_eq!(
        ids(&corpus, "golden set evaluation metrics", 3)[0],
        "evaluation-plan"
    );
    assert_eq!(
        ids(&corpus, "vector store embedding monthly bill", 3)[0],
        "rag-operating-cost"
    );
}

#[test]
fn both_sides_of_the_contradiction_are_found() {
    // The pilot note says 41%, the July review 27%: a report must see both.
    let corpus = corpus();
    let top = ids(
        &corpus,
        "pilot conversations resolved without escalation",
        3,
    );
    assert!(top.contains(&"pilot-results-q2".to_owned()), "{top:?}");
    assert!(top.contains(&"metrics-review-july".to_owned()), "{top:?}");
}

#[test]
fn search_is_deterministic_and_respects_the_limit() {
    let corpus = corpus();
    let first = corpus.search("RAG fine-tuning cost latency", 20);
    assert_eq!(first, corpus.search("RAG fine-tuning cost latency", 20));
    assert_eq!(
        corpus.search("RAG fine-tuning cost latency", 2),
        first[..2].to_vec()
    );
    assert!(corpus.search("zebra giraffe", 5).is_empty());
}
