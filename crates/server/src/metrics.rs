//! `/metrics`, in the Prometheus text format (version 0.0.4).
//!
//! Two kinds of figures:
//! - read from the store at each scrape: runs by status (every run in the
//!   database, `queued` being runs waiting in this server for a slot) and
//!   approvals pending (steps and plan versions waiting for a person);
//! - counted from the events this server's runs record, since it started:
//!   step latency (a histogram, by outcome), model calls, tokens and cost by
//!   model, and the runs this server took from `run_started` to their end:
//!   their duration (a histogram, by status) and how many reached `ok`
//!   without a person (the closed loop) or after a resume (recovered).

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::sync::{Mutex, PoisonError};

use chrono::{DateTime, Utc};
use stepwise_core::model::ModelExchange;
use stepwise_core::{Event, EventKind, RunId, StepId, Usage};

/// Upper bounds of the step latency buckets, in seconds.
const BUCKETS: [f64; 12] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// Upper bounds of the run duration buckets, in seconds.
const RUN_BUCKETS: [f64; 12] = [
    0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 1800.0, 3600.0, 14400.0,
];

/// A latency histogram over `BUCKETS` (steps) or `RUN_BUCKETS` (runs).
#[derive(Debug, Clone, Default)]
struct Histogram {
    counts: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

impl Histogram {
    fn observe(&mut self, seconds: f64) {
        self.observe_in(&BUCKETS, seconds);
    }

    fn observe_in(&mut self, buckets: &[f64; BUCKETS.len()], seconds: f64) {
        for (bound, count) in buckets.iter().zip(self.counts.iter_mut()) {
            if seconds <= *bound {
                *count += 1;
            }
        }
        self.count += 1;
        self.sum += seconds;
    }
}

/// Per-model usage.
#[derive(Debug, Clone, Copy, Default)]
struct ModelTotals {
    usage: Usage,
    failed_calls: u64,
}

/// What this server saw of a run it recorded `run_started` for.
#[derive(Debug, Clone, Copy)]
struct Seen {
    started: DateTime<Utc>,
    /// It stopped for a person (needs_review, awaiting_approval).
    paused: bool,
    /// A person decided something (a plan or step approved or refused by
    /// someone other than `auto`, a rejection).
    decided: bool,
    /// It was resumed (after a pause or a crash).
    resumed: bool,
}

#[derive(Debug, Default)]
struct Counted {
    /// When each step attempt in flight started.
    started: HashMap<(RunId, StepId), DateTime<Utc>>,
    /// Runs seen from their `run_started`, until they end.
    runs: HashMap<RunId, Seen>,
    /// Run durations (run_started to the end) by final status.
    durations: BTreeMap<&'static str, Histogram>,
    /// Runs taken from run_started to ok with no pause and no decision.
    closed_loop: u64,
    /// Runs taken to ok after a resume.
    recovered: u64,
    /// Step latency by outcome (`succeeded`, `failed`).
    steps: BTreeMap<&'static str, Histogram>,
    models: BTreeMap<String, ModelTotals>,
    /// Events recorded by this server's runs.
    events: u64,
}

/// What the server counted since it started.
#[derive(Debug, Default)]
pub(crate) struct Metrics {
    counted: Mutex<Counted>,
}

/// The figures read from the store at scrape time.
#[derive(Debug, Default)]
pub(crate) struct Snapshot {
    /// Runs by status name (with `queued`).
    pub(crate) runs: BTreeMap<&'static str, u64>,
    /// Steps and plan versions waiting for an approval.
    pub(crate) approvals_pending: u64,
    /// Event streams open.
    pub(crate) streams: u64,
    /// Runs this server works on now.
    pub(crate) working: u64,
}

impl Metrics {
    /// Counts what `events` of `run` say.
    pub(crate) fn observe(&self, run: &RunId, events: &[Event]) {
        let mut c = self.counted.lock().unwrap_or_else(PoisonError::into_inner);
        for event in events {
            c.events += 1;
            match &event.kind {
                EventKind::StepStarted { step, .. } => {
                    c.started.insert((run.clone(), step.clone()), event.at);
                }
                EventKind::StepSucceeded { step, .. } => {
                    Self::finished(&mut c, run, step, event.at, "succeeded");
                }
                EventKind::StepFailed { step, .. } => {
                    Self::finished(&mut c, run, step, event.at, "failed");
                }
                EventKind::ModelCalled { exchange, .. } => Self::model(&mut c, exchange),
                EventKind::RunStarted { .. } => {
                    let seen = Seen {
                        started: event.at,
                        paused: false,
                        decided: false,
                        resumed: false,
                    };
                    c.runs.insert(run.clone(), seen);
                }
                EventKind::RunResumed { .. } => {
                    if let Some(seen) = c.runs.get_mut(run) {
                        seen.resumed = true;
                    }
                }
                EventKind::PlanApproved { by, .. }
                | EventKind::ApprovalGranted { by, .. }
                | EventKind::ApprovalDenied { by, .. }
                    if by != "auto" =>
                {
                    if let Some(seen) = c.runs.get_mut(run) {
                        seen.decided = true;
                    }
                }
                EventKind::PlanRejected { .. } => {
                    if let Some(seen) = c.runs.get_mut(run) {
                        seen.decided = true;
                    }
                }
                EventKind::Synthesized { .. } => Self::ended(&mut c, run, event.at, "ok"),
                EventKind::RunCancelled { .. } | EventKind::RunFailed { .. } => {
                    let status = if matches!(event.kind, EventKind::RunFailed { .. }) {
                        "failed"
                    } else {
                        "cancelled"
                    };
                    Self::ended(&mut c, run, event.at, status);
                    c.started.retain(|(r, _), _| r != run);
                }
                EventKind::AwaitingApproval { .. } | EventKind::NeedsReview { .. } => {
                    if let Some(seen) = c.runs.get_mut(run) {
                        seen.paused = true;
                    }
                    c.started.retain(|(r, _), _| r != run);
                }
                _ => {}
            }
        }
    }

