//! The fold over a real log: ids, parents and content.

use std::collections::{HashMap, HashSet};

use opentelemetry::Value;
use opentelemetry::trace::{SpanId, Status};
use opentelemetry_sdk::trace::SpanData;
use stepwise_core::event::Event;

use crate::trace::keys::*;

use super::Spans;
use super::ids::trace_id;

/// A real log: a one-step scripted run aborted after `step_started`,
/// then resumed (`step_interrupted`, a retry) to `synthesized`.
fn log() -> Vec<Event> {
    serde_json::from_str(include_str!("../testdata/crash-resumed.json")).unwrap()
}

const RUN: &str = "run_fixture";

fn fold(spans: &mut Spans, events: &[Event]) -> Vec<SpanData> {
    let mut out: Vec<SpanData> = events.iter().flat_map(|e| spans.apply(e)).collect();
    out.extend(spans.finish());
    out
}

fn id(span: &SpanData) -> SpanId {
    span.span_context.span_id()
}

#[test]
fn a_resumer_sends_what_one_process_would_with_the_same_ids_and_nothing_twice() {
    let log = log();
    let whole = fold(&mut Spans::new(RUN, false, &[]), &log);
    let by_id: HashMap<SpanId, &SpanData> = whole.iter().map(|s| (id(s), s)).collect();
    assert_eq!(by_id.len(), whole.len(), "an id used twice");

    // The process that crashed lost its queue; the resumer continues.
    let crash = log
        .iter()
        .position(|e| e.kind.name() == "run_resumed")
        .unwrap();
    let sent = fold(&mut Spans::new(RUN, false, &log[..crash]), &log[crash..]);
    let mut seen = HashSet::new();
    for span in &sent {
        assert!(seen.insert(id(span)), "{} sent twice", span.name);
        let same = by_id
            .get(&id(span))
            .unwrap_or_else(|| panic!("{} is not in the one-process trace", span.name));
        assert_eq!(same.name, span.name);
        assert_eq!(same.parent_span_id, span.parent_span_id, "{}", span.name);
        assert_eq!(same.start_time, span.start_time, "{}", span.name);
        assert_eq!(same.end_time, span.end_time, "{}", span.name);
        assert_eq!(span.span_context.trace_id(), trace_id(RUN));
        let parent = span.parent_span_id;
        assert!(
            parent == SpanId::INVALID || sent.iter().any(|p| id(p) == parent),
            "{}'s parent is not sent",
            span.name
        );
    }
    let roots: Vec<&SpanData> = sent
        .iter()
        .filter(|s| s.parent_span_id == SpanId::INVALID)
        .collect();
    assert_eq!(roots.len(), 1);
    assert_eq!(roots[0].name, "run");
    let tokens = |span: &SpanData, key: &str| {
        span.attributes
            .iter()
            .find(|kv| kv.key.as_str() == key)
            .map(|kv| kv.value.clone())
    };
    // The whole log's tokens (the planner's call was before the crash).
    assert_eq!(
        tokens(roots[0], GEN_AI_USAGE_INPUT_TOKENS),
        Some(Value::I64(220))
    );
    assert_eq!(
        tokens(roots[0], GEN_AI_USAGE_OUTPUT_TOKENS),
        Some(Value::I64(60))
    );
    let attempts: Vec<&SpanData> = sent.iter().filter(|s| s.name == "execute_step").collect();
    assert_eq!(attempts.len(), 2);
    assert_eq!(
        attempts
            .iter()
            .filter(|s| matches!(s.status, Status::Error { .. }))
            .count(),
        1,
        "the cut attempt is an error, the retry is not"
    );
    assert_eq!(attempts[0].parent_span_id, attempts[1].parent_span_id);
    // What the crashed process had not exported is not sent again.
    assert!(whole.iter().any(|s| s.name == "create_plan"));
    assert!(!sent.iter().any(|s| s.name == "create_plan"));
}

#[test]
fn only_trace_content_puts_the_goal_prompts_and_results_in_spans() {
    for content in [false, true] {
        let spans = fold(&mut Spans::new(RUN, content, &[]), &log());
        let text = format!("{spans:?}");
        for words in [
            "What is our latency budget?",
            "latency budget first token",
            "1.5 seconds",
        ] {
            assert_eq!(
                text.contains(words),
                content,
                "{words:?} with content={content}"
            );
        }
    }
}
