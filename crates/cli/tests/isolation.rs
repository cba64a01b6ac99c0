//! `cargo test` never touches the data of whoever runs it: every test runs
//! the binary through `common::Stepwise`, which gives it a stand-in home and
//! a database of its own and fails the test if anything lands in that home —
//! the default run database first of all.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

mod common;

use common::{Home, Stepwise};

/// The workspace's `crates/` folder.
fn crates() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap()
}

/// Every `.rs` file of the workspace, build output and hidden folders aside.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy();
        if path.is_dir() {
            if !name.starts_with("target") && !name.starts_with('.') {
                sources(&path, out);
            }
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
}

/// Ways to get at the binary other than `common::Stepwise`; spelled in
/// pieces so that this file does not match them itself.
fn bypasses() -> Vec<String> {
    vec![
        ["CARGO_BIN", "_EXE_"].concat(),
        ["target/debug", "/stepwise"].concat(),
        ["target/release", "/stepwise"].concat(),
        ["Command::new(\"", "stepwise\")"].concat(),
        ["cargo", "_bin("].concat(),
    ]
}

#[test]
fn every_test_runs_the_binary_through_the_common_helper() {
    let helper = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/common/mod.rs");
    let mut files = Vec::new();
    sources(crates(), &mut files);
    assert!(files.contains(&helper), "{} not found", helper.display());
    let patterns = bypasses();
    let mut offenders = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        if file == &helper {
            assert_eq!(
                text.matches(patterns[0].as_str()).count(),
                1,
                "the helper builds the command in one place"
            );
            continue;
        }
        for (n, line) in text.lines().enumerate() {
            if patterns.iter().any(|p| line.contains(p.as_str())) {
                offenders.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "these run the stepwise binary without crates/cli/tests/common::Stepwise, so nothing \
         stops them writing into the home (e.g. the default run database) of whoever runs \
         `cargo test`; build the command with `common::Stepwise::new()` instead:\n{}",
        offenders.join("\n")
    );
}

fn notes() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/notes")
}

fn run_args() -> Vec<String> {
    vec![
        "run".into(),
        "What is our latency budget?".into(),
        "--notes".into(),
        notes().display().to_string(),
        "--quiet".into(),
    ]
}

#[test]
#[should_panic(expected = "wrote into its stand-in HOME/XDG folders")]
fn the_helper_fails_a_test_that_writes_the_default_database() {
    // What a test that forgot its database would do: no --db, no STEPWISE_DB.
    let out = Stepwise::new()
        .env_remove("STEPWISE_DB")
        .args(run_args())
        .output();
    unreachable!("the check did not fire: {out:?}");
}

#[test]
#[should_panic(expected = "wrote into its stand-in HOME/XDG folders")]
fn the_helper_fails_a_test_that_writes_anywhere_in_the_home() {
    // A database outside --db and STEPWISE_DB, e.g. in a config folder.
    let home = Arc::new(Home::new());
    let db = home.home().join(".config/stepwise/runs.db");
    let _ = Stepwise::in_home(&home).db(&db).args(run_args()).output();
}

#[test]
fn the_default_database_is_under_xdg_data_home_else_home() {
    let home = Arc::new(Home::new());
    let out = Stepwise::in_home(&home).default_db().args(run_args()).run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(home.data().join("stepwise/stepwise.db").is_file());
    let runs = Stepwise::in_home(&home)
        .default_db()
        .args(["runs", "--json"])
        .run()
        .json();
    assert_eq!(runs.as_array().unwrap().len(), 1, "{runs}");

    let home = Arc::new(Home::new());
    let out = Stepwise::in_home(&home)
        .default_db()
        .env_remove("XDG_DATA_HOME")
        .args(run_args())
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        home.home()
            .join(".local/share/stepwise/stepwise.db")
            .is_file()
    );
    assert!(!home.data().join("stepwise").exists());
}

#[test]
fn by_default_a_command_writes_only_its_own_database() {
    let home = Arc::new(Home::new());
    let out = Stepwise::in_home(&home).args(run_args()).run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        home.db().is_file(),
        "STEPWISE_DB is the stand-in's database"
    );
}
