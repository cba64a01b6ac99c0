//! `stepwise run` end to end: the real binary over the example notes, offline.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use serde_json::Value;

mod common;

use common::{Out, Scratch, Stepwise, retrieved};

const GOAL: &str = "Should our support team adopt retrieval-augmented generation or fine-tuning?";

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

fn notes() -> PathBuf {
    examples().join("notes")
}

/// Ids of the notes in a folder: file stems, plus the ids of JSONL lines.
fn corpus_ids(dir: &Path) -> Vec<String> {
    let mut ids = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        match path.extension().and_then(|e| e.to_str()) {
            Some("md" | "txt") => ids.push(path.file_stem().unwrap().to_str().unwrap().to_owned()),
            Some("jsonl") => {
                for line in std::fs::read_to_string(&path)
                    .unwrap()
                    .lines()
                    .filter(|l| !l.trim().is_empty())
                {
                    let v: Value = serde_json::from_str(line).unwrap();
                    ids.push(v["id"].as_str().unwrap().to_owned());
                }
            }
            _ => {}
        }
    }
    ids
}

/// Every `[id]` cited in a Markdown brief.
fn citations(markdown: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in markdown.lines().filter(|l| l.starts_with("- ")) {
        let mut rest = line;
        while let Some(start) = rest.find('[') {
            let Some(len) = rest[start..].find(']') else {
                break;
            };
            let id = &rest[start + 1..start + len];
            if !id.is_empty() && !id.contains(' ') {
                out.push(id.to_owned());
            }
            rest = &rest[start + len..];
        }
    }
    out
}

/// Runs the binary isolated (see [`common::Stepwise`]): every call has a
/// run database and a home of its own.
fn stepwise(args: &[&str]) -> Out {
    Stepwise::new().args(args).run()
}

fn run(goal: &str, extra: &[&str]) -> Out {
    let notes = notes();
    let mut args = vec!["run", goal, "--notes", notes.to_str().unwrap()];
    args.extend_from_slice(extra);
    stepwise(&args)
}

/// The JSON output without the fields documented as varying between runs.
fn stable(mut v: Value) -> Value {
    fn scrub(v: &mut Value) {
        match v {
            Value::Object(map) => {
                for key in ["run_id", "at", "duration_ms", "wall_time_ms"] {
                    map.remove(key);
                }
                map.values_mut().for_each(scrub);
            }
            Value::Array(items) => items.iter_mut().for_each(scrub),
            _ => {}
        }
    }
    scrub(&mut v);
    v
}

