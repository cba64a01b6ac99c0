//! Statuses that never overclaim, end to end through the real binary: a
//! report that cites nothing is never `ok` (in any strategy); a run that
//! stops for review still returns its partial brief; resuming it with
//! nothing changed keeps it; a user's `--plan` is never altered without
//! `--repair`; constraint keys and `allowed_tools` are checked; a note that
//! is not text is skipped and reported, and the run goes on.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use serde_json::{Value, json};

mod common;

use common::{Out, STRATEGIES, Scratch, retrieved};

/// A scratch folder: the run database, a notes folder, scripts, plans.
struct Dir(Scratch);

impl Dir {
    fn new(name: &str) -> Self {
        let scratch = Scratch::new("integrity", name);
        let p = scratch.path();
        std::fs::create_dir_all(p.join("notes")).unwrap();
        std::fs::write(
            p.join("notes/latency.md"),
            "# Latency budget\n\nWe set a budget of 1.5 seconds to first token at the 95th percentile.\n",
        )
        .unwrap();
        std::fs::write(
            p.join("notes/cost.md"),
            "# Operating cost\n\nThe assistant costs about $600 per month to run at full traffic.\n",
        )
        .unwrap();
        Self(scratch)
    }

    fn path(&self) -> &Path {
        self.0.path()
    }

    fn notes(&self) -> String {
        self.path().join("notes").display().to_string()
    }

    fn file(&self, name: &str, content: &str) -> String {
        let path = self.path().join(name);
        std::fs::write(&path, content).unwrap();
        path.display().to_string()
    }

    /// Writes a model script and returns the `--model` value that plays it.
    fn script(&self, entries: &Value) -> String {
        format!("script:{}", self.file("script.json", &entries.to_string()))
    }
}

fn stepwise(dir: &Dir, args: &[&str]) -> Out {
    common::stepwise(dir.path(), &dir.0.db(), args, &[("USER", "alice")])
}

fn run(dir: &Dir, goal: &str, extra: &[&str]) -> Out {
    let notes = dir.notes();
    let mut args = vec!["run", goal, "--notes", notes.as_str()];
    args.extend_from_slice(extra);
    stepwise(dir, &args)
}

fn events(v: &Value) -> Vec<Value> {
    v["execution_history"].as_array().unwrap().clone()
}

fn kinds(v: &Value) -> Vec<String> {
    events(v)
        .iter()
        .map(|e| e["kind"].as_str().unwrap().to_owned())
        .collect()
}

