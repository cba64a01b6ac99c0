//! References from a step's arguments to earlier results, resolved at
//! dispatch (ReWOO / LLMCompiler style).
//!
//! Syntax, inside any JSON string of `args` or a precondition's `ref`:
//! - `"$step_1"` or `"${step_1}"` — the whole string is replaced by step_1's
//!   output, keeping its JSON type;
//! - `"${step_1.output.items[0].title}"` — a path into step_1's result record,
//!   which has one field, `output`; `.key` selects a field, `[n]` an element;
//! - `"Compare ${step_1.output.summary} with ${step_2}"` — references inside
//!   longer text are interpolated: strings as they are, other values as JSON;
//! - `"$$"` at the start or `"$${"` anywhere escapes a literal `$` / `${`.
//!
//! A step id starts with a letter or `_` and continues with letters, digits, `_` or `-`.
//!
//! An argument may also be left **open**: `{"$open": "what to fill in"}` as
//! the whole value of a top-level key of `args`. A model step executor fills
//! it in at dispatch from the step's isolated context; the text inside is a
//! hint for it, never a reference. See [`open_args`].

use std::collections::BTreeMap;

use serde_json::Value;

use crate::ids::StepId;

/// One parsed reference: a step and a path into its result record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgRef {
    /// The referenced step.
    pub step: StepId,
    /// Path below the step's `output` (empty: the whole output).
    pub path: Vec<PathSegment>,
}

/// One segment of a reference path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathSegment {
    /// `.name`
    Key(String),
    /// `[n]`
    Index(usize),
}

/// A reference that cannot be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed reference {text:?}: {reason}")]
pub struct RefSyntaxError {
    /// The offending text.
    pub text: String,
    /// What is wrong with it.
    pub reason: String,
}

/// A reference that cannot be resolved against the results at hand.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    /// The syntax is wrong.
    #[error(transparent)]
    Syntax(#[from] RefSyntaxError),
    /// The referenced step has no recorded result.
    #[error("reference to {0} but {0} has no result")]
    NoResult(StepId),
    /// The path does not exist in the result.
    #[error("reference {reference:?}: {step}'s output has nothing at {path}")]
    MissingPath {
        /// The reference as written.
        reference: String,
        /// The referenced step.
        step: StepId,
        /// The part of the path that was found missing.
        path: String,
    },
}

/// A parsed string: either a single whole-value reference, or text with
/// interpolated references.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Template {
    Whole(ArgRef),
    Parts(Vec<Part>),
    /// No reference, but escapes to undo (`$$HOME` is `$HOME`).
    Literal(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Text(String),
    Ref(ArgRef),
}

fn is_id_start(c: char) -> bool {
    c.is_alphabetic() || c == '_'
}

fn is_id_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '-'
}

fn syntax(text: &str, reason: impl Into<String>) -> RefSyntaxError {
    RefSyntaxError {
        text: text.to_owned(),
        reason: reason.into(),
    }
}

/// Parses the inside of `${...}`.
fn parse_braced(inner: &str, whole: &str) -> Result<ArgRef, RefSyntaxError> {
    let id_end = inner.find(|c: char| !is_id_char(c)).unwrap_or(inner.len());
    let id = &inner[..id_end];
    if id.is_empty() || !id.starts_with(is_id_start) {
        return Err(syntax(whole, "expected a step id after `${`"));
    }
    let raw = parse_segments(&inner[id_end..], whole)?;
    let mut segments = raw.into_iter();
    match segments.next() {
        None => {}
        Some(PathSegment::Key(k)) if k == "output" => {}
        Some(_) => {
            return Err(syntax(
                whole,
                format!("paths start at `output`, e.g. ${{{id}.output.items}}"),
            ));
        }
    }
    Ok(ArgRef {
        step: StepId::new(id),
        path: segments.collect(),
    })
}

