//! Live progress of `stepwise run` on stderr, fed every [`Event`] in order.
//!
//! The display keeps its own [`RunState`] folded from the events, so it shows
//! exactly what the log says — the same fold a replay does — rather than a
//! second bookkeeping that could drift. Progress is a courtesy: nothing here
//! may panic or fail the run, so write errors and odd events are swallowed.

use std::collections::{HashMap, VecDeque};
use std::fmt::Write as _;
use std::io::{IsTerminal, Write};

use stepwise_core::{Event, EventKind, Plan, RunState, RunStatus, Step, StepId, StepStatus};

use crate::render::{duration, event, join_ids, plural, plural_u64, truncate};

/// Log lines kept under the live block.
const LOG_LINES: usize = 3;
/// A block taller than the screen cannot be redrawn in place, so steps are capped.
const MAX_STEP_LINES: usize = 20;
/// A running step's glyph turns once per redraw, to show the display is alive.
const SPINNER: [char; 4] = ['◐', '◓', '◑', '◒'];

/// How progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// A block redrawn in place: only on a terminal that understands cursor codes.
    Live,
    /// One line per event, no escape codes: for CI logs and redirected stderr.
    Plain,
    /// Nothing.
    Quiet,
}

impl Mode {
    /// `Quiet` if asked; `Live` if stderr is a terminal and `TERM` is not
    /// `dumb` (unset is fine); else `Plain`. `NO_COLOR` does not pick the mode —
    /// the redraw is cursor movement, not colour — it only turns colour off
    /// (see [`Progress::new`]).
    pub(crate) fn detect(quiet: bool) -> Mode {
        let dumb = std::env::var_os("TERM").is_some_and(|t| t == "dumb");
        if quiet {
            Mode::Quiet
        } else if std::io::stderr().is_terminal() && !dumb {
            Mode::Live
        } else {
            Mode::Plain
        }
    }
}

/// Renders a run's events to `out` as they arrive.
#[derive(Debug)]
pub(crate) struct Progress<W: Write> {
    mode: Mode,
    out: W,
    color: bool,
    /// Live lines are cut to this: a wrapped line would throw the cursor-up count off.
    width: usize,
    state: RunState,
    /// False once an event did not fit the state, which then stays as it was.
    state_ok: bool,
    log: VecDeque<String>,
    /// Lines of the live block now on screen, to move back over.
    drawn: usize,
    frame: usize,
    /// A write failed (stderr closed): stop writing rather than fail on every event.
    broken: bool,
    finished: bool,
    /// Milliseconds spent before the run (loading the notes), counted in
    /// the time shown.
    before_ms: u64,
    /// When this display started: the time of a run interrupted mid-step.
    started: std::time::Instant,
}

impl<W: Write> Progress<W> {
    /// Colour unless `NO_COLOR` is set and non-empty (no-color.org); width
    /// from `COLUMNS` (an explicit choice wins), else the terminal stderr is
    /// on, else 80 (the safe guess).
    pub(crate) fn new(mode: Mode, out: W) -> Self {
        let color = std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
        let columns = std::env::var("COLUMNS").ok().and_then(|c| c.parse().ok());
        let terminal = || {
            terminal_size::terminal_size_of(std::io::stderr())
                .map(|(terminal_size::Width(w), _)| usize::from(w))
        };
        let width = columns.or_else(terminal).filter(|w| *w >= 20);
        Self::with_style(mode, out, color, width.unwrap_or(80))
    }

    /// Starts from a run's state so far (a resume), so the events that follow fold onto it.
    pub(crate) fn resuming(mut self, state: RunState) -> Self {
        self.state = state;
        self
    }

    fn with_style(mode: Mode, out: W, color: bool, width: usize) -> Self {
        Self {
            mode,
            out,
            color,
            width,
            state: RunState::default(),
            state_ok: true,
            log: VecDeque::new(),
            drawn: 0,
            frame: 0,
            broken: false,
            finished: false,
            before_ms: 0,
            started: std::time::Instant::now(),
        }
    }

    /// Counts `before` (the time spent loading the notes before the run
    /// started) in the time shown, so it is the whole command's.
    pub(crate) fn after(mut self, before: std::time::Duration) -> Self {
        self.before_ms = u64::try_from(before.as_millis()).unwrap_or(u64::MAX);
        self
    }

