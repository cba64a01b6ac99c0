//! The offline replanner: reformulates only the sub-questions whose evidence
//! fell short, keeps every other remaining step, and points dependants of a
//! reformulated step at its replacement.

use std::collections::BTreeSet;
use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use serde_json::Value;
use stepwise_core::roles::{ReplanRequest, Replanner, Reply, RoleError};
use stepwise_core::{DraftPlan, RunState, Step, StepId, StepStatus};
use stepwise_tools::notes::Corpus;

use super::assessor::query_of;
use super::gap_for;
use super::planner::gather_step;
use super::search::key_terms;

/// Shortest shared prefix for a vocabulary term to count as a variant (price ~ pricing).
const MIN_PREFIX: usize = 4;

/// Reformulates failing `search_notes` steps from the corpus vocabulary.
#[derive(Debug)]
pub struct OfflineReplanner {
    corpus: Arc<Corpus>,
    vocabulary: OnceLock<BTreeSet<String>>,
}

impl OfflineReplanner {
    /// A replanner over this corpus.
    pub fn new(corpus: Arc<Corpus>) -> Self {
        Self {
            corpus,
            vocabulary: OnceLock::new(),
        }
    }

    fn vocabulary(&self) -> &BTreeSet<String> {
        self.vocabulary.get_or_init(|| {
            self.corpus
                .notes()
                .iter()
                .flat_map(|n| stepwise_tools::notes::tokenize(&format!("{}\n{}", n.title, n.text)))
                .collect()
        })
    }

    /// Candidate queries for a sub-question, best first: terms the corpus
    /// knows plus corpus variants of the ones it does not; then the known
    /// terms alone; then each known term on its own.
    fn candidates(&self, sub_question: &str, query: &str) -> Vec<String> {
        let vocab = self.vocabulary();
        let mut terms = key_terms(query);
        for t in key_terms(sub_question) {
            if !terms.contains(&t) {
                terms.push(t);
            }
        }
        let known: Vec<String> = terms
            .iter()
            .filter(|t| vocab.contains(*t))
            .cloned()
            .collect();
        let mut expanded = known.clone();
        for t in terms.iter().filter(|t| !vocab.contains(*t)) {
            let prefix: String = t.chars().take(MIN_PREFIX).collect();
            if prefix.chars().count() < MIN_PREFIX {
                continue;
            }
            for v in vocab.iter().filter(|v| v.starts_with(&prefix)).take(3) {
                if !expanded.contains(v) {
                    expanded.push(v.clone());
                }
            }
        }
        let mut out = vec![expanded.join(" "), known.join(" ")];
        out.extend(known.iter().cloned());
        out.retain(|q| !q.is_empty());
        out
    }
}

/// Search steps whose sub-question still has an open gap and whose latest
/// attempt has finished: the ones to reformulate.
fn failing(state: &RunState) -> Vec<&Step> {
    let mut out: Vec<&Step> = Vec::new();
    for s in state.plan.steps.iter().rev() {
        if s.tool != "search_notes" || !state.knowledge_gaps.contains(&gap_for(&s.description)) {
            continue;
        }
        if out.iter().any(|o| o.description == s.description) {
            continue;
        }
        let latest = state
            .plan
            .steps
            .iter()
            .rev()
            .find(|x| x.description == s.description);
        if latest.is_some_and(|l| {
            l.id == s.id && matches!(s.status, StepStatus::Succeeded | StepStatus::Terminated)
        }) {
            out.push(s);
        }
    }
    out.reverse();
    out
}

/// Replaces references to `from` with `to` in a JSON value.
fn retarget(value: &Value, from: &str, to: &str) -> Value {
    match value {
        Value::String(s) => Value::String(
            s.replace(&format!("${{{from}"), &format!("${{{to}"))
                .replace(&format!("${from}"), &format!("${to}")),
        ),
        Value::Array(a) => Value::Array(a.iter().map(|v| retarget(v, from, to)).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, v)| (k.clone(), retarget(v, from, to)))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[async_trait]
impl Replanner for OfflineReplanner {
    async fn replan(&self, request: ReplanRequest<'_>) -> Result<Reply<DraftPlan>, RoleError> {
        let state = request.state;
        let mut new_steps = Vec::new();
        let mut renamed: Vec<(StepId, StepId)> = Vec::new();
        for old in failing(state) {
            let tried: Vec<String> = state
                .plan
                .steps
                .iter()
                .filter(|s| s.description == old.description)
                .map(query_of)
                .collect();
            let Some(query) = self
                .candidates(&old.description, &query_of(old))
                .into_iter()
                .find(|q| !tried.contains(q))
            else {
                continue;
            };
            let base = old
                .id
                .as_str()
                .split("_r")
                .next()
                .unwrap_or(old.id.as_str());
            let attempt = state
                .plan
                .steps
                .iter()
                .filter(|s| s.description == old.description)
                .count();
            let id = format!("{base}_r{attempt}");
            renamed.push((old.id.clone(), StepId::new(id.clone())));
            new_steps.push(gather_step(&id, &old.description, &query));
        }
        for pending in state
            .plan
            .steps
            .iter()
            .filter(|s| s.status == StepStatus::Pending)
        {
            let mut step = pending.clone();
            for (from, to) in &renamed {
                for d in step.depends_on.iter_mut().filter(|d| *d == from) {
                    *d = to.clone();
                }
                step.args = match retarget(
                    &Value::Object(step.args.clone()),
                    from.as_str(),
                    to.as_str(),
                ) {
                    Value::Object(map) => map,
                    _ => step.args,
                };
            }
            new_steps.push(step);
        }
        Ok(Reply::free(DraftPlan::from_steps(new_steps)))
    }
}
