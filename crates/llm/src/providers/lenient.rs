//! Lenient field readers for provider wire types. Compatible servers differ
//! in small ways (`finish_reason: ""`, `choices: null`, a number where a
//! string was expected); strict types turn each of those into a failed
//! call, so a field that is not what we expect reads as absent instead.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};
use serde_json::Value;
use stepwise_core::ModelError;

/// A non-empty string, or `None` for null, `""` or any other JSON value.
pub(crate) fn text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::String(s) if !s.is_empty() => Some(s),
        _ => None,
    })
}

/// A count, or `None` for null, negatives or anything that is not a number.
pub(crate) fn count<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::Number(n) => n.as_u64().or_else(|| {
            n.as_f64()
                .filter(|f| f.is_finite() && *f >= 0.0)
                .map(|f| f as u64)
        }),
        _ => None,
    })
}

/// The items of a list that read as `T`; null, a non-list or an item of
/// another shape are skipped (read through a `Value` first, so a bad item
/// cannot leave the outer parser half-way through the input).
pub(crate) fn list<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned,
{
    Ok(match Value::deserialize(d)? {
        Value::Array(items) => items
            .into_iter()
            .filter_map(|item| serde_json::from_value(item).ok())
            .collect(),
        _ => Vec::new(),
    })
}

/// A `T`, or `None` for null or a value of another shape.
pub(crate) fn object<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned,
{
    Ok(serde_json::from_value(Value::deserialize(d)?).ok())
}

/// Arguments as JSON; empty means none (`{}`), and text that is not JSON is
/// kept as a string for the caller to reject with a useful message.
pub(crate) fn parse_arguments(raw: &str) -> Value {
    if raw.trim().is_empty() {
        return Value::Object(serde_json::Map::new());
    }
    serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_owned()))
}

/// A whole (non-streamed) answer read as JSON; a body that is not JSON is
/// `Malformed`, quoting its start.
pub(crate) fn whole_json<T: DeserializeOwned>(body: &str) -> Result<T, ModelError> {
    serde_json::from_str(body).map_err(|e| {
        ModelError::Malformed(format!("the answer is not JSON ({e}): {}", preview(body)))
    })
}

/// The start of a body, for error messages.
pub(crate) fn preview(body: &str) -> String {
    let mut out: String = body.trim().chars().take(200).collect();
    if out.len() < body.trim().len() {
        out.push('…');
    }
    out
}
