//! Graph algorithms over `depends_on`: cycles (named in full, so a repairer or
//! a person sees the whole loop), transitive dependencies and readiness.
//! Hand-written because they are small and must be deterministic: results
//! follow plan order.

use std::collections::{BTreeSet, HashMap};

use crate::ids::StepId;

/// A dependency graph in plan order: `nodes[i]` depends on `edges[i]`
/// (indices into `nodes`). Dependencies on unknown ids are left out.
#[derive(Debug, Clone)]
pub struct DepGraph<'a> {
    nodes: Vec<&'a StepId>,
    edges: Vec<Vec<usize>>,
}

impl<'a> DepGraph<'a> {
    /// Builds the graph. If an id appears twice, the first occurrence wins.
    pub fn new(steps: impl IntoIterator<Item = (&'a StepId, &'a [StepId])>) -> Self {
        let steps: Vec<_> = steps.into_iter().collect();
        let mut index = HashMap::new();
        for (i, (id, _)) in steps.iter().enumerate() {
            index.entry(*id).or_insert(i);
        }
        let edges = steps
            .iter()
            .map(|(_, deps)| deps.iter().filter_map(|d| index.get(d).copied()).collect())
            .collect();
        Self {
            nodes: steps.into_iter().map(|(id, _)| id).collect(),
            edges,
        }
    }

    /// Every cycle of two or more steps, one per strongly connected component,
    /// each as a path `[a, b, c]` meaning a depends on b, b on c, c on a.
    /// Self-dependencies are not included (the validator reports them apart).
    pub fn cycles(&self) -> Vec<Vec<StepId>> {
        let mut out: Vec<Vec<StepId>> = self
            .strongly_connected()
            .into_iter()
            .filter(|scc| scc.len() > 1)
            .filter_map(|scc| self.cycle_within(&scc))
            .map(|path| path.into_iter().map(|i| self.nodes[i].clone()).collect())
            .collect();
        out.sort_by_key(|c| self.position(&c[0]));
        out
    }

    fn position(&self, id: &StepId) -> usize {
        self.nodes
            .iter()
            .position(|n| *n == id)
            .unwrap_or(usize::MAX)
    }

    /// Tarjan's algorithm, iterative so a long chain cannot overflow the stack.
    fn strongly_connected(&self) -> Vec<Vec<usize>> {
        let n = self.nodes.len();
        let mut index = vec![usize::MAX; n];
        let mut low = vec![0; n];
        let mut on_stack = vec![false; n];
        let mut stack = Vec::new();
        let mut next = 0;
        let mut sccs = Vec::new();
        for root in 0..n {
            if index[root] != usize::MAX {
                continue;
            }
            // (node, next edge to look at)
            let mut work = vec![(root, 0usize)];
            while let Some(&mut (v, ref mut ei)) = work.last_mut() {
                if *ei == 0 && index[v] == usize::MAX {
                    index[v] = next;
                    low[v] = next;
                    next += 1;
                    stack.push(v);
                    on_stack[v] = true;
                }
                if let Some(&w) = self.edges[v].get(*ei) {
                    *ei += 1;
                    if index[w] == usize::MAX {
                        work.push((w, 0));
                    } else if on_stack[w] {
                        low[v] = low[v].min(index[w]);
                    }
                    continue;
                }
                work.pop();
                if let Some(&(parent, _)) = work.last() {
                    low[parent] = low[parent].min(low[v]);
                }
                if low[v] == index[v] {
                    let mut scc = Vec::new();
                    while let Some(w) = stack.pop() {
                        on_stack[w] = false;
                        scc.push(w);
                        if w == v {
                            break;
                        }
                    }
                    scc.sort_unstable();
                    sccs.push(scc);
                }
            }
        }
        sccs
    }

    /// A concrete cycle through the first (plan-order) member of a strongly connected set.
    fn cycle_within(&self, scc: &[usize]) -> Option<Vec<usize>> {
        let start = *scc.first()?;
        let inside: BTreeSet<usize> = scc.iter().copied().collect();
        let mut path = vec![start];
        let mut seen = BTreeSet::from([start]);
        let mut cursor = vec![0usize];
        while let (Some(&v), Some(ei)) = (path.last(), cursor.last_mut()) {
            let Some(&w) = self.edges[v].get(*ei) else {
                path.pop();
                cursor.pop();
                continue;
            };
            *ei += 1;
            if w == start && path.len() > 1 {
                return Some(path);
            }
            if inside.contains(&w) && seen.insert(w) {
                path.push(w);
                cursor.push(0);
            }
        }
        None
    }

    /// Ids of every step `id` depends on, directly or not.
    pub fn transitive_deps(&self, id: &StepId) -> BTreeSet<StepId> {
        let mut out = BTreeSet::new();
        let Some(start) = self.nodes.iter().position(|n| *n == id) else {
            return out;
        };
        let mut todo = self.edges[start].clone();
        while let Some(i) = todo.pop() {
            if out.insert(self.nodes[i].clone()) {
                todo.extend(&self.edges[i]);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(spec: &[(&str, &[&str])]) -> Vec<(StepId, Vec<StepId>)> {
        spec.iter()
            .map(|(id, deps)| {
                (
                    StepId::new(*id),
                    deps.iter().map(|d| StepId::new(*d)).collect(),
                )
            })
            .collect()
    }

    fn cycles(spec: &[(&str, &[&str])]) -> Vec<Vec<String>> {
        let g = graph(spec);
        DepGraph::new(g.iter().map(|(i, d)| (i, d.as_slice())))
            .cycles()
            .into_iter()
            .map(|c| c.into_iter().map(|s| s.0).collect())
            .collect()
    }

    #[test]
    fn finds_cycles_of_several_lengths_at_once() {
        let found = cycles(&[
            ("a", &["b"]),
            ("b", &["a"]),
            ("c", &["d"]),
            ("d", &["e"]),
            ("e", &["c"]),
            ("f", &["a", "c"]),
            ("g", &["g"]),
        ]);
        assert_eq!(found, vec![vec!["a", "b"], vec!["c", "d", "e"]]);
    }

    #[test]
    fn acyclic_graphs_have_no_cycles() {
        assert!(cycles(&[("a", &[]), ("b", &["a"]), ("c", &["a", "b"]), ("d", &["x"])]).is_empty());
    }

    #[test]
    fn a_long_chain_does_not_overflow() {
        let ids: Vec<StepId> = (0..100_000).map(|i| StepId::new(format!("s{i}"))).collect();
        let deps: Vec<Vec<StepId>> = (0..ids.len())
            .map(|i| vec![ids[(i + 1) % ids.len()].clone()])
            .collect();
        let g = DepGraph::new(ids.iter().zip(deps.iter().map(Vec::as_slice)));
        assert_eq!(g.cycles()[0].len(), 100_000);
    }

    #[test]
    fn transitive_deps_follow_every_path() {
        let g = graph(&[("a", &[]), ("b", &["a"]), ("c", &["b"]), ("d", &["c", "a"])]);
        let dg = DepGraph::new(g.iter().map(|(i, d)| (i, d.as_slice())));
        let deps: Vec<_> = dg
            .transitive_deps(&StepId::new("d"))
            .into_iter()
            .map(|s| s.0)
            .collect();
        assert_eq!(deps, ["a", "b", "c"]);
    }
}
