//! Structured output: a model answer turned into a typed value, whatever the
//! provider's JSON mode does. Providers with a real JSON mode return clean
//! JSON; others wrap it in prose or ``` fences, so the JSON is extracted from
//! the text, checked against the request's schema and deserialised. A bad
//! answer gets exactly one repair round-trip — the model is shown its answer
//! and the exact error — because a second guess usually fixes a typo, and a
//! third rarely fixes anything a second did not. Nothing a model says can make
//! this panic.

use serde::de::DeserializeOwned;
use serde_json::Value;
use stepwise_core::model::{ExchangeOutcome, ModelExchange};
use stepwise_core::roles::{RoleError, RoleName};
use stepwise_core::{ChatModel, ChatRequest, ChatResponse, FinishReason, Message, Usage};

use crate::call::{CallPolicy, TextSink, call_streaming};

/// Most start positions tried when looking for JSON inside prose: bounds the
/// work a pathological answer (thousands of `{`) can cause.
const MAX_CANDIDATES: usize = 2_000;
/// Most schema violations quoted back to the model.
const MAX_SCHEMA_ERRORS: usize = 5;
/// Most characters of a bad answer sent back in the repair round-trip.
const MAX_ECHO_CHARS: usize = 8_000;

/// How strictly an answer is checked before it is deserialised.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// Against `request.response_schema` (when set), then by deserialising.
    Schema,
    /// Only that it is a JSON object or array that deserialises. For plans:
    /// the engine's validator reports a plan's problems far better than a
    /// schema error would, and the repairer fixes them.
    ParseOnly,
}

/// Asks `model` for a JSON answer matching `request.response_schema` and
/// returns it as `T`, with the usage of every response (one repair
/// round-trip included).
///
/// Exchanges: on success, every attempt is in `log`; on error, everything in
/// `log` is moved into the [`RoleError`], so recording the error records them,
/// and the error's `usage` holds what the answers received so far cost (a
/// malformed answer is paid for like any other).
pub async fn structured<T: DeserializeOwned>(
    model: &dyn ChatModel,
    request: &ChatRequest,
    policy: &CallPolicy,
    role: RoleName,
    log: &mut Vec<ModelExchange>,
) -> Result<(T, Usage), RoleError> {
    structured_with(model, request, policy, role, log, Check::Schema).await
}

/// [`structured`] with a choice of [`Check`].
pub async fn structured_with<T: DeserializeOwned>(
    model: &dyn ChatModel,
    request: &ChatRequest,
    policy: &CallPolicy,
    role: RoleName,
    log: &mut Vec<ModelExchange>,
    check: Check,
) -> Result<(T, Usage), RoleError> {
    structured_streaming(model, request, policy, role, log, check, None).await
}

