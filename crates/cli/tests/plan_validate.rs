//! Runs the real `stepwise` binary on temporary files.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use serde_json::{Value, json};

mod common;

use common::Stepwise;

/// A fresh directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(test: &str) -> Self {
        let path = std::env::temp_dir().join(format!("stepwise-cli-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        Self(path)
    }

    fn write(&self, name: &str, contents: &str) -> &Self {
        std::fs::write(self.0.join(name), contents).unwrap();
        self
    }

    fn json(&self, name: &str, value: &Value) -> &Self {
        self.write(name, &serde_json::to_string_pretty(value).unwrap())
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Run {
    fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}", self.stdout))
    }

    fn codes(&self) -> Vec<String> {
        let mut codes: Vec<String> = self
            .json()
            .as_array()
            .expect("a JSON array")
            .iter()
            .map(|d| d["code"].as_str().expect("a code").to_owned())
            .collect();
        codes.sort();
        codes
    }

    /// A usage error: exit 2, nothing on stdout, one `error:` line on stderr.
    fn assert_usage_error(&self, starts_with: &str) {
        assert_eq!(self.code, 2, "{}{}", self.stdout, self.stderr);
        assert_eq!(self.stdout, "", "stdout of a usage error");
        assert_eq!(self.stderr.lines().count(), 1, "stderr: {:?}", self.stderr);
        assert!(
            self.stderr.starts_with(starts_with),
            "stderr {:?} should start with {starts_with:?}",
            self.stderr
        );
    }
}

fn from_output(out: Output) -> Run {
    Run {
        code: out.status.code().expect("exited, not killed by a signal"),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

/// Runs the binary isolated (see [`common::Stepwise`]) in `dir`.
fn stepwise(dir: &TempDir, args: &[&str]) -> Run {
    from_output(Stepwise::new().current_dir(dir.path()).args(args).output())
}

fn tools() -> Value {
    json!({"tools": [
        {
            "name": "search",
            "description": "Search the notes",
            "args_schema": {
                "type": "object",
                "properties": {
                    "query": {"type": "string"},
                    "limit": {"type": "integer", "minimum": 1}
                },
                "required": ["query"],
                "additionalProperties": false
            }
        },
        {
            "name": "send_mail",
            "description": "Send an e-mail",
            "args_schema": {"type": "object", "required": ["to"]},
            "side_effect": true
        }
    ]})
}

fn step(id: &str, tool: &str, args: Value, deps: &[&str]) -> Value {
    json!({
        "id": id,
        "description": format!("Step {id}"),
        "tool": tool,
        "args": args,
        "depends_on": deps,
        "acceptance_criteria": ["something useful"]
    })
}

fn valid_plan() -> Value {
    json!({"steps": [
        step("find", "search", json!({"query": "rag", "limit": 3}), &[]),
        step("compare", "search", json!({"query": "${find.output.items[0]}", "limit": "$find"}), &["find"]),
    ]})
}

/// A cycle (a ↔ b), an unknown tool and a schema mismatch.
fn broken_plan() -> Value {
    json!({"steps": [
        step("a", "search", json!({"query": "x"}), &["b"]),
        step("b", "search", json!({"query": "y"}), &["a"]),
        step("c", "browse", json!({}), &[]),
        step("d", "search", json!({"query": "z", "limit": "ten"}), &[]),
    ]})
}

#[test]
fn a_valid_plan_exits_0() {
    let dir = TempDir::new("valid");
    dir.json("plan.json", &valid_plan())
        .json("tools.json", &tools());
    let run = stepwise(
        &dir,
        &["plan", "validate", "plan.json", "--tools", "tools.json"],
    );
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(run.stdout, "plan.json: valid plan, 2 steps\n");
    assert_eq!(run.stderr, "");

    let run = stepwise(
        &dir,
        &[
            "plan",
            "validate",
            "plan.json",
            "--tools",
            "tools.json",
            "--json",
        ],
    );
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(run.json(), json!([]));
}

#[test]
fn a_bare_array_of_steps_and_a_bare_array_of_tools_are_accepted() {
    let dir = TempDir::new("bare");
    dir.json("plan.json", &valid_plan()["steps"])
        .json("tools.json", &tools()["tools"]);
    let run = stepwise(
        &dir,
        &["plan", "validate", "plan.json", "--tools", "tools.json"],
    );
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
}

#[test]
fn an_invalid_plan_exits_1_with_every_problem() {
    let dir = TempDir::new("invalid");
    dir.json("plan.json", &broken_plan())
        .json("tools.json", &tools());
    let run = stepwise(
        &dir,
        &[
            "plan",
            "validate",
            "plan.json",
            "--tools",
            "tools.json",
            "--json",
        ],
    );
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert_eq!(run.stderr, "");
    assert_eq!(
        run.codes(),
        ["args_schema_mismatch", "dependency_cycle", "unknown_tool"]
    );
    let diags = run.json();
    let cycle = diags
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["code"] == "dependency_cycle")
        .unwrap();
    assert!(cycle["message"].as_str().unwrap().contains("a → b → a"));
    assert_eq!(cycle["step"], "a");
    assert_eq!(cycle["path"], "/steps/0/depends_on");
    assert_eq!(cycle["repairable"], true);

    let run = stepwise(
        &dir,
        &["plan", "validate", "plan.json", "--tools", "tools.json"],
    );
    assert_eq!(run.code, 1);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), 4, "{}", run.stdout);
    assert_eq!(lines[3], "3 problems in plan.json");
    assert!(lines.contains(&"plan.json#/steps/2/tool: [unknown_tool] step c: unknown tool \"browse\" (available: search, send_mail)"), "{}", run.stdout);
    assert!(
        lines.iter().any(
            |l| l.starts_with("plan.json#/steps/3/args/limit: [args_schema_mismatch] step d: ")
        ),
        "{}",
        run.stdout
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("plan.json#/steps/0/depends_on: [dependency_cycle] step a: ")),
        "{}",
        run.stdout
    );
}

