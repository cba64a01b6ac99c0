//! Seed 000's MINERVA scenarios, end to end, against the example MCP
//! server in examples/minerva (Rust, on rmcp's server side) over stdio and
//! over streamable HTTP, with the scripted models shipped beside it:
//!
//! - scenario 1 (code/admissions.sql): one plan of batch tool steps with
//!   typed criteria, so exactly 2 model calls (plan + synthesize) and 4
//!   tool calls, and a table in the report;
//! - scenario 2 (code/discharges.py, one column written `pat_idnt_no`):
//!   the search leaves it unmatched, the engine's check fails, one replan
//!   that saw the steps already run adds lookup_abbreviation and a second
//!   search for the abbreviation alone — the first search is not repeated —
//!   so 4 model calls (plan, replan, the assessor on the second search,
//!   synthesize), 6 tool calls and `replan_count` 1.
//!
//! The server's calls are counted from its call log (`MINERVA_CALL_LOG`),
//! the model's from `usage.llm_calls` and the `model_called` events. The
//! server binary is built by the first test that needs it (`cargo build -p
//! minerva-server`: it is a workspace member, not a default one).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;

use serde_json::{Value, json};

mod common;

use common::{Out, Scratch, Stepwise};

/// The repository.
fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// `examples/minerva`.
fn example() -> PathBuf {
    workspace().join("examples/minerva")
}

/// `<target>/<profile>`, the folder this test binary was built into
/// (`<target>/<profile>/deps/minerva-…`).
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent()
        .and_then(Path::parent)
        .unwrap_or_else(|| panic!("no profile folder above {}", exe.display()))
        .to_owned()
}

/// The cargo running these tests.
fn cargo() -> PathBuf {
    std::env::var_os("CARGO")
        .unwrap_or_else(|| env!("CARGO").into())
        .into()
}

/// The `minerva-server` binary, built once per test process into this
/// test's own target folder and profile (fresh in well under a second when
/// `cargo test --workspace` or an earlier test built it already).
fn server_binary() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let dir = profile_dir();
        let target = dir.parent().unwrap();
        let mut build = Command::new(cargo());
        build
            .current_dir(workspace())
            .args([
                "build",
                "--quiet",
                "--package",
                "minerva-server",
                "--bin",
                "minerva-server",
            ])
            .arg("--target-dir")
            .arg(target)
            .env_remove("CARGO_TARGET_DIR");
        match dir.file_name().and_then(|n| n.to_str()) {
            Some("debug") => {}
            Some("release") => {
                build.arg("--release");
            }
            Some(profile) => {
                build.args(["--profile", profile]);
            }
            None => panic!("no profile in {}", dir.display()),
        }
        let out = build.output().unwrap();
        assert!(
            out.status.success(),
            "cargo build -p minerva-server failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let bin = dir.join(format!("minerva-server{}", std::env::consts::EXE_SUFFIX));
        assert!(bin.is_file(), "{} was not built", bin.display());
        bin
    })
}

/// A request the way the README writes it: the goal, then the code.
fn goal(code: &str) -> String {
    let text = std::fs::read_to_string(example().join("code").join(code)).unwrap();
    format!(
        "Standardise every column in this code and give each column's domain group and index candidates: {text}"
    )
}

const SCENARIO_1: (&str, &str) = ("admissions.sql", "scenario-1.json");
const SCENARIO_2: (&str, &str) = ("discharges.py", "scenario-2.json");

/// The run's arguments: the goal, the example's notes and scripted model.
fn run_args(scenario: (&str, &str), json: bool) -> Vec<String> {
    let mut args = vec![
        "run".to_owned(),
        goal(scenario.0),
        "--notes".to_owned(),
        example().join("notes").display().to_string(),
        "--model".to_owned(),
        format!(
            "script:{}",
            example().join("scripted").join(scenario.1).display()
        ),
    ];
    if json {
        args.extend(["--json".to_owned(), "--quiet".to_owned()]);
    }
    args
}

/// How the test reaches the server.
#[derive(Debug, Clone, Copy)]
enum Transport {
    Stdio,
    Http,
}

/// `minerva-server --http --port 0`, killed when dropped.
struct HttpServer {
    child: Child,
    url: String,
}

