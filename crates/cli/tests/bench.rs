//! `stepwise bench` end to end: the real binary over a two-task fixture
//! suite (tests/fixtures/bench/two-tasks.toml), offline.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use serde_json::Value;

mod common;

use common::{Out, Scratch, Stepwise};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bench/two-tasks.toml")
}

/// Runs `stepwise` isolated (see [`common::Stepwise`]) with a database path
/// (`STEPWISE_DB`) that must never be created.
fn stepwise(args: &[&str], db: &Path) -> Out {
    Stepwise::new().env("STEPWISE_DB", db).args(args).run()
}

fn bench(extra: &[&str], name: &str) -> Out {
    bench_of(&fixture(), "plan-execute,plan-solve", extra, name)
}

/// `stepwise bench SUITE --strategies STRATEGIES EXTRA…`, never touching the run database.
fn bench_of(suite: &Path, strategies: &str, extra: &[&str], name: &str) -> Out {
    let dir = Scratch::new("bench", name);
    let db = dir.db();
    let mut args = vec!["bench", suite.to_str().unwrap(), "--strategies", strategies];
    args.extend_from_slice(extra);
    let out = stepwise(&args, &db);
    assert!(!db.exists(), "the bench wrote to the run database");
    out
}

fn row<'a>(json: &'a Value, strategy: &str, task: &str) -> &'a Value {
    json["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["strategy"] == strategy && r["task"] == task)
        .unwrap_or_else(|| panic!("no row for {strategy} × {task}"))
}

fn n(v: &Value) -> u64 {
    v.as_u64().unwrap()
}

