//! `stepwise` with MCP servers: the official reference servers from npm
//! (filesystem, memory; pinned in crates/mcp/tests/npm) and the SDK-built
//! probe. Tools are listed with their source, class and schemas; a plan
//! reads and writes through them; side effects wait for approval; `isError`
//! is a persistent failure; a killed server is restarted and its step
//! retried; a server that cannot start fails the run before it is recorded;
//! a `kill -9` with a side-effect call in flight is reconciled on resume;
//! and no server process outlives a run, a Ctrl-C or a killed stepwise.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};

mod common;

use common::{Out, Scratch, Stepwise};

/// `crates/mcp/tests/npm`, where `npm ci` installs the servers.
fn npm_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../mcp/tests/npm")
        .canonicalize()
        .unwrap()
}

/// An installed package's script; a missing install fails the test with
/// the command that fixes it.
fn installed(package: &str, script: &str) -> String {
    let path = npm_dir().join("node_modules").join(package).join(script);
    assert!(
        path.is_file(),
        "{package} is not installed ({} is missing). The MCP tests run against the official \
         reference servers from npm; install the pinned versions with\n\n    \
         npm ci --prefix crates/mcp/tests/npm\n\n(`scripts/test` does it before `cargo test`).",
        path.display()
    );
    path.display().to_string()
}

fn notes() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/notes")
        .display()
        .to_string()
}

/// A test's folder: `stepwise.toml`, the filesystem server's `data/`, the
/// memory graph, the probe's ledger and the run database.
struct Dir(Scratch);

impl Dir {
    fn new(name: &str) -> Self {
        let dir = Self(Scratch::new("mcp", name));
        std::fs::create_dir_all(dir.data()).unwrap();
        dir
    }
    fn path(&self) -> &Path {
        self.0.path()
    }
    fn data(&self) -> PathBuf {
        self.path().join("data")
    }
    fn ledger(&self) -> PathBuf {
        self.path().join("ledger.txt")
    }
    fn ledger_lines(&self) -> usize {
        std::fs::read_to_string(self.ledger()).map_or(0, |t| t.lines().count())
    }
    /// `stepwise.toml` with the filesystem, memory and probe servers, and `extra`.
    fn config(&self, extra: &str) {
        let fs = installed("@modelcontextprotocol/server-filesystem", "dist/index.js");
        let memory = installed("@modelcontextprotocol/server-memory", "dist/index.js");
        installed("@modelcontextprotocol/sdk", "package.json");
        let probe = npm_dir().join("servers/probe.mjs");
        let text = format!(
            "[mcp.servers.fs]\ncommand = \"node\"\nargs = [{fs:?}, \"./data\"]\n\n\
             [mcp.servers.memory]\ncommand = \"node\"\nargs = [{memory:?}]\n\
             env = {{ MEMORY_FILE_PATH = {graph:?} }}\n\n\
             [mcp.servers.probe]\ncommand = \"node\"\nargs = [{probe:?}, {tag:?}]\n\
             env = {{ PROBE_LEDGER = {ledger:?} }}\n{extra}",
            graph = self.path().join("graph.jsonl").display().to_string(),
            probe = probe.display().to_string(),
            tag = self.path().display().to_string(),
            ledger = self.ledger().display().to_string(),
        );
        std::fs::write(self.path().join("stepwise.toml"), text).unwrap();
    }
    fn plan(&self, steps: Value) -> String {
        let path = self.path().join("plan.json");
        std::fs::write(&path, json!({ "steps": steps }).to_string()).unwrap();
        path.display().to_string()
    }
    fn stepwise(&self) -> Stepwise {
        Stepwise::new().current_dir(self.path()).db(&self.0.db())
    }
    fn run(&self, args: &[&str]) -> Out {
        self.stepwise().args(args).run()
    }
    /// `run GOAL --notes … --plan plan.json --run-id ID --json --quiet`, then `args`.
    fn run_plan(&self, id: &str, args: &[&str]) -> Out {
        let plan = self.path().join("plan.json").display().to_string();
        let notes = notes();
        let mut all = vec![
            "run", GOAL, "--notes", &notes, "--plan", &plan, "--run-id", id, "--json", "--quiet",
        ];
        all.extend_from_slice(args);
        self.run(&all)
    }
    /// Live processes that mention this folder (in their command line or
    /// environment): the servers of this test, and nothing else's.
    fn processes(&self) -> Vec<(u32, String)> {
        let needle = self.path().display().to_string();
        let mut out = Vec::new();
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            if !common_alive(pid) {
                continue;
            }
            let read = |f: &str| {
                std::fs::read(format!("/proc/{pid}/{f}"))
                    .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
                    .unwrap_or_default()
            };
            let cmdline = read("cmdline");
            if cmdline.contains(&needle) || read("environ").contains(&needle) {
                out.push((pid, cmdline));
            }
        }
        out
    }
    /// No process of this test is left, within a few seconds.
    fn assert_no_orphans(&self, after: &str) {
        let deadline = std::time::Instant::now() + Duration::from_secs(8);
        while std::time::Instant::now() < deadline && !self.processes().is_empty() {
            std::thread::sleep(Duration::from_millis(100));
        }
        let left = self.processes();
        assert!(left.is_empty(), "left running after {after}: {left:#?}");
    }
}

