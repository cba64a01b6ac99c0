//! The notes tools through the registry, as the engine calls them: JSON in,
//! JSON out.
// Test helpers outside #[test] fns: clippy's allow-*-in-tests does not reach them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::sync::Arc;

use serde_json::{Value, json};
use stepwise_core::{FailureClass, ToolCatalog, ToolError, ToolRegistry};
use stepwise_tools::notes::{Corpus, Note};
use stepwise_tools::{builtin_specs, register_notes_tools};

fn registry() -> ToolRegistry {
    let corpus = Corpus::load(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/notes"))
        .unwrap()
        .corpus;
    let mut registry = ToolRegistry::new();
    register_notes_tools(&mut registry, Arc::new(corpus));
    registry
}

async fn call(registry: &ToolRegistry, tool: &str, args: Value) -> Result<Value, ToolError> {
    registry
        .get(tool)
        .unwrap()
        .call_json(stepwise_core::tool::ToolContext::default(), args)
        .await
}

async fn persistent_error(registry: &ToolRegistry, tool: &str, args: Value) -> String {
    let err = call(registry, tool, args.clone()).await.unwrap_err();
    assert_eq!(err.class, FailureClass::Persistent, "{args}: {err:?}");
    err.message
}

#[tokio::test]
async fn search_notes_returns_ranked_results_with_passages() {
    let registry = registry();
    let out = call(
        &registry,
        "search_notes",
        json!({"query": "fine-tuning cost", "limit": 3}),
    )
    .await
    .unwrap();
    assert_eq!(out["query"], "fine-tuning cost");
    let results = out["results"].as_array().unwrap();
    assert_eq!(results.len(), 3);
    assert_eq!(results[0]["note_id"], "fine-tuning-cost");
    assert_eq!(results[0]["title"], "Fine-tuning cost breakdown");
    for result in results {
        let keys: Vec<_> = result.as_object().unwrap().keys().cloned().collect();
        assert_eq!(keys, ["note_id", "passages", "score", "title"]);
        assert!(result["score"].as_f64().unwrap() > 0.0);
        let passages = result["passages"].as_array().unwrap();
        assert!((1..=3).contains(&passages.len()));
    }
}

#[tokio::test]
async fn search_notes_defaults_to_five_results_and_finds_korean() {
    let registry = registry();
    let out = call(&registry, "search_notes", json!({"query": "cost"}))
        .await
        .unwrap();
    assert_eq!(out["results"].as_array().unwrap().len(), 5);

    let out = call(
        &registry,
        "search_notes",
        json!({"query": "fine-tuning cost", "limit": null}),
    )
    .await
    .unwrap();
    assert_eq!(out["results"][0]["note_id"], "fine-tuning-cost");
}

#[tokio::test]
async fn search_notes_with_no_match_returns_no_results() {
    let registry = registry();
    let out = call(&registry, "search_notes", json!({"query": "zebra"}))
        .await
        .unwrap();
    assert_eq!(out, json!({"query": "zebra", "results": []}));
}

#[tokio::test]
async fn bad_search_arguments_are_persistent_errors() {
    let registry = registry();
    let message = persistent_error(&registry, "search_notes", json!({"query": "  "})).await;
    assert!(message.starts_with("query is empty"), "{message}");
    let message = persistent_error(&registry, "search_notes", json!({"query": "the of ?"})).await;
    assert!(message.contains("no searchable words"), "{message}");
    for limit in [0, 21] {
        let message = persistent_error(
            &registry,
            "search_notes",
            json!({"query": "x", "limit": limit}),
        )
        .await;
        assert_eq!(
            message,
            format!("limit must be between 1 and 20, got {limit}")
        );
    }
    for args in [
        json!({}),
        json!({"query": 3}),
        json!({"query": "rag", "limit": -1}),
        json!({"query": "rag", "top_k": 3}),
        json!("rag"),
    ] {
        let message = persistent_error(&registry, "search_notes", args).await;
        assert!(
            message.starts_with("invalid arguments for search_notes"),
            "{message}"
        );
    }
}

#[tokio::test]
async fn read_note_returns_the_whole_note() {
    let registry = registry();
    let out = call(&registry, "read_note", json!({"id": "latency-budget"}))
        .await
        .unwrap();
    assert_eq!(out["note_id"], "latency-budget");
    assert_eq!(out["title"], "Latency budget for the support assistant");
    let text = out["text"].as_str().unwrap();
    assert!(text.starts_with("Latency budget for the support assistant\n"));
    assert!(text.contains("1.5 seconds"));
    assert_eq!(out.as_object().unwrap().len(), 3);
}

#[tokio::test]
async fn an_unknown_note_is_a_persistent_error_that_lists_ids() {
    let registry = registry();
    let message = persistent_error(&registry, "read_note", json!({"id": "nope"})).await;
    assert_eq!(
        message,
        "no note with id \"nope\"; known ids start with \"agent-feedback\", \
         \"evaluation-plan\", \"fine-tuning-cost\", \"index-upkeep\", \
         \"latency-budget\" (and 10 more; use search_notes to find one)"
    );
    let message = persistent_error(&registry, "read_note", json!({"id": "Latency-Budget"})).await;
    assert!(
        message.ends_with("did you mean \"latency-budget\"?"),
        "{message}"
    );
    let message = persistent_error(&registry, "read_note", json!({"note_id": "x"})).await;
    assert!(
        message.starts_with("invalid arguments for read_note"),
        "{message}"
    );
}

#[tokio::test]
async fn tools_over_a_small_or_empty_corpus() {
    let mut registry = ToolRegistry::new();
    let corpus = Corpus::from_notes([Note::new("only", "Only", "a single note")]).unwrap();
    register_notes_tools(&mut registry, Arc::new(corpus));
    let message = persistent_error(&registry, "read_note", json!({"id": "x"})).await;
    assert_eq!(
        message,
        "no note with id \"x\"; known ids start with \"only\""
    );

    let mut registry = ToolRegistry::new();
    register_notes_tools(&mut registry, Arc::new(Corpus::empty()));
    let message = persistent_error(&registry, "read_note", json!({"id": "x"})).await;
    assert_eq!(message, "no note with id \"x\"; the notes corpus is empty");
    let out = call(&registry, "search_notes", json!({"query": "rag"}))
        .await
        .unwrap();
    assert_eq!(out["results"], json!([]));
}

#[test]
fn builtin_specs_describe_read_only_idempotent_tools() {
    let all = builtin_specs();
    let names: Vec<_> = all.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        ["compare_results", "read_note", "search_notes", "write_file"]
    );
    let write = all.iter().find(|s| s.name == "write_file").unwrap();
    assert!(write.side_effect && write.idempotent, "{write:?}");
    let specs: Vec<_> = all
        .iter()
        .filter(|s| s.name != "write_file")
        .cloned()
        .collect();
    for spec in &specs {
        assert!(!spec.side_effect && spec.idempotent, "{spec:?}");
        assert_eq!(spec.timeout_ms, None);
        assert!(!spec.description.is_empty());
        assert_eq!(spec.args_schema["additionalProperties"], false);
    }
    // The specs do not depend on the corpus.
    assert_eq!(specs, registry().specs());
    let search = &specs
        .iter()
        .find(|s| s.name == "search_notes")
        .unwrap()
        .args_schema["properties"];
    assert!(
        search["query"]["description"]
            .as_str()
            .unwrap()
            .contains("Korean")
    );
    assert_eq!(search["limit"]["minimum"], 1);
    assert_eq!(search["limit"]["maximum"], 20);
}

#[test]
fn the_plan_validator_checks_arguments_against_the_schemas() {
    let catalog = ToolCatalog::new(builtin_specs()).unwrap();
    assert!(
        catalog
            .check_args("search_notes", &json!({"query": "rag", "limit": 3}))
            .is_empty()
    );
    assert!(
        catalog
            .check_args("read_note", &json!({"id": "a"}))
            .is_empty()
    );
    for bad in [
        json!({"query": ""}),
        json!({"query": "rag", "limit": 0}),
        json!({"query": "rag", "limit": 50}),
        json!({"query": "rag", "extra": 1}),
        json!({}),
    ] {
        assert!(
            !catalog.check_args("search_notes", &bad).is_empty(),
            "{bad}"
        );
    }
    assert!(
        !catalog
            .check_args("read_note", &json!({"id": ""}))
            .is_empty()
    );
}
