//! Honest briefs (issue 10): labelled corpora in English and Korean, run
//! through the real binary with every strategy, offline, and scored.
//!
//! Each corpus in `tests/fixtures/honest/<name>/` has a `notes/` folder and
//! a `labels.toml`: for each dimension the notes that are evidence on it,
//! the dimensions no note covers (`absent`), the one real contradiction,
//! look-alikes and decoys, several phrasings of the goal (dimensions in the
//! goal's own words, after a colon, in `comparison_dimensions`, merged with
//! `required_sections`) with the sections each expects, and questions the
//! notes cannot answer.
//!
//! Per (corpus, phrasing, strategy) the test parses `final_report`,
//! `status`, `knowledge_gaps` and `evidence` from `stepwise run --json` and
//! checks:
//! - **precision** ≥ 95 %: of the cited bullets under the dimension sections
//!   (pooled over the run), the share whose `[note_id]` is labelled for that
//!   section's dimension (a section headed by a fragment naming one asked
//!   dimension, "Consider cost", is scored for it too, and fails `sections`);
//! - **planted gaps** 100 %: every absent dimension's section cites nothing
//!   and says so, and the dimension is named in Unresolved gaps and in
//!   `knowledge_gaps` (the goal's own text, which names every dimension, is
//!   removed before looking);
//! - **spurious contradictions** = 0: every bullet under Contradictions
//!   quotes exactly the labelled pair of notes, with its figures;
//! - **gap list** consistent: every section that found nothing is in
//!   Unresolved gaps and `knowledge_gaps`; "None" only when every section
//!   has evidence and `knowledge_gaps` is empty;
//! - **coverage** ≥ 80 %: share of the present dimensions with at least one
//!   correct citation;
//! - and the contract around them: one section per dimension, headed by the
//!   dimension as written (no fragments of the goal); every quote verbatim
//!   in the note it cites and in `evidence`; the unrelated note never cited;
//!   the exit code matching the status; never `ok` without a citation.
//!
//! Each nonsense question must end not `ok`, with no evidence and no
//! citation. A table of every figure goes to stderr (`--nocapture`).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stderr
)]

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde::Deserialize;
use serde_json::Value;

const MIN_PRECISION: f64 = 0.95;
const MIN_COVERAGE: f64 = 0.80;

/// Section headings that are not dimensions (lower case).
const OVERVIEW: [&str; 2] = ["overview", "개요"];
const CONTRADICTIONS: &str = "contradictions";
const GAPS: &str = "unresolved gaps";
const SOURCES: &str = "sources";
/// How a section says it found nothing (lower case).
const NO_EVIDENCE: [&str; 4] = ["no evidence", "not searched", "근거 없음", "근거를 찾지 못"];

