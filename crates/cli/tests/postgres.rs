//! The CLI on PostgreSQL (`--db postgres://…` / `STEPWISE_DB`), against the
//! test server `$STEPWISE_TEST_PG` (`scripts/test` starts one; without it
//! these tests fail, saying how to get one): `stepwise migrate`, and a run
//! paused for approval, approved and resumed — the same commands, the same
//! output, as on SQLite.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use stepwise_store::postgres::testing::ScratchDb;

mod common;

use common::{Out, Scratch, Stepwise};

fn scratch_db(tag: &str) -> ScratchDb {
    ScratchDb::new(tag).unwrap_or_else(|e| panic!("{e}"))
}

fn notes() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/notes")
}

fn plan() -> Value {
    json!({"steps": [
        {"id": "find", "description": "Find the latency budget", "tool": "search_notes",
         "args": {"query": "latency budget first token"}, "acceptance_criteria": ["a passage about latency"]},
        {"id": "save", "description": "Save the best passage", "tool": "write_file", "depends_on": ["find"],
         "args": {"path": "out/latency.md", "content": "${find.output.results[0].passages[0]}"},
         "acceptance_criteria": ["file written"]}
    ]})
}

/// `stepwise` with `STEPWISE_DB` set to `url`.
fn on(url: &str, args: &[&str]) -> Out {
    Stepwise::new().env("STEPWISE_DB", url).args(args).run()
}

