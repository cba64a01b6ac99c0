//! Spans from the event log: a fold of a run's events into finished
//! OpenTelemetry spans, with no I/O (the exporter is in [`super`]). Every
//! span is derived from recorded events and their times, so a run traced by
//! `stepwise run`, `serve` or a worker gives the same tree, and a run resumed
//! in another process continues the same trace: the trace id and every span
//! id are hashes of the run id (and of the event that opened the span).
//!
//! The tree: `run` (the root) → graph nodes (`prepare_input`, `create_plan`,
//! `validate_plan`, …, `synthesize_report`) and `dispatch_wave`s →
//! `execute_step` (one per step attempt) → `execute_tool` and the executor's
//! model calls; the other roles' model calls (`chat …`) are children of the
//! node they decided. A node runs from the event before it to its own event.
//! The root ends at the run's first stop (its end, or a pause for a person);
//! each later resume is a `resume` span under it, so no span is sent twice.

mod build;
mod fold;
mod ids;
mod parts;
mod values;

pub(crate) use fold::Spans;

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests;
