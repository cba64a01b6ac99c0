//! The shape of `search_notes` output, as the offline roles read it.

use serde::Deserialize;
use serde_json::Value;

/// One `search_notes` result.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Hit {
    pub(crate) note_id: String,
    #[serde(default)]
    pub(crate) title: String,
    pub(crate) score: f64,
    #[serde(default)]
    pub(crate) passages: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
struct SearchOutput {
    #[serde(default)]
    results: Vec<Hit>,
}

/// The hits in a step output, or none if it is not search output.
pub(crate) fn hits(output: &Value) -> Vec<Hit> {
    serde_json::from_value::<SearchOutput>(output.clone())
        .map(|o| o.results)
        .unwrap_or_default()
}

/// Distinct key terms of a text, in order.
pub(crate) fn key_terms(text: &str) -> Vec<String> {
    let mut terms: Vec<String> = Vec::new();
    for t in stepwise_tools::notes::tokenize(text) {
        if !terms.contains(&t) {
            terms.push(t);
        }
    }
    terms
}

/// Sentences of a passage, each a verbatim substring of it.
pub(crate) fn sentences(passage: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let chars: Vec<(usize, char)> = passage.char_indices().collect();
    for (i, &(pos, c)) in chars.iter().enumerate() {
        let at_end = chars
            .get(i + 1)
            .is_none_or(|(_, next)| next.is_whitespace());
        if matches!(c, '.' | '!' | '?' | '。') && at_end {
            let end = pos + c.len_utf8();
            let s = passage[start..end].trim();
            if !s.is_empty() {
                out.push(s);
            }
            start = end;
        }
    }
    let rest = passage[start..].trim();
    if !rest.is_empty() {
        out.push(rest);
    }
    out
}