fn common_alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z'))
    })
}

fn events<'a>(v: &'a Value, kind: &str) -> Vec<&'a Value> {
    v["execution_history"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == kind)
        .collect()
}

/// What every run here is for: the notes answer it (the `find` step), so
/// the offline report has evidence to cite and a run that did everything
/// ends `ok`.
const GOAL: &str = "Save the latency budget";

/// A notes search that finds the latency budget.
fn find() -> Value {
    json!({"id": "find", "description": "Find the latency budget", "tool": "search_notes",
           "args": {"query": "latency budget first token"},
           "acceptance_criteria": ["a passage about latency"]})
}

fn step(id: &str, tool: &str, args: Value, after: &[&str]) -> Value {
    json!({"id": id, "description": format!("Do {id}"), "tool": tool, "args": args,
           "depends_on": after, "acceptance_criteria": ["it worked"]})
}

#[test]
fn tools_lists_every_mcp_tool_with_its_source_side_effect_class_and_schemas() {
    let dir = Dir::new("tools");
    dir.config("");
    let table = dir.run(&["tools"]);
    assert_eq!(table.code, 0, "{}", table.stderr);
    let line = |name: &str| {
        table
            .stdout
            .lines()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("{name} not listed:\n{}", table.stdout))
            .to_owned()
    };
    assert!(line("search_notes").contains("built-in"));
    let read = line("fs.read_text_file");
    assert!(
        read.contains("mcp:fs") && read.contains("read-only"),
        "{read}"
    );
    let write = line("fs.write_file");
    assert!(
        write.contains("side effect, destructive, idempotent"),
        "{write}"
    );
    let create = line("memory.create_entities");
    assert!(
        create.contains("mcp:memory") && create.contains("side effect  "),
        "{create}"
    );
    assert!(line("probe.append").contains("mcp:probe"));

    let json = dir.run(&["tools", "--json"]).json();
    let tools = json.as_array().unwrap();
    let find = |name: &str| tools.iter().find(|t| t["name"] == name).unwrap();
    let read = find("fs.read_text_file");
    assert_eq!(read["source"], "mcp:fs");
    assert_eq!(read["effect"], "read-only");
    assert_eq!(read["side_effect"], false);
    assert_eq!(read["args_schema"]["required"], json!(["path"]));
    assert_eq!(
        read["output_schema"]["properties"]["content"]["type"],
        "string"
    );
    assert_eq!(read["mcp"]["hints"]["read_only"], true);
    assert_eq!(read["mcp"]["tool"], "read_text_file");
    assert_eq!(read["timeout_ms"], 60_000);
    assert_eq!(find("search_notes")["source"], "built-in");
    // Its stderr is nowhere in the listing.
    assert!(!table.stdout.contains("Secure MCP Filesystem Server"));
    dir.assert_no_orphans("stepwise tools");
}