// ---------------------------------------------------------------- labels

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Labels {
    language: String,
    domain: String,
    #[serde(default)]
    absent: Vec<String>,
    #[serde(default)]
    absent_terms: Vec<String>,
    #[serde(default)]
    unrelated: Vec<String>,
    dimensions: BTreeMap<String, Vec<String>>,
    #[serde(default)]
    contradiction: Vec<Contradiction>,
    #[serde(default)]
    lookalike: Vec<Lookalike>,
    #[serde(default)]
    trap: Vec<Trap>,
    phrasing: Vec<Phrasing>,
    #[serde(default)]
    nonsense: Vec<Nonsense>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Contradiction {
    notes: [String; 2],
    dimension: String,
    /// Strings the bullet reporting it contains (the two figures).
    #[serde(default)]
    figures: Vec<String>,
    attribute: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Lookalike {
    notes: [String; 2],
    why: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Trap {
    note: String,
    dimension: String,
    word: String,
    why: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Phrasing {
    name: String,
    goal: String,
    /// `--constraints` JSON, if any.
    constraints: Option<String>,
    /// The sections expected, each a key of `[dimensions]`.
    sections: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Nonsense {
    goal: String,
}

struct Corpus {
    name: String,
    notes_dir: PathBuf,
    labels: Labels,
    /// Note id (file stem) → text.
    notes: BTreeMap<String, String>,
}

impl Corpus {
    fn load(name: &str) -> Self {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/honest")
            .join(name);
        let labels_path = root.join("labels.toml");
        let text = std::fs::read_to_string(&labels_path).unwrap();
        let labels: Labels =
            toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", labels_path.display()));
        let notes_dir = root.join("notes");
        let mut notes = BTreeMap::new();
        for entry in std::fs::read_dir(&notes_dir).unwrap() {
            let path = entry.unwrap().path();
            let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
            assert!(
                matches!(ext, "md" | "txt"),
                "{name}: only .md / .txt notes: {}",
                path.display()
            );
            let id = path.file_stem().unwrap().to_str().unwrap().to_owned();
            notes.insert(id, std::fs::read_to_string(&path).unwrap());
        }
        Self {
            name: name.to_owned(),
            notes_dir,
            labels,
            notes,
        }
    }

    fn relevant(&self, dimension: &str, note: &str) -> bool {
        self.labels
            .dimensions
            .get(dimension)
            .is_some_and(|ids| ids.iter().any(|id| id == note))
    }
}

// ---------------------------------------------------------------- running

/// A scratch folder (databases, working directory, HOME) removed on drop.
mod common;

use common::{Out, Scratch};

/// Runs the binary offline (see [`common::stepwise`]) with database `db`
/// in the scratch folder.
fn stepwise(scratch: &Path, db: &str, args: &[&str]) -> Out {
    common::stepwise(scratch, &scratch.join(db), args, &[])
}

/// The strategies `stepwise strategies --json` lists.
fn strategies(scratch: &Path) -> Vec<String> {
    let out = stepwise(scratch, "strategies.db", &["strategies", "--json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let json: Value = serde_json::from_str(&out.stdout).unwrap();
    let names: Vec<String> = json
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(!names.is_empty());
    names
}

#[derive(Clone, Copy)]
enum Case {
    Phrasing(usize),
    Nonsense(usize),
}

struct Job {
    case: Case,
    strategy: String,
}

struct Run {
    code: Option<i32>,
    /// `None` if stdout was not JSON.
    json: Option<Value>,
    stderr: String,
}

fn run_job(corpus: &Corpus, scratch: &Path, n: usize, job: &Job) -> Run {
    let notes = corpus.notes_dir.to_str().unwrap();
    let (goal, constraints) = match job.case {
        Case::Phrasing(i) => {
            let p = &corpus.labels.phrasing[i];
            (p.goal.as_str(), p.constraints.as_deref())
        }
        Case::Nonsense(i) => (corpus.labels.nonsense[i].goal.as_str(), None),
    };
    let mut args = vec!["run", goal, "--notes", notes];
    if let Some(c) = constraints {
        args.extend(["--constraints", c]);
    }
    args.extend(["--strategy", &job.strategy, "--json", "--quiet"]);
    let out = stepwise(scratch, &format!("run-{n}.db"), &args);
    Run {
        code: Some(out.code),
        json: serde_json::from_str(&out.stdout).ok(),
        stderr: out.stderr,
    }
}

/// Runs every job, a few at a time; results in job order.
fn run_all(corpus: &Corpus, scratch: &Path, jobs: &[Job]) -> Vec<Run> {
    let next = AtomicUsize::new(0);
    let done = Mutex::new(Vec::new());
    let workers = std::thread::available_parallelism()
        .map_or(4, usize::from)
        .min(8);
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(job) = jobs.get(i) else { break };
                    let run = run_job(corpus, scratch, i, job);
                    done.lock().unwrap().push((i, run));
                }
            });
        }
    });
    let mut done = done.into_inner().unwrap();
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}

// ---------------------------------------------------------------- parsing

#[derive(Debug)]
struct Section {
    heading: String,
    lines: Vec<String>,
}

impl Section {
    fn key(&self) -> String {
        self.heading.trim().to_lowercase()
    }
    fn bullets(&self) -> Vec<Bullet> {
        self.lines.iter().filter_map(|l| Bullet::parse(l)).collect()
    }
    fn cited(&self) -> Vec<Bullet> {
        self.bullets()
            .into_iter()
            .filter(|b| b.id.is_some())
            .collect()
    }
    /// The section's text apart from its bullets, lower case.
    fn prose(&self) -> String {
        self.lines
            .iter()
            .filter(|l| !l.starts_with("- "))
            .map(|l| l.to_lowercase())
            .collect::<Vec<_>>()
            .join("\n")
    }
    fn says_no_evidence(&self) -> bool {
        let prose = self.prose();
        NO_EVIDENCE.iter().any(|m| prose.contains(m))
    }
}

/// The `##` sections of a Markdown report, in order.
fn sections(markdown: &str) -> Vec<Section> {
    let mut out: Vec<Section> = Vec::new();
    for line in markdown.lines() {
        if let Some(h) = line.strip_prefix("## ") {
            out.push(Section {
                heading: h.trim().to_owned(),
                lines: Vec::new(),
            });
        } else if line.starts_with("# ") {
            continue;
        } else if let Some(s) = out.last_mut()
            && !line.trim().is_empty()
        {
            s.lines.push(line.to_owned());
        }
    }
    out
}

#[derive(Debug)]
struct Bullet {
    line: String,
    /// The bullet's text without its citation, quotes stripped.
    quote: String,
    /// The trailing `[note_id]`, if any.
    id: Option<String>,
}

impl Bullet {
    fn parse(line: &str) -> Option<Self> {
        let rest = line.strip_prefix("- ")?.trim();
        let mut quote = rest;
        let mut id = None;
        if let Some(body) = rest.strip_suffix(']')
            && let Some(open) = body.rfind('[')
        {
            let candidate = &body[open + 1..];
            if !candidate.is_empty() && !candidate.contains(char::is_whitespace) {
                id = Some(candidate.to_owned());
                quote = body[..open].trim();
            }
        }
        let quote = quote
            .trim_matches(|c| matches!(c, '“' | '”' | '"' | '\''))
            .trim()
            .to_owned();
        Some(Self {
            line: line.to_owned(),
            quote,
            id,
        })
    }
}

/// Every `[token]` (no whitespace inside) in a line.
fn bracket_ids(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(start) = rest.find('[') {
        let Some(len) = rest[start..].find(']') else {
            break;
        };
        let id = &rest[start + 1..start + len];
        if !id.is_empty() && !id.contains(char::is_whitespace) {
            out.push(id.to_owned());
        }
        rest = &rest[start + len..];
    }
    out
}

/// Whitespace collapsed and Markdown emphasis removed, for verbatim checks.
fn normalise(s: &str) -> String {
    s.replace(['*', '`'], "")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// Whether `quote` is verbatim in `note` (a `…` may stand for cut text).
fn verbatim(quote: &str, note: &str) -> bool {
    let note = normalise(note);
    quote
        .split('…')
        .map(normalise)
        .filter(|part| !part.is_empty())
        .all(|part| note.contains(part.trim_end_matches("...")))
}

/// Gap text with the goal (which names every dimension) removed.
fn without_goal(text: &str, goal: &str) -> String {
    text.replace(goal, " ")
        .replace(goal.trim_end_matches(['.', '?', '!']), " ")
        .to_lowercase()
}

// ---------------------------------------------------------------- scoring

#[derive(Default)]
struct Figures {
    status: String,
    cited: usize,
    correct: usize,
    absent: usize,
    gaps_named: usize,
    spurious: usize,
    real_found: usize,
    consistent: bool,
    present: usize,
    covered: usize,
    /// Missing + extra sections.
    bad_sections: usize,
    failures: Vec<String>,
}

impl Figures {
    fn precision(&self) -> Option<f64> {
        (self.cited > 0).then(|| self.correct as f64 / self.cited as f64)
    }
    fn coverage(&self) -> Option<f64> {
        (self.present > 0).then(|| self.covered as f64 / self.present as f64)
    }
    fn fail(&mut self, metric: &str, detail: impl AsRef<str>) {
        self.failures.push(format!("{metric}: {}", detail.as_ref()));
    }
}

/// Status, exit code and the JSON fields every run must have.
fn check_status(run: &Run, f: &mut Figures) -> Option<(String, Vec<String>, Vec<Value>)> {
    let Some(json) = &run.json else {
        f.status = "no-json".into();
        f.fail(
            "status",
            format!(
                "stdout is not JSON (exit {:?}): {}",
                run.code,
                run.stderr.trim()
            ),
        );
        return None;
    };
    f.status = json["status"].as_str().unwrap_or("?").to_owned();
    let expected_code = match f.status.as_str() {
        "ok" => Some(0),
        "needs_review" => Some(3),
        other => {
            f.fail(
                "status",
                format!("`{other}` (exit {:?}): {}", run.code, run.stderr.trim()),
            );
            None
        }
    };
    if expected_code.is_some() && run.code != expected_code {
        f.fail(
            "status",
            format!("`{}` but exit code {:?}", f.status, run.code),
        );
    }
    let Some(report) = json["final_report"].as_str() else {
        f.fail("status", "no final_report");
        return None;
    };
    let gaps = json["knowledge_gaps"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|g| g.as_str().unwrap_or_default().to_owned())
                .collect()
        })
        .unwrap_or_default();
    let evidence = json["evidence"].as_array().cloned().unwrap_or_default();
    Some((report.to_owned(), gaps, evidence))
}

