//! The offline synthesizer: an extractive brief. One section per dimension
//! the goal asks (as the user wrote it), else one overview section; in each,
//! the most relevant sentences the run retrieved, each cited `[note_id]`;
//! contradictions between notes on the goal's topic; every gap; the sources.
//! It only quotes sentences the judge found to be about their section
//! ([`judge`](super::judge)), writes nothing for a gap, and names every
//! section that found nothing in its gap list.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;

use async_trait::async_trait;
use stepwise_core::roles::{Reply, Report, RoleError, Synthesizer};
use stepwise_core::{Evidence, RunState, StepId, StepStatus};

use super::actions::tool_sections;
use super::gap_for;
use super::judge::{Lens, Rank};
use super::relevance::Lexicon;
use super::search::contradictions;
use stepwise_tools::notes::stem::{mentions, words};

/// One sentence chosen for the brief.
#[derive(Clone)]
struct Pick {
    sentence: String,
    note_id: String,
    step: StepId,
}

/// Sentences per section: fewer when the constraints ask for a short result.
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

/// The sentences that may back one sub-question, from all its search
/// steps, best first (a stable sort: ties keep retrieval order).
fn candidates(lens: &Lens<'_>, state: &RunState, description: &str) -> Vec<Pick> {
    let mut ranked: Vec<(Rank, Pick)> = Vec::new();
    for step in state
        .plan
        .steps
        .iter()
        .filter(|s| lens.searches(s, description))
    {
        let Some(result) = state.step_results.get(&step.id) else {
            continue;
        };
        for q in lens.judge_for(step, description, &result.output).quotes {
            if ranked.iter().any(|(_, p)| p.sentence == q.sentence) {
                continue;
            }
            ranked.push((
                q.rank,
                Pick {
                    sentence: q.sentence,
                    note_id: q.note_id,
                    step: step.id.clone(),
                },
            ));
        }
    }
    ranked.sort_by_key(|(rank, _)| std::cmp::Reverse(*rank));
    ranked.into_iter().map(|(_, p)| p).collect()
}

/// The best `limit` candidates, leaving out sentences an earlier section
/// already quotes — unless that leaves none: then they are quoted again.
fn picks_for(lens: &Lens<'_>, candidates: Vec<Pick>, limit: usize, used: &[String]) -> Vec<Pick> {
    let fresh: Vec<Pick> = candidates
        .iter()
        .filter(|p| !used.contains(&p.sentence))
        .cloned()
        .collect();
    let chosen = if fresh.is_empty() { candidates } else { fresh };
    across_alternatives(lens, chosen, limit)
}

/// The first `limit` picks, but when the goal compares alternatives, the
/// best sentence on each alternative first (in rank order), so a section on
/// "Kafka, RabbitMQ and SQS" does not quote three sentences on Kafka while
/// one on SQS waits below them.
fn across_alternatives(lens: &Lens<'_>, ranked: Vec<Pick>, limit: usize) -> Vec<Pick> {
    let entities = &lens.topic.entities;
    if entities.len() < 2 {
        return ranked.into_iter().take(limit).collect();
    }
    let names = |p: &Pick| -> Vec<usize> {
        let ws = words(&p.sentence);
        (0..entities.len())
            .filter(|&i| entities[i].iter().all(|t| mentions(&ws, t)))
            .collect()
    };
    let mut covered: Vec<usize> = Vec::new();
    let (mut first, mut rest): (Vec<Pick>, Vec<Pick>) = (Vec::new(), Vec::new());
    for p in ranked {
        let new: Vec<usize> = names(&p)
            .into_iter()
            .filter(|i| !covered.contains(i))
            .collect();
        if new.is_empty() {
            rest.push(p);
        } else {
            covered.extend(new);
            first.push(p);
        }
    }
    first.into_iter().chain(rest).take(limit).collect()
}

/// Writes the brief from the run's results.
#[derive(Debug)]
pub struct OfflineSynthesizer {
    lexicon: Arc<Lexicon>,
}

impl OfflineSynthesizer {
    /// A synthesizer that judges relevance with `lexicon`.
    pub fn new(lexicon: Arc<Lexicon>) -> Self {
        Self { lexicon }
    }
}

/// One section of the brief.
struct Section {
    heading: String,
    /// The sub-question (step description) it answers; none if not searched.
    question: Option<String>,
}

/// The brief's sections: every dimension asked, in order, then any other
/// sub-question the plan searched (a user's plan, or the overview).
fn sections(lens: &Lens<'_>, state: &RunState) -> Vec<Section> {
    let run: Vec<&stepwise_core::Step> = state
        .plan
        .steps
        .iter()
        .filter(|s| s.tool == "search_notes" && s.status != StepStatus::Skipped)
        .collect();
    let mut out: Vec<Section> = lens
        .asked
        .dimensions
        .iter()
        .map(|d| Section {
            heading: d.clone(),
            question: run.iter().any(|s| lens.searches(s, d)).then(|| d.clone()),
        })
        .collect();
    let mut own: Vec<&str> = Vec::new();
    for s in run {
        // A step about a dimension answers in that dimension's section.
        if lens.dimensions_of(s).is_empty() && !own.contains(&s.description.as_str()) {
            own.push(&s.description);
        }
    }
    for q in own {
        out.push(Section {
            heading: if q == state.goal {
                overview(&state.goal).to_owned()
            } else {
                q.to_owned()
            },
            question: Some(q.to_owned()),
        });
    }
    out
}