/// Parses `.key` and `[n]` segments (`whole` is named in errors).
fn parse_segments(mut rest: &str, whole: &str) -> Result<Vec<PathSegment>, RefSyntaxError> {
    let mut raw = Vec::new();
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            let key = &after[..end];
            if key.is_empty() {
                return Err(syntax(whole, "empty field name after `.`"));
            }
            raw.push(PathSegment::Key(key.to_owned()));
            rest = &after[end..];
        } else if let Some(after) = rest.strip_prefix('[') {
            let end = after
                .find(']')
                .ok_or_else(|| syntax(whole, "`[` without `]`"))?;
            let index = after[..end]
                .trim()
                .parse::<usize>()
                .map_err(|_| syntax(whole, "an index in `[...]` must be a non-negative integer"))?;
            raw.push(PathSegment::Index(index));
            rest = &after[end + 1..];
        } else {
            return Err(syntax(whole, format!("unexpected {rest:?} in the path")));
        }
    }
    Ok(raw)
}

/// Parses a path into a step's output as criteria write it: `results`,
/// `results[0].title`, `[2]`; empty is the whole output.
pub fn parse_output_path(path: &str) -> Result<Vec<PathSegment>, RefSyntaxError> {
    let path = path.trim();
    if path.is_empty() || path.starts_with('[') {
        parse_segments(path, path)
    } else {
        parse_segments(&format!(".{path}"), path)
    }
}

/// The value at `path` in `value`, if there is one.
pub fn select<'a>(value: &'a Value, path: &[PathSegment]) -> Option<&'a Value> {
    path.iter().try_fold(value, |current, seg| match seg {
        PathSegment::Key(k) => current.get(k.as_str()),
        PathSegment::Index(i) => current.get(*i),
    })
}

/// Parses one JSON string. `Ok(None)` means it holds no reference.
fn parse_template(s: &str) -> Result<Option<Template>, RefSyntaxError> {
    if !s.contains('$') {
        return Ok(None);
    }
    // Whole-string shorthand: `$step_1`.
    if let Some(id) = s.strip_prefix('$') {
        if !id.starts_with(['$', '{']) && id.starts_with(is_id_start) && id.chars().all(is_id_char)
        {
            return Ok(Some(Template::Whole(ArgRef {
                step: StepId::new(id),
                path: Vec::new(),
            })));
        }
        if s.starts_with("$$") && !s.starts_with("$${") {
            return Ok(Some(Template::Literal(s[1..].to_owned())));
        }
    }
    let mut parts = Vec::new();
    let mut text = String::new();
    let mut rest = s;
    while let Some(pos) = rest.find('$') {
        text.push_str(&rest[..pos]);
        let tail = &rest[pos..];
        if let Some(after) = tail.strip_prefix("$${") {
            text.push_str("${");
            rest = after;
        } else if let Some(after) = tail.strip_prefix("${") {
            let end = after
                .find('}')
                .ok_or_else(|| syntax(s, "`${` without a closing `}`"))?;
            if !text.is_empty() {
                parts.push(Part::Text(std::mem::take(&mut text)));
            }
            parts.push(Part::Ref(parse_braced(&after[..end], s)?));
            rest = &after[end + 1..];
        } else {
            text.push('$');
            rest = &tail[1..];
        }
    }
    text.push_str(rest);
    if !text.is_empty() {
        parts.push(Part::Text(text));
    }
    let refs = parts.iter().filter(|p| matches!(p, Part::Ref(_))).count();
    Ok(match (refs, parts.as_slice()) {
        (0, []) => None,
        (0, [Part::Text(t)]) if t == s => None,
        (0, [Part::Text(t)]) => Some(Template::Literal(t.clone())),
        (0, _) => None,
        (1, [Part::Ref(r)]) => Some(Template::Whole(r.clone())),
        _ => Some(Template::Parts(parts)),
    })
}