fn score_phrasing(corpus: &Corpus, phrasing: &Phrasing, run: &Run) -> Figures {
    let mut f = Figures::default();
    let Some((report, knowledge_gaps, evidence)) = check_status(run, &mut f) else {
        return f;
    };
    let labels = &corpus.labels;
    let secs = sections(&report);
    let expected: Vec<(String, &String)> = phrasing
        .sections
        .iter()
        .map(|d| (d.to_lowercase(), d))
        .collect();
    let is_absent = |d: &str| labels.absent.iter().any(|a| a == d);

    // Structure: one section per dimension, headed by the dimension.
    let structural = |k: &str| {
        OVERVIEW.contains(&k)
            || k == CONTRADICTIONS
            || k == GAPS
            || k == SOURCES
            || k == "plan"
            || k.starts_with("plan (")
    };
    for (key, dim) in &expected {
        match secs.iter().filter(|s| &s.key() == key).count() {
            1 => {}
            0 => {
                f.bad_sections += 1;
                f.fail("sections", format!("no section `## {dim}`"));
            }
            n => {
                f.bad_sections += 1;
                f.fail("sections", format!("{n} sections `## {dim}`"));
            }
        }
    }
    for s in &secs {
        let k = s.key();
        if !structural(&k) && !expected.iter().any(|(e, _)| *e == k) {
            f.bad_sections += 1;
            f.fail(
                "sections",
                format!(
                    "`## {}` is not a dimension of the goal (expected {:?})",
                    s.heading, phrasing.sections
                ),
            );
        }
    }
    let section = |key: &str| secs.iter().find(|s| s.key() == key);
    let gap_section = section(GAPS);

    // Precision over the dimension sections, and over any other section
    // whose heading names exactly one asked dimension ("Consider cost",
    // "staff training."): its bullets were meant for that dimension.
    // Coverage counts the exact sections only.
    let mut scored: Vec<(&Section, &String, bool)> = Vec::new();
    for s in &secs {
        let k = s.key();
        if let Some((_, dim)) = expected.iter().find(|(e, _)| *e == k) {
            scored.push((s, dim, true));
        } else if !structural(&k) {
            let named: Vec<&String> = expected
                .iter()
                .filter(|(e, _)| k.contains(e.as_str()))
                .map(|(_, d)| *d)
                .collect();
            if let [dim] = named[..] {
                scored.push((s, dim, false));
            }
        }
    }
    let mut wrong = Vec::new();
    let mut covered_dims = BTreeSet::new();
    for (s, dim, exact) in scored {
        for b in s.bullets() {
            f.cited += 1;
            let at = &s.heading;
            match &b.id {
                Some(id) if corpus.relevant(dim, id) => {
                    f.correct += 1;
                    if exact {
                        covered_dims.insert(dim.as_str());
                    }
                }
                Some(id) if corpus.notes.contains_key(id) => {
                    wrong.push(format!(
                        "`## {at}`: [{id}] is not labelled for `{dim}`: {}",
                        b.line
                    ));
                }
                Some(id) => wrong.push(format!("`## {at}`: [{id}] is not a note: {}", b.line)),
                None => wrong.push(format!("`## {at}`: a bullet with no citation: {}", b.line)),
            }
        }
    }
    for (_, dim) in &expected {
        if !is_absent(dim) {
            f.present += 1;
            f.covered += usize::from(covered_dims.contains(dim.as_str()));
        }
    }
    if f.precision().is_some_and(|p| p < MIN_PRECISION) {
        for w in &wrong {
            f.fail("precision", w);
        }
    }
    if f.coverage().is_some_and(|c| c < MIN_COVERAGE) {
        let uncovered: Vec<&String> = expected
            .iter()
            .filter(|(_, dim)| !is_absent(dim) && !covered_dims.contains(dim.as_str()))
            .map(|(_, d)| *d)
            .collect();
        f.fail(
            "coverage",
            format!(
                "{}/{} present dimensions have a correct citation; none for {uncovered:?}",
                f.covered, f.present
            ),
        );
    }

    // Planted gaps and the gap list.
    let goal = &phrasing.goal;
    let gap_text = gap_section
        .map(|s| without_goal(&s.lines.join("\n"), goal))
        .unwrap_or_default();
    let named_in_report = |dim: &str| gap_text.contains(&dim.to_lowercase());
    let named_in_json = |dim: &str| {
        knowledge_gaps
            .iter()
            .any(|g| without_goal(g, goal).contains(&dim.to_lowercase()))
    };
    for (key, dim) in expected.iter().filter(|(_, d)| is_absent(d)) {
        f.absent += 1;
        let mut missing = Vec::new();
        match section(key) {
            None => missing.push("no section".to_owned()),
            Some(s) => {
                for b in s.cited() {
                    missing.push(format!("its section cites {}", b.line));
                }
                if !s.says_no_evidence() {
                    missing.push("its section does not say it found no evidence".to_owned());
                }
            }
        }
        if !named_in_report(dim) {
            missing.push("not named in Unresolved gaps".to_owned());
        }
        if !named_in_json(dim) {
            missing.push(format!("not in knowledge_gaps {knowledge_gaps:?}"));
        }
        if missing.is_empty() {
            f.gaps_named += 1;
        } else {
            f.fail("planted gap", format!("`{dim}`: {}", missing.join("; ")));
        }
    }
    let mut inconsistent = Vec::new();
    match gap_section {
        None => inconsistent.push("no `## Unresolved gaps` section".to_owned()),
        Some(gs) => {
            let says_none = gs.bullets().is_empty()
                && gs
                    .lines
                    .iter()
                    .any(|l| l.trim_start().starts_with("None") || l.contains("없음"));
            if says_none {
                let empty: Vec<&String> = expected
                    .iter()
                    .filter(|(k, _)| section(k).is_none_or(|s| s.cited().is_empty()))
                    .map(|(_, d)| *d)
                    .collect();
                if !empty.is_empty() {
                    inconsistent.push(format!("says None, but nothing is cited for {empty:?}"));
                }
                if !knowledge_gaps.is_empty() {
                    inconsistent.push(format!(
                        "says None, but knowledge_gaps = {knowledge_gaps:?}"
                    ));
                }
            }
        }
    }
    for s in &secs {
        let k = s.key();
        if structural(&k) || !s.cited().is_empty() {
            continue;
        }
        if !s.says_no_evidence() {
            inconsistent.push(format!(
                "`## {}` cites nothing and does not say so",
                s.heading
            ));
        }
        if gap_section.is_some() && !named_in_report(&s.heading) {
            inconsistent.push(format!(
                "`## {}` found nothing but is not in Unresolved gaps",
                s.heading
            ));
        }
        if !named_in_json(&s.heading) {
            inconsistent.push(format!(
                "`## {}` found nothing but is not in knowledge_gaps {knowledge_gaps:?}",
                s.heading
            ));
        }
    }
    f.consistent = inconsistent.is_empty();
    for i in inconsistent {
        f.fail("gap list", i);
    }

    // Contradictions.
    if let Some(cs) = section(CONTRADICTIONS) {
        for b in cs.bullets() {
            let ids: BTreeSet<String> = bracket_ids(&b.line).into_iter().collect();
            let lower = b.line.to_lowercase();
            let real = labels.contradiction.iter().any(|c| {
                ids == c.notes.iter().cloned().collect::<BTreeSet<_>>()
                    && c.figures.iter().all(|x| lower.contains(&x.to_lowercase()))
            });
            if real {
                f.real_found += 1;
            } else {
                f.spurious += 1;
                f.fail("spurious contradiction", &b.line);
            }
        }
    }

    // Citations: verbatim, in `evidence`, never the unrelated notes.
    let evidence_ids: BTreeSet<&str> = evidence
        .iter()
        .filter_map(|e| e["source_id"].as_str())
        .collect();
    for id in &evidence_ids {
        if labels.unrelated.iter().any(|u| u == id) {
            f.fail(
                "unrelated",
                format!("evidence cites the unrelated note [{id}]"),
            );
        }
    }
    let cited_any = secs
        .iter()
        .filter(|s| {
            let k = s.key();
            k != CONTRADICTIONS && k != GAPS && k != SOURCES
        })
        .flat_map(Section::cited)
        .collect::<Vec<_>>();
    for b in &cited_any {
        let id = b.id.as_deref().unwrap();
        if labels.unrelated.iter().any(|u| u == id) {
            f.fail("unrelated", format!("cites the unrelated note: {}", b.line));
        }
        match corpus.notes.get(id) {
            Some(text) if !verbatim(&b.quote, text) => {
                f.fail("quote", format!("not verbatim in [{id}]: {}", b.line));
            }
            Some(_) => {}
            None => f.fail("quote", format!("[{id}] is not a note: {}", b.line)),
        }
        if !evidence_ids.contains(id) {
            f.fail(
                "evidence",
                format!("[{id}] is cited but not in evidence: {}", b.line),
            );
        }
    }
    if f.status == "ok" && (cited_any.is_empty() || evidence.is_empty()) {
        f.fail("status", "`ok` with no citation");
    }
    f
}