    /// The time to show: the run's, plus what came before it. A run still
    /// `running` when the display ends was interrupted (Ctrl-C): its last
    /// event may be long past, so this session's own clock counts too.
    fn elapsed_ms(&self) -> u64 {
        let mut run = self.state.usage.wall_time_ms;
        if self.state.status == RunStatus::Running {
            let session = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
            run = run.max(session);
        }
        run.saturating_add(self.before_ms)
    }

    /// Folds `event` into the state and shows it. Events after [`finish`](Self::finish) are ignored.
    pub(crate) fn on_event(&mut self, event: &Event) {
        if self.mode == Mode::Quiet || self.finished {
            return;
        }
        let replanned = matches!(event.kind, EventKind::PlanValidated { .. });
        let steps = self.state.plan.steps.iter().filter(|_| replanned);
        let before: HashMap<StepId, StepStatus> = steps.map(|s| (s.id.clone(), s.status)).collect();
        self.state_ok = self.state_ok && self.state.apply(event).is_ok();
        let mut lines = event::line(&event.kind, &self.state.plan);
        if replanned && self.state_ok {
            // A new version marks superseded steps skipped; only a diff shows which.
            for step in &self.state.plan.steps {
                if step.status == StepStatus::Skipped
                    && before.get(&step.id) != Some(&StepStatus::Skipped)
                {
                    lines.push(format!("[{}] skipped (superseded by replan)", step.id));
                }
            }
        }
        if self.mode == Mode::Plain {
            let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
            self.emit(&text);
        } else {
            self.log.extend(lines);
            let extra = self.log.len().saturating_sub(LOG_LINES);
            self.log.drain(..extra);
            self.redraw();
        }
    }

    /// Shows the end: the last block (live) and one summary line.
    pub(crate) fn finish(&mut self) {
        if self.mode == Mode::Quiet || self.finished {
            return;
        }
        if self.mode == Mode::Live {
            self.redraw();
        }
        self.finished = true;
        let line = format!("{}\n", self.summary());
        self.emit(&line);
    }

    fn emit(&mut self, text: &str) {
        if self.broken || text.is_empty() {
            return;
        }
        let result = self.out.write_all(text.as_bytes());
        self.broken = result.and_then(|()| self.out.flush()).is_err();
    }

    fn redraw(&mut self) {
        let mut buf = String::new();
        if self.drawn > 0 {
            let _ = write!(buf, "\x1b[{}A\r\x1b[J", self.drawn);
        }
        let lines = self.block();
        lines.iter().for_each(|l| buf.extend([l.as_str(), "\n"]));
        self.drawn = lines.len();
        self.frame = self.frame.wrapping_add(1);
        self.emit(&buf);
    }

    /// Header, one line per step (indented by depth in the DAG), the last log lines.
    fn block(&self) -> Vec<String> {
        let (plan, width) = (&self.state.plan, self.width.saturating_sub(1));
        let mut head = "stepwise".to_owned();
        if plan.version == 0 {
            head.push_str(" · planning");
        } else {
            let (done, n) = steps_done(plan);
            let (v, r) = (plan.version, self.state.replan_count);
            let _ = write!(head, " · plan v{v} · {done}/{n} steps done · replans {r}");
        }
        let _ = write!(head, " · {}", duration(self.elapsed_ms()));
        if self.state.status != RunStatus::Running {
            let _ = write!(head, " · {}", self.state.status.as_str());
        }
        let mut lines = vec![self.paint("1", &truncate(&head, width))];
        let steps = plan.steps.iter().zip(depths(&plan.steps));
        lines.extend(
            steps
                .take(MAX_STEP_LINES)
                .map(|(s, d)| self.step_line(s, d)),
        );
        let more = plan.steps.len().saturating_sub(MAX_STEP_LINES);
        if more > 0 {
            lines.push(format!("  … {} more", plural(more, "step")));
        }
        let log = self.log.iter().map(|l| truncate(&format!("  {l}"), width));
        lines.extend(log.map(|l| self.paint("2", &l)));
        lines
    }