fn show(dir: &Dir, run: &str) -> Value {
    let out = stepwise(dir, &["show", run, "--json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    out.json()
}

fn search(id: &str, query: &str, after: &[&str]) -> Value {
    json!({"id": id, "description": format!("Find {query}"), "tool": "search_notes",
        "args": {"query": query, "limit": 3}, "depends_on": after,
        "acceptance_criteria": ["a passage"]})
}

const LATENCY: &str = "We set a budget of 1.5 seconds to first token at the 95th percentile.";

fn ok_assessment() -> Value {
    json!({"purpose": "assessor", "json": {"acceptance_met": true, "verdict": "continue", "reason": "criteria met"}})
}

/// A report citing `quote` from `step` (as note `latency`), or nothing.
fn report(text: &str, cite: Option<(&str, &str)>) -> Value {
    let evidence: Vec<Value> = cite
        .map(|(step, quote)| json!({"source_id": "latency", "step": step, "quote": quote}))
        .into_iter()
        .collect();
    json!({"text": text, "evidence": evidence})
}

/// For each strategy, a script whose final report cites nothing.
fn uncited_script(strategy: &str) -> Value {
    let text = "The latency budget is probably fine.";
    let plan =
        json!({"purpose": "planner", "json": {"steps": [search("find", "latency budget", &[])]}});
    let synth = json!({"purpose": "synthesizer", "json": report(text, None)});
    let answer = json!({"purpose": "actor", "json": {"action": "answer", "report": report(text, None), "gaps": []}});
    match strategy {
        "plan-execute" | "plan-solve" => json!([plan, ok_assessment(), synth]),
        "verified" => json!([plan, ok_assessment(),
            {"purpose": "verifier", "json": {"status": "complete", "completeness": 1.0, "confidence": 0.9,
                "missing": [], "contradictions": []}},
            synth]),
        "react" | "react-isolated" => json!([answer]),
        "router" => {
            let routed = json!({"steps_known_up_front": true, "three_or_more_steps": false,
                "same_tool_repeated": false, "reason": "one lookup"});
            json!([{"purpose": "router", "json": routed}, answer])
        }
        other => panic!("no script for {other}"),
    }
}

#[test]
fn a_report_that_cites_no_evidence_is_never_ok_in_any_strategy() {
    for strategy in STRATEGIES {
        let dir = Dir::new(&format!("uncited-{strategy}"));
        let model = dir.script(&uncited_script(strategy));
        let out = run(
            &dir,
            "What is the latency budget?",
            &[
                "--model",
                &model,
                "--strategy",
                strategy,
                "--json",
                "--quiet",
            ],
        );
        assert_eq!(out.code, 3, "{strategy}: {}{}", out.stdout, out.stderr);
        let v = out.json();
        assert_eq!(v["status"], "needs_review", "{strategy}");
        let why = v["blocked_reason"].as_str().unwrap();
        assert!(
            why.starts_with("the report cites no evidence: "),
            "{strategy}: {why}"
        );
        // The report is kept, as the partial brief of the review.
        assert!(
            v["final_report"]
                .as_str()
                .unwrap()
                .starts_with("The latency budget is probably fine."),
            "{strategy}: {}",
            v["final_report"]
        );
        assert_eq!(v["evidence"], json!([]), "{strategy}");
        assert!(!kinds(&v).contains(&"synthesized".to_owned()), "{strategy}");
    }

    // The same run citing what its step found is ok: the status follows the evidence.
    let dir = Dir::new("cited");
    let model = dir.script(&json!([
        {"purpose": "planner", "json": {"steps": [search("find", "latency budget", &[])]}},
        ok_assessment(),
        {"purpose": "synthesizer", "json": report("The budget is 1.5 s [latency].", Some(("find", LATENCY)))}
    ]));
    let out = run(
        &dir,
        "What is the latency budget?",
        &["--model", &model, "--json", "--quiet"],
    );
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_eq!(out.json()["evidence"][0]["quote"], LATENCY);
}

/// A run that stops at max_replans: `find` is fine, `cost` asks for a
/// replan, and none is allowed. Its partial brief cites `find`.
fn stopped_at_max_replans(dir: &Dir) -> Out {
    let model = dir.script(&json!([
        {"purpose": "planner", "json": {"steps": [
            search("find", "latency budget", &[]),
            search("cost", "yearly licence fee", &["find"])
        ]}},
        ok_assessment(),
        {"purpose": "assessor", "json": {"acceptance_met": false, "verdict": "replan",
            "reason": "no licence fee in the results", "new_gaps": ["No figure for the yearly licence fee"]}},
        {"purpose": "synthesizer", "json": report("## Latency\n\n- The budget is 1.5 s. [latency]", Some(("find", LATENCY)))}
    ]));
    run(
        dir,
        "What are the latency budget and the licence fee?",
        &[
            "--model",
            &model,
            "--max-replans",
            "0",
            "--run-id",
            "run_cap",
            "--quiet",
        ],
    )
}

#[test]
fn a_run_stopped_for_review_returns_its_partial_brief_and_seed_000s_simplify_message() {
    let dir = Dir::new("partial");
    let out = stopped_at_max_replans(&dir);
    assert_eq!(out.code, 3, "{}{}", out.stdout, out.stderr);
    let md = &out.stdout;
    // Header and why, then the brief (its sections, citations and gaps).
    assert!(
        md.starts_with(
            "# Needs review: What are the latency budget and the licence fee?\n\n**Why:** max_replans: "
        ),
        "{md}"
    );
    assert!(md.contains("please simplify it or narrow it"), "{md}");
    let why = md.find("**Why:**").unwrap();
    let section = md.find("## Latency").expect(md);
    let gaps = md.find("## Unresolved gaps").expect(md);
    assert!(why < section && section < gaps, "{md}");
    assert!(md.contains("- The budget is 1.5 s. [latency]"), "{md}");
    assert!(
        md.contains("- No figure for the yearly licence fee"),
        "{md}"
    );
    assert!(
        !md.contains("## Plan (version"),
        "the brief replaces the summary: {md}"
    );

    // --json carries the same brief, its vetted evidence and the gaps.
    let v = show(&dir, "run_cap");
    assert_eq!(v["status"], "needs_review");
    assert!(v["final_report"].as_str().unwrap().contains("[latency]"));
    assert_eq!(v["evidence"][0]["quote"], LATENCY);
    assert_eq!(v["evidence"][0]["step"], "find");
    assert_eq!(
        v["knowledge_gaps"],
        json!(["No figure for the yearly licence fee"])
    );
    let last = events(&v).last().cloned().unwrap();
    assert_eq!(last["kind"], "needs_review");
    assert_eq!(last["brief"]["evidence"][0]["quote"], LATENCY);
}

#[test]
fn resuming_a_needs_review_run_with_nothing_changed_keeps_it_and_says_what_would_have_to() {
    let dir = Dir::new("unchanged");
    assert_eq!(stopped_at_max_replans(&dir).code, 3);
    let before = show(&dir, "run_cap");

    let again = stepwise(&dir, &["resume", "run_cap"]);
    assert_eq!(again.code, 3, "{}{}", again.stdout, again.stderr);
    assert!(
        again.stderr.contains(
            "nothing changed since run run_cap stopped for review, so it stays needs_review: raise --max-replans (now 0) or --max-steps (now 20), or add or change notes in "
        ),
        "{}",
        again.stderr
    );
    assert!(
        again.stdout.starts_with("# Needs review: "),
        "{}",
        again.stdout
    );
    let after = show(&dir, "run_cap");
    assert_eq!(
        events(&after).len(),
        events(&before).len(),
        "nothing is recorded"
    );
    assert_eq!(after["status"], "needs_review");

    // A bound that is not raised is no change either.
    let same = stepwise(
        &dir,
        &["resume", "run_cap", "--max-replans", "0", "--quiet"],
    );
    assert_eq!(same.code, 3, "{}", same.stderr);
    assert_eq!(events(&show(&dir, "run_cap")).len(), events(&before).len());

    // A raised bound is: the run goes on (the script restarts in each process).
    dir.script(&json!([
        {"purpose": "replanner", "json": {"final_answer": "The latency budget is known; the fee is not in the notes.", "steps": []}},
        {"purpose": "synthesizer", "json": report("## Latency\n\n- The budget is 1.5 s. [latency]", Some(("find", LATENCY)))}
    ]));
    let raised = stepwise(
        &dir,
        &[
            "resume",
            "run_cap",
            "--max-replans",
            "1",
            "--json",
            "--quiet",
        ],
    );
    assert_eq!(raised.code, 0, "{}{}", raised.stdout, raised.stderr);
    let v = raised.json();
    assert_eq!(v["status"], "ok");
    let resumed = events(&v)
        .into_iter()
        .find(|e| e["kind"] == "run_resumed")
        .unwrap();
    assert_eq!(
        resumed["changed"],
        json!(["max_replans raised from 0 to 1"])
    );
}

#[test]
fn an_offline_run_that_finds_nothing_stays_needs_review_until_its_notes_change() {
    let dir = Dir::new("offline");
    let goal = "What is the population of the Mars colonies in 2300?";
    let out = run(&dir, goal, &["--run-id", "run_mars", "--quiet"]);
    assert_eq!(out.code, 3, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout
            .starts_with(&format!("# Needs review: {goal}\n\n**Why:** ")),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("## Unresolved gaps"), "{}", out.stdout);
    let v = show(&dir, "run_mars");
    assert_eq!(v["evidence"], json!([]));
    assert!(!v["knowledge_gaps"].as_array().unwrap().is_empty());
    let gaps_named = v["knowledge_gaps"]
        .as_array()
        .unwrap()
        .iter()
        .all(|g| out.stdout.contains(g.as_str().unwrap()));
    assert!(gaps_named, "{}", out.stdout);
    let recorded = events(&v).len();

    // Resumed unchanged (twice): needs_review, nothing recorded, never ok.
    for _ in 0..2 {
        let again = stepwise(&dir, &["resume", "run_mars", "--json"]);
        assert_eq!(again.code, 3, "{}{}", again.stdout, again.stderr);
        assert!(
            again.stderr.contains("nothing changed since"),
            "{}",
            again.stderr
        );
        assert_eq!(again.json()["status"], "needs_review");
        assert_eq!(events(&show(&dir, "run_mars")).len(), recorded);
    }

    // New notes are a change: the resume goes on and records why.
    std::fs::write(
        dir.path().join("notes/mars.md"),
        "# Mars colonies\n\nNo census of Mars colonies exists; the notes hold no population figure.\n",
    )
    .unwrap();
    let changed = stepwise(&dir, &["resume", "run_mars", "--json", "--quiet"]);
    assert_ne!(changed.code, 2, "{}", changed.stderr);
    let v = changed.json();
    let resumed = events(&v)
        .into_iter()
        .find(|e| e["kind"] == "run_resumed")
        .unwrap();
    let said = resumed["changed"][0].as_str().unwrap();
    assert!(said.starts_with("the notes in "), "{said}");
    assert!(said.ends_with(" changed (3 notes now)"), "{said}");
    // Whatever it found, the status follows the evidence.
    if v["status"] == "ok" {
        assert!(!v["evidence"].as_array().unwrap().is_empty());
    }
    // The new fingerprint is recorded: resumed again unchanged, it stays.
    if v["status"] == "needs_review" {
        let again = stepwise(&dir, &["resume", "run_mars", "--quiet"]);
        assert_eq!(again.code, 3, "{}", again.stderr);
    }
}

fn write_plan() -> Value {
    json!({"steps": [
        search("find", "latency budget", &[]),
        {"id": "save", "description": "Save it", "tool": "write_file", "depends_on": ["find"],
         "args": {"path": "latency.md", "content": "${find.output.results[0].passages[0]}"},
         "acceptance_criteria": ["written"]}
    ]})
}

/// Found with a model planner and the offline synthesizer: a plan not
/// written by the offline planner words its steps its own way ("Find the
/// running costs"), and every dimension asked was reported "Not searched"
/// and each step's section "No evidence" although the notes answered them.
#[test]
fn steps_of_someone_elses_plan_answer_the_dimensions_they_name() {
    let dir = Dir::new("other-plan");
    let plan = dir.file(
        "plan.json",
        &json!({"steps": [
            search("costs", "the running costs per month", &[]),
            search("latency", "the latency target at the 95th percentile", &[]),
            search("staff", "the staff rota", &[]),
        ]})
        .to_string(),
    );
    let out = run(
        &dir,
        "Should we launch the assistant? Consider cost and latency.",
        &["--plan", &plan, "--run-id", "run_o", "--quiet"],
    );
    let md = &out.stdout;
    assert_eq!(out.code, 0, "{md}{}", out.stderr);
    assert!(!md.contains("Not searched"), "{md}");
    let section = |heading: &str| {
        md.split("\n## ")
            .find(|s| s.starts_with(heading))
            .unwrap_or_else(|| panic!("no section {heading}:\n{md}"))
            .to_owned()
    };
    assert!(
        section("cost\n").contains("costs about $600 per month to run at full traffic. [cost]"),
        "{md}"
    );
    assert!(
        section("latency\n").contains(&format!("{LATENCY} [latency]")),
        "{md}"
    );
    // A step that names no dimension keeps a section of its own, and finds nothing.
    assert!(
        section("Find the staff rota").contains("No evidence found"),
        "{md}"
    );
    let v = show(&dir, "run_o");
    let gaps: Vec<&str> = v["knowledge_gaps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g.as_str().unwrap())
        .collect();
    assert!(
        gaps.iter()
            .all(|g| !g.contains("cost") && !g.contains("latency")),
        "{gaps:?}"
    );
}

#[test]
fn a_question_answered_only_by_an_action_is_not_ok_and_names_the_gap() {
    // Found with a plan of MCP file tools: no search step, so no section,
    // and the gap list said "None: every section found evidence". What the
    // write did is shown and cited, but it answers nothing the goal asked.
    let dir = Dir::new("nothing-citable");
    let plan = dir.file(
        "plan.json",
        &json!({"steps": [{"id": "save", "description": "Save a note", "tool": "write_file",
            "args": {"path": "out.md", "content": "A: 120, B: 90"},
            "acceptance_criteria": ["written"]}]})
        .to_string(),
    );
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let ws = ws.display().to_string();
    let goal = "What does each vendor cost per seat?";
    let out = run(
        &dir,
        goal,
        &[
            "--plan",
            &plan,
            "--workspace",
            &ws,
            "--approve",
            "auto",
            "--run-id",
            "run_w",
            "--quiet",
        ],
    );
    assert_eq!(out.code, 3, "{}{}", out.stdout, out.stderr);
    let md = &out.stdout;
    assert!(!md.contains("None:"), "{md}");
    assert!(md.contains("## Actions"), "{md}");
    assert!(md.contains("approved by auto"), "{md}");
    let v = show(&dir, "run_w");
    assert_eq!(v["status"], "needs_review");
    let gaps = v["knowledge_gaps"].as_array().unwrap();
    assert!(
        gaps.iter().any(|g| g.as_str().unwrap().contains(goal)),
        "{gaps:?}"
    );
}

#[test]
fn a_run_that_only_acts_ends_ok_with_its_actions_and_results_cited() {
    // Seed 000's scenarios: every step met its criteria, nothing was asked
    // of the notes, so the report is what the steps did and returned.
    let dir = Dir::new("only-acts");
    let plan = dir.file(
        "plan.json",
        &json!({"steps": [
            {"id": "read", "description": "Read the latency note", "tool": "read_note",
             "args": {"id": "latency"}, "acceptance_criteria": ["the note"]},
            {"id": "save", "description": "Save the note's title", "tool": "write_file",
             "depends_on": ["read"],
             "args": {"path": "out/title.md", "content": "${read.output.title}"},
             "acceptance_criteria": ["file written"]}]})
        .to_string(),
    );
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let ws_arg = ws.display().to_string();
    let out = run(
        &dir,
        "Copy the latency note's title into out/title.md",
        &[
            "--plan",
            &plan,
            "--workspace",
            &ws_arg,
            "--approve",
            "auto",
            "--run-id",
            "run_a",
            "--quiet",
        ],
    );
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let md = &out.stdout;
    // The action, with its resolved arguments and who approved it.
    let action = md
        .lines()
        .find(|l| l.starts_with("- Save the note's title: `write_file`"))
        .unwrap_or_else(|| panic!("no action line: {md}"));
    assert!(action.contains("content “Latency budget”"), "{action}");
    assert!(action.contains("approved by auto"), "{action}");
    assert!(action.ends_with("[save]"), "{action}");
    let v = show(&dir, "run_a");
    assert_eq!(v["status"], "ok");
    // Each cited field is verbatim in the step's output, the step its source.
    let evidence = v["evidence"].as_array().unwrap();
    assert!(!evidence.is_empty());
    let output = v["step_results"]["save"]["output"].to_string();
    for e in evidence {
        assert_eq!(e["source_id"], "save", "{e}");
        assert!(
            output.contains(e["quote"].as_str().unwrap()),
            "{e} in {output}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(ws.join("out/title.md")).unwrap(),
        "Latency budget"
    );
}

#[test]
fn a_given_plan_with_an_unavailable_tool_stops_with_the_diagnostic_and_its_fix() {
    let dir = Dir::new("plan-tool");
    let plan = dir.file("plan.json", &write_plan().to_string());
    let out = run(
        &dir,
        "Save the latency budget",
        &["--plan", &plan, "--run-id", "run_p", "--quiet"],
    );
    assert_eq!(out.code, 3, "{}{}", out.stdout, out.stderr);
    let md = &out.stdout;
    assert!(md.contains("## Plan problems"), "{md}");
    assert!(
        md.contains("[unknown_tool] step save: unknown tool \"write_file\""),
        "{md}"
    );
    assert!(
        md.contains("fix: step save uses write_file, which needs --workspace DIR"),
        "{md}"
    );
    assert!(md.contains("Your plan (--plan) was not changed"), "{md}");
    let v = show(&dir, "run_p");
    assert_eq!(v["status"], "needs_review");
    let why = v["blocked_reason"].as_str().unwrap();
    assert!(
        why.starts_with("the given plan has 1 problem(s) and is not repaired"),
        "{why}"
    );
    assert_eq!(v["plan_errors"][0]["code"], "unknown_tool");
    // Nothing was repaired, validated or run.
    let k = kinds(&v);
    for kind in ["plan_repaired", "plan_validated", "step_started"] {
        assert!(!k.contains(&kind.to_owned()), "{kind} in {k:?}");
    }
    // Resumed unchanged, it stays so.
    assert_eq!(stepwise(&dir, &["resume", "run_p", "--quiet"]).code, 3);
}

#[test]
fn a_cyclic_given_plan_loses_no_step_without_repair_and_repair_says_what_it_changed() {
    let dir = Dir::new("plan-cycle");
    let cyclic = json!({"steps": [
        search("a", "latency budget", &["b"]),
        search("b", "operating cost", &["a"])
    ]});
    let plan = dir.file("plan.json", &cyclic.to_string());
    let out = run(
        &dir,
        "Latency and cost",
        &["--plan", &plan, "--run-id", "run_c", "--quiet"],
    );
    assert_eq!(out.code, 3, "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("[dependency_cycle]"), "{}", out.stdout);
    assert!(
        out.stdout.contains("fix: remove a `depends_on` entry"),
        "{}",
        out.stdout
    );
    let v = show(&dir, "run_c");
    assert!(!kinds(&v).contains(&"step_started".to_owned()));
    assert!(!kinds(&v).contains(&"plan_repaired".to_owned()));

    // With --repair, repair proceeds and the output names what it changed.
    let tool_plan = dir.file("tool-plan.json", &write_plan().to_string());
    let repaired = run(
        &dir,
        "Save the latency budget",
        &["--plan", &tool_plan, "--repair", "--run-id", "run_r"],
    );
    assert_ne!(repaired.code, 2, "{}", repaired.stderr);
    assert!(
        repaired
            .stdout
            .contains("## Your plan, as repaired (--repair)\n\n- removed step save (write_file)"),
        "{}",
        repaired.stdout
    );
    assert!(
        repaired
            .stderr
            .contains("--repair changed your plan: removed step save (write_file)"),
        "{}",
        repaired.stderr
    );
    let v = show(&dir, "run_r");
    assert!(kinds(&v).contains(&"plan_repaired".to_owned()));
}

#[test]
fn unknown_constraint_keys_and_tools_are_usage_errors_naming_them() {
    let dir = Dir::new("constraints");
    let goal = "Compare latency and cost";
    let out = run(
        &dir,
        goal,
        &["--constraints", r#"{"comparision_dimensions": ["cost"]}"#],
    );
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains(
            "unknown constraint key `comparision_dimensions` (did you mean `comparison_dimensions`?); expected one of `audience`, `length`, `required_sections`, `comparison_dimensions`"
        ),
        "{}",
        out.stderr
    );

    let out = run(
        &dir,
        goal,
        &["--constraints", r#"{"allowed_tools": ["nosuch"]}"#],
    );
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("there is no tool named \"nosuch\"")
            && out
                .stderr
                .contains("the available tools are compare_results, read_note, search_notes"),
        "{}",
        out.stderr
    );
    let out = run(
        &dir,
        goal,
        &["--constraints", r#"{"allowed_tools": ["write_file"]}"#],
    );
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("write_file needs --workspace DIR"),
        "{}",
        out.stderr
    );
    // Nothing was recorded for the refused runs.
    let runs = stepwise(&dir, &["runs", "--json"]);
    assert!(
        runs.code != 0 || runs.json().as_array().is_none_or(Vec::is_empty),
        "{}",
        runs.stdout
    );

    // `plan validate --constraints` refuses them too.
    let plan = dir.file(
        "plan.json",
        &json!({"steps": [search("a", "x", &[])]}).to_string(),
    );
    let out = stepwise(
        &dir,
        &[
            "plan",
            "validate",
            &plan,
            "--constraints",
            r#"{"max_step": 3}"#,
        ],
    );
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("did you mean `max_steps`?"),
        "{}",
        out.stderr
    );

    // Sections and dimensions given together are both kept.
    let out = run(
        &dir,
        goal,
        &[
            "--constraints",
            r#"{"required_sections": ["Risks"], "comparison_dimensions": ["latency", "cost"]}"#,
            "--json",
            "--quiet",
        ],
    );
    assert_ne!(out.code, 2, "{}", out.stderr);
    let v = out.json();
    let prepared = events(&v)
        .into_iter()
        .find(|e| e["kind"] == "input_prepared")
        .unwrap();
    let kept = &prepared["goal"]["constraints"];
    assert_eq!(kept["required_sections"], json!(["Risks"]));
    assert_eq!(kept["comparison_dimensions"], json!(["latency", "cost"]));
}

#[test]
fn a_binary_or_non_utf8_note_is_skipped_and_reported_and_the_run_goes_on() {
    let dir = Dir::new("binary");
    let png: &[u8] = &[
        0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d, b'I', b'H', b'D', b'R',
    ];
    std::fs::write(dir.path().join("notes/diagram.md"), png).unwrap();
    // "café" in Latin-1: not UTF-8.
    std::fs::write(
        dir.path().join("notes/latin1.md"),
        b"# Caf\xe9 notes\n\nThe caf\xe9 is open.\n",
    )
    .unwrap();
    let out = run(&dir, "What is the latency budget?", &["--json"]);
    assert!(
        out.code == 0 || out.code == 3,
        "the run goes on: {}{}",
        out.stdout,
        out.stderr
    );
    let skipped: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.contains("skipped "))
        .collect();
    assert!(
        skipped
            .iter()
            .any(|l| l.contains("diagram.md: binary file, not text")),
        "{}",
        out.stderr
    );
    assert!(
        skipped
            .iter()
            .any(|l| l.contains("latin1.md: not UTF-8 text (invalid byte at offset 5)")),
        "{}",
        out.stderr
    );
    assert!(
        retrieved(&out.json())
            .iter()
            .all(|id| id != "diagram" && id != "latin1"),
        "skipped notes are not searched"
    );
}

#[test]
fn a_resume_after_the_notes_changed_searches_the_gap_again_and_ends_ok() {
    // The hint promises "change the notes"; resumed on new notes, the run
    // must search what it lacked again, not only re-compare.
    let dir = Dir::new("notes-changed");
    let goal = "What does the snowplow contract cost per season?";
    let first = run(&dir, goal, &["--run-id", "run_n", "--quiet"]);
    assert_eq!(first.code, 3, "{}{}", first.stdout, first.stderr);
    std::fs::write(
        dir.path().join("notes/snowplow.md"),
        "# Snowplow contract\n\nThe snowplow contract with Northside Clearing costs $12,400 per season.\n",
    )
    .unwrap();
    let resumed = stepwise(&dir, &["resume", "run_n", "--quiet"]);
    assert_eq!(resumed.code, 0, "{}{}", resumed.stdout, resumed.stderr);
    assert!(
        resumed
            .stdout
            .contains("costs $12,400 per season. [snowplow]"),
        "{}",
        resumed.stdout
    );
    let v = show(&dir, "run_n");
    assert_eq!(v["status"], "ok");
    assert!(
        v["knowledge_gaps"].as_array().unwrap().is_empty(),
        "{}",
        v["knowledge_gaps"]
    );
    // The search that found nothing on the old notes is on record, and a
    // new one ran on the new notes.
    let searches: Vec<&Value> = v["plan"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["tool"] == "search_notes")
        .collect();
    assert!(searches.len() >= 2, "{searches:?}");
    let resumed_event = events(&v)
        .into_iter()
        .find(|e| e["kind"] == "run_resumed")
        .unwrap();
    assert_eq!(resumed_event["sources_changed"], true, "{resumed_event}");
}