/// Every reference in `value` (recursing into arrays and objects).
/// Returns every syntax error too, so a validator can report all of them.
pub fn references(value: &Value) -> (Vec<ArgRef>, Vec<RefSyntaxError>) {
    let mut refs = Vec::new();
    let mut errors = Vec::new();
    walk_strings(value, &mut |s| match parse_template(s) {
        Ok(Some(Template::Whole(r))) => refs.push(r),
        Ok(Some(Template::Parts(parts))) => {
            refs.extend(parts.into_iter().filter_map(|p| match p {
                Part::Ref(r) => Some(r),
                Part::Text(_) => None,
            }))
        }
        Ok(None | Some(Template::Literal(_))) => {}
        Err(e) => errors.push(e),
    });
    (refs, errors)
}

/// The reference a string consists of, if it is one whole reference
/// (`"$a"`, `"${a.output.items}"`), which keeps the referenced value's JSON type.
pub fn whole_reference(s: &str) -> Option<ArgRef> {
    match parse_template(s) {
        Ok(Some(Template::Whole(r))) => Some(r),
        _ => None,
    }
}

/// Whether a string holds at least one reference (a value the schema check must defer).
pub fn is_reference(s: &str) -> bool {
    matches!(
        parse_template(s),
        Ok(Some(Template::Whole(_) | Template::Parts(_)))
    )
}

fn walk_strings(value: &Value, f: &mut impl FnMut(&str)) {
    match value {
        Value::String(s) => f(s),
        Value::Array(items) => items.iter().for_each(|v| walk_strings(v, f)),
        // An open argument's hint is prose for the model, not a reference.
        Value::Object(_) if open_hint(value).is_some() => {}
        Value::Object(map) => map.values().for_each(|v| walk_strings(v, f)),
        _ => {}
    }
}

/// The key of an open-argument marker: `{"$open": "what to fill in"}`.
pub const OPEN_KEY: &str = "$open";

/// The hint of an open-argument marker: `Some` for an object whose only key
/// is `$open` with a string value, `None` for anything else.
pub fn open_hint(value: &Value) -> Option<&str> {
    match value {
        Value::Object(map) if map.len() == 1 => map.get(OPEN_KEY).and_then(Value::as_str),
        _ => None,
    }
}

/// Whether `value` is an object that mentions `$open` (a marker, or a
/// malformed attempt at one).
pub(crate) fn mentions_open(value: &Value) -> bool {
    matches!(value, Value::Object(map) if map.contains_key(OPEN_KEY))
}

/// The open arguments of `args` (an object): each top-level key whose value
/// is an open marker, with its hint, in key order. Anything but an object has none.
pub fn open_args(args: &Value) -> Vec<(String, String)> {
    match args {
        Value::Object(map) => map
            .iter()
            .filter_map(|(k, v)| open_hint(v).map(|hint| (k.clone(), hint.to_owned())))
            .collect(),
        _ => Vec::new(),
    }
}

/// Finished steps' outputs, by step id: what references resolve against.
/// Implemented for a map of outputs and for the run state's map of results,
/// so the engine resolves references by borrowing its results instead of
/// copying every output at each dispatch.
pub(crate) trait Outputs {
    /// The output of `step`, if it succeeded.
    fn output(&self, step: &StepId) -> Option<&Value>;
}

impl Outputs for BTreeMap<StepId, Value> {
    fn output(&self, step: &StepId) -> Option<&Value> {
        self.get(step)
    }
}

/// Looks a parsed reference up in the outputs of finished steps.
fn lookup<'a, O: Outputs + ?Sized>(
    r: &ArgRef,
    text: &str,
    outputs: &'a O,
) -> Result<&'a Value, ResolveError> {
    let mut current = outputs
        .output(&r.step)
        .ok_or_else(|| ResolveError::NoResult(r.step.clone()))?;
    let mut walked = String::from("output");
    for seg in &r.path {
        let next = match seg {
            PathSegment::Key(k) => {
                walked.push('.');
                walked.push_str(k);
                current.get(k.as_str())
            }
            PathSegment::Index(i) => {
                walked.push_str(&format!("[{i}]"));
                current.get(*i)
            }
        };
        current = next.ok_or_else(|| ResolveError::MissingPath {
            reference: text.to_owned(),
            step: r.step.clone(),
            path: walked.clone(),
        })?;
    }
    Ok(current)
}

