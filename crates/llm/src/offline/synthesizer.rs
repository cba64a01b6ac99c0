//! The offline synthesizer: an extractive brief. Per sub-question, the most
//! relevant sentences of the retrieved passages, each cited `[note_id]`;
//! contradictions the comparison step found; the open gaps; the sources.
//! It only quotes what the run retrieved and writes nothing for a gap.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use async_trait::async_trait;
use stepwise_core::roles::{Reply, Report, RoleError, Synthesizer};
use stepwise_core::{Evidence, RunState, StepId, StepStatus};

use super::gap_for;
use super::judge::{judge, query_of};
use super::search::{contradictions, key_terms, sentences};

/// One sentence chosen for the brief.
struct Pick {
    sentence: String,
    note_id: String,
    step: StepId,
    score: usize,
}

/// Sentences per sub-question: fewer when the constraints ask for a short result.
fn sentences_per_section(state: &RunState) -> usize {
    let length = state
        .constraints
        .length
        .as_deref()
        .unwrap_or_default()
        .to_lowercase();
    if ["short", "brief", "one paragraph", "짧"]
        .iter()
        .any(|w| length.contains(w))
    {
        2
    } else {
        3
    }
}

/// The best sentences for one sub-question, from all its search steps,
/// leaving out sentences an earlier section already quotes.
fn picks_for(state: &RunState, description: &str, limit: usize, used: &[String]) -> Vec<Pick> {
    let mut picks: Vec<Pick> = Vec::new();
    for step in state
        .plan
        .steps
        .iter()
        .filter(|s| s.tool == "search_notes" && s.description == description)
    {
        let Some(result) = state.step_results.get(&step.id) else {
            continue;
        };
        // Only evidence that met the step's criteria backs a claim; a gap gets none.
        let judgement = judge(&state.constraints, step, &result.output);
        if !judgement.met() {
            continue;
        }
        let terms = key_terms(&format!("{} {description}", query_of(step)));
        for hit in judgement.good {
            for passage in &hit.passages {
                for sentence in sentences(passage) {
                    let found = key_terms(sentence);
                    let score = terms.iter().filter(|t| found.contains(t)).count();
                    // A section about a dimension quotes only sentences about it.
                    let on_focus = judgement.focus_words.is_empty()
                        || judgement.focus_words.iter().any(|f| found.contains(f));
                    if score == 0
                        || !on_focus
                        || sentence == hit.title
                        || used.iter().any(|u| u == sentence)
                        || picks.iter().any(|p| p.sentence == sentence)
                    {
                        continue;
                    }
                    picks.push(Pick {
                        sentence: sentence.to_owned(),
                        note_id: hit.note_id.clone(),
                        step: step.id.clone(),
                        score,
                    });
                }
            }
        }
    }
    // Stable sort: ties keep retrieval order (best-scoring note first).
    picks.sort_by_key(|p| std::cmp::Reverse(p.score));
    picks.truncate(limit);
    picks
}

/// Writes the brief from the run's results.
#[derive(Debug, Clone, Copy, Default)]
pub struct OfflineSynthesizer;

#[async_trait]
impl Synthesizer for OfflineSynthesizer {
    async fn synthesize(&self, state: &RunState) -> Result<Reply<Report>, RoleError> {
        let mut text = format!("# {}\n", state.goal);
        if let Some(audience) = &state.constraints.audience {
            let _ = write!(text, "\n_For: {audience}_\n");
        }
        let mut evidence_list: Vec<Evidence> = Vec::new();
        let mut cited: BTreeMap<String, String> = BTreeMap::new();
        let limit = sentences_per_section(state);
        let mut descriptions: Vec<&str> = Vec::new();
        for s in state
            .plan
            .steps
            .iter()
            .filter(|s| s.tool == "search_notes" && s.status != StepStatus::Skipped)
        {
            if !descriptions.contains(&s.description.as_str()) {
                descriptions.push(&s.description);
            }
        }
        for description in descriptions {
            let _ = write!(text, "\n## {}\n\n", heading(state, description));
            let used: Vec<String> = evidence_list.iter().map(|e| e.quote.clone()).collect();
            let mut picks = picks_for(state, description, limit, &used);
            if picks.is_empty() {
                // Everything relevant is quoted in an earlier section: quote it again here.
                picks = picks_for(state, description, limit, &[]);
            }
            if picks.is_empty() {
                text.push_str("_No evidence found in the notes; see Unresolved gaps._\n");
                continue;
            }
            for p in picks {
                let _ = writeln!(text, "- {} [{}]", p.sentence, p.note_id);
                cited
                    .entry(p.note_id.clone())
                    .or_insert_with(|| title_of(state, &p.note_id));
                evidence_list.push(Evidence {
                    source_id: p.note_id,
                    step: p.step,
                    quote: p.sentence,
                });
            }
        }
        let contradictions = contradictions(state);
        if !contradictions.is_empty() {
            text.push_str("\n## Contradictions\n\n");
            for (step, c) in contradictions {
                let claims: Vec<String> = c
                    .claims
                    .iter()
                    .map(|cl| format!("[{}] says “{}”", cl.note_id, cl.sentence))
                    .collect();
                let _ = writeln!(text, "- On *{}*: {}.", c.term, claims.join("; "));
                for cl in c.claims {
                    cited
                        .entry(cl.note_id.clone())
                        .or_insert_with(|| title_of(state, &cl.note_id));
                    evidence_list.push(Evidence {
                        source_id: cl.note_id,
                        step: step.clone(),
                        quote: cl.sentence,
                    });
                }
            }
        }
        text.push_str("\n## Unresolved gaps\n\n");
        if state.knowledge_gaps.is_empty() {
            text.push_str("None: every sub-question found evidence in the notes.\n");
        } else {
            for gap in ordered_gaps(state) {
                let _ = writeln!(text, "- {gap}");
            }
        }
        if !cited.is_empty() {
            text.push_str("\n## Sources\n\n");
            for (id, title) in &cited {
                let _ = writeln!(text, "- [{id}] {title}");
            }
        }

        Ok(Reply::free(Report {
            text,
            evidence: evidence_list,
            gaps: Vec::new(),
        }))
    }
}

/// A section's heading: the constraint section or dimension a sub-question
/// was planned for ("Cost"), else the sub-question itself.
fn heading(state: &RunState, description: &str) -> String {
    let c = &state.constraints;
    match c
        .required_sections
        .iter()
        .chain(&c.comparison_dimensions)
        .find(|d| {
            description
                .strip_prefix(d.as_str())
                .is_some_and(|rest| rest.starts_with(": "))
        }) {
        Some(d) => {
            let mut chars = d.chars();
            chars
                .next()
                .map(|f| f.to_uppercase().chain(chars).collect())
                .unwrap_or_default()
        }
        None => description.to_owned(),
    }
}

/// Gaps in plan order of the sub-questions they belong to (others last), so
/// the brief does not depend on which parallel step happened to finish first.
fn ordered_gaps(state: &RunState) -> Vec<&String> {
    let position = |gap: &String| {
        state
            .plan
            .steps
            .iter()
            .position(|s| &gap_for(&s.description) == gap)
            .unwrap_or(usize::MAX)
    };
    let mut gaps: Vec<&String> = state.knowledge_gaps.iter().collect();
    gaps.sort_by_key(|g| position(g));
    gaps
}

/// A note's title, as the search results gave it.
fn title_of(state: &RunState, note_id: &str) -> String {
    for r in state.step_results.values() {
        for h in super::search::hits(&r.output) {
            if h.note_id == note_id {
                return h.title;
            }
        }
    }
    String::new()
}