/// [`structured_with`], handing the text of every answer (each attempt,
/// the repair round-trip included) to `sink` as it streams in.
pub async fn structured_streaming<T: DeserializeOwned>(
    model: &dyn ChatModel,
    request: &ChatRequest,
    policy: &CallPolicy,
    role: RoleName,
    log: &mut Vec<ModelExchange>,
    check: Check,
    mut sink: Option<&mut (dyn TextSink + '_)>,
) -> Result<(T, Usage), RoleError> {
    let validator = match (check, &request.response_schema) {
        (Check::Schema, Some(schema)) => match jsonschema::validator_for(&schema.schema) {
            Ok(v) => Some(v),
            Err(e) => {
                return Err(failed(
                    role,
                    stepwise_core::FailureClass::Persistent,
                    format!(
                        "the response schema {:?} does not compile: {e}",
                        schema.name
                    ),
                    log,
                    Usage::default(),
                ));
            }
        },
        _ => None,
    };
    let mut usage = Usage::default();
    let mut request = request.clone();
    let mut round = 1;
    loop {
        let response = match call_streaming(model, &request, policy, log, sink.as_deref_mut()).await
        {
            Ok(r) => r,
            Err(e) => {
                let attempts = log.iter().rev().take_while(|x| is_error(x)).count();
                let message = match e.class() {
                    stepwise_core::FailureClass::Transient => {
                        format!("the model kept failing after {attempts} attempt(s): {e}")
                    }
                    _ => format!("the model call failed: {e}"),
                };
                return Err(failed(role, e.class(), message, log, usage));
            }
        };
        usage += Usage {
            llm_calls: 1,
            ..response.usage
        };
        if is_empty(&response) {
            if round == 1 {
                // Asked again without echoing the nothing it said.
                round += 1;
                request.messages.push(Message::user(
                    "Your answer was empty. Answer with only a JSON object matching the schema.",
                ));
                continue;
            }
            // Said as such, not as a plan or schema problem with "".
            return Err(failed(
                role,
                stepwise_core::FailureClass::Persistent,
                format!(
                    "the model returned an empty answer (asked twice{})",
                    why_empty(&response.finish_reason)
                ),
                log,
                usage,
            ));
        }
        let (raw, parsed) = answer_of(&response);
        let outcome = parsed.and_then(|value| {
            if let Some(validator) = &validator {
                let errors: Vec<String> = validator
                    .iter_errors(&value)
                    .take(MAX_SCHEMA_ERRORS)
                    .map(|e| {
                        let path = e.instance_path().as_str();
                        let path = if path.is_empty() { "/" } else { path };
                        format!("at {path}: {e}")
                    })
                    .collect();
                if !errors.is_empty() {
                    return Err(format!(
                        "it does not match the schema ({})",
                        errors.join("; ")
                    ));
                }
            }
            serde_json::from_value::<T>(value)
                .map_err(|e| format!("it does not have the expected shape: {e}"))
        });
        match outcome {
            Ok(value) => return Ok((value, usage)),
            Err(error) if round == 1 => {
                round += 1;
                // Echo a huge answer only in part: the error says what was wrong.
                let echo: String = raw.chars().take(MAX_ECHO_CHARS).collect();
                request.messages.push(Message::assistant(echo));
                request.messages.push(Message::user(format!(
                    "Your answer was not valid: {error}. Answer again with only a JSON \
                     object matching the schema."
                )));
            }
            Err(error) => {
                return Err(RoleError::Malformed {
                    role,
                    message: format!("the answer was not valid twice; last time {error}"),
                    raw: Some(raw),
                    exchanges: std::mem::take(log),
                    usage,
                });
            }
        }
    }
}

/// No text (whitespace aside) and no tool call.
fn is_empty(response: &ChatResponse) -> bool {
    response.text.trim().is_empty() && response.tool_calls.is_empty()
}

/// What the finish reason says about an empty answer.
fn why_empty(reason: &FinishReason) -> String {
    match reason {
        FinishReason::Stop => String::new(),
        FinishReason::Length => "; it stopped at the token limit: raise max_tokens, or the \
                                 model spent them on reasoning"
            .to_owned(),
        FinishReason::ContentFilter => "; the provider's content filter stopped it".to_owned(),
        FinishReason::ToolCalls => "; it said it was calling tools but called none".to_owned(),
        FinishReason::Other(other) => format!("; finish reason {other:?}"),
    }
}

fn is_error(exchange: &ModelExchange) -> bool {
    matches!(exchange.outcome, ExchangeOutcome::Error { .. })
}

fn failed(
    role: RoleName,
    class: stepwise_core::FailureClass,
    message: String,
    log: &mut Vec<ModelExchange>,
    usage: Usage,
) -> RoleError {
    RoleError::Failed {
        exchanges: std::mem::take(log),
        usage,
        role,
        class,
        message,
    }
}

/// The raw answer (for the repair message and the error) and its JSON.
/// An answer given as a tool call (how some providers do structured output)
/// counts when the text holds no JSON.
fn answer_of(response: &ChatResponse) -> (String, Result<Value, String>) {
    let from_text = extract_json(&response.text);
    if from_text.is_err()
        && let Some(call) = response
            .tool_calls
            .iter()
            .find(|c| c.arguments.is_object() || c.arguments.is_array())
    {
        let raw = call.arguments.to_string();
        return (raw, Ok(call.arguments.clone()));
    }
    let from_text = from_text.map_err(|e| {
        if response.finish_reason == FinishReason::Length {
            format!("{e} (the answer was cut off at the token limit; answer more briefly)")
        } else {
            e
        }
    });
    (response.text.clone(), from_text)
}

/// Finds the JSON object or array in a model's answer: the whole text if it
/// parses, else the content of a ``` fence, else the longest JSON value found
/// by scanning from each `{` or `[` (so a stray `[1]` in prose loses to the
/// real answer). The error says what was wrong, for the repair message.
pub fn extract_json(text: &str) -> Result<Value, String> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err("the answer was empty".to_owned());
    }
    if let Ok(v) = serde_json::from_str::<Value>(trimmed)
        && is_container(&v)
    {
        return Ok(v);
    }
    for block in fenced_blocks(trimmed) {
        if let Ok(v) = serde_json::from_str::<Value>(block.trim())
            && is_container(&v)
        {
            return Ok(v);
        }
    }
    longest_embedded(trimmed).ok_or_else(|| match serde_json::from_str::<Value>(trimmed) {
        Ok(_) => "it is JSON but not an object".to_owned(),
        Err(e) if trimmed.starts_with(['{', '[']) => format!("it is not valid JSON ({e})"),
        Err(_) => "it contains no JSON object".to_owned(),
    })
}

fn is_container(v: &Value) -> bool {
    v.is_object() || v.is_array()
}

