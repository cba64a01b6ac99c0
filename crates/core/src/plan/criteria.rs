//! Acceptance criteria (seed 003: criteria are data the executor checks).
//! A criterion is either free text, which needs judgement — a person's or
//! a model's — or a typed check the engine evaluates on the step's output by
//! itself, with no model call:
//!
//! ```json
//! {"check": "min_results", "path": "results", "min": 1}
//! {"check": "non_empty", "path": "summary"}
//! {"check": "field_present", "path": "results[0].note_id"}
//! {"check": "matches", "path": "status", "pattern": "^(ok|done)$"}
//! {"check": "json_schema", "schema": {"type": "object", "required": ["results"]}}
//! ```
//!
//! Paths are written as in references, below `output`: `results`,
//! `results[0].title`; empty or absent is the whole output.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::args::{parse_output_path, select};

/// One acceptance criterion of a step.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum Criterion {
    /// A check the engine evaluates without a model.
    Check(Check),
    /// What the result must show, in words: judged by the assessor.
    Text(String),
}

/// A string is a text criterion and an object a check, decided by the
/// JSON's type: what `untagged` would do, without first trying a string as
/// a check (which buffers it and builds an error to throw away, for every
/// criterion of every step the validator reads), and with the check's own
/// error when an object is not a valid check.
impl<'de> Deserialize<'de> for Criterion {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Either;
        impl<'de> serde::de::Visitor<'de> for Either {
            type Value = Criterion;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a criterion in words (a string) or a check (an object with `check`)")
            }
            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Criterion, E> {
                Ok(Criterion::Text(text.to_owned()))
            }
            fn visit_string<E: serde::de::Error>(self, text: String) -> Result<Criterion, E> {
                Ok(Criterion::Text(text))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<Criterion, A::Error> {
                Check::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(Criterion::Check)
            }
        }
        deserializer.deserialize_any(Either)
    }
}

impl From<&str> for Criterion {
    fn from(text: &str) -> Self {
        Self::Text(text.to_owned())
    }
}

impl From<String> for Criterion {
    fn from(text: String) -> Self {
        Self::Text(text)
    }
}

impl From<Check> for Criterion {
    fn from(check: Check) -> Self {
        Self::Check(check)
    }
}

impl std::fmt::Display for Criterion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Text(t) => f.write_str(t),
            Self::Check(c) => c.fmt(f),
        }
    }
}

/// A typed check on a step's output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "check", rename_all = "snake_case", deny_unknown_fields)]
pub enum Check {
    /// The array at `path` holds at least `min` items (default 1).
    MinResults {
        /// Where the array is.
        path: String,
        /// Fewest items.
        #[serde(default = "one")]
        min: usize,
    },
    /// The value at `path` is there and not null, `""`, `[]` or `{}`.
    NonEmpty {
        /// Where (empty: the whole output).
        #[serde(default)]
        path: String,
    },
    /// The output has a value at `path` (null counts).
    FieldPresent {
        /// Where.
        path: String,
    },
    /// The value at `path` is a string matching the regular expression.
    Matches {
        /// Where.
        path: String,
        /// A regular expression (Rust `regex` syntax), unanchored.
        pattern: String,
    },
    /// The value at `path` validates against a JSON Schema.
    JsonSchema {
        /// Where (empty: the whole output).
        #[serde(default)]
        path: String,
        /// The schema.
        schema: Value,
    },
}

fn one() -> usize {
    1
}

impl std::fmt::Display for Check {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let at = |p: &str| {
            if p.is_empty() {
                "the output".to_owned()
            } else {
                format!("`{p}`")
            }
        };
        match self {
            Self::MinResults { path, min } => {
                write!(f, "{} holds at least {min} item(s)", at(path))
            }
            Self::NonEmpty { path } => write!(f, "{} is not empty", at(path)),
            Self::FieldPresent { path } => write!(f, "{} is present", at(path)),
            Self::Matches { path, pattern } => write!(f, "{} matches /{pattern}/", at(path)),
            Self::JsonSchema { path, .. } => write!(f, "{} fits its JSON Schema", at(path)),
        }
    }
}

