//! `stepwise show --mermaid`: a plan as a Mermaid `flowchart TD`, one node
//! per step coloured by its status, an edge per dependency — pasteable into
//! any Markdown that renders Mermaid.

use std::collections::{BTreeMap, BTreeSet};

use stepwise_core::{RunState, StepId, StepStatus};

/// Node styles by step status.
const CLASS_DEFS: [(StepStatus, &str); 7] = [
    (
        StepStatus::Pending,
        "fill:#ffffff,stroke:#868e96,color:#212529",
    ),
    (
        StepStatus::Running,
        "fill:#d0ebff,stroke:#1971c2,color:#0b3d6e",
    ),
    (
        StepStatus::Succeeded,
        "fill:#d3f9d8,stroke:#2b8a3e,color:#1b4332",
    ),
    (
        StepStatus::Failed,
        "fill:#ffe3e3,stroke:#c92a2a,color:#7d1a1a",
    ),
    (
        StepStatus::Retrying,
        "fill:#fff3bf,stroke:#f08c00,color:#6b3f00",
    ),
    (
        StepStatus::Terminated,
        "fill:#ffe3e3,stroke:#c92a2a,color:#7d1a1a",
    ),
    (
        StepStatus::Skipped,
        "fill:#f1f3f5,stroke:#adb5bd,stroke-dasharray:5 5,color:#868e96",
    ),
];

/// `stepwise show --mermaid`: the plan as a `flowchart TD`, one node per step
/// with its status, an edge per dependency.
pub(crate) fn flowchart(state: &RunState) -> String {
    let mut text = String::from("flowchart TD\n");
    if state.plan.steps.is_empty() {
        text.push_str("    %% no plan yet\n");
    }
    let ids = node_ids(state.plan.steps.iter().map(|s| &s.id));
    for step in &state.plan.steps {
        let Some(node) = ids.get(&step.id) else {
            continue;
        };
        text.push_str(&format!(
            "    {node}[\"{}: {}<br/>{}\"]\n",
            mermaid_text(step.id.as_str()),
            mermaid_text(&step.tool),
            step.status.as_str()
        ));
    }
    for step in &state.plan.steps {
        for dep in &step.depends_on {
            if let (Some(from), Some(to)) = (ids.get(dep), ids.get(&step.id)) {
                text.push_str(&format!("    {from} --> {to}\n"));
            }
        }
    }
    for (status, style) in CLASS_DEFS {
        text.push_str(&format!("    classDef {} {style}\n", status.as_str()));
    }
    for step in &state.plan.steps {
        if let Some(node) = ids.get(&step.id) {
            text.push_str(&format!("    class {node} {};\n", step.status.as_str()));
        }
    }
    text
}

/// A safe Mermaid identifier per step: `s_` and the id with every character
/// outside `[A-Za-z0-9_]` replaced by `_` (the prefix keeps clear of keywords
/// such as `end`), with a numeric suffix should two ids end up alike.
fn node_ids<'a>(steps: impl Iterator<Item = &'a StepId>) -> BTreeMap<StepId, String> {
    let mut ids: BTreeMap<StepId, String> = BTreeMap::new();
    let mut taken: BTreeSet<String> = BTreeSet::new();
    for id in steps {
        if ids.contains_key(id) {
            continue;
        }
        let base: String = std::iter::once('s')
            .chain(std::iter::once('_'))
            .chain(id.as_str().chars().map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' {
                    c
                } else {
                    '_'
                }
            }))
            .collect();
        let mut node = base.clone();
        let mut n = 2;
        while taken.contains(&node) {
            node = format!("{base}_{n}");
            n += 1;
        }
        taken.insert(node.clone());
        ids.insert(id.clone(), node);
    }
    ids
}

/// Text safe inside a quoted Mermaid label: quotes, angle brackets and `#`
/// as Mermaid entity codes, line breaks as spaces.
fn mermaid_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '"' => out.push_str("#quot;"),
            '#' => out.push_str("#35;"),
            '<' => out.push_str("#lt;"),
            '>' => out.push_str("#gt;"),
            '\n' | '\r' | '\t' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_ids_are_safe_and_distinct() {
        let steps = [
            StepId::new("a-b"),
            StepId::new("a_b"),
            StepId::new("end"),
            StepId::new("ü x"),
        ];
        let ids = node_ids(steps.iter());
        assert_eq!(ids[&steps[0]], "s_a_b");
        assert_eq!(ids[&steps[1]], "s_a_b_2");
        assert_eq!(ids[&steps[2]], "s_end");
        assert_eq!(ids[&steps[3]], "s___x");
    }

    #[test]
    fn labels_escape_what_mermaid_would_read() {
        assert_eq!(
            mermaid_text("say \"hi\" <b>#1"),
            "say #quot;hi#quot; #lt;b#gt;#35;1"
        );
    }
}