/// The heading of the section on the goal as a whole, in the goal's language.
fn overview(goal: &str) -> &'static str {
    if goal.chars().any(|c| ('\u{AC00}'..='\u{D7A3}').contains(&c)) {
        "개요"
    } else {
        "Overview"
    }
}

/// The gap for a dimension the plan never searched.
fn not_searched(state: &RunState, dimension: &str) -> String {
    if state.plan.active_steps() >= state.max_steps {
        format!("Not searched (step budget): {dimension}")
    } else {
        format!("Not searched (no step of the plan asked it): {dimension}")
    }
}

/// The gap of a report with no section and nothing cited.
const NOTHING_CITABLE: &str = "nothing the steps returned could be cited: no step found anything in the notes or returned a result to quote";

#[async_trait]
impl Synthesizer for OfflineSynthesizer {
    async fn synthesize(&self, state: &RunState) -> Result<Reply<Report>, RoleError> {
        let lens = Lens::new(&self.lexicon, state);
        let mut text = format!("# {}\n", stepwise_core::goal::title(&state.goal));
        if let Some(audience) = &state.constraints.audience {
            let _ = write!(text, "\n_For: {audience}_\n");
        }
        let mut evidence_list: Vec<Evidence> = Vec::new();
        let mut cited: BTreeMap<String, String> = BTreeMap::new();
        let mut own_gaps: Vec<String> = Vec::new();
        let limit = sentences_per_section(state);
        let sections = sections(&lens, state);
        let no_section = sections.is_empty();
        for section in sections {
            let _ = write!(text, "\n## {}\n\n", section.heading);
            let Some(question) = section.question else {
                let gap = not_searched(state, &section.heading);
                let _ = writeln!(text, "_Not searched; see Unresolved gaps._");
                own_gaps.push(gap);
                continue;
            };
            let used: Vec<String> = evidence_list.iter().map(|e| e.quote.clone()).collect();
            let picks = picks_for(&lens, candidates(&lens, state, &question), limit, &used);
            if picks.is_empty() {
                text.push_str("_No evidence found in the notes; see Unresolved gaps._\n");
                own_gaps.push(gap_for(&question));
                continue;
            }
            let mut figures = Vec::new();
            for p in picks {
                let _ = writeln!(text, "- {} [{}]", p.sentence, p.note_id);
                let title = cited
                    .entry(p.note_id.clone())
                    .or_insert_with(|| title_of(state, &p.note_id));
                figures.extend(
                    stepwise_tools::figure_rows(title, &p.sentence)
                        .into_iter()
                        .map(|r| (r, p.note_id.clone())),
                );
                evidence_list.push(Evidence {
                    source_id: p.note_id,
                    step: p.step,
                    quote: p.sentence,
                });
            }
            text.push_str(&figures_table(&figures));
        }
        let tools = tool_sections(state);
        text.push_str(&tools.text);
        evidence_list.extend(tools.evidence);
        // A goal that asks something, with no step that looked into it, is
        // not answered by what the run did.
        // (A dimension no step searched is a gap of its own already.)
        if state.goal.trim_end().ends_with(['?', '？']) && !tools.answered && no_section {
            let gap = not_searched(state, &state.goal);
            if !own_gaps.contains(&gap) {
                own_gaps.push(gap);
            }
        }
        let contradictions: Vec<_> = contradictions(state)
            .into_iter()
            .filter(|(_, c)| {
                c.claims
                    .iter()
                    .all(|cl| lens.topic.on_topic(&self.lexicon, &cl.note_id))
            })
            .collect();
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
        // The gaps a section found are the run's gaps once a later search
        // resolved nothing; a resolved one is not repeated.
        let mut gaps: Vec<String> = ordered_gaps(state).into_iter().cloned().collect();
        for g in &own_gaps {
            if !gaps.contains(g) {
                gaps.push(g.clone());
            }
        }
        if evidence_list.is_empty() && gaps.is_empty() {
            // No section asked anything (a plan of other tools, say), so no
            // section can be missing — but nothing is cited either, and
            // "None" would claim the opposite.
            let gap = NOTHING_CITABLE.to_owned();
            gaps.push(gap.clone());
            own_gaps.push(gap);
        }
        text.push_str("\n## Unresolved gaps\n\n");
        if gaps.is_empty() {
            text.push_str("None: every section found evidence in the notes.\n");
        } else {
            for gap in &gaps {
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
            gaps: own_gaps
                .into_iter()
                .filter(|g| !state.knowledge_gaps.contains(g))
                .collect(),
        }))
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

/// The figures of a section's cited sentences side by side (subject, what
/// is measured, value, source), so alternatives compare at a glance; empty
/// with fewer than two figures.
fn figures_table(rows: &[(stepwise_tools::FigureRow, String)]) -> String {
    if rows.len() < 2 {
        return String::new();
    }
    let cell = |s: &str| s.replace('|', "/");
    let mut out = String::from("\n| Subject | Measured | Value | Source |\n|---|---|---|---|\n");
    for (r, id) in rows {
        let _ = writeln!(
            out,
            "| {} | {} | {} | [{id}] |",
            cell(&r.subject),
            cell(&r.measured),
            cell(&r.value)
        );
    }
    out
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