fn score_nonsense(corpus: &Corpus, run: &Run) -> Figures {
    let mut f = Figures::default();
    let Some((report, _, evidence)) = check_status(run, &mut f) else {
        return f;
    };
    if f.status == "ok" {
        f.fail("status", "`ok` for a question the notes cannot answer");
    }
    if !evidence.is_empty() {
        let ids: Vec<&str> = evidence
            .iter()
            .filter_map(|e| e["source_id"].as_str())
            .collect();
        f.fail(
            "evidence",
            format!("{} item(s), from {ids:?}", evidence.len()),
        );
    }
    for line in report.lines() {
        let cited: Vec<String> = bracket_ids(line)
            .into_iter()
            .filter(|id| corpus.notes.contains_key(id))
            .collect();
        if !cited.is_empty() {
            f.cited += 1;
            f.fail("citation", line);
        }
    }
    f
}

// ---------------------------------------------------------------- reporting

fn pct(x: Option<f64>) -> String {
    x.map_or_else(|| "-".to_owned(), |v| format!("{:.0}%", v * 100.0))
}

fn table(corpus: &Corpus, rows: &[(String, String, Figures)]) -> String {
    let mut t = String::new();
    let labels = &corpus.labels;
    let _ = writeln!(
        t,
        "\n== {} ({}, {}): {} notes; absent {:?}; contradiction {}",
        corpus.name,
        labels.language,
        labels.domain,
        corpus.notes.len(),
        labels.absent,
        labels
            .contradiction
            .iter()
            .map(|c| format!("{:?} on {} ({})", c.notes, c.dimension, c.attribute))
            .collect::<Vec<_>>()
            .join(", "),
    );
    let _ = writeln!(
        t,
        "{:<22} {:<15} {:<13} {:>6} {:>5} {:>6} {:>5} {:>5} {:>4} {:>4} {:>5} {:>4}",
        "phrasing",
        "strategy",
        "status",
        "cited",
        "prec",
        "gaps",
        "spur",
        "real",
        "list",
        "cov",
        "sect",
        "fail",
    );
    for (phrasing, strategy, f) in rows {
        let nonsense = phrasing.starts_with("nonsense");
        let _ = writeln!(
            t,
            "{:<22} {:<15} {:<13} {:>6} {:>5} {:>6} {:>5} {:>5} {:>4} {:>4} {:>5} {:>4}",
            phrasing,
            strategy,
            f.status,
            f.cited,
            if nonsense {
                "-".into()
            } else {
                pct(f.precision())
            },
            if nonsense {
                "-".into()
            } else {
                format!("{}/{}", f.gaps_named, f.absent)
            },
            f.spurious,
            f.real_found,
            if nonsense {
                "-"
            } else if f.consistent {
                "ok"
            } else {
                "BAD"
            },
            if nonsense {
                "-".into()
            } else {
                pct(f.coverage())
            },
            f.bad_sections,
            f.failures.len(),
        );
    }
    // Pooled per strategy.
    let _ = writeln!(
        t,
        "-- pooled per strategy: precision, planted gaps named, spurious contradictions, \
         inconsistent gap lists, coverage, real contradiction reported, nonsense not ok, runs passing"
    );
    let mut by_strategy: BTreeMap<&str, Vec<(&String, &Figures)>> = BTreeMap::new();
    for (phrasing, strategy, f) in rows {
        by_strategy.entry(strategy).or_default().push((phrasing, f));
    }
    for (strategy, runs) in &by_strategy {
        let (ph, ns): (Vec<_>, Vec<_>) = runs.iter().partition(|(p, _)| !p.starts_with("nonsense"));
        let sum = |g: fn(&Figures) -> usize| ph.iter().map(|(_, f)| g(f)).sum::<usize>();
        let (cited, correct) = (sum(|f| f.cited), sum(|f| f.correct));
        let (present, covered) = (sum(|f| f.present), sum(|f| f.covered));
        let _ = writeln!(
            t,
            "{:<15} precision {:>4} ({correct}/{cited}) · gaps {}/{} · spurious {} · inconsistent {} · \
             coverage {:>4} ({covered}/{present}) · real {}/{} · nonsense not ok {}/{} · passing {}/{}",
            strategy,
            pct((cited > 0).then(|| correct as f64 / cited as f64)),
            sum(|f| f.gaps_named),
            sum(|f| f.absent),
            sum(|f| f.spurious),
            ph.iter().filter(|(_, f)| !f.consistent).count(),
            pct((present > 0).then(|| covered as f64 / present as f64)),
            ph.iter().filter(|(_, f)| f.real_found > 0).count(),
            ph.len(),
            ns.iter().filter(|(_, f)| f.status != "ok").count(),
            ns.len(),
            runs.iter().filter(|(_, f)| f.failures.is_empty()).count(),
            runs.len(),
        );
    }
    t
}