    fn step_line(&self, step: &Step, depth: usize) -> String {
        // Glyph and SGR colour code: cyan, green, red, yellow, dim.
        let (glyph, color) = match step.status {
            StepStatus::Pending => ('·', ""),
            StepStatus::Running => (SPINNER[self.frame % SPINNER.len()], "36"),
            StepStatus::Succeeded => ('✓', "32"),
            StepStatus::Failed | StepStatus::Terminated => ('✗', "31"),
            StepStatus::Retrying => ('↻', "33"),
            StepStatus::Skipped => ('⊘', "2"),
        };
        let indent = "  ".repeat(1 + depth.min(6));
        let mut text = format!("{} {}", step.id, step.tool);
        if !step.depends_on.is_empty() {
            let _ = write!(text, " ← {}", join_ids(&step.depends_on));
        }
        if step.attempts > 1 {
            let _ = write!(text, " (attempt {})", step.attempts);
        }
        let _ = write!(text, "  {}", step.description);
        let text = truncate(&text, self.width.saturating_sub(indent.len() + 3));
        match step.status {
            StepStatus::Skipped => self.paint(color, &format!("{indent}{glyph} {text}")),
            _ => format!("{indent}{} {text}", self.paint(color, &glyph.to_string())),
        }
    }

    /// Wraps `text` in SGR `code` (e.g. "32" green) unless colour is off.
    fn paint(&self, code: &str, text: &str) -> String {
        if self.color && !code.is_empty() {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }

    /// `run ok · plan v2 · 3/3 steps done (1 skipped) · replans 1 · 5 model calls · 1.2 s`.
    fn summary(&self) -> String {
        let (s, steps) = (&self.state, &self.state.plan.steps);
        let status = match s.status {
            RunStatus::Running => "incomplete",
            other => other.as_str(),
        };
        let (done, n) = steps_done(&s.plan);
        let v = s.plan.version;
        let mut line = format!("run {status} · plan v{v} · {done}/{n} steps done");
        let ended = [StepStatus::Skipped, StepStatus::Terminated].map(|st| {
            let count = steps.iter().filter(|x| x.status == st).count();
            (count > 0).then(|| format!("{count} {st}"))
        });
        let ended: Vec<String> = ended.into_iter().flatten().collect();
        if !ended.is_empty() {
            let _ = write!(line, " ({})", ended.join(", "));
        }
        let calls = plural_u64(s.usage.llm_calls, "model call");
        let time = duration(self.elapsed_ms());
        let _ = write!(line, " · replans {} · {calls} · {time}", s.replan_count);
        line
    }
}

/// Steps that succeeded, of the plan's steps less the skipped ones — as
/// `stepwise runs` (`RunSummary`) and the dashboard count them, so a terminated
/// step is never counted as done.
fn steps_done(plan: &Plan) -> (usize, usize) {
    let succeeded = plan
        .steps
        .iter()
        .filter(|x| x.status == StepStatus::Succeeded)
        .count();
    (succeeded, plan.active_steps())
}

/// Longest dependency chain above each step; bounded passes, so a cycle cannot hang it.
fn depths(steps: &[Step]) -> Vec<usize> {
    let index: HashMap<&StepId, usize> =
        steps.iter().enumerate().map(|(i, s)| (&s.id, i)).collect();
    let mut depth = vec![0; steps.len()];
    for _ in 0..steps.len() {
        let before = depth.clone();
        for (i, step) in steps.iter().enumerate() {
            let deps = step.depends_on.iter().filter_map(|d| index.get(d));
            let deepest = deps.map(|&j| depth[j] + 1).max();
            depth[i] = deepest.unwrap_or(0).min(steps.len());
        }
        if depth == before {
            break;
        }
    }
    depth
}

#[cfg(test)]
mod tests {
    use std::io;

    use serde_json::{Value, json};

    use super::*;

    /// Events written as their JSON log entries: short, and what a log holds.
    fn ev(seq: u64, mut kind: Value) -> Event {
        let usage = json!({"llm_calls": 1, "input_tokens": 10, "output_tokens": 5, "tool_calls": 0, "wall_time_ms": 0});
        kind["usage"] = usage;
        let kind = serde_json::from_value(kind).unwrap();
        Event {
            seq,
            at: chrono::Utc::now(),
            kind,
        }
    }

    fn step(id: &str, tool: &str, deps: &[&str], status: &str, attempts: u32) -> Value {
        json!({"id": id, "description": format!("Look into {id}"), "tool": tool, "depends_on": deps,
               "acceptance_criteria": ["sources"], "status": status, "attempts": attempts})
    }