    /// A run this server stopped working on (its steps in flight are not
    /// timed any more).
    pub(crate) fn forget(&self, run: &RunId) {
        let mut c = self.counted.lock().unwrap_or_else(PoisonError::into_inner);
        c.started.retain(|(r, _), _| r != run);
    }

    fn finished(
        c: &mut Counted,
        run: &RunId,
        step: &StepId,
        at: DateTime<Utc>,
        outcome: &'static str,
    ) {
        if let Some(started) = c.started.remove(&(run.clone(), step.clone())) {
            let seconds = (at - started).num_microseconds().unwrap_or(0).max(0) as f64 / 1e6;
            c.steps.entry(outcome).or_default().observe(seconds);
        }
    }

    /// A run seen from its start ended with `status`: its duration, and
    /// whether it closed the loop or recovered.
    fn ended(c: &mut Counted, run: &RunId, at: DateTime<Utc>, status: &'static str) {
        let Some(seen) = c.runs.remove(run) else {
            return;
        };
        let seconds = (at - seen.started).num_microseconds().unwrap_or(0).max(0) as f64 / 1e6;
        c.durations
            .entry(status)
            .or_default()
            .observe_in(&RUN_BUCKETS, seconds);
        if status == "ok" {
            if !seen.paused && !seen.decided {
                c.closed_loop += 1;
            }
            if seen.resumed {
                c.recovered += 1;
            }
        }
    }

    fn model(c: &mut Counted, exchange: &ModelExchange) {
        let usage = exchange.usage();
        let totals = c.models.entry(exchange.model.clone()).or_default();
        if usage.llm_calls == 0 {
            totals.failed_calls += 1;
        }
        totals.usage += usage;
    }