/// Runs every phrasing and nonsense question of a corpus with every
/// strategy, prints the table, and fails naming every miss.
fn check_corpus(name: &str) {
    let corpus = Corpus::load(name);
    let scratch = Scratch::new("honest", name);
    // Every corpus runs plan-execute and one other strategy, in turn, so
    // every strategy is scored on some corpora without 6 runs of each job
    // (the strategies share the roles, and their figures agree).
    let all = strategies(scratch.path());
    let at = CORPORA.iter().position(|c| *c == name).unwrap_or(0);
    let others: Vec<&String> = all.iter().filter(|s| *s != "plan-execute").collect();
    let mut strategies: Vec<String> = all
        .iter()
        .filter(|s| *s == "plan-execute")
        .cloned()
        .collect();
    if !others.is_empty() {
        strategies.push(others[at % others.len()].clone());
    }
    let mut jobs = Vec::new();
    for strategy in &strategies {
        for i in 0..corpus.labels.phrasing.len() {
            jobs.push(Job {
                case: Case::Phrasing(i),
                strategy: strategy.clone(),
            });
        }
        for i in 0..corpus.labels.nonsense.len() {
            jobs.push(Job {
                case: Case::Nonsense(i),
                strategy: strategy.clone(),
            });
        }
    }
    let runs = run_all(&corpus, scratch.path(), &jobs);
    let mut rows = Vec::new();
    for (job, run) in jobs.iter().zip(&runs) {
        let (label, figures) = match job.case {
            Case::Phrasing(i) => {
                let p = &corpus.labels.phrasing[i];
                (p.name.clone(), score_phrasing(&corpus, p, run))
            }
            Case::Nonsense(i) => (format!("nonsense-{}", i + 1), score_nonsense(&corpus, run)),
        };
        rows.push((label, job.strategy.clone(), figures));
    }
    eprint!("{}", table(&corpus, &rows));

    let mut failures = Vec::new();
    for (label, strategy, f) in &rows {
        let goal = corpus
            .labels
            .phrasing
            .iter()
            .find(|p| &p.name == label)
            .map(|p| p.goal.as_str())
            .or_else(|| {
                let i: usize = label.strip_prefix("nonsense-")?.parse().ok()?;
                Some(corpus.labels.nonsense[i - 1].goal.as_str())
            })
            .unwrap_or_default();
        for failure in &f.failures {
            failures.push(format!(
                "[{name} / {label} / {strategy}] {failure}   (goal: {goal})"
            ));
        }
    }
    if check_floor(&corpus, name, &rows, failures.is_empty()) {
        return;
    }
    if !failures.is_empty() {
        const SHOWN: usize = 200;
        let total = failures.len();
        let mut msg = failures
            .into_iter()
            .take(SHOWN)
            .collect::<Vec<_>>()
            .join("\n");
        if total > SHOWN {
            let _ = write!(msg, "\n… and {} more", total - SHOWN);
        }
        panic!("{name}: {total} honesty failure(s):\n{msg}");
    }
}

// ---------------------------------------------------------------- floors

/// A corpus's pooled figures, the ones a floor holds.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
struct Floor {
    precision: f64,
    coverage: f64,
    gaps_named: f64,
    nonsense_not_ok: f64,
    passing: f64,
    spurious: usize,
    inconsistent: usize,
}

/// Pooled figures of a corpus's runs (shares rounded down to 0.1 %).
fn pooled(rows: &[(String, String, Figures)]) -> Floor {
    let (ph, ns): (Vec<_>, Vec<_>) = rows
        .iter()
        .partition(|(p, _, _)| !p.starts_with("nonsense"));
    let sum = |g: fn(&Figures) -> usize| ph.iter().map(|(_, _, f)| g(f)).sum::<usize>();
    let share = |n: usize, of: usize| {
        if of == 0 {
            1.0
        } else {
            (1000.0 * n as f64 / of as f64).floor() / 1000.0
        }
    };
    let not_ok = ns.iter().filter(|(_, _, f)| f.status != "ok").count();
    Floor {
        precision: share(sum(|f| f.correct), sum(|f| f.cited)),
        coverage: share(sum(|f| f.covered), sum(|f| f.present)),
        gaps_named: share(sum(|f| f.gaps_named), sum(|f| f.absent)),
        nonsense_not_ok: share(not_ok, ns.len()),
        passing: share(
            rows.iter()
                .filter(|(_, _, f)| f.failures.is_empty())
                .count(),
            rows.len(),
        ),
        spurious: sum(|f| f.spurious),
        inconsistent: ph.iter().filter(|(_, _, f)| !f.consistent).count(),
    }
}

