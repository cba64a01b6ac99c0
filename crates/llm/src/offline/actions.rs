//! Tool results as evidence: what the run's other tools returned (every
//! tool but the note tools, whose results the sections quote), each field
//! quoted verbatim with its step as the source; and the side effects the run
//! made — the steps with an approval on record — as actions, with their
//! arguments and who approved them.

use std::fmt::Write as _;

use serde_json::Value;
use stepwise_core::plan::args::resolve_value_of;
use stepwise_core::{Evidence, RunState, Step, StepStatus};

/// Tools whose results the brief reads as notes, not as tool results.
const NOTE_TOOLS: [&str; 3] = ["search_notes", "read_note", "compare_results"];

/// Fields quoted per step: enough to show what it returned, not a dump.
const FIELDS: usize = 4;

/// Characters of one quoted value (a prefix is still verbatim).
const VALUE_CHARS: usize = 160;

/// The brief's sections on tool results and actions, and their evidence.
#[derive(Debug, Default)]
pub(super) struct ToolSections {
    pub(super) text: String,
    pub(super) evidence: Vec<Evidence>,
    /// Whether a read-only tool returned something (an answer, not an act).
    pub(super) answered: bool,
}

/// The "Actions" and "Tool results" sections of a run, in plan order.
pub(super) fn tool_sections(state: &RunState) -> ToolSections {
    let mut actions = String::new();
    let mut results = String::new();
    let mut evidence = Vec::new();
    for step in state
        .plan
        .steps
        .iter()
        .filter(|s| s.status == StepStatus::Succeeded && !NOTE_TOOLS.contains(&s.tool.as_str()))
    {
        let Some(result) = state.step_results.get(&step.id) else {
            continue;
        };
        let fields = leaves(&result.output);
        let returned: Vec<String> = fields
            .iter()
            .map(|(path, v)| format!("{path} {}", shown(v)))
            .collect();
        evidence.extend(fields.into_iter().map(|(_, (quote, _))| Evidence {
            source_id: step.id.to_string(),
            step: step.id.clone(),
            quote,
        }));
        let returned = if returned.is_empty() {
            "returned nothing to quote".to_owned()
        } else {
            format!("returned {}", returned.join(", "))
        };
        if state.approvals.contains_key(&step.id) {
            let by = state
                .approved_by
                .get(&step.id)
                .map_or_else(|| "an approver".to_owned(), Clone::clone);
            let _ = writeln!(
                actions,
                "- {}: `{}` with {}, approved by {by}; {returned} [{}]",
                step.description,
                step.tool,
                arguments(state, step),
                step.id
            );
        } else {
            let _ = writeln!(
                results,
                "- {}: `{}` {returned} [{}]",
                step.description, step.tool, step.id
            );
        }
    }
    let mut text = String::new();
    if !actions.is_empty() {
        let _ = write!(text, "\n## Actions\n\n{actions}");
    }
    if !results.is_empty() {
        let _ = write!(text, "\n## Tool results\n\n{results}");
    }
    ToolSections {
        text,
        evidence,
        answered: !results.is_empty(),
    }
}

/// A step's arguments as it ran (references resolved), compact and cut.
fn arguments(state: &RunState, step: &Step) -> String {
    let args = Value::Object(step.args.clone());
    let resolved = resolve_value_of(&args, &state.step_results).unwrap_or(args);
    match resolved {
        Value::Object(map) if !map.is_empty() => map
            .iter()
            .map(|(k, v)| {
                let v = match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                format!("{k} {}", shown(&cut(&v)))
            })
            .collect::<Vec<_>>()
            .join(", "),
        _ => "no arguments".to_owned(),
    }
}

/// The first scalar fields of an output, with their paths (`order.id`,
/// `content[0].text`); strings are collapsed to one line and cut, so each
/// value is a verbatim part of the output.
fn leaves(output: &Value) -> Vec<(String, (String, bool))> {
    let mut out = Vec::new();
    walk(output, String::new(), &mut out);
    out
}

fn walk(value: &Value, path: String, out: &mut Vec<(String, (String, bool))>) {
    if out.len() >= FIELDS {
        return;
    }
    let name = |path: &str| {
        if path.is_empty() {
            "value".to_owned()
        } else {
            path.to_owned()
        }
    };
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                walk(v, p, out);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                walk(v, format!("{path}[{i}]"), out);
            }
        }
        Value::String(s) => {
            let s = s.split_whitespace().collect::<Vec<_>>().join(" ");
            if !s.is_empty() {
                out.push((name(&path), cut(&s)));
            }
        }
        Value::Number(n) => out.push((name(&path), (n.to_string(), false))),
        Value::Bool(b) => out.push((name(&path), (b.to_string(), false))),
        Value::Null => {}
    }
}

/// At most [`VALUE_CHARS`] characters, cut after a whole word where there
/// is one (a prefix, so still verbatim), with whether it was cut.
fn cut(s: &str) -> (String, bool) {
    match s.char_indices().nth(VALUE_CHARS) {
        Some((at, _)) => {
            let head = &s[..at];
            let head = head.rfind(char::is_whitespace).map_or(head, |w| &head[..w]);
            (head.trim_end().to_owned(), true)
        }
        None => (s.to_owned(), false),
    }
}

/// A value as shown: quoted, with an ellipsis when it was cut.
fn shown((value, was_cut): &(String, bool)) -> String {
    format!("“{value}”{}", if *was_cut { "…" } else { "" })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn leaves_are_paths_and_verbatim_values_in_order() {
        let v = json!({"order_id": "A-17", "total": 42.5, "ok": true, "lines": [{"sku": "W-1"}], "more": "x"});
        let got = leaves(&v);
        assert_eq!(got.len(), FIELDS);
        let field = |p: &str, v: &str| (p.to_owned(), (v.to_owned(), false));
        assert!(got.contains(&field("order_id", "A-17")));
        assert!(got.contains(&field("lines[0].sku", "W-1")));
        assert_eq!(leaves(&json!("done")), [field("value", "done")]);
        assert!(leaves(&json!(null)).is_empty());
    }

    #[test]
    fn long_values_are_cut_after_a_word_or_on_a_character_boundary() {
        let long = "가".repeat(VALUE_CHARS + 20);
        let (c, was_cut) = cut(&long);
        assert!(was_cut);
        assert_eq!(c.chars().count(), VALUE_CHARS);
        assert!(long.starts_with(&c));
        let words = "word ".repeat(VALUE_CHARS);
        let (c, _) = cut(&words);
        assert!(c.ends_with("word") && words.starts_with(&c), "{c}");
        assert_eq!(shown(&cut(&words)), format!("“{c}”…"));
        assert_eq!(cut("short"), ("short".to_owned(), false));
    }
}
