//! Reading the JSON inputs of a command (plan, tools, constraints), each
//! failure turned into one clear line naming the file.

use std::io::{self, Read};
use std::path::Path;

use anyhow::{Context, anyhow, bail};
use serde_json::Value;
use stepwise_core::{Constraints, ToolSpec};

/// A JSON document and the name to call it by in messages.
#[derive(Debug)]
pub(crate) struct Document {
    /// The path as the user gave it, or `<stdin>`.
    pub(crate) name: String,
    pub(crate) value: Value,
}

/// An I/O error's message without the `(os error N)` suffix.
fn io_message(e: &io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error ") {
        Some(at) if text.ends_with(')') => text[..at].to_owned(),
        _ => text,
    }
}

fn read_bytes(path: &Path) -> anyhow::Result<(String, Vec<u8>)> {
    if path.as_os_str() == "-" {
        let mut bytes = Vec::new();
        io::stdin()
            .lock()
            .read_to_end(&mut bytes)
            .map_err(|e| anyhow!("cannot read standard input: {}", io_message(&e)))?;
        return Ok(("<stdin>".to_owned(), bytes));
    }
    let name = path.display().to_string();
    match std::fs::read(path) {
        Ok(bytes) => Ok((name, bytes)),
        Err(e) => bail!("cannot read {name}: {}", io_message(&e)),
    }
}

/// Reads and parses a JSON file (`-` is standard input).
pub(crate) fn read_json(path: &Path) -> anyhow::Result<Document> {
    let (name, bytes) = read_bytes(path)?;
    let value = serde_json::from_slice(&bytes).map_err(|e| anyhow!("{name} is not JSON: {e}"))?;
    Ok(Document { name, value })
}

/// Tool specs from a tools file: an array of specs or `{"tools": [...]}`.
pub(crate) fn read_tools(path: &Path) -> anyhow::Result<Vec<ToolSpec>> {
    let Document { name, value } = read_json(path)?;
    parse_tools(value).with_context(|| format!("{name} is not a valid tools file"))
}

fn parse_tools(value: Value) -> anyhow::Result<Vec<ToolSpec>> {
    let items = match value {
        Value::Array(items) => items,
        Value::Object(mut obj) => match obj.remove("tools") {
            Some(Value::Array(items)) => items,
            _ => bail!(r#"expected an array of tool specs or an object {{"tools": [...]}}"#),
        },
        _ => bail!(r#"expected an array of tool specs or an object {{"tools": [...]}}"#),
    };
    items
        .into_iter()
        .enumerate()
        .map(|(i, item)| {
            let label = item
                .get("name")
                .and_then(Value::as_str)
                .map_or_else(|| format!("tool #{}", i + 1), |n| format!("tool {n:?}"));
            serde_json::from_value::<ToolSpec>(item).with_context(|| label)
        })
        .collect()
}

/// Constraints from inline JSON (starting with `{`) or from a JSON file.
pub(crate) fn read_constraints(arg: &str) -> anyhow::Result<Constraints> {
    let Document { name, value } = if arg.trim_start().starts_with('{') {
        let value =
            serde_json::from_str(arg).map_err(|e| anyhow!("--constraints is not JSON: {e}"))?;
        Document {
            name: "--constraints".to_owned(),
            value,
        }
    } else {
        read_json(Path::new(arg))?
    };
    if !value.is_object() {
        bail!("{name} must be a JSON object of constraints");
    }
    let constraints: Constraints =
        serde_json::from_value(value).with_context(|| format!("{name} has invalid constraints"))?;
    check_keys(&name, &constraints)?;
    Ok(constraints)
}

/// Refuses constraint keys stepwise does not know: a misspelt one would
/// otherwise be ignored without a word. Names each, a close match if there
/// is one, and the valid keys.
pub(crate) fn check_keys(name: &str, constraints: &Constraints) -> anyhow::Result<()> {
    if constraints.extra.is_empty() {
        return Ok(());
    }
    let mut keys: Vec<&String> = constraints.extra.keys().collect();
    keys.sort();
    let unknown: Vec<String> = keys
        .into_iter()
        .map(|key| match closest(key, &Constraints::KEYS) {
            Some(close) => format!("`{key}` (did you mean `{close}`?)"),
            None => format!("`{key}`"),
        })
        .collect();
    let valid: Vec<String> = Constraints::KEYS.iter().map(|k| format!("`{k}`")).collect();
    bail!(
        "{name} has unknown constraint key{} {}; expected one of {}",
        if unknown.len() == 1 { "" } else { "s" },
        unknown.join(", "),
        valid.join(", ")
    )
}

/// The candidate nearest to `word` in edits, if it is near enough to be a
/// slip (at most a third of the word's length, and at least 1).
pub(crate) fn closest<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let word = word.to_lowercase();
    let limit = (word.chars().count() / 3).max(1);
    candidates
        .iter()
        .map(|c| (edits(&word, c), *c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// Levenshtein distance, over characters.
fn edits(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = if ca == *cb {
                diagonal
            } else {
                1 + diagonal.min(above).min(row[j])
            };
            diagonal = above;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    #[test]
    fn tools_come_as_an_array_or_an_object() {
        let spec = json!({"name": "t", "description": "d"});
        assert_eq!(parse_tools(json!([spec.clone()])).unwrap().len(), 1);
        assert_eq!(parse_tools(json!({"tools": [spec]})).unwrap().len(), 1);
        assert!(parse_tools(json!({"tool": []})).is_err());
        assert!(parse_tools(json!("t")).is_err());
    }

    #[test]
    fn a_bad_spec_is_named() {
        let err = parse_tools(json!([{"name": "t"}])).unwrap_err();
        assert_eq!(
            format!("{err:#}"),
            "tool \"t\": missing field `description`"
        );
        let err = parse_tools(json!([{"description": "d"}, 3])).unwrap_err();
        assert!(format!("{err:#}").starts_with("tool #1: "), "{err:#}");
    }

    #[test]
    fn os_error_codes_are_dropped() {
        let e = io::Error::from_raw_os_error(2);
        assert!(!io_message(&e).contains("os error"), "{}", io_message(&e));
    }

    #[test]
    fn unknown_constraint_keys_are_refused_with_a_close_match() {
        let err = read_constraints(r#"{"comparision_dimensions": ["cost"]}"#).unwrap_err();
        let text = format!("{err:#}");
        assert!(
            text.starts_with("--constraints has unknown constraint key `comparision_dimensions` (did you mean `comparison_dimensions`?); expected one of `audience`"),
            "{text}"
        );
        let err = read_constraints(r#"{"tone": "dry", "max_step": 3}"#).unwrap_err();
        let text = format!("{err:#}");
        assert!(
            text.contains("keys `max_step` (did you mean `max_steps`?), `tone`;"),
            "{text}"
        );
    }

    #[test]
    fn close_matches_are_slips_only() {
        assert_eq!(closest("lenght", &Constraints::KEYS), Some("length"));
        assert_eq!(closest("AUDIENCE", &Constraints::KEYS), Some("audience"));
        assert_eq!(closest("tone", &Constraints::KEYS), None);
        assert_eq!(edits("kitten", "sitting"), 3);
        assert_eq!(edits("", "ab"), 2);
    }

    #[test]
    fn inline_constraints() {
        let c = read_constraints(r#"{"forbid_side_effects": true, "max_steps": 3}"#).unwrap();
        assert!(c.forbid_side_effects);
        assert_eq!(c.max_steps, Some(3));
        assert!(read_constraints("{nope").is_err());
        assert!(read_constraints(r#"{"max_steps": "three"}"#).is_err());
    }
}