/// A corpus that does not pass every run holds its measured figures as a
/// floor, in `floor.toml` beside its labels: the test fails when a figure
/// falls below it (or spurious contradictions and inconsistent gap lists
/// rise above it) and says when one rose, so the floor can be raised.
/// `STEPWISE_WRITE_FLOORS=1` rewrites every floor from this measurement
/// (and removes the floor of a corpus that now passes). Returns whether a
/// floor decided the test.
fn check_floor(
    corpus: &Corpus,
    name: &str,
    rows: &[(String, String, Figures)],
    passes: bool,
) -> bool {
    let path = corpus.notes_dir.parent().unwrap().join("floor.toml");
    let now = pooled(rows);
    if std::env::var_os("STEPWISE_WRITE_FLOORS").is_some() {
        if passes {
            let _ = std::fs::remove_file(&path);
        } else {
            let text = format!(
                "# Measured figures of the offline roles on this corpus (pooled over its runs),\n\
                 # asserted as floors by honest_briefs.rs; rewrite with STEPWISE_WRITE_FLOORS=1.\n\
                 precision = {:.3}\ncoverage = {:.3}\ngaps_named = {:.3}\nnonsense_not_ok = {:.3}\n\
                 passing = {:.3}\nspurious = {}\ninconsistent = {}\n",
                now.precision,
                now.coverage,
                now.gaps_named,
                now.nonsense_not_ok,
                now.passing,
                now.spurious,
                now.inconsistent
            );
            std::fs::write(&path, text).unwrap();
        }
        return true;
    }
    let Ok(text) = std::fs::read_to_string(&path) else {
        return false;
    };
    let floor: Floor = toml::from_str(&text).unwrap();
    let mut worse = Vec::new();
    for (what, was, is) in [
        ("precision", floor.precision, now.precision),
        ("coverage", floor.coverage, now.coverage),
        ("planted gaps named", floor.gaps_named, now.gaps_named),
        (
            "nonsense not ok",
            floor.nonsense_not_ok,
            now.nonsense_not_ok,
        ),
        ("runs passing", floor.passing, now.passing),
    ] {
        if is < was {
            worse.push(format!("{what} {is:.3} < floor {was:.3}"));
        } else if is > was {
            eprintln!("{name}: {what} rose to {is:.3} (floor {was:.3}): raise the floor");
        }
    }
    if now.spurious > floor.spurious {
        worse.push(format!(
            "spurious contradictions {} > {}",
            now.spurious, floor.spurious
        ));
    }
    if now.inconsistent > floor.inconsistent {
        worse.push(format!(
            "inconsistent gap lists {} > {}",
            now.inconsistent, floor.inconsistent
        ));
    }
    assert!(
        worse.is_empty(),
        "{name}: below its floor: {}",
        worse.join("; ")
    );
    true
}

// ---------------------------------------------------------------- tests

const CORPORA: [&str; 60] = [
    "broker-en",
    "streetlights-en",
    "remote-work-ko",
    "laptops-en",
    "ebus-ko",
    "warehouse-ko",
    "irrigation-en",
    "emr-cloud-ko",
    "ticketing-en",
    "library-kiosk-ko",
    "schoolsis-en",
    "bikeshare-ko",
    "watermeters-en",
    "cafeteria-ko",
    "coldchain-en",
    "festival-ko",
    "payroll-en",
    "dental-ko",
    "hvac-en",
    "clinic-ko",
    "crm-en",
    "shuttle-ko",
    "printing-en",
    "parking-ko",
    "lms-en",
    "laundry-ko",
    "fleet-telematics-en",
    "pharmacy-ko",
    "coworking-en",
    "recycling-ko",
    "translation-en",
    "backup-en",
    "elevator-ko",
    "uniform-ko",
    "payments-en",
    "fieldsurvey-en",
    "security-guard-ko",
    "kiosk-order-ko",
    "vetclinic-en",
    "solarfarm-en",
    "daycare-bus-ko",
    "callcenter-ko",
    "foodbank-en",
    "snowplow-en",
    "pool-ko",
    "wifi-ko",
    "porter-en",
    "proctoring-en",
    "evcharger-ko",
    "chatbot-ko",
    "archive-en",
    "cleaning-ko",
    "nursecall-en",
    "labfreezer-en",
    "bathvan-ko",
    "messenger-ko",
    "sequencing-en",
    "audioguide-ko",
    "councilstream-en",
    "treespray-ko",
];