impl HttpServer {
    fn start(call_log: &Path) -> Self {
        let mut child = Command::new(server_binary())
            .args(["--http", "--port", "0", "--call-log"])
            .arg(call_log)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = line.trim().to_owned();
        assert!(
            url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"),
            "the server printed {url:?}, not its URL"
        );
        Self { child, url }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One scenario run in a folder of its own: its `stepwise.toml` naming the
/// server (`minerva`, over stdio or HTTP), the server's call log, the run
/// database.
struct Scenario {
    dir: Scratch,
    _http: Option<HttpServer>,
}

impl Scenario {
    fn new(name: &str, transport: Transport) -> Self {
        let dir = Scratch::new("minerva", name);
        let log = dir.path().join("calls.jsonl");
        let (config, http) = match transport {
            Transport::Stdio => (
                format!(
                    "[mcp.servers.minerva]\ncommand = {:?}\nargs = [\"--stdio\"]\n\
                     env = {{ MINERVA_CALL_LOG = {:?} }}\n",
                    server_binary().display().to_string(),
                    log.display().to_string()
                ),
                None,
            ),
            Transport::Http => {
                let server = HttpServer::start(&log);
                (
                    format!("[mcp.servers.minerva]\nurl = {:?}\n", server.url),
                    Some(server),
                )
            }
        };
        std::fs::write(dir.path().join("stepwise.toml"), config).unwrap();
        Self { dir, _http: http }
    }

    fn run(&self, scenario: (&str, &str)) -> (Out, Value) {
        let out = Stepwise::new()
            .current_dir(self.dir.path())
            .db(&self.dir.db())
            .args(run_args(scenario, true))
            .run();
        assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
        let v = out.json();
        (out, v)
    }

    fn calls(&self) -> Vec<Value> {
        calls(&self.dir.path().join("calls.jsonl"))
    }
}

/// The server's call log: one `{"n", "tool", "arguments", "ok"}` per call.
fn calls(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn events<'a>(v: &'a Value, kind: &str) -> Vec<&'a Value> {
    v["execution_history"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == kind)
        .collect()
}

/// The roles of the run's `model_called` events, in order.
fn model_calls(v: &Value) -> Vec<String> {
    events(v, "model_called")
        .iter()
        .map(|e| e["role"].as_str().unwrap().to_owned())
        .collect()
}

/// `(id, tool, status)` of every step of the final plan.
fn steps(v: &Value) -> Vec<(String, String, String)> {
    v["plan"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let f = |k: &str| s[k].as_str().unwrap().to_owned();
            (f("id"), f("tool"), f("status"))
        })
        .collect()
}

fn expected_steps(list: &[(&str, &str)]) -> Vec<(String, String, String)> {
    list.iter()
        .map(|(id, tool)| {
            (
                (*id).to_owned(),
                format!("minerva.{tool}"),
                "succeeded".to_owned(),
            )
        })
        .collect()
}

/// The tools the server was called with, in order; the last two (run in
/// parallel, so in either order) sorted.
fn tools_called(calls: &[Value]) -> Vec<String> {
    let mut tools: Vec<String> = calls
        .iter()
        .map(|c| c["tool"].as_str().unwrap().to_owned())
        .collect();
    let n = tools.len();
    if n >= 2 {
        tools[n - 2..].sort();
    }
    tools
}

fn terms_of(calls: &[Value], tool: &str) -> Vec<Value> {
    calls
        .iter()
        .filter(|c| c["tool"] == tool)
        .map(|c| c["arguments"]["terms"].clone())
        .collect()
}

const HEADER: &str = "| Column in the code | Standard name | Abbreviation | Domain group | Data type | Index candidate |";

const SCENARIO_1_ROWS: [&str; 8] = [
    "| admission_id | 입원번호 (admission number) | ADMS_NO | 번호 (number) | VARCHAR(20) | yes: primary key |",
    "| patient_id | 환자식별번호 (patient identification number) | PTNT_IDNT_NO | 번호 (number) | VARCHAR(20) | yes: foreign key |",
    "| patient_name | 환자명 (patient name) | PTNT_NM | 명 (name) | VARCHAR(100) | no |",
    "| admission_date | 입원일자 (admission date) | ADMS_DT | 일자 (date) | CHAR(8) (YYYYMMDD) | yes: B-tree |",
    "| discharge_date | 퇴원일자 (discharge date) | DSCH_DT | 일자 (date) | CHAR(8) (YYYYMMDD) | yes: B-tree |",
    "| ward_code | 병동코드 (ward code) | WARD_CD | 코드 (code) | VARCHAR(10) | yes: composite (WARD_CD, ADMS_DT) |",
    "| attending_doctor_id | 담당의사번호 (attending physician number) | ATND_PHSN_NO | 번호 (number) | VARCHAR(20) | yes: foreign key |",
    "| diagnosis_code | 진단코드 (diagnosis code) | DGNS_CD | 코드 (code) | VARCHAR(10) | yes: B-tree |",
];

