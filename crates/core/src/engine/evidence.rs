//! Vetting the synthesizer's evidence: a quote must appear verbatim in a
//! succeeded step's output, and its source must be named there too.

use serde_json::Value;

use crate::event::RejectedEvidence;
use crate::roles::Evidence;
use crate::state::RunState;

fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn strings_in(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(s) => out.push(collapse(s)),
        Value::Array(items) => items.iter().for_each(|v| strings_in(v, out)),
        Value::Object(map) => map.iter().for_each(|(k, v)| {
            out.push(k.clone());
            strings_in(v, out);
        }),
        Value::Number(n) => out.push(n.to_string()),
        _ => {}
    }
}

/// Keeps evidence that quotes, verbatim, a succeeded step's output and names
/// a source found there (or the step itself); refuses the rest.
pub(super) fn vet_evidence(
    state: &RunState,
    offered: Vec<Evidence>,
) -> (Vec<Evidence>, Vec<RejectedEvidence>) {
    let mut accepted = Vec::new();
    let mut rejected = Vec::new();
    for e in offered {
        let reason = match state.step_results.get(&e.step) {
            None => Some(format!("step {} has no successful result", e.step)),
            Some(result) => {
                let mut texts = Vec::new();
                strings_in(&result.output, &mut texts);
                let quote = collapse(&e.quote);
                if quote.is_empty() {
                    Some("empty quote".to_owned())
                } else if !texts.iter().any(|t| t.contains(&quote)) {
                    Some(format!("the quote does not appear in {}'s output", e.step))
                } else if e.source_id != e.step.as_str() && !texts.iter().any(|t| t == &e.source_id)
                {
                    Some(format!(
                        "source {:?} does not appear in {}'s output",
                        e.source_id, e.step
                    ))
                } else {
                    None
                }
            }
        };
        match reason {
            None => accepted.push(e),
            Some(reason) => rejected.push(RejectedEvidence {
                evidence: e,
                reason,
            }),
        }
    }
    (accepted, rejected)
}