/// Resolves one reference string (such as a precondition's `ref`) to a value.
pub fn resolve_reference(
    text: &str,
    outputs: &BTreeMap<StepId, Value>,
) -> Result<Value, ResolveError> {
    resolve_reference_in(text, outputs)
}

/// [`resolve_reference`] against any [`Outputs`].
pub(crate) fn resolve_reference_in<O: Outputs + ?Sized>(
    text: &str,
    outputs: &O,
) -> Result<Value, ResolveError> {
    resolve_value_in(&Value::String(text.to_owned()), outputs)
}

/// Replaces every reference in `value` with the referenced output.
pub fn resolve_value(
    value: &Value,
    outputs: &BTreeMap<StepId, Value>,
) -> Result<Value, ResolveError> {
    resolve_value_in(value, outputs)
}

/// [`resolve_value`] against a run's step results, as the engine resolves
/// arguments before a call (no copy of the outputs).
pub fn resolve_value_of(
    value: &Value,
    results: &BTreeMap<StepId, crate::decision::StepResult>,
) -> Result<Value, ResolveError> {
    resolve_value_in(value, results)
}

/// [`resolve_value`] against any [`Outputs`].
pub(crate) fn resolve_value_in<O: Outputs + ?Sized>(
    value: &Value,
    outputs: &O,
) -> Result<Value, ResolveError> {
    Ok(match value {
        Value::String(s) => match parse_template(s)? {
            None => value.clone(),
            Some(Template::Literal(t)) => Value::String(t),
            Some(Template::Whole(r)) => lookup(&r, s, outputs)?.clone(),
            Some(Template::Parts(parts)) => {
                let mut out = String::new();
                for part in &parts {
                    match part {
                        Part::Text(t) => out.push_str(t),
                        Part::Ref(r) => match lookup(r, s, outputs)? {
                            Value::String(v) => out.push_str(v),
                            other => out.push_str(&other.to_string()),
                        },
                    }
                }
                Value::String(out)
            }
        },
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|v| resolve_value_in(v, outputs))
                .collect::<Result<_, _>>()?,
        ),
        // Stays open: the step executor fills it in.
        Value::Object(_) if open_hint(value).is_some() => value.clone(),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| Ok((k.clone(), resolve_value_in(v, outputs)?)))
                .collect::<Result<_, ResolveError>>()?,
        ),
        _ => value.clone(),
    })
}

impl crate::tool::ToolCatalog {
    /// Schema violations of `args` for tool `name`, as (JSON pointer, message).
    /// Values that hold a `$step` reference are skipped: their type is only
    /// known at dispatch, where the resolved arguments are checked again.
    /// So are open arguments (`{"$open": "..."}` as a top-level value): the
    /// step executor fills them in and checks the result before the call.
    /// An open argument still counts as present for `required`.
    pub fn check_args(&self, name: &str, args: &Value) -> Vec<(String, String)> {
        let Some(validator) = self.validator(name) else {
            return Vec::new();
        };
        validator
            .iter_errors(args)
            .filter(|e| {
                let path = e.instance_path().as_str();
                !matches!(args.pointer(path), Some(Value::String(s)) if is_reference(s))
                    && !in_open_arg(args, path)
            })
            .map(|e| {
                let path = e.instance_path().as_str();
                (
                    if path.is_empty() {
                        "/".to_owned()
                    } else {
                        path.to_owned()
                    },
                    e.to_string(),
                )
            })
            .collect()
    }
}