/// The fixtures mean what their labels say: every labelled note exists,
/// absent dimensions and their terms appear in no note, decoys contain
/// their word and are not labelled for the dimension they imitate, the
/// real contradiction's figures are in its notes, every note is labelled,
/// unrelated or a decoy. Runs today: it needs no offline role.
#[test]
fn the_labelled_corpora_are_well_formed() {
    for name in CORPORA {
        let corpus = Corpus::load(name);
        let l = &corpus.labels;
        let known = |id: &str, what: &str| {
            assert!(
                corpus.notes.contains_key(id),
                "{name}: {what}: no note `{id}`"
            );
        };
        assert!(
            (10..=14).contains(&corpus.notes.len()),
            "{name}: {} notes",
            corpus.notes.len()
        );
        for (dim, ids) in &l.dimensions {
            for id in ids {
                known(id, dim);
            }
            if l.absent.contains(dim) {
                assert!(ids.is_empty(), "{name}: absent `{dim}` has labelled notes");
            } else {
                assert!(!ids.is_empty(), "{name}: `{dim}` has no labelled note");
            }
        }
        assert!(!l.absent.is_empty(), "{name}: no planted gap");
        for dim in &l.absent {
            assert!(
                l.dimensions.contains_key(dim),
                "{name}: absent `{dim}` not a dimension"
            );
            for term in l.absent_terms.iter().chain([dim]) {
                for (id, text) in &corpus.notes {
                    assert!(
                        !text.to_lowercase().contains(&term.to_lowercase()),
                        "{name}: [{id}] mentions `{term}`, so `{dim}` is not absent"
                    );
                }
            }
        }
        assert!(!l.unrelated.is_empty(), "{name}: no unrelated note");
        for id in &l.unrelated {
            known(id, "unrelated");
            assert!(
                !l.dimensions.values().flatten().any(|x| x == id),
                "{name}: unrelated [{id}] is labelled"
            );
        }
        assert!(
            !l.contradiction.is_empty(),
            "{name}: a planted contradiction at least"
        );
        for c in &l.contradiction {
            assert_ne!(c.notes[0], c.notes[1], "{name}: {}", c.attribute);
            for id in &c.notes {
                known(id, "contradiction");
                assert!(
                    corpus.relevant(&c.dimension, id),
                    "{name}: contradiction note [{id}] not labelled for {}",
                    c.dimension
                );
            }
            for x in &c.figures {
                assert!(
                    c.notes
                        .iter()
                        .any(|id| corpus.notes[id].contains(x.as_str())),
                    "{name}: figure `{x}` in neither note of {:?}",
                    c.notes
                );
            }
        }
        assert!(!l.lookalike.is_empty(), "{name}: no look-alike");
        for la in &l.lookalike {
            for id in &la.notes {
                known(id, &la.why);
            }
        }
        for t in &l.trap {
            known(&t.note, &t.why);
            assert!(
                l.dimensions.contains_key(&t.dimension),
                "{name}: trap dimension `{}`",
                t.dimension
            );
            assert!(
                !corpus.relevant(&t.dimension, &t.note),
                "{name}: decoy [{}] is labelled for `{}`",
                t.note,
                t.dimension
            );
            assert!(
                corpus.notes[&t.note].contains(t.word.as_str()),
                "{name}: [{}] does not contain `{}`",
                t.note,
                t.word
            );
        }
        for id in corpus.notes.keys() {
            let labelled = l.dimensions.values().flatten().any(|x| x == id);
            let decoy = l.trap.iter().any(|t| &t.note == id);
            assert!(
                labelled || decoy || l.unrelated.contains(id),
                "{name}: [{id}] is neither labelled, a decoy nor unrelated"
            );
        }
        let mut names = BTreeSet::new();
        for p in &l.phrasing {
            assert!(names.insert(&p.name), "{name}: phrasing `{}` twice", p.name);
            for s in &p.sections {
                assert!(
                    l.dimensions.contains_key(s),
                    "{name}/{}: section `{s}` is not a dimension",
                    p.name
                );
            }
            if let Some(c) = &p.constraints {
                let v: Value = serde_json::from_str(c)
                    .unwrap_or_else(|e| panic!("{name}/{}: constraints: {e}", p.name));
                assert!(v.is_object(), "{name}/{}", p.name);
            }
        }
        assert!(
            l.phrasing.iter().any(|p| p.constraints.is_none()),
            "{name}: a phrasing in the goal's own words"
        );
        assert!(
            l.phrasing
                .iter()
                .any(|p| p.sections.iter().all(|s| !l.absent.contains(s))),
            "{name}: a phrasing with no planted gap (Unresolved gaps may say None)"
        );
        assert!(!l.nonsense.is_empty(), "{name}: no nonsense question");
    }
}

/// The report parser reads the documented format.
#[test]
fn the_report_parser_reads_the_contract() {
    let md = "# Goal?\n\n_For: x_\n\n## Cost\n\n- “Costs $5 per month.” [a-note]\n- no citation\n\n\
              ## Licensing\n\n_No evidence found in the notes; see Unresolved gaps._\n\n\
              ## Contradictions\n\n- On *cost*: [a-note] says “$5”; [b-note] says “$7”.\n\n\
              ## Unresolved gaps\n\n- No evidence in the notes for: licensing: Goal?\n\n\
              ## Sources\n\n- [a-note] A note\n";
    let secs = sections(md);
    let keys: Vec<String> = secs.iter().map(Section::key).collect();
    assert_eq!(
        keys,
        [
            "cost",
            "licensing",
            "contradictions",
            "unresolved gaps",
            "sources"
        ]
    );
    let cost = secs[0].bullets();
    assert_eq!(cost.len(), 2);
    assert_eq!(cost[0].id.as_deref(), Some("a-note"));
    assert_eq!(cost[0].quote, "Costs $5 per month.");
    assert_eq!(cost[1].id, None);
    assert!(secs[1].cited().is_empty() && secs[1].says_no_evidence());
    assert!(!secs[0].says_no_evidence());
    assert_eq!(bracket_ids(&secs[2].lines[0]), ["a-note", "b-note"]);
    let gaps = without_goal(&secs[3].lines.join("\n"), "Goal?");
    assert!(gaps.contains("licensing") && !gaps.contains("goal"));
    assert!(verbatim(
        "Costs $5 per   month.",
        "# T\n\nIt **Costs** $5 per\nmonth. Then"
    ));
    assert!(verbatim("Costs $5 … month.", "Costs $5 per month."));
    assert!(!verbatim("Costs $6 per month.", "Costs $5 per month."));
}

#[test]
fn honest_briefs_on_the_english_broker_corpus() {
    check_corpus("broker-en");
}

#[test]
fn honest_briefs_on_the_english_street_lighting_corpus() {
    check_corpus("streetlights-en");
}

#[test]
fn honest_briefs_on_the_korean_remote_work_corpus() {
    check_corpus("remote-work-ko");
}

#[test]
fn honest_briefs_on_the_korean_warehouse_corpus() {
    check_corpus("warehouse-ko");
}

#[test]
fn honest_briefs_on_the_laptops_en_corpus() {
    check_corpus("laptops-en");
}

#[test]
fn honest_briefs_on_the_ebus_ko_corpus() {
    check_corpus("ebus-ko");
}

#[test]
fn honest_briefs_on_the_irrigation_en_corpus() {
    check_corpus("irrigation-en");
}

#[test]
fn honest_briefs_on_the_emr_cloud_ko_corpus() {
    check_corpus("emr-cloud-ko");
}

