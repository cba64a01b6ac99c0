//! The shape of `search_notes` (and `compare_results`) output, as the
//! offline roles read it.

use serde::Deserialize;
use serde_json::Value;
use stepwise_core::{RunState, StepId};
use stepwise_tools::compare::Contradiction;

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

#[derive(Debug, Default, Deserialize)]
struct Comparison {
    #[serde(default)]
    contradictions: Vec<Contradiction>,
}

/// Every contradiction the run's `compare_results` steps found, with the
/// step that found it (none from output of another shape).
pub(crate) fn contradictions(state: &RunState) -> Vec<(StepId, Contradiction)> {
    state
        .plan
        .steps
        .iter()
        .filter(|s| s.tool == "compare_results")
        .filter_map(|s| Some((s.id.clone(), state.step_results.get(&s.id)?)))
        .flat_map(|(id, r)| {
            let c: Comparison = serde_json::from_value(r.output.clone()).unwrap_or_default();
            c.contradictions.into_iter().map(move |c| (id.clone(), c))
        })
        .collect()
}

pub(crate) use stepwise_tools::notes::sentences;