/// Whether the JSON pointer `path` is an open top-level argument of `args`
/// or lies inside one.
fn in_open_arg(args: &Value, path: &str) -> bool {
    let Some(rest) = path.strip_prefix('/') else {
        return false;
    };
    let top = rest.split('/').next().unwrap_or(rest);
    args.pointer(&format!("/{top}"))
        .is_some_and(|v| open_hint(v).is_some())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn outputs() -> BTreeMap<StepId, Value> {
        BTreeMap::from([
            (
                StepId::new("step_1"),
                json!({"items": [{"title": "A"}, {"title": "B"}], "n": 2}),
            ),
            (StepId::new("s2"), json!("plain text")),
        ])
    }

    #[test]
    fn whole_references_keep_their_json_type() {
        let o = outputs();
        assert_eq!(
            resolve_reference("$step_1", &o).unwrap(),
            o[&StepId::new("step_1")]
        );
        assert_eq!(
            resolve_reference("${step_1.output.n}", &o).unwrap(),
            json!(2)
        );
        assert_eq!(
            resolve_reference("${step_1.output.items[1].title}", &o).unwrap(),
            json!("B")
        );
        assert_eq!(resolve_reference("${s2}", &o).unwrap(), json!("plain text"));
    }

    #[test]
    fn references_inside_text_are_interpolated() {
        let v = json!({"q": "compare ${s2} with ${step_1.output.n} items", "list": ["$s2", 3]});
        assert_eq!(
            resolve_value(&v, &outputs()).unwrap(),
            json!({"q": "compare plain text with 2 items", "list": ["plain text", 3]})
        );
    }

    #[test]
    fn dollars_that_are_not_references_stay_text() {
        for s in ["$5.00", "costs $3", "$$HOME", "$${literal}", "a $ b"] {
            assert!(!is_reference(s), "{s}");
        }
        assert_eq!(
            resolve_reference("$$HOME", &outputs()).unwrap(),
            json!("$HOME")
        );
        assert_eq!(
            resolve_reference("x $${y}", &outputs()).unwrap(),
            json!("x ${y}")
        );
    }

    #[test]
    fn malformed_references_are_reported() {
        for s in [
            "${step_1",
            "${}",
            "${step_1.items}",
            "${step_1.output.}",
            "${step_1.output[x]}",
            "${1abc}",
        ] {
            let (_, errors) = references(&json!(s));
            assert_eq!(errors.len(), 1, "{s}");
        }
    }

    #[test]
    fn missing_results_and_paths_are_typed_errors() {
        let o = outputs();
        assert_eq!(
            resolve_reference("$nope", &o),
            Err(ResolveError::NoResult(StepId::new("nope")))
        );
        assert!(matches!(
            resolve_reference("${step_1.output.items[5]}", &o),
            Err(ResolveError::MissingPath { path, .. }) if path == "output.items[5]"
        ));
    }

    #[test]
    fn open_markers_are_kept_and_their_hints_are_not_references() {
        let v = json!({"q": {"$open": "a query about ${s2}"}, "n": "${step_1.output.n}"});
        let (refs, errors) = references(&v);
        assert!(errors.is_empty());
        assert_eq!(refs.len(), 1);
        assert_eq!(
            resolve_value(&v, &outputs()).unwrap(),
            json!({"q": {"$open": "a query about ${s2}"}, "n": 2})
        );
        assert_eq!(
            open_args(&v),
            [("q".to_owned(), "a query about ${s2}".to_owned())]
        );
        // Not markers: other keys beside `$open`, or a hint that is not a string.
        assert!(open_hint(&json!({"$open": "x", "y": 1})).is_none());
        assert!(open_hint(&json!({"$open": 3})).is_none());
        assert!(open_args(&json!({"q": [{"$open": "nested"}]})).is_empty());
    }

    #[test]
    fn collects_every_reference() {
        let (refs, errors) =
            references(&json!({"a": "$x", "b": ["${y.output.k}", "see ${z}"], "c": 1}));
        assert!(errors.is_empty());
        let ids: Vec<_> = refs.iter().map(|r| r.step.as_str()).collect();
        assert_eq!(ids, ["x", "y", "z"]);
    }
}