const SCENARIO_2_ROWS: [&str; 4] = [
    "| pat_idnt_no | 환자식별번호 (patient identification number) | PTNT_IDNT_NO | 번호 (number) | VARCHAR(20) | yes: foreign key |",
    "| discharge_date | 퇴원일자 (discharge date) | DSCH_DT | 일자 (date) | CHAR(8) (YYYYMMDD) | yes: B-tree |",
    "| ward_code | 병동코드 (ward code) | WARD_CD | 코드 (code) | VARCHAR(10) | yes: composite (WARD_CD, ADMS_DT) |",
    "| length_of_stay | 재원일수 (length of stay) | STAY_DAYS | 수량 (quantity) | NUMBER(10) | no |",
];

/// The report holds the table: its header and exactly these rows.
fn assert_table(report: &str, rows: &[&str]) {
    let lines: Vec<&str> = report.lines().collect();
    let at = lines
        .iter()
        .position(|l| *l == HEADER)
        .unwrap_or_else(|| panic!("no table in the report:\n{report}"));
    assert_eq!(lines[at + 1], "|---|---|---|---|---|---|", "{report}");
    let body: Vec<&str> = lines[at + 2..]
        .iter()
        .take_while(|l| l.starts_with('|'))
        .copied()
        .collect();
    assert_eq!(body, rows, "{report}");
}

const SCENARIO_1_COLUMNS: [&str; 8] = [
    "admission_id",
    "patient_id",
    "patient_name",
    "admission_date",
    "discharge_date",
    "ward_code",
    "attending_doctor_id",
    "diagnosis_code",
];

const SCENARIO_1_TERMS: [&str; 8] = [
    "ADMS_NO",
    "PTNT_IDNT_NO",
    "PTNT_NM",
    "ADMS_DT",
    "DSCH_DT",
    "WARD_CD",
    "ATND_PHSN_NO",
    "DGNS_CD",
];

fn scenario_1(transport: Transport, name: &str) {
    let s = Scenario::new(name, transport);
    let (_, v) = s.run(SCENARIO_1);
    assert_eq!(v["status"], "ok");
    // Exactly two model calls: the plan and the report.
    assert_eq!(v["usage"]["llm_calls"], 2, "{}", v["usage"]);
    assert_eq!(model_calls(&v), ["planner", "synthesizer"]);
    assert!(events(&v, "assessed").iter().all(|e| {
        e["reason"]
            .as_str()
            .unwrap()
            .starts_with("checked by the engine")
    }));
    // One plan of batch steps, each one tool call.
    assert_eq!(v["replan_count"], 0);
    assert_eq!(v["plan_version"], 1);
    assert_eq!(
        steps(&v),
        expected_steps(&[
            ("parse", "parse_columns"),
            ("search", "search_standardization_docs"),
            ("classify", "classify_domain_group"),
            ("index", "lookup_index_candidates"),
        ])
    );
    assert_eq!(v["usage"]["tool_calls"], 4);
    let calls = s.calls();
    assert_eq!(
        tools_called(&calls),
        [
            "parse_columns",
            "search_standardization_docs",
            "classify_domain_group",
            "lookup_index_candidates"
        ],
        "{calls:#?}"
    );
    assert!(calls.iter().all(|c| c["ok"] == true));
    assert_eq!(
        terms_of(&calls, "search_standardization_docs"),
        [json!(SCENARIO_1_COLUMNS)]
    );
    assert_eq!(
        terms_of(&calls, "classify_domain_group"),
        [json!(SCENARIO_1_TERMS)]
    );
    assert_eq!(
        terms_of(&calls, "lookup_index_candidates"),
        [json!(SCENARIO_1_TERMS)]
    );
    // The report: the table, its citations kept, no gap.
    assert_table(v["final_report"].as_str().unwrap(), &SCENARIO_1_ROWS);
    assert_eq!(v["evidence"].as_array().unwrap().len(), 8);
    assert_eq!(v["knowledge_gaps"], json!([]));
}