#[test]
fn migrate_creates_the_schema_once_and_other_commands_ask_for_it() {
    let db = scratch_db("cli_migrate");
    let before = on(db.url(), &["runs"]);
    assert_eq!(before.code, 2, "{}", before.stderr);
    assert!(
        before
            .stderr
            .contains("run `stepwise migrate --db postgres://"),
        "{}",
        before.stderr
    );
    let first = Stepwise::new().db(Path::new(db.url())).arg("migrate").run();
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert!(
        first
            .stdout
            .contains("created the schema `stepwise` (version 1)"),
        "{}",
        first.stdout
    );
    let again = on(db.url(), &["migrate"]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(
        again.stdout.contains("up to date (schema version 1)"),
        "{}",
        again.stdout
    );
    let runs = on(db.url(), &["runs"]);
    assert_eq!(runs.code, 0, "{}", runs.stderr);
    assert!(
        runs.stdout.starts_with("no runs yet in postgres://"),
        "{}",
        runs.stdout
    );
}

#[test]
fn a_run_pauses_is_approved_and_resumed_on_postgres_like_on_sqlite() {
    let db = scratch_db("cli_run");
    assert_eq!(on(db.url(), &["migrate"]).code, 0);
    let dir = Scratch::new("postgres", "run");
    let plan_file = dir.path().join("plan.json");
    std::fs::write(&plan_file, plan().to_string()).unwrap();
    let ws = dir.path().join("ws");
    let args = |db: &str| {
        vec![
            "--db".to_owned(),
            db.to_owned(),
            "run".to_owned(),
            "Save the latency budget".to_owned(),
            "--notes".to_owned(),
            notes().display().to_string(),
            "--plan".to_owned(),
            plan_file.display().to_string(),
            "--workspace".to_owned(),
            ws.display().to_string(),
            "--run-id".to_owned(),
            "run_pg_cli".to_owned(),
            "--json".to_owned(),
            "--quiet".to_owned(),
        ]
    };
    let paused = Stepwise::new().args(args(db.url())).run();
    assert_eq!(paused.code, 4, "{}", paused.stderr);
    assert_eq!(paused.json()["status"], "awaiting_approval");
    let approved = on(db.url(), &["approve", "run_pg_cli"]);
    assert_eq!(approved.code, 0, "{}", approved.stderr);
    let resumed = on(db.url(), &["resume", "run_pg_cli", "--json", "--quiet"]);
    assert_eq!(resumed.code, 0, "{}", resumed.stderr);
    let out = resumed.json();
    assert_eq!(out["status"], "ok");
    assert_eq!(out["step_results"]["save"]["output"]["written"], true);
    let ledger = std::fs::read_to_string(ws.join(".stepwise/writes.jsonl")).unwrap();
    assert_eq!(ledger.lines().count(), 1, "{ledger}");

    // The same run on SQLite gives the same output.
    let sqlite = dir.path().join("runs.db");
    let ws_sqlite = dir.path().join("ws-sqlite");
    let mut sqlite_args = args(sqlite.to_str().unwrap());
    let at = sqlite_args
        .iter()
        .position(|a| *a == ws.display().to_string())
        .unwrap();
    sqlite_args[at] = ws_sqlite.display().to_string();
    sqlite_args.extend(["--approve".to_owned(), "auto".to_owned()]);
    let reference = Stepwise::new().args(sqlite_args).run();
    assert_eq!(reference.code, 0, "{}", reference.stderr);
    let reference = reference.json();
    for key in ["status", "knowledge_gaps", "evidence"] {
        assert_eq!(out[key], reference[key], "{key}");
    }
    // The same report, but for who approved the write: a person here,
    // `auto` in the reference.
    let report = |v: &Value| {
        let text = v["final_report"].as_str().unwrap().to_owned();
        match text.split_once("approved by ") {
            Some((head, tail)) => {
                let rest = tail.split_once(';').map_or("", |(_, r)| r);
                format!("{head}approved by …;{rest}")
            }
            None => text,
        }
    };
    assert!(
        out["final_report"]
            .as_str()
            .unwrap()
            .contains("approved by ")
    );
    assert_eq!(report(&out), report(&reference));

    let shown = on(db.url(), &["show", "run_pg_cli", "--json"]);
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    assert_eq!(shown.json()["final_report"], out["final_report"]);
    let runs = on(db.url(), &["runs", "--json"]);
    assert_eq!(runs.json()[0]["run_id"], "run_pg_cli");
    assert_eq!(runs.json()[0]["status"], "ok");
    // Run health reads the same log: one run, ok after its pause and alice's
    // approval, so recovered and not closed-loop.
    let stats = on(db.url(), &["stats", "--json"]).json();
    assert_eq!(stats["all"]["runs"], 1, "{stats}");
    assert_eq!(stats["all"]["recovered"], 1, "{stats}");
    assert_eq!(stats["all"]["closed_loop"], 0, "{stats}");
    // Every event the approve and the resume appended carried their lease's fence.
    let unfenced = db
        .query("SELECT count(*) FROM stepwise.events WHERE fence IS NULL")
        .unwrap();
    assert_eq!(unfenced, vec![vec![Some("0".to_owned())]]);
}

#[test]
fn runs_are_pruned_and_deleted_on_postgres_too() {
    let db = scratch_db("cli_delete");
    assert_eq!(on(db.url(), &["migrate"]).code, 0);
    let dir = Scratch::new("postgres", "delete");
    let plan_file = dir.path().join("plan.json");
    std::fs::write(&plan_file, plan().to_string()).unwrap();
    let notes = notes().display().to_string();
    let plan = plan_file.display().to_string();
    let ws = dir.path().join("ws").display().to_string();
    let paused = on(
        db.url(),
        &[
            "run",
            "Save it",
            "--notes",
            &notes,
            "--plan",
            &plan,
            "--workspace",
            &ws,
            "--run-id",
            "run_pg_del",
            "--quiet",
        ],
    );
    assert_eq!(paused.code, 4, "{}", paused.stderr);
    let dry = on(db.url(), &["runs", "prune", "--older-than", "0s"]);
    assert_eq!(dry.code, 0, "{}", dry.stderr);
    assert!(
        dry.stdout.contains("would delete 1 run: run_pg_del"),
        "{}",
        dry.stdout
    );
    let deleted = on(db.url(), &["runs", "delete", "run_pg_del"]);
    assert_eq!(deleted.code, 0, "{}", deleted.stderr);
    assert_eq!(on(db.url(), &["runs", "--json"]).json(), json!([]));
    let rows = db
        .query("SELECT count(*)::text FROM stepwise.events")
        .unwrap();
    assert_eq!(rows[0][0].as_deref(), Some("0"));
}