#[test]
fn two_tasks_by_two_strategies_give_four_rows_and_two_summaries() {
    let out = bench(&["--json"], "json");
    assert_eq!(out.code, 0, "{}", out.stderr);
    let json: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(json["model"], "offline");
    assert_eq!(
        json["strategies"],
        serde_json::json!(["plan-execute", "plan-solve"])
    );
    assert_eq!(
        json["tasks"],
        serde_json::json!(["pilot-resolution", "adoption-maintenance"])
    );

    // Strategy-major order: each strategy's tasks in suite order.
    let order: Vec<(String, String)> = json["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["strategy"].as_str().unwrap().to_owned(),
                r["task"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let pair = |s: &str, t: &str| (s.to_owned(), t.to_owned());
    assert_eq!(
        order,
        [
            pair("plan-execute", "pilot-resolution"),
            pair("plan-execute", "adoption-maintenance"),
            pair("plan-solve", "pilot-resolution"),
            pair("plan-solve", "adoption-maintenance"),
        ]
    );

    for r in json["runs"].as_array().unwrap() {
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(r["closed_loop"], true);
        assert_eq!(n(&r["model_calls"]), 0, "offline roles call no model");
        assert_eq!(n(&r["input_tokens"]) + n(&r["output_tokens"]), 0);
        assert!(n(&r["tool_calls"]) >= 1, "{r}");
        assert_eq!(
            r["success"],
            r["failed_checks"].as_array().unwrap().is_empty()
        );
    }

    for (s, driver) in [("plan-execute", "graph"), ("plan-solve", "graph-no-replan")] {
        for t in ["pilot-resolution", "adoption-maintenance"] {
            assert_eq!(row(&json, s, t)["driver"], driver);
        }
    }

    // The lookup passes with both.
    for s in ["plan-execute", "plan-solve"] {
        let r = row(&json, s, "pilot-resolution");
        assert_eq!(r["success"], true, "{r}");
        assert!(
            r["citations"]
                .as_array()
                .unwrap()
                .contains(&Value::from("pilot-results-q2"))
        );
    }
    // Only the strategy that replans reaches the note that says "maintain".
    let pe = row(&json, "plan-execute", "adoption-maintenance");
    assert_eq!(pe["success"], true, "{pe}");
    assert!(n(&pe["replans"]) >= 1, "{pe}");
    let ps = row(&json, "plan-solve", "adoption-maintenance");
    assert_eq!(ps["success"], false, "{ps}");
    assert_eq!(n(&ps["replans"]), 0);
    assert_eq!(
        ps["failed_checks"],
        serde_json::json!(["not cited: index-upkeep"])
    );
    assert!(
        n(&ps["gaps"]) >= 1,
        "plan-solve names what it did not find: {ps}"
    );

    // Role calls: plan-solve without retries makes one plan, one assessment
    // per step attempt and one report.
    for t in ["pilot-resolution", "adoption-maintenance"] {
        let r = row(&json, "plan-solve", t);
        assert_eq!(n(&r["role_calls"]), n(&r["tool_calls"]) + 2, "{r}");
    }
    // A replan adds a replanner call and an assessment for each new step.
    assert!(n(&pe["role_calls"]) > n(&pe["tool_calls"]) + 2, "{pe}");

    // One summary per strategy, adding up its rows.
    let summary = json["summary"].as_array().unwrap();
    assert_eq!(summary.len(), 2);
    for s in summary {
        let name = s["strategy"].as_str().unwrap();
        let mine: Vec<&Value> = json["runs"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["strategy"] == name)
            .collect();
        assert_eq!(n(&s["runs"]), 2);
        assert_eq!(n(&s["closed_loop"]), 2);
        assert_eq!(s["closed_loop_rate"], 1.0);
        for key in ["tool_calls", "role_calls", "replans", "wall_ms"] {
            let total: u64 = mine.iter().map(|r| n(&r[key])).sum();
            assert_eq!(n(&s[key]), total, "{name} {key}");
        }
    }
    let successes = |name: &str| {
        let s = summary.iter().find(|s| s["strategy"] == name).unwrap();
        (n(&s["successes"]), s["success_rate"].as_f64().unwrap())
    };
    assert_eq!(successes("plan-execute"), (2, 1.0));
    assert_eq!(successes("plan-solve"), (1, 0.5));

    // A progress line per run on stderr.
    for i in 1..=4 {
        assert!(out.stderr.contains(&format!("[{i}/4] ")), "{}", out.stderr);
    }
}

#[test]
fn the_table_has_a_row_per_run_and_a_summary_per_strategy() {
    let out = bench(&["--quiet"], "table");
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stderr.is_empty(), "--quiet: {}", out.stderr);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert!(lines[0].starts_with("STRATEGY"), "{}", out.stdout);
    for column in [
        "TASK",
        "SUCCESS",
        "STATUS",
        "ROLE CALLS",
        "MODEL CALLS",
        "TOKENS IN",
        "TOKENS OUT",
        "TOOL CALLS",
        "REPLANS",
        "WALL MS",
    ] {
        assert!(lines[0].contains(column), "{column}: {}", lines[0]);
    }
    let runs: Vec<&&str> = lines[1..5].iter().collect();
    assert!(
        runs.iter().all(|l| l.starts_with("plan-")),
        "{}",
        out.stdout
    );
    assert_eq!(lines[5], "");
    assert!(lines[6].contains("CLOSED LOOP"), "{}", out.stdout);
    assert!(lines[7].starts_with("plan-execute") && lines[7].contains("2/2 100%"));
    assert!(lines[8].starts_with("plan-solve") && lines[8].contains("1/2 50%"));
    assert!(
        out.stdout.contains(
            "failed checks:\n  plan-solve · adoption-maintenance: not cited: index-upkeep\n"
        ),
        "{}",
        out.stdout
    );
}

#[test]
fn csv_has_a_header_and_a_row_per_run() {
    let out = bench(&["--csv", "--quiet"], "csv");
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(
        lines[0],
        "strategy,task,success,status,driver,stop_condition,closed_loop,role_calls,model_calls,input_tokens,output_tokens,tool_calls,replans,wall_ms,failed_checks,route,expected_route,escalated"
    );
    assert_eq!(lines.len(), 5, "{}", out.stdout);
    assert!(lines[1].starts_with("plan-execute,pilot-resolution,true,ok,graph,"));
    assert!(lines[4].starts_with("plan-solve,adoption-maintenance,false,ok,graph-no-replan,"));
    assert!(
        lines[4].ends_with(",not cited: index-upkeep,,plan-execute-batched,false"),
        "{}",
        lines[4]
    );
}

/// Seed 000: the router's routes scored against each task's
/// `expected_route` — both right on the fixture, one wrong when a task
/// expects another route.
#[test]
fn routing_accuracy_is_scored_against_each_tasks_expected_route() {
    let suite = fixture();
    let out = bench_of(&suite, "router", &["--json"], "routing");
    assert_eq!(out.code, 0, "{}", out.stderr);
    let json: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(row(&json, "router", "pilot-resolution")["route"], "react");
    assert_eq!(
        row(&json, "router", "adoption-maintenance")["route"],
        "plan-execute-batched"
    );
    let routing = &json["routing"][0];
    assert_eq!(routing["strategy"], "router");
    assert_eq!((n(&routing["scored"]), n(&routing["correct"])), (2, 2));
    assert_eq!(routing["accuracy"], 1.0);
    assert_eq!(routing["misrouted"], serde_json::json!([]));

    // The same suite expecting the sequential route for the comparison.
    let text = std::fs::read_to_string(&suite).unwrap();
    let notes = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/notes");
    let text = text
        .replace("../../../../../examples/notes", notes.to_str().unwrap())
        .replace(
            "expected_route = \"plan-execute-batched\"",
            "expected_route = \"plan-execute-sequential\"",
        );
    assert!(text.contains("plan-execute-sequential"));
    let dir = Scratch::new("bench", "routing-suite");
    let wrong = dir.path().join("wrong.toml");
    std::fs::write(&wrong, text).unwrap();
    let out = bench_of(&wrong, "router,react", &["--quiet"], "routing-wrong");
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("ROUTING ACCURACY"), "{}", out.stdout);
    assert!(
        out.stdout
            .lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>() == ["router", "2", "1/2", "50%", "0"]),
        "no accuracy line: {}",
        out.stdout
    );
    assert!(
        out.stdout.contains(
            "misrouted: router · adoption-maintenance: expected plan-execute-sequential, routed plan-execute-batched"
        ),
        "{}",
        out.stdout
    );
}