#[test]
fn the_offline_run_writes_a_cited_brief_and_shows_progress() {
    let out = run(GOAL, &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.starts_with(&format!("# {GOAL}\n")),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("[rag-vs-fine-tuning]"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("## Unresolved gaps"));
    assert!(out.stdout.contains("## Sources"));
    // stderr is not a terminal here: plain progress, one line per event, no escape codes.
    assert!(
        out.stderr
            .contains("plan v1 validated: 2 steps — q1, compare (after q1)"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("[q1] running"), "{}", out.stderr);
    assert!(out.stderr.contains("run ok"), "{}", out.stderr);
    assert!(!out.stderr.contains('\x1b'));
}

#[test]
fn json_output_is_seed_001s_final_output() {
    let out = run(GOAL, &["--json", "--quiet"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.is_empty(),
        "--quiet prints nothing: {}",
        out.stderr
    );
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["status"], "ok");
    for key in [
        "final_report",
        "plan",
        "step_results",
        "knowledge_gaps",
        "evidence",
        "usage",
        "run_id",
        "execution_history",
    ] {
        assert!(v.get(key).is_some(), "missing {key}");
    }
    assert!(
        v["plan"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["status"] == "succeeded")
    );
    let evidence = v["evidence"].as_array().unwrap();
    assert!(!evidence.is_empty());
    assert!(
        evidence
            .iter()
            .all(|e| e["source_id"].is_string() && e["quote"].is_string())
    );
    assert_eq!(
        v["usage"]["llm_calls"], 0,
        "the offline roles call no model"
    );
    assert!(v["usage"]["tool_calls"].as_u64().unwrap() >= 1);
}

#[test]
fn the_same_inputs_give_byte_identical_markdown_and_stable_json() {
    let a = run(GOAL, &["--quiet"]);
    let b = run(GOAL, &["--quiet"]);
    assert_eq!(a.stdout, b.stdout);
    let ja: Value = serde_json::from_str(&run(GOAL, &["--json", "--quiet"]).stdout).unwrap();
    let jb: Value = serde_json::from_str(&run(GOAL, &["--json", "--quiet"]).stdout).unwrap();
    assert_ne!(ja["run_id"], jb["run_id"]);
    assert_eq!(stable(ja), stable(jb));
}

#[test]
fn out_writes_the_brief_to_a_file() {
    let scratch = Scratch::new("run", "out");
    let path = scratch.path().join("brief.md");
    let out = run(GOAL, &["--out", path.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.is_empty());
    let written = std::fs::read_to_string(&path).unwrap();
    assert!(written.starts_with(&format!("# {GOAL}")));
    assert!(out.stderr.contains("wrote"), "{}", out.stderr);
}

#[test]
fn constraints_shape_the_brief() {
    let out = run(
        "RAG for customer support",
        &[
            "--quiet",
            "--constraints",
            r#"{"required_sections": ["Costs", "Latency"], "audience": "support leads"}"#,
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("## Costs\n"), "{}", out.stdout);
    assert!(out.stdout.contains("## Latency\n"));
    assert!(out.stdout.contains("_For: support leads_"));
}

#[test]
fn nothing_matching_is_needs_review_with_gaps_not_a_report() {
    let out = run("Quantum entanglement of penguins", &["--quiet"]);
    assert_eq!(out.code, 3, "{}", out.stdout);
    assert!(
        out.stdout
            .starts_with("# Needs review: Quantum entanglement of penguins"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("No evidence in the notes for: Quantum entanglement of penguins")
    );
    assert!(!out.stdout.contains("## Sources"));
}

/// A long goal (a pasted document) is written once in run_started (the raw
/// input) and once in input_prepared (the goal), and otherwise only where
/// the offline planner makes the whole goal the plan's one question (that
/// step's description and criterion, and its assessment). No step event
/// repeats it, and the brief's heading shows its first words.
#[test]
fn a_long_goal_is_not_repeated_in_every_event() {
    let goal = format!(
        "{GOAL} Context follows. {}",
        "Tickets mention refunds and latency. ".repeat(60)
    );
    let goal = goal.trim_end();
    let home = std::sync::Arc::new(common::Home::new());
    let notes = notes();
    let out = Stepwise::in_home(&home)
        .args([
            "run",
            goal,
            "--notes",
            notes.to_str().unwrap(),
            "--json",
            "--quiet",
        ])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let json: Value = serde_json::from_str(&out.stdout).unwrap();
    let run_id = json["run_id"].as_str().unwrap();
    let report = json["final_report"].as_str().unwrap();
    let heading = report.lines().next().unwrap();
    assert!(
        heading.starts_with(&format!("# {GOAL}")) && heading.ends_with('…'),
        "{heading}"
    );
    assert!(heading.len() < 400, "{heading}");

    let events = Stepwise::in_home(&home)
        .args(["show", run_id, "--events", "--json"])
        .run();
    assert_eq!(events.code, 0, "{}", events.stderr);
    let events: Vec<Value> = serde_json::from_str(&events.stdout).unwrap();
    // The goal's tail: a shortened heading or query does not reach it.
    let tail = format!(
        "Context follows. {}",
        "Tickets mention refunds and latency. ".repeat(59)
    );
    let tail = tail.trim_end();
    let copies = |e: &Value| e.to_string().matches(tail).count();
    let allowed = ["plan_created", "plan_validated", "assessed"];
    for event in &events {
        let kind = event["kind"].as_str().unwrap();
        match kind {
            "run_started" | "input_prepared" => assert_eq!(copies(event), 1, "{kind}"),
            _ if allowed.contains(&kind) => {}
            _ => assert_eq!(copies(event), 0, "{kind} repeats the goal"),
        }
    }
    assert!(events.len() > 10, "{}", events.len());
}

#[test]
fn an_empty_goal_fails_with_a_clear_message() {
    let out = run("   ", &["--quiet"]);
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains("error: the goal is empty"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_single_word_is_refused_before_the_planner() {
    // A script with no answers: a planner asked anything would fail the run
    // with "the script has no more answers", not with the input's reason.
    let dir = Scratch::new("run", "one-word");
    let script = dir.path().join("empty.json");
    std::fs::write(&script, "[]").unwrap();
    let spec = format!("script:{}", script.display());
    let out = run("asdf", &["--quiet", "--json", "--model", &spec]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(out.stderr.contains("is a single word"), "{}", out.stderr);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let kinds: Vec<&str> = v["execution_history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["run_started", "input_rejected"]);
    assert_eq!(v["usage"]["llm_calls"], 0);
}

#[test]
fn a_missing_notes_folder_is_a_usage_error() {
    let out = stepwise(&["run", GOAL, "--notes", "/nonexistent/notes"]);
    assert_eq!(out.code, 2);
    assert_eq!(
        out.stderr.trim(),
        "error: notes folder /nonexistent/notes does not exist"
    );
}

#[test]
fn bad_constraints_are_a_usage_error() {
    let out = run(GOAL, &["--constraints", "{nope"]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.starts_with("error: --constraints is not JSON"),
        "{}",
        out.stderr
    );
}

#[test]
fn max_steps_bounds_the_plan() {
    let out = run(GOAL, &["--json", "--quiet", "--max-steps", "2"]);
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    assert!(v["plan"].as_array().unwrap().len() <= 2, "{}", v["plan"]);
}

const DEMO: &str = "Should our team adopt retrieval-augmented generation for customer support?";

#[test]
fn the_readme_demo_shows_a_replan_a_contradiction_and_a_named_gap() {
    let brief = examples().join("brief.json");
    let out = run(DEMO, &["--constraints", brief.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    // Replan: "maintenance" is not a word of the notes; the retry uses theirs.
    assert!(
        out.stderr
            .contains("replan 1: q4: no passage mentions maintenance"),
        "{}",
        out.stderr
    );
    assert!(
        out.stdout.contains("## maintenance\n\n- "),
        "{}",
        out.stdout
    );
    // Contradiction: 41% in one note, 27% in another.
    assert!(out.stdout.contains("## Contradictions"));
    assert!(
        out.stdout.contains("[metrics-review-july] says")
            && out.stdout.contains("[pilot-results-q2] says")
    );
    // Figures side by side: each row's value is written in a sentence the
    // same section cites, from the note the row names.
    let latency = out
        .stdout
        .split("\n## ")
        .find(|s| s.starts_with("latency"))
        .unwrap();
    let rows: Vec<Vec<&str>> = latency
        .lines()
        .skip_while(|l| !l.starts_with("| Subject | Measured | Value | Source |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| l.trim_matches('|').split(" | ").map(str::trim).collect())
        .collect();
    assert!(rows.len() >= 2, "{latency}");
    for row in &rows {
        let (value, source) = (row[2], row[3]);
        assert!(
            latency
                .lines()
                .any(|l| l.starts_with("- ") && l.ends_with(source) && l.contains(value)),
            "{row:?} not in a cited sentence of {source}:\n{latency}"
        );
    }
    // Named gap, never filled: no note covers team skills.
    assert!(
        out.stdout
            .contains("## team skills\n\n_No evidence found in the notes"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("- No evidence in the notes for: team skills")
    );

    let json: Value = serde_json::from_str(
        &run(
            DEMO,
            &[
                "--json",
                "--quiet",
                "--constraints",
                brief.to_str().unwrap(),
            ],
        )
        .stdout,
    )
    .unwrap();
    assert_eq!(json["replan_count"], 1);
    let gaps: Vec<&str> = json["knowledge_gaps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g.as_str().unwrap())
        .collect();
    assert_eq!(gaps, ["No evidence in the notes for: team skills"]);
    // The replan kept the completed steps: every step ran exactly once.
    let started: Vec<&str> = json["execution_history"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "step_started")
        .map(|e| e["step"].as_str().unwrap())
        .collect();
    let mut unique = started.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), started.len(), "{started:?}");
    assert!(started.contains(&"q4_r1"));
}

#[test]
fn every_citation_exists_in_the_corpus_and_was_retrieved_by_the_run() {
    let brief = examples().join("brief.json");
    let md = run(DEMO, &["--quiet", "--constraints", brief.to_str().unwrap()]).stdout;
    let json: Value = serde_json::from_str(
        &run(
            DEMO,
            &[
                "--json",
                "--quiet",
                "--constraints",
                brief.to_str().unwrap(),
            ],
        )
        .stdout,
    )
    .unwrap();
    let ids = corpus_ids(&notes());
    let got = retrieved(&json);
    let cited = citations(&md);
    assert!(cited.len() >= 10, "{cited:?}");
    for id in &cited {
        assert!(ids.contains(id), "[{id}] is not a note of the corpus");
        assert!(got.contains(id), "[{id}] was not retrieved by this run");
    }
    for e in json["evidence"].as_array().unwrap() {
        let id = e["source_id"].as_str().unwrap();
        assert!(
            ids.contains(&id.to_owned()) && got.contains(&id.to_owned()),
            "{id}"
        );
        assert!(
            md.contains(e["quote"].as_str().unwrap()),
            "evidence quoted in the brief"
        );
    }
}

#[test]
fn a_korean_goal_over_the_korean_notes_is_cited() {
    let ko = examples().join("notes-ko");
    let out = stepwise(&[
        "run",
        "한국어 고객지원에 RAG를 도입해야 하는가?",
        "--notes",
        ko.to_str().unwrap(),
        "--quiet",
        "--constraints",
        r#"{"comparison_dimensions": ["비용", "해결률"]}"#,
    ]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert!(
        out.stdout.contains("## 비용") && out.stdout.contains("## 해결률"),
        "{}",
        out.stdout
    );
    let ids = corpus_ids(&ko);
    let cited = citations(&out.stdout);
    assert!(!cited.is_empty());
    assert!(cited.iter().all(|c| ids.contains(c)), "{cited:?}");
    // The Korean pair disagrees on the resolution rate: 35% vs 22%.
    assert!(
        out.stdout.contains("35%") && out.stdout.contains("22%"),
        "{}",
        out.stdout
    );
}

#[test]
fn skipped_files_are_reported_not_silently_ignored() {
    let scratch = Scratch::new("run", "skip");
    let dir = scratch.path();
    std::fs::write(dir.join("a.md"), "# Cost\n\nRAG costs $450 per month.\n").unwrap();
    std::fs::write(dir.join("slides.pdf"), "%PDF").unwrap();
    let out = stepwise(&["run", "RAG cost", "--notes", dir.to_str().unwrap()]);
    assert!(
        out.stderr.contains("note: skipped") && out.stderr.contains("slides.pdf"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_bad_jsonl_line_is_named() {
    let scratch = Scratch::new("run", "jsonl");
    let dir = scratch.path();
    std::fs::write(
        dir.join("n.jsonl"),
        "{\"id\": \"a\", \"text\": \"ok\"}\n{broken\n",
    )
    .unwrap();
    let out = stepwise(&["run", "RAG cost", "--notes", dir.to_str().unwrap()]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("n.jsonl line 2"), "{}", out.stderr);
}