/// The contents of ``` fenced blocks, info strings (`json`) dropped.
fn fenced_blocks(text: &str) -> Vec<&str> {
    let mut blocks = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find("```") {
        let after = &rest[open + 3..];
        // Skip the info string up to the end of the line.
        let body_start = after.find('\n').map_or(after.len(), |i| i + 1);
        let body = &after[body_start..];
        match body.find("```") {
            Some(close) => {
                blocks.push(&body[..close]);
                rest = &body[close + 3..];
            }
            None => {
                // An unclosed fence (a cut-off answer): take the rest.
                blocks.push(body);
                break;
            }
        }
    }
    blocks
}

/// The longest JSON object or array starting at some `{` or `[` of `text`.
fn longest_embedded(text: &str) -> Option<Value> {
    let mut best: Option<(usize, Value)> = None;
    let mut next_allowed = 0;
    for (tried, (start, _)) in text
        .char_indices()
        .filter(|(_, c)| matches!(c, '{' | '['))
        .enumerate()
    {
        if tried >= MAX_CANDIDATES {
            break;
        }
        if start < next_allowed {
            // Inside a value already found: it cannot be longer.
            continue;
        }
        let mut stream = serde_json::Deserializer::from_str(&text[start..]).into_iter::<Value>();
        if let Some(Ok(value)) = stream.next() {
            let len = stream.byte_offset();
            next_allowed = start + len;
            if best.as_ref().is_none_or(|(l, _)| len > *l) {
                best = Some((len, value));
            }
        }
    }
    best.map(|(_, v)| v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::script::{ScriptEntry, ScriptErrorKind, ScriptModel};
    use serde_json::json;
    use stepwise_core::{ResponseSchema, RetryPolicy};

    fn policy() -> CallPolicy {
        CallPolicy {
            retry: RetryPolicy {
                max_attempts: 2,
                initial_delay_ms: 1,
                max_delay_ms: 1,
                ..RetryPolicy::default()
            },
            timeout_ms: 1_000,
        }
    }

    fn request() -> ChatRequest {
        ChatRequest {
            purpose: "assessor".to_owned(),
            messages: vec![Message::user("judge")],
            response_schema: Some(ResponseSchema {
                name: "pair".to_owned(),
                schema: json!({
                    "type": "object",
                    "required": ["a"],
                    "properties": {"a": {"type": "integer"}}
                }),
            }),
            ..ChatRequest::default()
        }
    }

    #[derive(Debug, serde::Deserialize)]
    struct Pair {
        a: i64,
    }

    #[test]
    fn extracts_json_from_fences_and_prose() {
        assert_eq!(extract_json("{\"a\":1}"), Ok(json!({"a": 1})));
        assert_eq!(
            extract_json("Sure:\n```json\n{\"a\": 2}\n```\nDone."),
            Ok(json!({"a": 2}))
        );
        assert_eq!(
            extract_json("See [1]. The plan is {\"steps\": [{\"id\": \"s\"}]} ok"),
            Ok(json!({"steps": [{"id": "s"}]}))
        );
        assert_eq!(extract_json("```\n[1, 2]"), Ok(json!([1, 2])));
        assert!(extract_json("").is_err());
        assert!(extract_json("42").is_err());
        assert!(extract_json("{\"a\": ").is_err());
    }

    #[test]
    fn junk_never_panics() {
        let junk = [
            "{",
            "}",
            "[",
            "]",
            "{{{{",
            "[[[[",
            "```",
            "``````",
            "```json",
            "\u{0}",
            "{\"a\":\"\\u",
            "é{ü[",
            "{\"a\": 1e999999}",
            "][}{",
            "null",
            "\"str\"",
            "🙂{🙂}",
        ];
        for j in junk {
            let _ = extract_json(j);
        }
        let deep = "[".repeat(10_000);
        assert!(extract_json(&deep).is_err());
        let many = "{".repeat(50_000);
        assert!(extract_json(&many).is_err());
        let mut seed: u64 = 7;
        for _ in 0..500 {
            let s: String = (0..64)
                .map(|_| {
                    seed = seed
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let pool = b"{}[]\":,a1 `\\n";
                    char::from(pool[(seed >> 33) as usize % pool.len()])
                })
                .collect();
            let _ = extract_json(&s);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn one_repair_round_trip_then_malformed() {
        let model = ScriptModel::from_entries(vec![
            ScriptEntry::text("not json").with_usage(7, 3),
            ScriptEntry::text("{\"a\": \"x\"}").with_usage(5, 1),
        ]);
        let mut log = Vec::new();
        let err = structured::<Pair>(&model, &request(), &policy(), RoleName::Assessor, &mut log)
            .await
            .unwrap_err();
        match err {
            RoleError::Malformed {
                raw,
                exchanges,
                usage,
                ..
            } => {
                assert_eq!(raw.as_deref(), Some("{\"a\": \"x\"}"));
                assert_eq!(exchanges.len(), 2);
                let want = Usage {
                    llm_calls: 2,
                    input_tokens: 12,
                    output_tokens: 4,
                    ..Usage::default()
                };
                assert_eq!(usage, want, "both unusable answers are paid for");
                assert_eq!(usage, stepwise_core::model::usage_of(&exchanges));
                let second = &exchanges[1].request.messages;
                assert!(second[2].content.starts_with("Your answer was not valid:"));
            }
            other => panic!("{other:?}"),
        }
        assert!(log.is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn repaired_answer_is_used_and_usage_summed() {
        let model = ScriptModel::from_entries(vec![
            ScriptEntry::text("{\"b\": 1}").with_usage(10, 2),
            ScriptEntry::text("```json\n{\"a\": 3}\n```").with_usage(12, 3),
        ]);
        let mut log = Vec::new();
        let (pair, usage) =
            structured::<Pair>(&model, &request(), &policy(), RoleName::Assessor, &mut log)
                .await
                .unwrap();
        assert_eq!(pair.a, 3);
        assert_eq!(usage.llm_calls, 2);
        assert_eq!((usage.input_tokens, usage.output_tokens), (22, 5));
        assert_eq!(log.len(), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn model_errors_are_classified() {
        let transient = ScriptModel::from_entries(vec![
            ScriptEntry::error(ScriptErrorKind::Server),
            ScriptEntry::error(ScriptErrorKind::Timeout),
        ]);
        let mut log = Vec::new();
        let err = structured::<Pair>(
            &transient,
            &request(),
            &policy(),
            RoleName::Planner,
            &mut log,
        )
        .await
        .unwrap_err();
        assert!(matches!(
            &err,
            RoleError::Failed { class: stepwise_core::FailureClass::Transient, exchanges, message, .. }
                if exchanges.len() == 2 && message.contains("2 attempt(s)")
        ));
        let mut auth = ScriptEntry::error(ScriptErrorKind::Auth);
        if let Some(e) = auth.error.as_mut() {
            e.fix = Some("set OPENAI_API_KEY".to_owned());
        }
        let auth = ScriptModel::from_entries(vec![auth]);
        let err = structured::<Pair>(&auth, &request(), &policy(), RoleName::Planner, &mut log)
            .await
            .unwrap_err();
        assert!(matches!(
            &err,
            RoleError::Failed { class: stepwise_core::FailureClass::Persistent, exchanges, message, .. }
                if exchanges.len() == 1 && message.contains("set OPENAI_API_KEY")
        ));
    }

    #[tokio::test(start_paused = true)]
    async fn an_empty_answer_is_asked_again_then_named_as_such() {
        let model = ScriptModel::from_entries(vec![
            ScriptEntry::text("").with_usage(9, 0),
            ScriptEntry::text(" \n").with_usage(9, 0),
        ]);
        let mut log = Vec::new();
        let err = structured_with::<Value>(
            &model,
            &request(),
            &policy(),
            RoleName::Planner,
            &mut log,
            Check::ParseOnly,
        )
        .await
        .unwrap_err();
        let RoleError::Failed {
            message,
            exchanges,
            usage,
            ..
        } = &err
        else {
            panic!("{err:?}");
        };
        assert!(
            message.contains("the model returned an empty answer"),
            "{message}"
        );
        assert!(
            err.to_string().contains("empty answer") && !err.to_string().contains("string"),
            "{err}"
        );
        assert_eq!((exchanges.len(), usage.llm_calls), (2, 2));
        let second = &exchanges[1].request.messages;
        assert_eq!(second.len(), 2, "no empty assistant turn echoed");
        assert!(second[1].content.starts_with("Your answer was empty."));

        let model =
            ScriptModel::from_entries(vec![ScriptEntry::text(""), ScriptEntry::text("{\"a\": 4}")]);
        let (pair, usage) =
            structured::<Pair>(&model, &request(), &policy(), RoleName::Assessor, &mut log)
                .await
                .unwrap();
        assert_eq!((pair.a, usage.llm_calls), (4, 2));
    }

    #[tokio::test(start_paused = true)]
    async fn parse_only_accepts_any_container() {
        let model = ScriptModel::from_entries(vec![ScriptEntry::text("[{\"x\": 1}]")]);
        let mut log = Vec::new();
        let (v, _) = structured_with::<Value>(
            &model,
            &request(),
            &policy(),
            RoleName::Planner,
            &mut log,
            Check::ParseOnly,
        )
        .await
        .unwrap();
        assert_eq!(v, json!([{"x": 1}]));
    }
}