    /// The text of `/metrics`; `cost` prices a model's usage.
    pub(crate) fn render(
        &self,
        snapshot: &Snapshot,
        cost: &dyn Fn(&str, &Usage) -> Option<f64>,
    ) -> String {
        let c = self.counted.lock().unwrap_or_else(PoisonError::into_inner);
        let mut out = String::new();
        header(
            &mut out,
            "stepwise_runs",
            "gauge",
            "Runs in the database by status; queued: waiting in this server for a slot (counted under queued, not running).",
        );
        for status in [
            "queued",
            "running",
            "awaiting_approval",
            "needs_review",
            "ok",
            "failed",
            "cancelled",
        ] {
            let n = snapshot.runs.get(status).copied().unwrap_or(0);
            let _ = writeln!(out, "stepwise_runs{{status=\"{status}\"}} {n}");
        }
        header(
            &mut out,
            "stepwise_runs_working",
            "gauge",
            "Runs this server is working on now.",
        );
        let _ = writeln!(out, "stepwise_runs_working {}", snapshot.working);
        header(
            &mut out,
            "stepwise_approvals_pending",
            "gauge",
            "Side-effect steps and plan versions waiting for a person's approval.",
        );
        let _ = writeln!(
            out,
            "stepwise_approvals_pending {}",
            snapshot.approvals_pending
        );
        header(
            &mut out,
            "stepwise_event_streams",
            "gauge",
            "Event streams (text/event-stream) open.",
        );
        let _ = writeln!(out, "stepwise_event_streams {}", snapshot.streams);
        header(
            &mut out,
            "stepwise_events_total",
            "counter",
            "Events recorded by the runs this server worked on.",
        );
        let _ = writeln!(out, "stepwise_events_total {}", c.events);

        header(
            &mut out,
            "stepwise_step_duration_seconds",
            "histogram",
            "Step attempts of this server's runs, from step_started to step_succeeded or step_failed.",
        );
        for outcome in ["succeeded", "failed"] {
            let h = c.steps.get(outcome).cloned().unwrap_or_default();
            for (bound, count) in BUCKETS.iter().zip(h.counts.iter()) {
                let _ = writeln!(
                    out,
                    "stepwise_step_duration_seconds_bucket{{outcome=\"{outcome}\",le=\"{bound}\"}} {count}"
                );
            }
            let _ = writeln!(
                out,
                "stepwise_step_duration_seconds_bucket{{outcome=\"{outcome}\",le=\"+Inf\"}} {}",
                h.count
            );
            let _ = writeln!(
                out,
                "stepwise_step_duration_seconds_sum{{outcome=\"{outcome}\"}} {}",
                h.sum
            );
            let _ = writeln!(
                out,
                "stepwise_step_duration_seconds_count{{outcome=\"{outcome}\"}} {}",
                h.count
            );
        }

        header(
            &mut out,
            "stepwise_run_duration_seconds",
            "histogram",
            "Runs this server took from run_started to their end, by final status (ok, failed, cancelled).",
        );
        for status in ["ok", "failed", "cancelled"] {
            let h = c.durations.get(status).cloned().unwrap_or_default();
            for (bound, count) in RUN_BUCKETS.iter().zip(h.counts.iter()) {
                let _ = writeln!(
                    out,
                    "stepwise_run_duration_seconds_bucket{{status=\"{status}\",le=\"{bound}\"}} {count}"
                );
            }
            let _ = writeln!(
                out,
                "stepwise_run_duration_seconds_bucket{{status=\"{status}\",le=\"+Inf\"}} {}",
                h.count
            );
            let _ = writeln!(
                out,
                "stepwise_run_duration_seconds_sum{{status=\"{status}\"}} {}",
                h.sum
            );
            let _ = writeln!(
                out,
                "stepwise_run_duration_seconds_count{{status=\"{status}\"}} {}",
                h.count
            );
        }
        header(
            &mut out,
            "stepwise_runs_closed_loop_total",
            "counter",
            "Runs this server took from run_started to ok with no pause and no decision by a person.",
        );
        let _ = writeln!(out, "stepwise_runs_closed_loop_total {}", c.closed_loop);
        header(
            &mut out,
            "stepwise_runs_recovered_total",
            "counter",
            "Runs this server took from run_started to ok after a resume (of a pause or a crash).",
        );
        let _ = writeln!(out, "stepwise_runs_recovered_total {}", c.recovered);

        header(
            &mut out,
            "stepwise_model_calls_total",
            "counter",
            "Model calls of this server's runs, by model and result (ok: answered; error: failed attempt).",
        );
        for (model, t) in &c.models {
            let m = escape(model);
            let _ = writeln!(
                out,
                "stepwise_model_calls_total{{model=\"{m}\",result=\"ok\"}} {}",
                t.usage.llm_calls
            );
            let _ = writeln!(
                out,
                "stepwise_model_calls_total{{model=\"{m}\",result=\"error\"}} {}",
                t.failed_calls
            );
        }
        header(
            &mut out,
            "stepwise_model_tokens_total",
            "counter",
            "Model tokens of this server's runs, by model and direction.",
        );
        for (model, t) in &c.models {
            let m = escape(model);
            let _ = writeln!(
                out,
                "stepwise_model_tokens_total{{model=\"{m}\",direction=\"input\"}} {}",
                t.usage.input_tokens
            );
            let _ = writeln!(
                out,
                "stepwise_model_tokens_total{{model=\"{m}\",direction=\"output\"}} {}",
                t.usage.output_tokens
            );
        }
        header(
            &mut out,
            "stepwise_model_cost_usd_total",
            "counter",
            "What this server's model calls cost, by model, for models with a price in [prices].",
        );
        for (model, t) in &c.models {
            if let Some(usd) = cost(model, &t.usage) {
                let _ = writeln!(
                    out,
                    "stepwise_model_cost_usd_total{{model=\"{}\"}} {usd}",
                    escape(model)
                );
            }
        }
        out
    }
}

fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// A label value as the text format wants it.
fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use stepwise_core::StepResult;