#[test]
fn a_malformed_suite_is_a_usage_error() {
    let scratch = Scratch::new("bench", "malformed");
    let dir = scratch.path();
    let db = scratch.db();
    let cases = [
        ("empty.toml", "", "no tasks"),
        ("syntax.toml", "[[task]\nid = 1", "not a valid suite"),
        (
            "field.toml",
            "[[task]]\nid = \"a\"\ngoal = \"g\"\nnotes = \".\"\nchecks = { required_citation = [\"x\"] }\n",
            "unknown field `required_citation`",
        ),
        (
            "notes.toml",
            "[[task]]\nid = \"a\"\ngoal = \"g\"\nnotes = \"no-such-folder\"\n",
            "task \"a\"",
        ),
    ];
    for (file, text, expected) in cases {
        let path = dir.join(file);
        std::fs::write(&path, text).unwrap();
        let out = stepwise(&["bench", path.to_str().unwrap(), "--quiet"], &db);
        assert_eq!(out.code, 2, "{file}: {}", out.stderr);
        assert!(out.stdout.is_empty(), "{file}: {}", out.stdout);
        let first = out.stderr.lines().next().unwrap_or_default();
        assert!(first.starts_with("error: suite "), "{file}: {}", out.stderr);
        assert!(first.contains(expected), "{file}: {}", out.stderr);
        assert_eq!(
            out.stderr.lines().count(),
            1,
            "{file}: one line: {}",
            out.stderr
        );
    }
    let missing = stepwise(&["bench", dir.join("nope.toml").to_str().unwrap()], &db);
    assert_eq!(missing.code, 2);
    assert!(
        missing.stderr.contains("cannot read suite"),
        "{}",
        missing.stderr
    );
    let bogus = stepwise(
        &[
            "bench",
            fixture().to_str().unwrap(),
            "--strategies",
            "plan-execute,bogus",
        ],
        &db,
    );
    assert_eq!(bogus.code, 2);
    assert!(
        bogus.stderr.contains("unknown strategy"),
        "{}",
        bogus.stderr
    );
    assert!(!db.exists());
}

/// Seed 000's cost argument on the bench (docs/bench.md): a task of three
/// searches decided up front, typed criteria, the scripted model —
/// plan-execute asks the model twice (plan, synthesize), react once per tool
/// call plus its answer.
#[test]
fn with_typed_criteria_plan_execute_costs_two_model_calls_where_react_costs_four() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/bench/two-calls");
    let model = format!("script:{}", dir.join("script.jsonl").display());
    let out = bench_of(
        &dir.join("suite.toml"),
        "plan-execute,react",
        &["--model", &model, "--json", "--quiet"],
        "two-calls",
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let json: Value = serde_json::from_str(&out.stdout).unwrap();
    let plan_execute = row(&json, "plan-execute", "latency-and-cost");
    let react = row(&json, "react", "latency-and-cost");
    for r in [plan_execute, react] {
        assert_eq!(r["success"], true, "{r}");
        assert_eq!(n(&r["tool_calls"]), 3, "{r}");
    }
    assert_eq!(n(&plan_execute["model_calls"]), 2, "{plan_execute}");
    assert_eq!(n(&react["model_calls"]), 4, "{react}");
}

#[test]
fn repeats_measure_how_often_the_same_request_gets_another_plan() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/bench/instability");
    let model = format!("script:{}", dir.join("script.jsonl").display());
    let out = bench_of(
        &dir.join("suite.toml"),
        "plan-execute",
        &["--model", &model, "--repeat", "3", "--json", "--quiet"],
        "instability",
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let json: Value = serde_json::from_str(&out.stdout).unwrap();
    let runs = json["runs"].as_array().unwrap();
    let repeats: Vec<u64> = runs.iter().map(|r| n(&r["repeat"])).collect();
    assert_eq!(repeats, [1, 2, 3]);
    // The second plan rewords one search and adds a step; the third is the first.
    assert!(runs[0].get("plan_changes").is_none(), "{}", runs[0]);
    assert_eq!(n(&runs[1]["plan_changes"]), 2, "{}", runs[1]);
    assert_eq!(n(&runs[2]["plan_changes"]), 0, "{}", runs[2]);
    let unstable = &json["instability"][0];
    assert_eq!(unstable["strategy"], "plan-execute");
    assert_eq!(n(&unstable["compared"]), 2);
    assert_eq!(n(&unstable["changed"]), 1);
    assert_eq!(unstable["rate"], 0.5);
    assert_eq!(unstable["mean_distance"], 1.0);

    // Offline, the same request always gets the same plan.
    let offline = bench(
        &["--repeat", "2", "--json", "--quiet"],
        "instability-offline",
    );
    let json: Value = serde_json::from_str(&offline.stdout).unwrap();
    for s in json["instability"].as_array().unwrap() {
        assert_eq!(n(&s["changed"]), 0, "{s}");
        assert!(n(&s["compared"]) > 0, "{s}");
    }
}