    /// A whole run: a retry, a replan that supersedes `c`, a report.
    fn run_events() -> Vec<Event> {
        let ok = |id: &str, ms: u64| json!({"kind": "step_succeeded", "step": id, "result": {"output": 1, "attempts": 1, "duration_ms": ms}});
        let v1 = [
            step("a", "search", &[], "pending", 0),
            step("b", "search", &[], "pending", 0),
            step("c", "compare", &["a", "b"], "pending", 0),
        ];
        let v2 = [
            step("a", "search", &[], "succeeded", 1),
            step("b", "search", &[], "succeeded", 2),
            step("c", "compare", &["a", "b"], "skipped", 0),
            step("d", "search", &["a", "b"], "pending", 0),
        ];
        let kinds = [
            json!({"kind": "run_started", "run_id": "r-1", "input": "A vs B", "constraints": {}, "max_replans": 2, "max_steps": 9, "max_repairs": 1}),
            json!({"kind": "input_prepared", "goal": {"input": "A vs B", "goal": "A vs B", "constraints": {}}}),
            json!({"kind": "plan_created", "draft": {"steps": v1}}),
            json!({"kind": "plan_validated", "plan": {"version": 1, "steps": v1}}),
            json!({"kind": "plan_approved", "version": 1, "by": "auto"}),
            json!({"kind": "step_started", "step": "a", "attempt": 1}),
            ok("a", 12),
            json!({"kind": "assessed", "step": "a", "acceptance_met": true, "verdict": "continue", "reason": "found sources", "new_gaps": [], "resolved_gaps": [], "observations": []}),
            json!({"kind": "step_started", "step": "b", "attempt": 1}),
            json!({"kind": "step_failed", "step": "b", "attempt": 1, "failure": {"class": "transient", "kind": "timeout", "message": "connection\n  reset"}}),
            json!({"kind": "step_retrying", "step": "b", "next_attempt": 2, "delay_ms": 250}),
            json!({"kind": "step_started", "step": "b", "attempt": 2}),
            ok("b", 1500),
            json!({"kind": "assessed", "step": "b", "acceptance_met": false, "verdict": "replan", "reason": "no pricing", "new_gaps": ["no prices for B"], "resolved_gaps": [], "observations": []}),
            json!({"kind": "replanned", "replan_count": 1, "reason": "find pricing", "draft": {"steps": []}}),
            json!({"kind": "plan_validated", "plan": {"version": 2, "steps": v2}}),
            json!({"kind": "step_started", "step": "d", "attempt": 1}),
            ok("d", 40),
            json!({"kind": "synthesized", "report": "# R", "evidence": [{"source_id": "n1", "step": "a", "quote": "q"}], "rejected_evidence": []}),
        ];
        kinds
            .into_iter()
            .zip(1..)
            .map(|(k, seq)| ev(seq, k))
            .collect()
    }

    fn render(mode: Mode, color: bool, events: &[Event]) -> (String, bool) {
        let mut progress = Progress::with_style(mode, Vec::new(), color, 100);
        events.iter().for_each(|e| progress.on_event(e));
        progress.finish();
        (String::from_utf8(progress.out).unwrap(), progress.state_ok)
    }

    #[test]
    fn plain_mode_prints_one_stable_line_per_event_in_order() {
        let (out, state_ok) = render(Mode::Plain, true, &run_events());
        assert!(state_ok, "the hand-written log must fold cleanly:\n{out}");
        assert!(!out.contains('\x1b'), "{out}");
        let expected = [
            "run r-1 started\ngoal: A vs B\nplan drafted\n",
            "plan v1 validated: 3 steps — a, b, c (after a, b)\nplan v1 approved by auto\n",
            "[a] running — Look into a\n[a] succeeded in 12 ms\n[a] assessed: continue — found sources\n",
            "[b] failed (transient): connection reset\n[b] retrying in 250 ms (attempt 2)\n",
            "[b] running (attempt 2) — Look into b\n[b] succeeded in 1.5 s\n",
            "[b] assessed: replan (criteria unmet) — no pricing\n  gap: no prices for B\nreplan 1: find pricing\n",
            "plan v2 validated: 4 steps — a, b, c (after a, b), d (after a, b)\n",
            "[c] skipped (superseded by replan)\n",
            "report written (1 evidence)\n",
            "run ok · plan v2 · 3/3 steps done (1 skipped) · replans 1 · 9 model calls · ",
        ];
        let mut from = 0;
        for part in expected {
            let at = out[from..].find(part);
            from += at.unwrap_or_else(|| panic!("missing {part:?} after {from} in:\n{out}"))
                + part.len();
        }
    }