/// The gap the first search leaves in scenario 2: its typed check, failed.
const SCENARIO_2_GAP: &str =
    "search: does not fit its schema: /unmatched: [\"pat_idnt_no\"] has more than 0 items";

fn scenario_2(transport: Transport, name: &str) {
    let s = Scenario::new(name, transport);
    let (_, v) = s.run(SCENARIO_2);
    assert_eq!(v["status"], "ok");
    // Plan, replan, the assessor on the second search's text criterion, report.
    assert_eq!(v["usage"]["llm_calls"], 4, "{}", v["usage"]);
    assert_eq!(
        model_calls(&v),
        ["planner", "replanner", "assessor", "synthesizer"]
    );
    assert_eq!(v["replan_count"], 1);
    assert_eq!(events(&v, "replanned").len(), 1);
    assert_eq!(v["plan_version"], 2);
    // The search's check failed, which is what replanned — no model judged it.
    let search = events(&v, "assessed")
        .into_iter()
        .find(|e| e["step"] == "search")
        .unwrap();
    assert_eq!(search["verdict"], "replan");
    assert_eq!(search["new_gaps"], json!([SCENARIO_2_GAP]));
    // The replanner saw the steps already run, the failed search and its
    // empty match among them.
    let replanner = events(&v, "model_called")
        .into_iter()
        .find(|e| e["role"] == "replanner")
        .unwrap();
    let asked = replanner["exchange"]["request"]["messages"].to_string();
    for needle in [
        "Steps already run",
        "search (minerva.search_standardization_docs, succeeded)",
        "unmatched:\\n      - pat_idnt_no",
    ] {
        assert!(
            asked.contains(needle),
            "the replanner was not shown {needle:?}: {asked}"
        );
    }
    // Completed work kept; lookup_abbreviation, then a second search; the
    // first search not repeated; the pending steps revised, not skipped.
    assert_eq!(
        steps(&v),
        expected_steps(&[
            ("parse", "parse_columns"),
            ("search", "search_standardization_docs"),
            ("abbr", "lookup_abbreviation"),
            ("search_abbr", "search_standardization_docs"),
            ("classify", "classify_domain_group"),
            ("index", "lookup_index_candidates"),
        ])
    );
    assert_eq!(v["usage"]["tool_calls"], 6);
    let calls = s.calls();
    assert_eq!(
        tools_called(&calls),
        [
            "parse_columns",
            "search_standardization_docs",
            "lookup_abbreviation",
            "search_standardization_docs",
            "classify_domain_group",
            "lookup_index_candidates"
        ],
        "{calls:#?}"
    );
    assert_eq!(
        terms_of(&calls, "search_standardization_docs"),
        [
            json!([
                "pat_idnt_no",
                "discharge_date",
                "ward_code",
                "length_of_stay"
            ]),
            json!(["PTNT_IDNT_NO"]),
        ],
        "the second search asks only for what the first did not find"
    );
    assert_eq!(
        terms_of(&calls, "lookup_abbreviation"),
        [json!(["pat_idnt_no"])]
    );
    let both = json!([["DSCH_DT", "WARD_CD", "STAY_DAYS"], ["PTNT_IDNT_NO"]]);
    for tool in ["classify_domain_group", "lookup_index_candidates"] {
        assert_eq!(
            terms_of(&calls, tool),
            std::slice::from_ref(&both),
            "{tool}"
        );
    }
    // The second search resolved the gap; the report has the whole table.
    let retry = events(&v, "assessed")
        .into_iter()
        .find(|e| e["step"] == "search_abbr")
        .unwrap();
    assert_eq!(retry["resolved_gaps"], json!([SCENARIO_2_GAP]));
    assert_eq!(v["knowledge_gaps"], json!([]));
    assert_table(v["final_report"].as_str().unwrap(), &SCENARIO_2_ROWS);
    assert_eq!(v["evidence"].as_array().unwrap().len(), 6);
}

#[test]
fn scenario_1_over_stdio_costs_two_model_calls_and_four_batch_tool_calls() {
    scenario_1(Transport::Stdio, "s1-stdio");
}

#[test]
fn scenario_1_over_streamable_http_costs_two_model_calls_and_four_batch_tool_calls() {
    scenario_1(Transport::Http, "s1-http");
}