    fn ev(seq: u64, ms: i64, kind: EventKind) -> Event {
        Event {
            seq,
            at: DateTime::<Utc>::from_timestamp_millis(1_700_000_000_000 + ms).unwrap(),
            kind,
        }
    }

    #[test]
    fn step_latency_is_timed_from_start_to_end() {
        let m = Metrics::default();
        let run = RunId("r".into());
        let step = StepId::new("a");
        m.observe(
            &run,
            &[
                ev(
                    1,
                    0,
                    EventKind::StepStarted {
                        step: step.clone(),
                        attempt: 1,
                    },
                ),
                ev(
                    2,
                    300,
                    EventKind::StepSucceeded {
                        step,
                        result: StepResult {
                            output: serde_json::Value::Null,
                            attempts: 1,
                            duration_ms: 300,
                        },
                        usage: Usage::default(),
                    },
                ),
            ],
        );
        let text = m.render(&Snapshot::default(), &|_, _| None);
        assert!(
            text.contains(
                "stepwise_step_duration_seconds_bucket{outcome=\"succeeded\",le=\"0.25\"} 0\n"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "stepwise_step_duration_seconds_bucket{outcome=\"succeeded\",le=\"0.5\"} 1\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("stepwise_step_duration_seconds_count{outcome=\"succeeded\"} 1\n"),
            "{text}"
        );
        assert!(
            text.contains("stepwise_runs{status=\"queued\"} 0\n"),
            "{text}"
        );
        assert_eq!(escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }

    #[test]
    fn runs_are_timed_and_counted_as_closed_loop_or_recovered() {
        let started = |run: &str| EventKind::RunStarted {
            run_id: RunId(run.into()),
            input: "g".into(),
            constraints: Box::default(),
            max_replans: 1,
            max_steps: 5,
            max_repairs: 1,
            host: serde_json::Value::Null,
            strategy: "plan-execute".into(),
        };
        let synthesized = || EventKind::Synthesized {
            report: String::new(),
            evidence: Vec::new(),
            rejected_evidence: Vec::new(),
            usage: Usage::default(),
        };
        let m = Metrics::default();
        let (alone, paused, failed) = (RunId("a".into()), RunId("p".into()), RunId("f".into()));
        m.observe(
            &alone,
            &[ev(1, 0, started("a")), ev(2, 2_000, synthesized())],
        );
        m.observe(
            &paused,
            &[
                ev(1, 0, started("p")),
                ev(
                    2,
                    100,
                    EventKind::AwaitingApproval {
                        steps: vec![StepId::new("save")],
                        plan_version: None,
                    },
                ),
            ],
        );
        m.observe(
            &paused,
            &[
                ev(
                    3,
                    60_000,
                    EventKind::ApprovalGranted {
                        step: StepId::new("save"),
                        args_hash: "h".into(),
                        by: "alice".into(),
                    },
                ),
                ev(
                    4,
                    61_000,
                    EventKind::RunResumed {
                        by: "alice".into(),
                        max_replans: None,
                        max_steps: None,
                        changed: Vec::new(),
                        sources_changed: false,
                        host: serde_json::Value::Null,
                    },
                ),
                ev(5, 62_000, synthesized()),
            ],
        );
        m.observe(
            &failed,
            &[
                ev(1, 0, started("f")),
                ev(
                    2,
                    50,
                    EventKind::RunFailed {
                        error: "boom".into(),
                        usage: Usage::default(),
                    },
                ),
            ],
        );
        let text = m.render(&Snapshot::default(), &|_, _| None);
        for line in [
            "stepwise_runs_closed_loop_total 1\n",
            "stepwise_runs_recovered_total 1\n",
            "stepwise_run_duration_seconds_count{status=\"ok\"} 2\n",
            "stepwise_run_duration_seconds_sum{status=\"ok\"} 64\n",
            "stepwise_run_duration_seconds_bucket{status=\"ok\",le=\"5\"} 1\n",
            "stepwise_run_duration_seconds_bucket{status=\"ok\",le=\"60\"} 1\n",
            "stepwise_run_duration_seconds_bucket{status=\"ok\",le=\"300\"} 2\n",
            "stepwise_run_duration_seconds_count{status=\"failed\"} 1\n",
        ] {
            assert!(text.contains(line), "{line} not in:\n{text}");
        }
    }

    #[test]
    fn model_calls_tokens_and_cost_are_counted_by_model() {
        use stepwise_core::FailureClass;
        use stepwise_core::model::{ChatRequest, ChatResponse, ExchangeOutcome, FinishReason};
        let exchange = |model: &str, ok: bool| {
            let outcome = if ok {
                ExchangeOutcome::Response {
                    response: ChatResponse {
                        text: String::new(),
                        tool_calls: Vec::new(),
                        finish_reason: FinishReason::Stop,
                        usage: Usage {
                            llm_calls: 1,
                            input_tokens: 100,
                            output_tokens: 20,
                            ..Usage::default()
                        },
                        model: model.into(),
                    },
                }
            } else {
                ExchangeOutcome::Error {
                    class: FailureClass::Transient,
                    message: "503".into(),
                    retry_after_ms: None,
                }
            };
            EventKind::ModelCalled {
                role: "planner".into(),
                exchange: Box::new(ModelExchange {
                    model: model.into(),
                    request: ChatRequest::default(),
                    outcome,
                    attempt: 1,
                    waited_ms: 0,
                    duration_ms: 5,
                }),
            }
        };
        let m = Metrics::default();
        let run = RunId("r".into());
        m.observe(
            &run,
            &[
                ev(1, 0, exchange("openai:m", true)),
                ev(2, 1, exchange("openai:m", false)),
                ev(3, 2, exchange("openai:m", true)),
                ev(4, 3, exchange("anthropic:c", true)),
            ],
        );
        let text = m.render(&Snapshot::default(), &|model, usage| {
            (model == "openai:m").then(|| usage.input_tokens as f64 / 1000.0)
        });
        for line in [
            "stepwise_model_calls_total{model=\"openai:m\",result=\"ok\"} 2\n",
            "stepwise_model_calls_total{model=\"openai:m\",result=\"error\"} 1\n",
            "stepwise_model_tokens_total{model=\"openai:m\",direction=\"input\"} 200\n",
            "stepwise_model_tokens_total{model=\"anthropic:c\",direction=\"output\"} 20\n",
            "stepwise_model_cost_usd_total{model=\"openai:m\"} 0.2\n",
            "stepwise_events_total 4\n",
        ] {
            assert!(text.contains(line), "{line} in {text}");
        }
        assert!(!text.contains("stepwise_model_cost_usd_total{model=\"anthropic:c\"}"));
    }
}
