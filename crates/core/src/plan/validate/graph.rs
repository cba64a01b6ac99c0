//! The checks across steps: dependencies exist, the graph has no cycle,
//! the plan keeps within its bounds.

use std::collections::{BTreeMap, BTreeSet};

use crate::ids::StepId;
use crate::step_status::StepStatus;

use super::checker::{Checker, StepFacts};
use super::diagnostics::DiagnosticCode;
use crate::plan::args::references;
use crate::plan::dag::DepGraph;

impl Checker<'_> {
    /// Second pass: ids, dependencies, cycles, references, size.
    pub(super) fn check_graph(&mut self, facts: &[StepFacts<'_>]) {
        let mut first: BTreeMap<&StepId, &StepFacts<'_>> = BTreeMap::new();
        for f in facts {
            let Some(id) = &f.id else { continue };
            if let Some(earlier) = first.get(id) {
                self.step_diag(
                    DiagnosticCode::DuplicateStepId,
                    f,
                    format!("/steps/{}/id", f.index),
                    format!("id {id} is already used by step #{}", earlier.index + 1),
                );
            } else {
                first.insert(id, f);
            }
        }
        let ids: BTreeSet<&StepId> = first.keys().copied().collect();
        for f in facts {
            for (i, dep) in f.deps.iter().enumerate() {
                let path = format!("/steps/{}/depends_on/{i}", f.index);
                if Some(dep) == f.id.as_ref() {
                    self.step_diag(
                        DiagnosticCode::SelfDependency,
                        f,
                        path,
                        "depends on itself".to_owned(),
                    );
                } else if !ids.contains(dep) {
                    self.step_diag(
                        DiagnosticCode::UnknownDependency,
                        f,
                        path,
                        format!("depends on {dep}, which is not in the plan"),
                    );
                } else if let Some(d) = first.get(dep)
                    && matches!(d.status, StepStatus::Terminated | StepStatus::Skipped)
                    && !f.status.is_final()
                {
                    self.step_diag(
                        DiagnosticCode::DeadDependency,
                        f,
                        path,
                        format!(
                            "depends on {dep}, which is {} and will never succeed",
                            d.status
                        ),
                    );
                }
            }
        }
        let with_ids: Vec<_> = facts
            .iter()
            .filter_map(|f| f.id.as_ref().map(|id| (id, f.deps.as_slice())))
            .collect();
        let graph = DepGraph::new(with_ids);
        for cycle in graph.cycles() {
            let Some(head) = first.get(&cycle[0]) else {
                continue;
            };
            let loop_text: Vec<&str> = cycle
                .iter()
                .chain(cycle.first())
                .map(StepId::as_str)
                .collect();
            self.step_diag(
                DiagnosticCode::DependencyCycle,
                head,
                format!("/steps/{}/depends_on", head.index),
                format!(
                    "dependency cycle: {} (each step depends on the next)",
                    loop_text.join(" → ")
                ),
            );
        }
        for f in facts {
            // Only a step with references needs its transitive dependencies
            // (computing them for every step of a long chain is quadratic).
            let mut deps = None;
            for (path, value) in &f.ref_sources {
                let (refs, errors) = references(value);
                for e in errors {
                    self.step_diag(
                        DiagnosticCode::MalformedReference,
                        f,
                        path.clone(),
                        e.to_string(),
                    );
                }
                for r in refs {
                    if Some(&r.step) == f.id.as_ref() {
                        self.step_diag(
                            DiagnosticCode::ReferenceNotDependency,
                            f,
                            path.clone(),
                            format!("refers to its own result (${})", r.step),
                        );
                    } else if !ids.contains(&r.step) {
                        self.step_diag(
                            DiagnosticCode::UnknownReference,
                            f,
                            path.clone(),
                            format!("refers to ${}, which is not a step in the plan", r.step),
                        );
                    } else if !deps
                        .get_or_insert_with(|| {
                            f.id.as_ref()
                                .map(|id| graph.transitive_deps(id))
                                .unwrap_or_default()
                        })
                        .contains(&r.step)
                    {
                        self.step_diag(
                            DiagnosticCode::ReferenceNotDependency,
                            f,
                            path.clone(),
                            format!(
                                "refers to ${0} but does not depend on {0}: add it to depends_on",
                                r.step
                            ),
                        );
                    } else if let Some(problem) =
                        first.get(&r.step).and_then(|d| self.output_problem(&r, d))
                    {
                        self.step_diag(
                            DiagnosticCode::OutputSchemaMismatch,
                            f,
                            path.clone(),
                            problem,
                        );
                    }
                }
            }
            self.check_reference_types(f, &first);
        }
        let counted = facts
            .iter()
            .filter(|f| f.status != StepStatus::Skipped)
            .count();
        if let Some(max) = self.limits.max_steps
            && counted > max
        {
            self.push(
                DiagnosticCode::TooManySteps,
                None,
                None,
                "/steps".to_owned(),
                format!("the plan has {counted} steps but max_steps is {max}"),
            );
        }
    }
}