#[test]
fn a_plan_reads_and_writes_through_the_reference_servers_and_side_effects_wait_for_approval() {
    let dir = Dir::new("plan");
    dir.config("[mcp.servers.fs.tools.write_file]\ntimeout_ms = 20000\n");
    std::fs::write(
        dir.data().join("in.txt"),
        "the latency budget is 1.5 seconds",
    )
    .unwrap();
    dir.plan(json!([
        find(),
        step("read", "fs.read_text_file", json!({"path": "in.txt"}), &[]),
        step("save", "fs.write_file", json!({"path": "out.txt", "content": "${read.output.content}"}), &["read"]),
        step("remember", "memory.create_entities",
             json!({"entities": [{"name": "out.txt", "entityType": "file", "observations": ["a copy of in.txt"]}]}), &["save"]),
    ]));
    let first = dir.run_plan("run_plan", &[]);
    assert_eq!(
        first.code, 4,
        "awaiting approval: {}\n{}",
        first.stderr, first.stdout
    );
    let v = first.json();
    assert_eq!(v["status"], "awaiting_approval");
    assert_eq!(
        v["step_results"]["read"]["output"]["content"],
        "the latency budget is 1.5 seconds"
    );
    assert!(
        !dir.data().join("out.txt").exists(),
        "nothing written without an approval"
    );
    // fs.write_file is destructive (destructiveHint): whoever approves later
    // is told so, not only an `--approve ask` prompt.
    let asked = events(&v, "approval_requested");
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0]["destructive"], true, "{}", asked[0]);
    let shown = dir.run(&["show", "run_plan"]);
    assert!(
        shown
            .stdout
            .contains("step save (fs.write_file, destructive) {"),
        "{}",
        shown.stdout
    );
    dir.assert_no_orphans("a run that paused for approval");

    for _ in 0..2 {
        let approved = dir.run(&["approve", "run_plan"]);
        assert_eq!(approved.code, 0, "{}", approved.stderr);
        let resumed = dir.run(&["resume", "run_plan", "--json", "--quiet"]);
        if resumed.code == 0 {
            break;
        }
        assert_eq!(resumed.code, 4, "{}", resumed.stderr);
    }
    let state = dir.run(&["show", "run_plan", "--json"]).json();
    assert_eq!(state["status"], "ok", "{}", state["blocked_reason"]);
    assert_eq!(
        std::fs::read_to_string(dir.data().join("out.txt")).unwrap(),
        "the latency budget is 1.5 seconds"
    );
    let graph = std::fs::read_to_string(dir.path().join("graph.jsonl")).unwrap();
    assert!(graph.contains("a copy of in.txt"), "{graph}");
    // One approval per side-effect step, each bound to its arguments.
    let granted = events(&state, "approval_granted");
    assert_eq!(granted.len(), 2, "{granted:?}");
    // The servers' stderr went to the run's log, not the brief.
    let log = std::fs::read_to_string(dir.path().join("mcp-logs/run_plan.log")).unwrap();
    assert!(
        log.contains("fs stderr: Secure MCP Filesystem Server running on stdio"),
        "{log}"
    );
    assert!(
        !state["final_report"].to_string().contains("Secure MCP"),
        "{}",
        state["final_report"]
    );
    dir.assert_no_orphans("the resumed run");
}

