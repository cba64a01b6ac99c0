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
        // A tool's `"written": true` is as quotable as its numbers.
        Value::Bool(b) => out.push(b.to_string()),
        Value::Null => {}
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

/// What the constraints asked the report to cover and it does not: a
/// required section with no heading naming it, a comparison dimension the
/// text never mentions. Whatever wrote the report (and whatever the plan
/// left out), these become knowledge gaps rather than silent omissions.
pub(super) fn coverage_gaps(constraints: &crate::goal::Constraints, text: &str) -> Vec<String> {
    let lower = text.to_lowercase();
    let headings: Vec<&str> = lower
        .lines()
        .filter(|l| l.trim_start().starts_with('#'))
        .collect();
    let mut gaps = Vec::new();
    for section in &constraints.required_sections {
        let name = section.to_lowercase();
        if !headings.iter().any(|h| h.contains(name.trim())) {
            gaps.push(format!(
                "The report has no section on required section: {section}"
            ));
        }
    }
    for dimension in &constraints.comparison_dimensions {
        if !lower.contains(dimension.to_lowercase().trim()) {
            gaps.push(format!(
                "The report does not cover comparison dimension: {dimension}"
            ));
        }
    }
    gaps
}

#[cfg(test)]
mod coverage_tests {
    use super::coverage_gaps;
    use crate::goal::Constraints;

    #[test]
    fn sections_need_headings_and_dimensions_a_mention() {
        let c = Constraints {
            required_sections: vec!["Costs".into(), "Risks".into()],
            comparison_dimensions: vec!["latency".into(), "team skills".into()],
            ..Constraints::default()
        };
        let text = "# Brief\n\n## Costs\n\nLatency is low. Risks are many.\n";
        assert_eq!(
            coverage_gaps(&c, text),
            [
                "The report has no section on required section: Risks",
                "The report does not cover comparison dimension: team skills"
            ]
        );
        assert!(coverage_gaps(&Constraints::default(), "").is_empty());
    }
}
