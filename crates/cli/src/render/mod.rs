//! Text shared by everything that shows a run: the live progress, `show`,
//! `runs`, `bench`, `approve`. One way to write a duration, a count, a
//! verdict or a clipped line, so two commands never disagree about the same
//! event.
//!
//! - [`event`]: an event as a progress line, or as the detail column of `show --events`
//! - [`table`]: column tables (comfy-table), as every command prints them
//! - [`brief`]: the Markdown `run` and `resume` print
//! - [`usage`]: usage, cost, and the priced JSON output
//! - [`mermaid`]: a plan as a Mermaid flowchart

pub(crate) mod brief;
pub(crate) mod event;
pub(crate) mod mermaid;
pub(crate) mod plan_diff;
pub(crate) mod table;
pub(crate) mod usage;

use serde_json::Value;
use stepwise_core::{RunState, StepId, Verdict};

/// A duration for a person: `850 ms`, `12.3 s`, `4 min 03 s`. Tenths are cut,
/// not rounded, so 59 999 ms reads `59.9 s` and never `60.0 s`.
pub(crate) fn duration(ms: u64) -> String {
    if ms < 1_000 {
        format!("{ms} ms")
    } else if ms < 60_000 {
        format!("{}.{} s", ms / 1_000, (ms % 1_000) / 100)
    } else {
        let s = ms / 1_000;
        format!("{} min {:02} s", s / 60, s % 60)
    }
}

/// `1 problem`, `2 problems`.
pub(crate) fn plural(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("{n} {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// [`plural`] of a counter kept as `u64` (usage counts).
pub(crate) fn plural_u64(n: u64, noun: &str) -> String {
    plural(usize::try_from(n).unwrap_or(usize::MAX), noun)
}

/// A verdict as the log spells it.
pub(crate) fn verdict_name(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::Continue => "continue",
        Verdict::Synthesize => "synthesize",
        Verdict::Replan => "replan",
        Verdict::NeedsReview => "needs_review",
    }
}

/// Whitespace (newlines included) collapsed to single spaces.
pub(crate) fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// [`one_line`], cut to at most `max` characters with a trailing `…`: one
/// event or cell stays one readable line (a model's reason may span many).
pub(crate) fn clip(text: &str, max: usize) -> String {
    let text = one_line(text);
    if text.chars().count() <= max {
        return text;
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.truncate(out.trim_end().len());
    out.push('…');
    out
}

/// Cut to `max` chars (not bytes: never inside a UTF-8 sequence), marking
/// the cut with `…`; unlike [`clip`], spacing is kept (the live block's
/// indents and columns).
pub(crate) fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// `a, b, c`.
pub(crate) fn join_ids(ids: &[StepId]) -> String {
    let ids: Vec<&str> = ids.iter().map(StepId::as_str).collect();
    ids.join(", ")
}

/// The normalised goal, or the raw input if there is none.
pub(crate) fn goal_of(state: &RunState) -> &str {
    if state.goal.is_empty() {
        &state.input
    } else {
        &state.goal
    }
}

/// The first 12 hex digits of a hash: enough to tell two apart.
pub(crate) fn short_hash(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}

/// JSON on one line, with long strings shortened, at most ~200 characters.
pub(crate) fn compact_json(value: &Value) -> String {
    fn shorten(value: &Value) -> Value {
        match value {
            Value::String(s) if s.chars().count() > 60 => {
                let head: String = s.chars().take(57).collect();
                Value::String(format!("{head}… ({} chars)", s.chars().count()))
            }
            Value::Array(items) => Value::Array(items.iter().map(shorten).collect()),
            Value::Object(map) => {
                Value::Object(map.iter().map(|(k, v)| (k.clone(), shorten(v))).collect())
            }
            other => other.clone(),
        }
    }
    clip(&shorten(value).to_string(), 200)
}

/// A tool's name as an approval shows it: with `, destructive` when the
/// tool said it may delete or overwrite data, so a person approving later
/// is warned as `--approve ask` warns.
pub(crate) fn approval_tool(tool: &str, destructive: bool) -> String {
    if destructive {
        format!("{tool}, destructive")
    } else {
        tool.to_owned()
    }
}

/// The tool (as [`approval_tool`] shows it) and arguments a step asked
/// approval for: from the last `approval_requested` event of the step.
pub(crate) fn requested<'a>(state: &'a RunState, step: &StepId) -> Option<(String, &'a Value)> {
    use stepwise_core::EventKind;
    state
        .execution_history
        .iter()
        .rev()
        .find_map(|e| match &e.kind {
            EventKind::ApprovalRequested {
                step: s,
                tool,
                args,
                destructive,
                ..
            } if s == step => Some((approval_tool(tool, *destructive), args)),
            _ => None,
        })
}

/// `step save (write_file) {"path":"brief.md",...}  hash 3fa2c1d9e0ab`.
pub(crate) fn describe_request(state: &RunState, step: &StepId, hash: &str) -> String {
    let (tool, args) = match requested(state, step) {
        Some((tool, args)) => (tool, compact_json(args)),
        None => (
            state
                .plan
                .step(step)
                .map_or_else(|| "?".to_owned(), |s| s.tool.clone()),
            "(arguments not recorded)".to_owned(),
        ),
    };
    format!("step {step} ({tool}) {args}  hash {}", short_hash(hash))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_duration_format_everywhere() {
        let cases = [
            (0, "0 ms"),
            (850, "850 ms"),
            (999, "999 ms"),
            (1_000, "1.0 s"),
            (1_500, "1.5 s"),
            (12_345, "12.3 s"),
            // Cut, not rounded: never `60.0 s` below a minute.
            (59_999, "59.9 s"),
            (60_000, "1 min 00 s"),
            (243_000, "4 min 03 s"),
            (3_600_000, "60 min 00 s"),
        ];
        for (ms, text) in cases {
            assert_eq!(duration(ms), text, "{ms} ms");
        }
    }

    #[test]
    fn plurals() {
        assert_eq!(plural(0, "step"), "0 steps");
        assert_eq!(plural(1, "step"), "1 step");
        assert_eq!(plural(3, "problem"), "3 problems");
        assert_eq!(plural_u64(1, "call"), "1 call");
    }

    #[test]
    fn clipping_counts_characters_and_collapses_whitespace() {
        assert_eq!(clip("a  b\nc", 10), "a b c");
        assert_eq!(clip("abcdef", 4), "abc…");
        assert_eq!(clip("ééééé", 3), "éé…");
        assert_eq!(clip("ab cd", 4), "ab…");
        assert_eq!(truncate("  a  b", 10), "  a  b");
        assert_eq!(truncate("ééééé", 3), "éé…");
    }
}