#[test]
fn a_run_that_only_reads_and_acts_through_mcp_ends_ok_with_the_action_in_the_report() {
    // Seed 000's kind of run: no notes search at all, read steps and one
    // side effect a person approves. Every step met its criteria, so it is
    // `ok`, and the report says what was done, with what, approved by whom.
    let dir = Dir::new("only-acts");
    dir.config("");
    std::fs::write(dir.data().join("in.txt"), "order 3 widgets").unwrap();
    dir.plan(json!([
        step("list", "fs.list_directory", json!({"path": "."}), &[]),
        step("read", "fs.read_text_file", json!({"path": "in.txt"}), &[]),
        step(
            "save",
            "fs.write_file",
            json!({"path": "out.txt", "content": "${read.output.content}"}),
            &["read", "list"]
        ),
    ]));
    let first = dir.run_plan("run_acts", &[]);
    assert_eq!(first.code, 4, "{}\n{}", first.stderr, first.stdout);
    let approved = dir
        .stepwise()
        .args(["approve", "run_acts"])
        .envs(&[("USER", "dana")])
        .run();
    assert_eq!(approved.code, 0, "{}", approved.stderr);
    let resumed = dir.run(&["resume", "run_acts", "--json", "--quiet"]);
    assert_eq!(resumed.code, 0, "{}\n{}", resumed.stderr, resumed.stdout);
    let state = resumed.json();
    assert_eq!(state["status"], "ok", "{}", state["blocked_reason"]);
    let report = state["final_report"].as_str().unwrap();
    let action = report
        .lines()
        .find(|l| l.starts_with("- Do save: `fs.write_file`"))
        .unwrap_or_else(|| panic!("no action line: {report}"));
    assert!(action.contains("content “order 3 widgets”"), "{action}");
    assert!(action.contains("approved by dana"), "{action}");
    assert!(action.ends_with("[save]"), "{action}");
    // The read-only steps' results are cited as tool results, verbatim.
    assert!(report.contains("## Tool results"), "{report}");
    let evidence = state["evidence"].as_array().unwrap();
    assert!(
        evidence
            .iter()
            .any(|e| e["step"] == "read" && e["quote"] == "order 3 widgets"),
        "{evidence:?}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.data().join("out.txt")).unwrap(),
        "order 3 widgets"
    );
    dir.assert_no_orphans("the resumed run");
}

#[test]
fn arguments_that_do_not_match_an_input_schema_stop_the_plan_before_any_call() {
    let dir = Dir::new("schema");
    dir.config("");
    dir.plan(json!([
        step("echo", "probe.echo", json!({"text": 42}), &[]),
        step("read", "fs.read_text_file", json!({"path": "in.txt"}), &[]),
        step(
            "use",
            "probe.echo",
            json!({"text": "${read.output.text}"}),
            &["read"]
        ),
    ]));
    let out = dir.run_plan("run_schema", &["--approve", "auto"]);
    assert_eq!(out.code, 3, "needs review: {}", out.stderr);
    let v = out.json();
    let reason = v["blocked_reason"].as_str().unwrap();
    assert!(reason.contains("args_schema_mismatch"), "{reason}");
    assert!(
        reason.contains("output_schema_mismatch") && reason.contains("${read.output.text}"),
        "{reason}"
    );
    assert!(events(&v, "step_started").is_empty(), "nothing ran");
    let log = std::fs::read_to_string(dir.path().join("mcp-logs/run_schema.log")).unwrap();
    assert!(
        !log.contains("probe: echo"),
        "no call reached the server: {log}"
    );
    dir.assert_no_orphans("a run stopped by the validator");
}

#[test]
fn is_error_is_a_persistent_failure_with_the_servers_message() {
    let dir = Dir::new("iserror");
    dir.config("");
    dir.plan(json!([step(
        "read",
        "fs.read_text_file",
        json!({"path": "missing.txt"}),
        &[]
    )]));
    let out = dir.run_plan("run_iserror", &[]);
    assert_eq!(out.code, 3, "{}", out.stderr);
    let v = out.json();
    let failed = events(&v, "step_failed");
    assert_eq!(failed.len(), 1, "not retried: {failed:?}");
    assert_eq!(failed[0]["failure"]["class"], "persistent");
    let message = failed[0]["failure"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("fs.read_text_file failed: ENOENT"),
        "{message}"
    );
    assert!(events(&v, "step_retrying").is_empty());
    dir.assert_no_orphans("a failed run");
}