#[test]
fn open_arguments_are_valid_except_on_side_effect_tools() {
    let dir = TempDir::new("open-args");
    let plan = json!({"steps": [
        step("find", "search", json!({"query": "rag"}), &[]),
        step("narrow", "search",
             json!({"query": {"$open": "a narrower query from what ${find} found"}}), &["find"]),
    ]});
    dir.json("plan.json", &plan).json("tools.json", &tools());
    let run = stepwise(
        &dir,
        &["plan", "validate", "plan.json", "--tools", "tools.json"],
    );
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(run.stdout, "plan.json: valid plan, 2 steps\n");

    // A side-effect tool must have every argument in the plan (approvals
    // cover exact arguments): a clear, repairable diagnostic.
    let plan = json!({"steps": [
        step("mail", "send_mail", json!({"to": {"$open": "whoever asked"}}), &[]),
    ]});
    dir.json("mail.json", &plan);
    let run = stepwise(
        &dir,
        &[
            "plan",
            "validate",
            "mail.json",
            "--tools",
            "tools.json",
            "--json",
        ],
    );
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert_eq!(run.codes(), ["open_argument_side_effect"]);
    let d = &run.json()[0];
    assert_eq!(d["path"], "/steps/0/args/to");
    assert_eq!(d["repairable"], true);
    let message = d["message"].as_str().unwrap();
    assert!(
        message.contains("argument `to` of send_mail is open") && message.contains("side effects"),
        "{message}"
    );
}

#[test]
fn a_document_that_is_json_but_not_a_plan_is_invalid_not_a_usage_error() {
    let dir = TempDir::new("not-a-plan");
    dir.write("plan.json", "42").json("tools.json", &tools());
    let run = stepwise(
        &dir,
        &["plan", "validate", "plan.json", "--tools", "tools.json"],
    );
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stdout.starts_with("plan.json: [invalid_plan] "),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.ends_with("1 problem in plan.json\n"),
        "{}",
        run.stdout
    );
}

