//! Reading a tool's output schema along a reference path, and naming
//! JSON types in messages.

use serde_json::Value;

use crate::plan::args::{ArgRef, PathSegment};

/// `${a.output.x[0]}` as written, for messages.
pub(super) fn render_path(r: &ArgRef) -> String {
    let mut text = format!("${{{}.output", r.step);
    for seg in &r.path {
        match seg {
            PathSegment::Key(k) => {
                text.push('.');
                text.push_str(k);
            }
            PathSegment::Index(i) => text.push_str(&format!("[{i}]")),
        }
    }
    text.push('}');
    text
}

/// The one JSON type a schema allows, if it names exactly one.
pub(super) fn simple_type(schema: &Value) -> Option<&str> {
    match schema.get("type")? {
        Value::String(t) => Some(t),
        Value::Array(types) if types.len() == 1 => types[0].as_str(),
        _ => None,
    }
}

pub(super) fn a_type(t: &str) -> String {
    match t {
        "object" | "array" | "integer" => format!("an {t}"),
        other => format!("a {other}"),
    }
}

/// Follows `path` through an output schema. `Ok(Some(schema))`: the schema
/// of the value there; `Ok(None)`: the schema cannot tell (a `$ref`, a
/// combinator, no constraint); `Err`: the schema rules the path out, said as
/// the end of a sentence ("has no field `x` …").
pub(super) fn walk_output<'s>(
    schema: &'s Value,
    path: &[PathSegment],
) -> Result<Option<&'s Value>, String> {
    const UNKNOWABLE: [&str; 7] = [
        "$ref",
        "anyOf",
        "oneOf",
        "allOf",
        "not",
        "if",
        "$dynamicRef",
    ];
    let mut current = schema;
    let mut walked = String::from("output");
    for seg in path {
        let Value::Object(obj) = current else {
            return Ok(None);
        };
        if UNKNOWABLE.iter().any(|k| obj.contains_key(*k)) {
            return Ok(None);
        }
        let types: Vec<&str> = match obj.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        match seg {
            PathSegment::Key(k) => {
                if !types.is_empty() && !types.contains(&"object") {
                    return Err(format!(
                        "says {walked} is {}, which has no field `{k}`",
                        a_type(types[0])
                    ));
                }
                let props = obj.get("properties").and_then(Value::as_object);
                if let Some(next) = props.and_then(|p| p.get(k)) {
                    current = next;
                } else {
                    match obj.get("additionalProperties") {
                        Some(extra @ Value::Object(_)) => current = extra,
                        Some(Value::Bool(true)) => return Ok(None),
                        _ if obj.contains_key("patternProperties") => return Ok(None),
                        extra
                            if extra == Some(&Value::Bool(false))
                                || (extra.is_none() && props.is_some()) =>
                        {
                            let mut known: Vec<&str> = props
                                .into_iter()
                                .flatten()
                                .map(|(n, _)| n.as_str())
                                .collect();
                            known.sort_unstable();
                            return Err(format!(
                                "has no field `{k}` in {walked} (it has: {})",
                                if known.is_empty() {
                                    "none".to_owned()
                                } else {
                                    known.join(", ")
                                }
                            ));
                        }
                        _ => return Ok(None),
                    }
                }
                walked.push('.');
                walked.push_str(k);
            }
            PathSegment::Index(i) => {
                if !types.is_empty() && !types.contains(&"array") {
                    return Err(format!(
                        "says {walked} is {}, not an array",
                        a_type(types[0])
                    ));
                }
                let prefix = obj.get("prefixItems").and_then(Value::as_array);
                match (prefix.and_then(|p| p.get(*i)), obj.get("items")) {
                    (Some(item), _) => current = item,
                    (None, Some(items @ Value::Object(_))) => current = items,
                    _ => return Ok(None),
                }
                walked.push_str(&format!("[{i}]"));
            }
        }
    }
    Ok(Some(current))
}