#[test]
fn a_server_that_cannot_start_fails_the_run_before_anything_is_recorded() {
    let dir = Dir::new("nostart");
    dir.config("");
    let probe = npm_dir().join("servers/probe.mjs").display().to_string();
    let flag = format!("broken=node {probe} --fail-start");
    dir.plan(json!([step(
        "echo",
        "probe.echo",
        json!({"text": "x"}),
        &[]
    )]));
    let out = dir.run_plan("run_nostart", &["--mcp", &flag]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("mcp server \"broken\""),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("--fail-start"),
        "the command: {}",
        out.stderr
    );
    assert!(
        out.stderr
            .contains("cannot open the database /nowhere/probe.db"),
        "its stderr: {}",
        out.stderr
    );
    let runs = dir.run(&["runs", "--json"]);
    assert_eq!(runs.json(), json!([]), "nothing recorded");
    dir.assert_no_orphans("a run whose server could not start");
    // A command that does not exist says so.
    let out = dir.run_plan(
        "run_nostart2",
        &["--mcp", "ghost=stepwise-no-such-server --stdio"],
    );
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("`stepwise-no-such-server --stdio`") && out.stderr.contains("on PATH"),
        "{}",
        out.stderr
    );
}

/// Starts a run with progress on stderr and waits for `line`; returns the
/// running process and the lines read so far.
fn start_until(
    dir: &Dir,
    id: &str,
    extra: &[&str],
    env: &[(&str, &str)],
    line: &str,
) -> (
    common::Running,
    Vec<String>,
    std::io::Lines<BufReader<std::process::ChildStderr>>,
) {
    let plan = dir.path().join("plan.json").display().to_string();
    let notes = notes();
    let mut args = vec![
        "run", GOAL, "--notes", &notes, "--plan", &plan, "--run-id", id, "--json",
    ];
    args.extend_from_slice(extra);
    let mut child = dir
        .stepwise()
        .args(&args)
        .envs(env)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn();
    let mut lines = BufReader::new(child.take_stderr().unwrap()).lines();
    let mut seen = Vec::new();
    for l in lines.by_ref() {
        let l = l.unwrap();
        let hit = l.starts_with(line);
        seen.push(l);
        if hit {
            return (child, seen, lines);
        }
    }
    panic!("never printed {line:?}:\n{}", seen.join("\n"));
}

/// The probe's process for this test.
fn probe_pid(dir: &Dir) -> u32 {
    let found: Vec<u32> = dir
        .processes()
        .into_iter()
        // The server itself, not the guard it runs under.
        .filter(|(_, cmd)| cmd.contains("probe.mjs") && !cmd.contains("mcp-guard"))
        .map(|(pid, _)| pid)
        .collect();
    assert_eq!(found.len(), 1, "{:?}", dir.processes());
    found[0]
}