#[test]
fn honest_briefs_on_the_ticketing_en_corpus() {
    check_corpus("ticketing-en");
}

#[test]
fn honest_briefs_on_the_library_kiosk_ko_corpus() {
    check_corpus("library-kiosk-ko");
}

#[test]
fn honest_briefs_on_the_schoolsis_en_corpus() {
    check_corpus("schoolsis-en");
}

#[test]
fn honest_briefs_on_the_bikeshare_ko_corpus() {
    check_corpus("bikeshare-ko");
}

#[test]
fn honest_briefs_on_the_watermeters_en_corpus() {
    check_corpus("watermeters-en");
}

#[test]
fn honest_briefs_on_the_cafeteria_ko_corpus() {
    check_corpus("cafeteria-ko");
}

#[test]
fn honest_briefs_on_the_coldchain_en_corpus() {
    check_corpus("coldchain-en");
}

#[test]
fn honest_briefs_on_the_festival_ko_corpus() {
    check_corpus("festival-ko");
}

#[test]
fn honest_briefs_on_the_payroll_en_corpus() {
    check_corpus("payroll-en");
}

#[test]
fn honest_briefs_on_the_dental_ko_corpus() {
    check_corpus("dental-ko");
}

#[test]
fn honest_briefs_on_the_hvac_en_corpus() {
    check_corpus("hvac-en");
}

#[test]
fn honest_briefs_on_the_clinic_ko_corpus() {
    check_corpus("clinic-ko");
}

#[test]
fn honest_briefs_on_the_crm_en_corpus() {
    check_corpus("crm-en");
}

#[test]
fn honest_briefs_on_the_shuttle_ko_corpus() {
    check_corpus("shuttle-ko");
}

#[test]
fn honest_briefs_on_the_printing_en_corpus() {
    check_corpus("printing-en");
}

#[test]
fn honest_briefs_on_the_parking_ko_corpus() {
    check_corpus("parking-ko");
}

#[test]
fn honest_briefs_on_the_lms_en_corpus() {
    check_corpus("lms-en");
}

#[test]
fn honest_briefs_on_the_laundry_ko_corpus() {
    check_corpus("laundry-ko");
}

#[test]
fn honest_briefs_on_the_fleet_telematics_en_corpus() {
    check_corpus("fleet-telematics-en");
}

#[test]
fn honest_briefs_on_the_pharmacy_ko_corpus() {
    check_corpus("pharmacy-ko");
}

#[test]
fn honest_briefs_on_the_coworking_en_corpus() {
    check_corpus("coworking-en");
}

#[test]
fn honest_briefs_on_the_recycling_ko_corpus() {
    check_corpus("recycling-ko");
}

#[test]
fn honest_briefs_on_the_translation_en_corpus() {
    check_corpus("translation-en");
}

#[test]
fn honest_briefs_on_the_backup_en_corpus() {
    check_corpus("backup-en");
}

#[test]
fn honest_briefs_on_the_elevator_ko_corpus() {
    check_corpus("elevator-ko");
}

#[test]
fn honest_briefs_on_the_uniform_ko_corpus() {
    check_corpus("uniform-ko");
}

#[test]
fn honest_briefs_on_the_payments_en_corpus() {
    check_corpus("payments-en");
}

#[test]
fn honest_briefs_on_the_fieldsurvey_en_corpus() {
    check_corpus("fieldsurvey-en");
}

#[test]
fn honest_briefs_on_the_security_guard_ko_corpus() {
    check_corpus("security-guard-ko");
}

#[test]
fn honest_briefs_on_the_kiosk_order_ko_corpus() {
    check_corpus("kiosk-order-ko");
}

#[test]
fn honest_briefs_on_the_vetclinic_en_corpus() {
    check_corpus("vetclinic-en");
}

#[test]
fn honest_briefs_on_the_solarfarm_en_corpus() {
    check_corpus("solarfarm-en");
}

#[test]
fn honest_briefs_on_the_daycare_bus_ko_corpus() {
    check_corpus("daycare-bus-ko");
}

#[test]
fn honest_briefs_on_the_callcenter_ko_corpus() {
    check_corpus("callcenter-ko");
}

#[test]
fn honest_briefs_on_the_foodbank_en_corpus() {
    check_corpus("foodbank-en");
}

#[test]
fn honest_briefs_on_the_snowplow_en_corpus() {
    check_corpus("snowplow-en");
}

#[test]
fn honest_briefs_on_the_pool_ko_corpus() {
    check_corpus("pool-ko");
}

#[test]
fn honest_briefs_on_the_wifi_ko_corpus() {
    check_corpus("wifi-ko");
}

#[test]
fn honest_briefs_on_the_porter_en_corpus() {
    check_corpus("porter-en");
}

#[test]
fn honest_briefs_on_the_proctoring_en_corpus() {
    check_corpus("proctoring-en");
}

#[test]
fn honest_briefs_on_the_evcharger_ko_corpus() {
    check_corpus("evcharger-ko");
}

#[test]
fn honest_briefs_on_the_chatbot_ko_corpus() {
    check_corpus("chatbot-ko");
}

#[test]
fn honest_briefs_on_the_archive_en_corpus() {
    check_corpus("archive-en");
}

#[test]
fn honest_briefs_on_the_cleaning_ko_corpus() {
    check_corpus("cleaning-ko");
}

#[test]
fn honest_briefs_on_the_nursecall_en_corpus() {
    check_corpus("nursecall-en");
}

#[test]
fn honest_briefs_on_the_labfreezer_en_corpus() {
    check_corpus("labfreezer-en");
}

#[test]
fn honest_briefs_on_the_bathvan_ko_corpus() {
    check_corpus("bathvan-ko");
}

#[test]
fn honest_briefs_on_the_messenger_ko_corpus() {
    check_corpus("messenger-ko");
}

#[test]
fn honest_briefs_on_the_sequencing_en_corpus() {
    check_corpus("sequencing-en");
}

#[test]
fn honest_briefs_on_the_audioguide_ko_corpus() {
    check_corpus("audioguide-ko");
}

#[test]
fn honest_briefs_on_the_councilstream_en_corpus() {
    check_corpus("councilstream-en");
}

#[test]
fn honest_briefs_on_the_treespray_ko_corpus() {
    check_corpus("treespray-ko");
}