#[test]
fn the_built_in_tools_are_the_default_catalogue() {
    let dir = TempDir::new("builtin");
    dir.json(
        "plan.json",
        &json!([step("a", "no_such_tool", json!({}), &[])]),
    );
    let listed = stepwise(&dir, &["tools", "--json"]);
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    let names: Vec<String> = listed
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    let run = stepwise(&dir, &["plan", "validate", "plan.json", "--json"]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert_eq!(run.codes(), ["unknown_tool"]);
    let message = run.json()[0]["message"].as_str().unwrap().to_owned();
    for name in &names {
        assert!(message.contains(name.as_str()), "{name} not in {message}");
    }
}

#[test]
fn a_missing_plan_file_is_a_usage_error() {
    let dir = TempDir::new("missing");
    let run = stepwise(&dir, &["plan", "validate", "missing.json"]);
    run.assert_usage_error("error: cannot read missing.json: ");
    assert!(!run.stderr.contains("os error"), "{}", run.stderr);
    if cfg!(unix) {
        assert_eq!(
            run.stderr,
            "error: cannot read missing.json: No such file or directory\n"
        );
    }
}

#[test]
fn a_file_that_is_not_json_is_a_usage_error() {
    let dir = TempDir::new("not-json");
    dir.write("plan.json", "steps:\n  - id: a\n")
        .write("empty.json", "");
    let run = stepwise(&dir, &["plan", "validate", "plan.json"]);
    run.assert_usage_error("error: plan.json is not JSON: ");
    assert_eq!(
        run.stderr,
        "error: plan.json is not JSON: expected value at line 1 column 1\n"
    );
    let run = stepwise(&dir, &["plan", "validate", "empty.json"]);
    run.assert_usage_error("error: empty.json is not JSON: ");
}

#[test]
fn bad_tools_files_are_usage_errors() {
    let dir = TempDir::new("bad-tools");
    dir.json("plan.json", &valid_plan())
        .write("not-json.json", "{tools")
        .json("wrong-shape.json", &json!({"tool": []}))
        .json("no-description.json", &json!([{"name": "search"}]))
        .json(
            "bad-schema.json",
            &json!([{"name": "search", "description": "d", "args_schema": {"type": 5}}]),
        )
        .json(
            "twice.json",
            &json!([{"name": "search", "description": "d"}, {"name": "search", "description": "e"}]),
        );
    for (file, starts_with) in [
        ("missing.json", "error: cannot read missing.json: "),
        ("not-json.json", "error: not-json.json is not JSON: "),
        (
            "wrong-shape.json",
            "error: wrong-shape.json is not a valid tools file: expected an array",
        ),
        (
            "no-description.json",
            "error: no-description.json is not a valid tools file: tool \"search\": missing field `description`",
        ),
        (
            "bad-schema.json",
            "error: bad-schema.json is not a valid tools file: tool \"search\": its args_schema is not a valid JSON Schema",
        ),
        (
            "twice.json",
            "error: twice.json is not a valid tools file: tool \"search\" is listed twice",
        ),
    ] {
        let run = stepwise(&dir, &["plan", "validate", "plan.json", "--tools", file]);
        run.assert_usage_error(starts_with);
    }
}

#[test]
fn bad_flags_are_usage_errors() {
    let dir = TempDir::new("bad-flags");
    dir.json("plan.json", &valid_plan());
    for args in [
        &["plan", "validate", "plan.json", "--frobnicate"][..],
        &["plan", "validate"][..],
        &["plan", "validate", "plan.json", "--max-steps", "0"][..],
        &["plan", "validate", "plan.json", "--max-steps", "many"][..],
        &["plan", "frob"][..],
    ] {
        let run = stepwise(&dir, args);
        assert_eq!(run.code, 2, "{args:?}: {}{}", run.stdout, run.stderr);
        assert_eq!(run.stdout, "", "{args:?}");
        assert!(
            run.stderr.starts_with("error: "),
            "{args:?}: {}",
            run.stderr
        );
    }
}

#[test]
fn constraints_come_inline_or_from_a_file() {
    let dir = TempDir::new("constraints");
    dir.json(
        "plan.json",
        &json!([
            step("find", "search", json!({"query": "q"}), &[]),
            step(
                "mail",
                "send_mail",
                json!({"to": "a@example.com"}),
                &["find"]
            ),
        ]),
    )
    .json("tools.json", &tools())
    .json("allowed.json", &json!({"allowed_tools": ["search"]}))
    .write("broken.json", "{");
    let base = [
        "plan",
        "validate",
        "plan.json",
        "--tools",
        "tools.json",
        "--json",
    ];

    let run = stepwise(
        &dir,
        &[
            &base[..],
            &["--constraints", r#"{"forbid_side_effects": true}"#],
        ]
        .concat(),
    );
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert_eq!(run.codes(), ["side_effect_forbidden"]);
    assert_eq!(run.json()[0]["repairable"], false);

    let run = stepwise(
        &dir,
        &[&base[..], &["--constraints", "allowed.json"]].concat(),
    );
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert_eq!(run.codes(), ["tool_not_allowed"]);

    let run = stepwise(
        &dir,
        &[&base[..], &["--constraints", r#"{"max_steps": 1}"#]].concat(),
    );
    assert_eq!(run.codes(), ["too_many_steps"]);
    // The flag wins over the constraints.
    let run = stepwise(
        &dir,
        &[
            &base[..],
            &["--constraints", r#"{"max_steps": 1}"#, "--max-steps", "2"],
        ]
        .concat(),
    );
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let run = stepwise(&dir, &[&base[..], &["--max-steps", "1"]].concat());
    assert_eq!(run.codes(), ["too_many_steps"]);

    stepwise(
        &dir,
        &[&base[..], &["--constraints", "broken.json"]].concat(),
    )
    .assert_usage_error("error: broken.json is not JSON: ");
    stepwise(&dir, &[&base[..], &["--constraints", "{nope"]].concat())
        .assert_usage_error("error: --constraints is not JSON: ");
    stepwise(
        &dir,
        &[&base[..], &["--constraints", r#"{"max_steps": "x"}"#]].concat(),
    )
    .assert_usage_error("error: --constraints has invalid constraints: ");
    stepwise(&dir, &[&base[..], &["--constraints", "gone.json"]].concat())
        .assert_usage_error("error: cannot read gone.json: ");
}

#[test]
fn a_plan_can_come_from_standard_input() {
    let dir = TempDir::new("stdin");
    dir.json("tools.json", &tools());
    let mut child = Stepwise::new()
        .current_dir(dir.path())
        .args(["plan", "validate", "-", "--tools", "tools.json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    child
        .take_stdin()
        .unwrap()
        .write_all(valid_plan().to_string().as_bytes())
        .unwrap();
    let run = from_output(child.wait_with_output());
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(run.stdout, "<stdin>: valid plan, 2 steps\n");
}

#[test]
fn plan_schema_prints_the_json_schema() {
    let dir = TempDir::new("schema");
    let run = stepwise(&dir, &["plan", "schema"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("\"steps\""));
    let schema = run.json();
    assert!(schema["properties"]["steps"].is_object(), "{schema}");
    assert_eq!(schema["title"], "Stepwise plan");
}

#[test]
fn tools_lists_the_built_in_tools() {
    let dir = TempDir::new("tools");
    let run = stepwise(&dir, &["tools"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let specs = stepwise(&dir, &["tools", "--json"]).json();
    let specs = specs.as_array().unwrap();
    if specs.is_empty() {
        assert_eq!(run.stdout, "no built-in tools\n");
    } else {
        assert!(run.stdout.starts_with("NAME "), "{}", run.stdout);
        assert_eq!(run.stdout.lines().count(), specs.len() + 1);
        for spec in specs {
            let name = spec["name"].as_str().unwrap();
            assert!(run.stdout.contains(name), "{name}");
            assert!(spec["args_schema"].is_object(), "{spec}");
        }
    }
}

#[test]
fn an_oversize_plan_is_too_many_steps_by_default() {
    let dir = TempDir::new("oversize");
    let steps: Vec<Value> = (0..25)
        .map(|i| json!({"id": format!("s{i}"), "description": "d", "tool": "read_note", "args": {"id": "x"}, "acceptance_criteria": ["ok"]}))
        .collect();
    dir.json("plan.json", &json!({ "steps": steps }));
    let out = Stepwise::new()
        .args(["plan", "validate", "--json"])
        .arg(dir.path().join("plan.json"))
        .output();
    assert_eq!(out.status.code(), Some(1));
    let diags: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(diags[0]["code"], "too_many_steps");
    assert!(
        diags[0]["message"]
            .as_str()
            .unwrap()
            .contains("25 steps but max_steps is 20")
    );
}

#[test]
fn a_plan_that_writes_says_its_run_needs_a_workspace() {
    let dir = TempDir::new("needs-workspace");
    dir.json("plan.json", &common::save_plan());
    let run = stepwise(&dir, &["plan", "validate", "plan.json"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(
        run.stdout,
        "plan.json: valid plan, 2 steps\na run of it needs --workspace DIR: save calls write_file\n"
    );
    // Given the workspace the run would get, nothing more is needed.
    let run = stepwise(
        &dir,
        &["plan", "validate", "plan.json", "--workspace", "ws"],
    );
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(run.stdout, "plan.json: valid plan, 2 steps\n");
}