fn kill(signal: &str, pid: u32) {
    let status = std::process::Command::new("kill")
        .args([signal, &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn a_server_killed_mid_call_is_restarted_and_the_step_retried() {
    let dir = Dir::new("restart");
    dir.config("");
    dir.plan(json!([
        find(),
        step(
            "slow",
            "probe.slow",
            json!({"text": "made it", "ms": 1500}),
            &[]
        )
    ]));
    let (child, _, rest) = start_until(&dir, "run_restart", &[], &[], "[slow] running");
    std::thread::sleep(Duration::from_millis(400));
    let first = probe_pid(&dir);
    kill("-9", first);
    let _ = rest.count();
    let status = child.wait();
    let v = dir.run(&["show", "run_restart", "--json"]).json();
    assert!(status.success(), "{status:?} {}", v["blocked_reason"]);
    let v = dir.run(&["show", "run_restart", "--json"]).json();
    assert_eq!(v["status"], "ok");
    let failed = events(&v, "step_failed");
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!(failed[0]["failure"]["class"], "transient");
    assert_eq!(events(&v, "step_retrying").len(), 1);
    assert_eq!(v["step_results"]["slow"]["output"]["text"], "made it");
    let log = std::fs::read_to_string(dir.path().join("mcp-logs/run_restart.log")).unwrap();
    assert!(
        log.contains("probe client: started") && log.contains("start 2"),
        "{log}"
    );
    dir.assert_no_orphans("a run whose server was restarted");
}

#[test]
fn kill_9_with_a_side_effect_call_in_flight_is_reconciled_on_resume() {
    // Not idempotent: the resume stops for review, the call is not repeated.
    let dir = Dir::new("kill9");
    dir.config("");
    dir.plan(json!([
        find(),
        step("add", "probe.append", json!({"line": "once"}), &[])
    ]));
    let delay = [("STEPWISE_TOOL_DELAY_MS", "1500")];
    let (mut child, _, _rest) = start_until(
        &dir,
        "run_kill",
        &["--approve", "auto"],
        &delay,
        "[add] running",
    );
    child.kill();
    let _ = child.wait();
    // Its servers see their stdin close and exit: no orphans.
    dir.assert_no_orphans("kill -9 of stepwise");
    let out = dir.run(&[
        "resume",
        "run_kill",
        "--approve",
        "auto",
        "--json",
        "--quiet",
    ]);
    assert_eq!(out.code, 3, "{}", out.stderr);
    let v = out.json();
    assert!(
        v["blocked_reason"]
            .as_str()
            .unwrap()
            .contains("outcome unknown"),
        "{}",
        v["blocked_reason"]
    );
    // The kill came before the call left (the delay is before it): it was
    // not made, and the resume did not make it blindly either.
    assert_eq!(dir.ledger_lines(), 0);
    dir.assert_no_orphans("the resume");

    // Declared idempotent in the config: the resume runs it again.
    let dir = Dir::new("kill9-idem");
    dir.config("[mcp.servers.probe.tools.append]\nidempotent = true\n");
    dir.plan(json!([
        find(),
        step("add", "probe.append", json!({"line": "once"}), &[])
    ]));
    let (mut child, _, _rest) = start_until(
        &dir,
        "run_kill2",
        &["--approve", "auto"],
        &delay,
        "[add] running",
    );
    child.kill();
    let _ = child.wait();
    dir.assert_no_orphans("kill -9 of stepwise");
    let out = dir.run(&[
        "resume",
        "run_kill2",
        "--approve",
        "auto",
        "--json",
        "--quiet",
    ]);
    assert_eq!(
        out.code,
        0,
        "{} {}",
        out.stderr,
        out.json()["blocked_reason"]
    );
    let v = out.json();
    assert_eq!(v["step_results"]["add"]["output"]["line"], "once");
    assert_eq!(
        dir.ledger_lines(),
        1,
        "applied once (it never ran before the kill)"
    );
    dir.assert_no_orphans("the resume");
}

#[test]
fn ctrl_c_stops_the_servers_and_the_run_resumes() {
    let dir = Dir::new("ctrlc");
    dir.config("");
    dir.plan(json!([
        find(),
        step(
            "slow",
            "probe.slow",
            json!({"text": "done", "ms": 3000}),
            &[]
        ),
        step("read", "fs.list_allowed_directories", json!({}), &["slow"]),
    ]));
    let (child, _, rest) = start_until(&dir, "run_ctrlc", &[], &[], "[slow] running");
    kill("-INT", child.id());
    let tail: Vec<String> = rest.map_while(Result::ok).collect();
    let status = child.wait();
    assert_eq!(status.code(), Some(130), "{status:?}: {tail:?}");
    assert!(
        tail.iter().any(|l| l.contains("stepwise resume run_ctrlc")),
        "{tail:?}"
    );
    dir.assert_no_orphans("Ctrl-C");
    let out = dir.run(&["resume", "run_ctrlc", "--json", "--quiet"]);
    assert_eq!(
        out.code,
        0,
        "{} {}",
        out.stderr,
        out.json()["blocked_reason"]
    );
    assert_eq!(out.json()["step_results"]["slow"]["output"]["text"], "done");
    dir.assert_no_orphans("the resume");
}

#[test]
fn plan_validate_checks_against_the_mcp_servers_tools() {
    let dir = Dir::new("validate");
    dir.config("");
    dir.plan(json!([
        step("read", "fs.read_text_file", json!({"path": "in.txt"}), &[]),
        step(
            "save",
            "fs.write_file",
            json!({"path": "out.txt", "content": "${read.output.content}"}),
            &["read"]
        ),
    ]));
    let ok = dir.run(&["plan", "validate", "plan.json"]);
    assert_eq!(ok.code, 0, "{}{}", ok.stdout, ok.stderr);
    assert!(ok.stdout.contains("valid plan, 2 steps"), "{}", ok.stdout);
    dir.plan(json!([
        step("read", "fs.read_text_file", json!({"path": 7}), &[]),
        step(
            "save",
            "fs.write_file",
            json!({"path": "out.txt", "content": "${read.output.text}"}),
            &["read"]
        ),
        step("mem", "memory.no_such_tool", json!({}), &[]),
    ]));
    let bad = dir.run(&["plan", "validate", "plan.json", "--json"]);
    assert_eq!(bad.code, 1, "{}", bad.stderr);
    let mut codes: Vec<String> = bad
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["code"].as_str().unwrap().to_owned())
        .collect();
    codes.sort();
    assert_eq!(
        codes,
        [
            "args_schema_mismatch",
            "output_schema_mismatch",
            "unknown_tool"
        ]
    );
    dir.assert_no_orphans("plan validate");
}

/// A worker frozen (SIGSTOP) with a side-effect call in flight, past its
/// lease, while another worker takes the run over: when it wakes, the call
/// is not made. The probe's ledger counts the calls that reached the
/// server. (Two guards meet here: the woken worker's heartbeat stops a run
/// it lost, and the lease is checked right before a side effect leaves —
/// which holds when the heartbeat is late or cannot reach the database;
/// `guard::tests` and the store's `a_fenced_log_refuses_…` test it alone.)
#[test]
fn a_worker_frozen_past_its_lease_does_not_make_its_side_effect_call() {
    use stepwise_store::postgres::testing::ScratchDb;
    let db = ScratchDb::new("mcp-frozen").unwrap_or_else(|e| panic!("{e}"));
    let dir = Dir::new("frozen");
    dir.config("");
    let pg = |s: Stepwise| s.current_dir(dir.path()).env("STEPWISE_DB", db.url());
    let migrated = pg(Stepwise::new()).arg("migrate").run();
    assert_eq!(migrated.code, 0, "{}", migrated.stderr);
    let plan = dir.plan(json!([
        find(),
        step("add", "probe.append", json!({"line": "late"}), &["find"])
    ]));
    let notes = notes();
    let queued = pg(Stepwise::new())
        .args([
            "run",
            GOAL,
            "--notes",
            &notes,
            "--plan",
            &plan,
            "--run-id",
            "run_frozen",
            "--detach",
            "--approve",
            "auto",
            "--quiet",
        ])
        .run();
    assert_eq!(queued.code, 0, "{}", queued.stderr);
    let one = |sql: &str| db.query(sql).unwrap()[0][0].clone().unwrap_or_default();
    let wait = |what: &str, sql: &str| {
        let until = std::time::Instant::now() + Duration::from_secs(60);
        while one(sql) != "1" {
            assert!(std::time::Instant::now() < until, "no {what} within 60 s");
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    let worker = |delay: &str| {
        pg(Stepwise::new())
            .env("STEPWISE_TOOL_DELAY_MS", delay)
            .args(["worker", "--lease-ms", "1500", "--poll-ms", "50", "--quiet"])
            .stderr(Stdio::null())
            .spawn()
    };
    let mut frozen = worker("3000");
    // The call is on record as begun, and in flight (its delay).
    wait(
        "side-effect call begun",
        "SELECT count(*)::text FROM stepwise.idempotency WHERE run_id = 'run_frozen' AND step = 'add'",
    );
    let stop = |sig: &str| {
        let status = std::process::Command::new("kill")
            .args([sig, &frozen.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    };
    stop("-STOP");
    // Past its lease, another worker takes the run over: the call may
    // have happened, so it stops for a person.
    std::thread::sleep(Duration::from_millis(2000));
    let mut taker = worker("0");
    wait(
        "takeover",
        "SELECT count(*)::text FROM stepwise.runs WHERE run_id = 'run_frozen' AND status = 'needs_review'",
    );
    stop("-CONT");
    // Its delay is over at once; give it time to make the call, if it would.
    std::thread::sleep(Duration::from_millis(3000));
    frozen.kill();
    taker.kill();
    assert_eq!(dir.ledger_lines(), 0, "the frozen worker made its call");
}

/// A server that does not exit when its stdin closes is still ended when
/// the `stepwise` process that started it is killed with SIGKILL (which
/// leaves it no chance to stop its servers): each stdio server runs under
/// `stepwise mcp-guard`, which ends it once its starter is gone.
#[test]
fn a_server_that_lingers_is_ended_when_its_starter_is_killed() {
    let dir = Dir::new("linger");
    let probe = npm_dir().join("servers/probe.mjs").display().to_string();
    dir.config(&format!(
        "\n[mcp.servers.linger]\ncommand = \"node\"\nargs = [{probe:?}, {tag:?}, \"--linger\"]\n",
        tag = dir.path().display().to_string()
    ));
    dir.plan(json!([
        find(),
        step("echo", "linger.echo", json!({"text": "hi"}), &["find"])
    ]));
    let delay = [("STEPWISE_TOOL_DELAY_MS", "3000")];
    let (mut child, _, _rest) = start_until(&dir, "run_linger", &[], &delay, "[echo] running");
    // The lingering server, under its guard.
    let lingering: Vec<(u32, String)> = dir
        .processes()
        .into_iter()
        .filter(|(_, cmd)| cmd.contains("--linger"))
        .collect();
    assert!(
        lingering.iter().any(|(_, cmd)| cmd.contains("mcp-guard")),
        "{lingering:#?}"
    );
    child.kill();
    let _ = child.wait();
    dir.assert_no_orphans("kill -9 of stepwise with a server that lingers");
}

/// A worker starts each configured MCP server once and shares it across
/// the runs it works on: four runs through one worker (two at a time) see
/// one probe process, not one per run; it stops with the worker.
#[test]
fn a_worker_shares_its_mcp_servers_across_its_runs() {
    use stepwise_store::postgres::testing::ScratchDb;
    let db = ScratchDb::new("mcp-shared").unwrap_or_else(|e| panic!("{e}"));
    let dir = Dir::new("shared");
    dir.config("");
    let pg = |s: Stepwise| s.current_dir(dir.path()).env("STEPWISE_DB", db.url());
    assert_eq!(pg(Stepwise::new()).arg("migrate").run().code, 0);
    let plan = dir.plan(json!([
        find(),
        step("echo", "probe.echo", json!({"text": "hi"}), &["find"])
    ]));
    let notes = notes();
    for i in 0..4 {
        let id = format!("run_shared_{i}");
        let queued = pg(Stepwise::new())
            .args([
                "run", GOAL, "--notes", &notes, "--plan", &plan, "--run-id", &id, "--detach",
                "--quiet",
            ])
            .run();
        assert_eq!(queued.code, 0, "{}", queued.stderr);
    }
    let worker = pg(Stepwise::new())
        .env("STEPWISE_TOOL_DELAY_MS", "300")
        .args([
            "worker",
            "--concurrency",
            "2",
            "--poll-ms",
            "50",
            "--quiet",
            "--drain",
        ])
        .stderr(Stdio::null())
        .spawn();
    let mut seen = std::collections::BTreeSet::new();
    let until = std::time::Instant::now() + Duration::from_secs(60);
    let done = || {
        db.query("SELECT count(*)::text FROM stepwise.runs WHERE run_id LIKE 'run_shared_%' AND status = 'ok'")
            .unwrap()[0][0]
            .clone()
            .unwrap_or_default()
            == "4"
    };
    while !done() {
        assert!(
            std::time::Instant::now() < until,
            "the runs did not finish within 60 s"
        );
        seen.extend(
            dir.processes()
                .into_iter()
                .filter(|(_, cmd)| cmd.contains("probe.mjs") && !cmd.contains("mcp-guard"))
                .map(|(pid, _)| pid),
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(seen.len(), 1, "one probe for four runs: {seen:?}");
    let _ = worker.wait();
    dir.assert_no_orphans("the worker drained and stopped");
}