#[test]
fn scenario_2_over_stdio_replans_once_with_lookup_abbreviation_and_a_second_search() {
    scenario_2(Transport::Stdio, "s2-stdio");
}

#[test]
fn scenario_2_over_streamable_http_replans_once_with_lookup_abbreviation_and_a_second_search() {
    scenario_2(Transport::Http, "s2-http");
}

/// The README's command, as written: from examples/minerva, its own
/// stepwise.toml, which starts the server with `cargo run`.
#[test]
fn the_readme_command_runs_scenario_1_with_the_examples_own_config() {
    server_binary();
    let scratch = Scratch::new("minerva", "readme");
    let log = scratch.path().join("calls.jsonl");
    let target = profile_dir().parent().unwrap().to_owned();
    // `cargo` is the one building this test (first on PATH), with the real
    // toolchain's homes, not the stand-in's.
    let mut path = vec![cargo().parent().unwrap().to_owned()];
    path.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    let path = std::env::join_paths(path).unwrap();
    let real_home = std::env::var_os("HOME").map(PathBuf::from).unwrap();
    let cargo_home =
        std::env::var_os("CARGO_HOME").map_or_else(|| real_home.join(".cargo"), PathBuf::from);
    let rustup_home =
        std::env::var_os("RUSTUP_HOME").map_or_else(|| real_home.join(".rustup"), PathBuf::from);
    let goal = goal(SCENARIO_1.0);
    let out = Stepwise::new()
        .current_dir(example())
        .db(&scratch.db())
        .args([
            "run",
            &goal,
            "--notes",
            "notes",
            "--model",
            "script:scripted/scenario-1.json",
        ])
        .env("PATH", path)
        .env("CARGO_HOME", cargo_home)
        .env("RUSTUP_HOME", rustup_home)
        .env("CARGO_TARGET_DIR", target)
        .env("MINERVA_CALL_LOG", &log)
        .run();
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert_table(&out.stdout, &SCENARIO_1_ROWS);
    assert!(out.stderr.contains("2 model calls"), "{}", out.stderr);
    assert_eq!(calls(&log).len(), 4);
}

#[test]
fn the_server_lists_five_read_only_tools_with_their_schemas() {
    let s = Scenario::new("tools", Transport::Stdio);
    let out = Stepwise::new()
        .current_dir(s.dir.path())
        .db(&s.dir.db())
        .args(["tools", "--json"])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v = out.json();
    let listed = v.as_array().or_else(|| v["tools"].as_array()).unwrap();
    let mut mine: Vec<&Value> = listed
        .iter()
        .filter(|t| {
            t["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("minerva."))
        })
        .collect();
    mine.sort_by_key(|t| t["name"].as_str().unwrap().to_owned());
    let names: Vec<&str> = mine.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "minerva.classify_domain_group",
            "minerva.lookup_abbreviation",
            "minerva.lookup_index_candidates",
            "minerva.parse_columns",
            "minerva.search_standardization_docs"
        ]
    );
    for t in mine {
        assert_eq!(t["effect"], "read-only", "{t}");
        assert_eq!(t["mcp"]["hints"]["read_only"], true, "{t}");
        assert_eq!(t["args_schema"]["type"], "object", "{t}");
        assert_eq!(t["output_schema"]["type"], "object", "{t}");
    }
    assert!(s.calls().is_empty(), "listing calls no tool");
}

/// The scripted plans parse the code files the README feeds the goal, so
/// the two cannot drift apart.
#[test]
fn the_scripted_plans_parse_the_shipped_code() {
    for (code, script) in [SCENARIO_1, SCENARIO_2] {
        let text = std::fs::read_to_string(example().join("scripted").join(script)).unwrap();
        assert!(
            text.starts_with("# SCRIPTED MODEL"),
            "{script} is not labelled as scripted"
        );
        let body: String = text
            .lines()
            .skip_while(|l| l.starts_with('#') || l.trim().is_empty())
            .collect::<Vec<_>>()
            .join("\n");
        let entries: Value = serde_json::from_str(&body).unwrap();
        let plan = &entries[0]["json"]["steps"][0];
        assert_eq!(plan["tool"], "minerva.parse_columns");
        let source = std::fs::read_to_string(example().join("code").join(code)).unwrap();
        assert_eq!(
            plan["args"]["source"],
            source.as_str(),
            "{script} vs {code}"
        );
    }
}