impl Check {
    /// Why the check cannot be evaluated at all (a bad path, pattern or
    /// schema), for the validator; `None` if it is well formed.
    pub fn problem(&self) -> Option<String> {
        let path = match self {
            Self::MinResults { path, .. }
            | Self::NonEmpty { path }
            | Self::FieldPresent { path }
            | Self::Matches { path, .. }
            | Self::JsonSchema { path, .. } => path,
        };
        if let Err(e) = parse_output_path(path) {
            return Some(format!("bad path {path:?}: {}", e.reason));
        }
        match self {
            Self::Matches { pattern, .. } => regex::Regex::new(pattern)
                .err()
                .map(|e| format!("bad pattern: {e}")),
            Self::JsonSchema { schema, .. } => jsonschema::validator_for(schema)
                .err()
                .map(|e| format!("bad schema: {e}")),
            _ => None,
        }
    }

    /// Evaluates the check on a step's output: `Ok` if it holds, else why not.
    pub fn evaluate(&self, output: &Value) -> Result<(), String> {
        let at = |path: &str| -> Result<Option<&Value>, String> {
            let segments = parse_output_path(path).map_err(|e| e.reason)?;
            Ok(select(output, &segments))
        };
        match self {
            Self::MinResults { path, min } => match at(path)? {
                Some(Value::Array(items)) if items.len() >= *min => Ok(()),
                Some(Value::Array(items)) => Err(format!(
                    "`{path}` holds {} item(s), fewer than {min}",
                    items.len()
                )),
                Some(other) => Err(format!("`{path}` is not a list: {}", kind(other))),
                None => Err(format!("the output has no `{path}`")),
            },
            Self::NonEmpty { path } => match at(path)? {
                None | Some(Value::Null) => Err(format!("{self}: it is missing")),
                Some(Value::String(s)) if s.trim().is_empty() => {
                    Err(format!("{self}: it is an empty string"))
                }
                Some(Value::Array(a)) if a.is_empty() => {
                    Err(format!("{self}: it is an empty list"))
                }
                Some(Value::Object(o)) if o.is_empty() => {
                    Err(format!("{self}: it is an empty object"))
                }
                Some(_) => Ok(()),
            },
            Self::FieldPresent { path } => match at(path)? {
                Some(_) => Ok(()),
                None => Err(format!("the output has no `{path}`")),
            },
            Self::Matches { path, pattern } => {
                let re = regex::Regex::new(pattern).map_err(|e| format!("bad pattern: {e}"))?;
                match at(path)? {
                    Some(Value::String(s)) if re.is_match(s) => Ok(()),
                    Some(Value::String(s)) => Err(format!(
                        "`{path}` is {s:?}, which does not match /{pattern}/"
                    )),
                    Some(other) => Err(format!("`{path}` is not text: {}", kind(other))),
                    None => Err(format!("the output has no `{path}`")),
                }
            }
            Self::JsonSchema { path, schema } => {
                let validator =
                    jsonschema::validator_for(schema).map_err(|e| format!("bad schema: {e}"))?;
                let value = at(path)?.ok_or_else(|| format!("the output has no `{path}`"))?;
                let errors: Vec<String> = validator
                    .iter_errors(value)
                    .take(3)
                    .map(|e| format!("{}: {e}", e.instance_path()))
                    .collect();
                if errors.is_empty() {
                    Ok(())
                } else {
                    Err(format!("does not fit its schema: {}", errors.join("; ")))
                }
            }
        }
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "text",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// The typed checks of a list of criteria, if every criterion is one: then
/// the engine can decide acceptance alone.
pub fn all_typed(criteria: &[Criterion]) -> Option<Vec<&Check>> {
    criteria
        .iter()
        .map(|c| match c {
            Criterion::Check(check) => Some(check),
            Criterion::Text(_) => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    fn check(v: Value) -> Check {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn criteria_read_as_text_or_typed_checks() {
        let cs: Vec<Criterion> = serde_json::from_value(json!([
            "a passage about latency",
            {"check": "min_results", "path": "results"}
        ]))
        .unwrap();
        assert_eq!(cs[0], Criterion::Text("a passage about latency".into()));
        assert_eq!(
            cs[1],
            Criterion::Check(Check::MinResults {
                path: "results".into(),
                min: 1
            })
        );
        assert!(all_typed(&cs).is_none());
        assert_eq!(all_typed(&cs[1..]).map(|v| v.len()), Some(1));
        // An unknown check or field is not silently text.
        assert!(serde_json::from_value::<Criterion>(json!({"check": "nosuch"})).is_err());
        let unknown_field =
            serde_json::from_value::<Criterion>(json!({"check": "non_empty", "pth": "x"}))
                .unwrap_err()
                .to_string();
        assert!(unknown_field.contains("pth"), "{unknown_field}");
        // Neither a string nor an object.
        let number = serde_json::from_value::<Criterion>(json!(3))
            .unwrap_err()
            .to_string();
        assert!(number.contains("a criterion in words"), "{number}");
        // What is written reads back the same, from JSON text too.
        let text = serde_json::to_string(&cs).unwrap();
        assert_eq!(serde_json::from_str::<Vec<Criterion>>(&text).unwrap(), cs);
    }

    #[test]
    fn each_check_holds_or_says_why_not() {
        let out = json!({"results": [{"note_id": "a", "title": "Latency"}], "status": "ok", "summary": ""});
        let table: Vec<(Value, bool, &str)> = vec![
            (json!({"check": "min_results", "path": "results"}), true, ""),
            (
                json!({"check": "min_results", "path": "results", "min": 2}),
                false,
                "fewer than 2",
            ),
            (
                json!({"check": "min_results", "path": "status"}),
                false,
                "not a list",
            ),
            (
                json!({"check": "min_results", "path": "hits"}),
                false,
                "no `hits`",
            ),
            (
                json!({"check": "non_empty", "path": "summary"}),
                false,
                "empty string",
            ),
            (json!({"check": "non_empty"}), true, ""),
            (
                json!({"check": "field_present", "path": "results[0].note_id"}),
                true,
                "",
            ),
            (
                json!({"check": "field_present", "path": "results[1]"}),
                false,
                "no `results[1]`",
            ),
            (
                json!({"check": "matches", "path": "status", "pattern": "^(ok|done)$"}),
                true,
                "",
            ),
            (
                json!({"check": "matches", "path": "status", "pattern": "^done$"}),
                false,
                "does not match",
            ),
            (
                json!({"check": "json_schema", "schema": {"type": "object", "required": ["results"]}}),
                true,
                "",
            ),
            (
                json!({"check": "json_schema", "path": "results", "schema": {"type": "array", "maxItems": 0}}),
                false,
                "schema",
            ),
        ];
        for (c, holds, why) in table {
            let result = check(c.clone()).evaluate(&out);
            assert_eq!(result.is_ok(), holds, "{c}: {result:?}");
            if let Err(e) = result {
                assert!(e.contains(why), "{c}: {e}");
            }
        }
    }

    #[test]
    fn malformed_checks_are_named_for_the_validator() {
        assert!(
            check(json!({"check": "matches", "path": "a", "pattern": "("}))
                .problem()
                .is_some()
        );
        assert!(
            check(json!({"check": "field_present", "path": "a[x]"}))
                .problem()
                .is_some()
        );
        assert!(
            check(json!({"check": "json_schema", "schema": {"type": 12}}))
                .problem()
                .is_some()
        );
        assert!(
            check(json!({"check": "non_empty", "path": "a.b[0]"}))
                .problem()
                .is_none()
        );
    }
}