    #[test]
    fn only_succeeded_steps_count_as_done_and_skipped_ones_not_at_all() {
        let step = |id: &str, status| {
            let mut s = Step::new(id, "x", "search_notes");
            s.status = status;
            s
        };
        let plan = Plan {
            version: 1,
            steps: vec![
                step("a", StepStatus::Succeeded),
                step("b", StepStatus::Terminated),
                step("c", StepStatus::Skipped),
                step("d", StepStatus::Pending),
            ],
        };
        assert_eq!(steps_done(&plan), (1, 3));
    }

    #[test]
    fn live_mode_redraws_a_block_in_place() {
        let (out, _) = render(Mode::Live, true, &run_events());
        let header = "stepwise · plan v2 · 3/3 steps done · replans 1";
        let wants = [header, "  · c compare ← a, b  Look into c", "\x1b[32m✓"];
        for want in wants.into_iter().chain(["⊘", "↻", "\x1b[J"]) {
            assert!(out.contains(want), "missing {want:?} in:\n{out}");
        }
        assert!(SPINNER.iter().any(|c| out.contains(*c)), "{out}");
        // Block after run_started: header + 1 log line; the next event moves up over both.
        assert!(out.contains("\x1b[2A\r\x1b[J"), "{out}");
        let last = out.rsplit("\x1b[J").next().unwrap();
        assert!(
            last.contains("report written") && last.contains("\nrun ok · plan v2"),
            "{last}"
        );
        let (no_color, _) = render(Mode::Live, false, &run_events());
        assert!(!no_color.contains("\x1b[32m") && no_color.contains("\x1b[J"));
    }

    #[test]
    fn the_time_shown_counts_what_came_before_the_run() {
        let summary = |before: u64| {
            let mut progress = Progress::with_style(Mode::Plain, Vec::new(), false, 100)
                .after(std::time::Duration::from_millis(before));
            run_events().iter().for_each(|e| progress.on_event(e));
            let run = progress.state.usage.wall_time_ms;
            (progress.summary(), run)
        };
        let (line, run) = summary(0);
        assert!(line.ends_with(&format!(" · {}", duration(run))), "{line}");
        let (line, run) = summary(2_500);
        assert!(
            line.ends_with(&format!(" · {}", duration(run + 2_500))),
            "{line}"
        );
    }

    /// Ctrl-C leaves the run `running` with its last event long past: the
    /// time shown is still the time the command ran, not that of its last event.
    #[test]
    fn an_interrupted_run_shows_the_time_it_ran() {
        let mut progress = Progress::with_style(Mode::Plain, Vec::new(), false, 100);
        run_events()[..8].iter().for_each(|e| progress.on_event(e));
        assert_eq!(progress.state.status, RunStatus::Running);
        std::thread::sleep(std::time::Duration::from_millis(1_100));
        let line = progress.summary();
        let shown = line.rsplit(" · ").next().unwrap_or_default();
        assert!(shown.ends_with(" s") && !shown.starts_with("0"), "{line}");
    }

    #[test]
    fn quiet_mode_writes_nothing() {
        assert_eq!(render(Mode::Quiet, true, &run_events()).0, "");
    }

    /// A closed stderr.
    struct Closed(usize);

    impl Write for Closed {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            self.0 += 1;
            Err(io::ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn write_errors_are_ignored_after_the_first() {
        for mode in [Mode::Plain, Mode::Live] {
            let mut progress = Progress::with_style(mode, Closed(0), true, 80);
            run_events().iter().for_each(|e| progress.on_event(e));
            progress.finish();
            assert_eq!(progress.out.0, 1, "{mode:?}");
        }
    }

    #[test]
    fn odd_events_and_long_messages_do_not_panic() {
        let mut events = run_events();
        events.swap(5, 8);
        let (out, state_ok) = render(Mode::Plain, true, &events);
        assert!(!state_ok && out.contains("report written"), "{out}");
        let (live, _) = render(Mode::Live, true, &events[3..]);
        assert!(live.contains("stepwise · planning"), "{live}");

        let mut progress = Progress::with_style(Mode::Plain, Vec::new(), false, 80);
        progress.on_event(&ev(
            1,
            json!({"kind": "run_failed", "error": "é".repeat(500)}),
        ));
        let out = String::from_utf8(progress.out).unwrap();
        assert_eq!(out.trim_end().chars().count(), event::MAX_LINE);
        assert!(out.trim_end().ends_with('…'));
    }
}
