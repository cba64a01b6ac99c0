//! `stepwise mcp`: Stepwise as a Model Context Protocol server over stdio,
//! on the server side of the official SDK (rmcp), for MCP clients (Claude
//! Desktop, IDE agents, the MCP Inspector). Six tools: `run_goal`,
//! `get_run`, `list_runs`, `approve_step`, `reject_step`, `cancel_run`.
//!
//! Each tool is the CLI command of the same meaning, run as a child of this
//! process on the same run database (`--db`, `STEPWISE_DB`): the same
//! leases, events, exit codes and messages as typing it, and nothing here
//! that could drift from them. A run's progress lines (what `stepwise run`
//! prints on stderr) go to the client as progress notifications when it
//! asked for them.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::anyhow;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListToolsResult, PaginatedRequestParams, ProgressNotificationParam,
    ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;

use crate::db;
use crate::error::{CliError, CliResult};

/// `stepwise mcp`: serves until the client closes stdin.
pub(crate) fn mcp(flag: Option<&PathBuf>) -> CliResult {
    let exe = std::env::current_exe()
        .map_err(|e| CliError::failed(anyhow!("cannot find this program's own path: {e}")))?;
    let server = Stepwise(Arc::new(Inner {
        exe,
        db: flag.cloned(),
    }));
    db::block_on(async move {
        let running = server
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| CliError::failed(anyhow!("cannot start the MCP server on stdio: {e}")))?;
        running
            .waiting()
            .await
            .map_err(|e| CliError::failed(anyhow!("the MCP server stopped: {e}")))?;
        CliResult::Ok(())
    })?
}

/// The server: this program's path and the run database its commands use.
#[derive(Debug, Clone)]
struct Stepwise(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    exe: PathBuf,
    db: Option<PathBuf>,
}

/// What a command printed and how it ended.
struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Stepwise {
    /// `stepwise` on the server's database, before its arguments.
    fn command(&self) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(&self.0.exe);
        if let Some(db) = &self.0.db {
            cmd.arg("--db").arg(db);
        }
        cmd
    }

    /// Runs `stepwise ARGS` on the server's database; each stderr line goes
    /// to `line` as it comes (the run's progress).
    async fn stepwise(&self, args: &[String], mut line: impl FnMut(String)) -> Result<Ran, String> {
        let mut cmd = self.command();
        cmd.args(args)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", self.0.exe.display()))?;
        let stdout = child.stdout.take();
        let reading = tokio::spawn(async move {
            let mut out = String::new();
            if let Some(mut stdout) = stdout {
                let _ = tokio::io::AsyncReadExt::read_to_string(&mut stdout, &mut out).await;
            }
            out
        });
        let mut stderr = String::new();
        if let Some(err) = child.stderr.take() {
            let mut lines = tokio::io::BufReader::new(err).lines();
            while let Ok(Some(l)) = lines.next_line().await {
                stderr.push_str(&l);
                stderr.push('\n');
                line(l);
            }
        }
        let status = child
            .wait()
            .await
            .map_err(|e| format!("the command did not end: {e}"))?;
        let stdout = reading.await.unwrap_or_default();
        Ok(Ran {
            code: status.code().unwrap_or(-1),
            stdout,
            stderr,
        })
    }
}

/// The argument `key` as text, if given.
fn text<'a>(args: &'a JsonObject, key: &str) -> Result<Option<&'a str>, String> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(Some(s)),
        Some(_) => Err(format!("`{key}` must be non-empty text")),
    }
}

/// The argument `key` as text; it is required.
fn required<'a>(args: &'a JsonObject, key: &str) -> Result<&'a str, String> {
    text(args, key)?.ok_or_else(|| format!("`{key}` is required"))
}

/// Refuses arguments the tool does not take.
fn known(args: &JsonObject, keys: &[&str]) -> Result<(), String> {
    match args.keys().find(|k| !keys.contains(&k.as_str())) {
        Some(k) => Err(format!(
            "unknown argument `{k}` (known: {})",
            keys.join(", ")
        )),
        None => Ok(()),
    }
}

/// A path argument made absolute against this server's folder, so the
/// child reads what the client named.
fn absolute(path: &str) -> String {
    std::path::absolute(Path::new(path))
        .map_or_else(|_| path.to_owned(), |p| p.display().to_string())
}

/// The command line each tool runs, from its arguments.
fn command(tool: &str, args: &JsonObject) -> Result<Vec<String>, String> {
    let s = |v: &str| v.to_owned();
    Ok(match tool {
        "run_goal" => {
            known(
                args,
                &[
                    "goal",
                    "notes",
                    "constraints",
                    "plan",
                    "workspace",
                    "approve",
                    "strategy",
                    "wait",
                ],
            )?;
            let mut argv = vec![s("run"), s(required(args, "goal")?), s("--notes")];
            argv.push(absolute(required(args, "notes")?));
            if let Some(c) = args.get("constraints").filter(|c| !c.is_null()) {
                if !c.is_object() {
                    return Err("`constraints` must be an object".to_owned());
                }
                argv.extend([s("--constraints"), c.to_string()]);
            }
            if let Some(plan) = text(args, "plan")? {
                argv.extend([s("--plan"), absolute(plan)]);
            }
            if let Some(ws) = text(args, "workspace")? {
                argv.extend([s("--workspace"), absolute(ws)]);
            }
            let approve = text(args, "approve")?.unwrap_or("never");
            if !matches!(approve, "never" | "auto") {
                return Err(
                    "`approve` is never (a person approves with approve_step) or auto".to_owned(),
                );
            }
            argv.extend([s("--approve"), s(approve)]);
            if let Some(strategy) = text(args, "strategy")? {
                argv.extend([s("--strategy"), s(strategy)]);
            }
            argv.push(s("--json"));
            argv
        }
        "get_run" => {
            known(args, &["run"])?;
            vec![s("show"), s(required(args, "run")?), s("--json")]
        }
        "list_runs" => {
            known(args, &["status", "since", "goal", "limit"])?;
            let mut argv = vec![s("runs"), s("--json")];
            for key in ["status", "since", "goal"] {
                if let Some(v) = text(args, key)? {
                    argv.extend([format!("--{key}"), s(v)]);
                }
            }
            match args.get("limit") {
                None | Some(Value::Null) => {}
                Some(Value::Number(n)) if n.as_u64().is_some_and(|n| n > 0) => {
                    argv.extend([s("--limit"), n.to_string()]);
                }
                Some(_) => return Err("`limit` must be a whole number above 0".to_owned()),
            }
            argv
        }
        "approve_step" => {
            known(args, &["run", "step", "resume"])?;
            let mut argv = vec![s("approve"), s(required(args, "run")?)];
            if let Some(step) = text(args, "step")? {
                argv.extend([s("--step"), s(step)]);
            }
            argv
        }
        "reject_step" => {
            known(args, &["run", "reason"])?;
            let mut argv = vec![s("reject"), s(required(args, "run")?)];
            argv.extend([
                s("--reason"),
                s(text(args, "reason")?.unwrap_or("refused by an MCP client")),
            ]);
            argv
        }
        "cancel_run" => {
            known(args, &["run", "reason"])?;
            let mut argv = vec![s("cancel"), s(required(args, "run")?)];
            if let Some(reason) = text(args, "reason")? {
                argv.extend([s("--reason"), s(reason)]);
            }
            argv
        }
        other => return Err(format!("no tool named {other:?}")),
    })
}

/// Exit codes that end a run at rest (needs_review, awaiting_approval,
/// cancelled): the run's JSON is the answer, not an error.
fn at_rest(code: i32) -> bool {
    matches!(code, 3..=5)
}

/// The last non-empty stderr line, which says why a command failed.
fn why(ran: &Ran) -> String {
    ran.stderr
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("it failed without a message")
        .to_owned()
}

impl ServerHandler for Stepwise {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("stepwise", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Stepwise runs a goal over a folder of notes: a validated plan, steps run in \
                 dependency order, assessment, bounded replanning, and a cited report that names \
                 its gaps. run_goal starts a run (and waits for it unless wait is false); a run \
                 that wants to write pauses at awaiting_approval until approve_step (then it \
                 resumes) or reject_step. get_run reads a run; list_runs lists them.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        tools().into_iter().find(|t| t.name == name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        let fail =
            |message: String| Ok(CallToolResult::error(vec![ContentBlock::text(message)]).into());
        let argv = match command(&request.name, &args) {
            Ok(argv) => argv,
            Err(message) => return fail(message),
        };
        // Progress goes out in order, from one task, and all of it before
        // the result.
        let (lines, mut queued) = tokio::sync::mpsc::unbounded_channel::<String>();
        let forwarder = context.meta.get_progress_token().map(|token| {
            let peer = context.peer.clone();
            tokio::spawn(async move {
                let mut n = 0.0;
                while let Some(line) = queued.recv().await {
                    n += 1.0;
                    let note = ProgressNotificationParam::new(token.clone(), n).with_message(line);
                    let _ = peer.notify_progress(note).await;
                }
            })
        });
        let progress = |line: String| {
            let _ = lines.send(line);
        };
        if request.name == "run_goal" && args.get("wait") == Some(&Value::Bool(false)) {
            return Ok(self
                .start_detached(argv)
                .await
                .map_or_else(
                    |message| CallToolResult::error(vec![ContentBlock::text(message)]),
                    CallToolResult::structured,
                )
                .into());
        }
        let ran = self.stepwise(&argv, progress).await;
        drop(lines);
        if let Some(forwarder) = forwarder {
            let _ = forwarder.await;
        }
        let ran = match ran {
            Ok(ran) => ran,
            Err(message) => return fail(message),
        };
        if ran.code != 0 && !(at_rest(ran.code) && matches!(request.name.as_ref(), "run_goal")) {
            return fail(why(&ran));
        }
        let value = match request.name.as_ref() {
            // These print a sentence; the run's state is the answer.
            "approve_step" => {
                let resume = args.get("resume") != Some(&Value::Bool(false));
                let run = ran_run(&args);
                if !resume {
                    json!({"run_id": run, "message": ran.stdout.trim()})
                } else {
                    let resumed = match self
                        .stepwise(
                            &["resume".to_owned(), run.clone(), "--json".to_owned()],
                            |_| {},
                        )
                        .await
                    {
                        Ok(r) if r.code == 0 || at_rest(r.code) => r,
                        Ok(r) => return fail(why(&r)),
                        Err(message) => return fail(message),
                    };
                    serde_json::from_str(&resumed.stdout).unwrap_or(Value::Null)
                }
            }
            "reject_step" | "cancel_run" => {
                json!({"run_id": ran_run(&args), "message": ran.stdout.trim()})
            }
            "list_runs" => {
                json!({"runs": serde_json::from_str::<Value>(&ran.stdout).unwrap_or(Value::Null)})
            }
            _ => serde_json::from_str(&ran.stdout).unwrap_or(Value::Null),
        };
        Ok(CallToolResult::structured(value).into())
    }
}

/// The `run` argument (checked present by [`command`]).
fn ran_run(args: &JsonObject) -> String {
    args.get("run")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

impl Stepwise {
    /// `run_goal` with `wait: false`: the run starts under an id chosen
    /// here and goes on in the background; the id comes back at once.
    async fn start_detached(&self, mut argv: Vec<String>) -> Result<Value, String> {
        let run = stepwise_core::RunId::generate();
        argv.extend(["--run-id".to_owned(), run.to_string(), "--quiet".to_owned()]);
        let mut cmd = self.command();
        cmd.args(&argv)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", self.0.exe.display()))?;
        // Reaped when it ends, so it leaves no zombie.
        tokio::spawn(async move {
            let _ = child.wait().await;
        });
        Ok(json!({"run_id": run.to_string(), "status": "running"}))
    }
}

fn object(v: Value) -> Arc<JsonObject> {
    match v {
        Value::Object(map) => Arc::new(map),
        _ => Arc::new(JsonObject::new()),
    }
}

/// A run id argument.
fn run_arg() -> Value {
    json!({"type": "string", "minLength": 1, "description": "the run's id, or a prefix of it no other run shares"})
}

/// The six tools, with their input and output schemas and truthful hints.
fn tools() -> Vec<Tool> {
    let hints = |title: &str, read_only: bool, destructive: bool, idempotent: bool| {
        ToolAnnotations::with_title(title)
            .read_only(read_only)
            .destructive(destructive)
            .idempotent(idempotent)
            .open_world(false)
    };
    let tool = |name: &'static str,
                description: &'static str,
                input: Value,
                out: Value,
                a: ToolAnnotations| {
        let title = a.title.clone().unwrap_or_default();
        Tool::new(name, description, object(input))
            .with_title(title)
            .with_raw_output_schema(object(out))
            .with_annotations(a)
    };
    let run_out = json!({"type": "object", "properties": {
        "run_id": {"type": "string"},
        "status": {"type": "string", "enum": ["running", "ok", "needs_review", "failed", "awaiting_approval", "cancelled"]},
        "final_report": {"type": ["string", "null"]},
        "knowledge_gaps": {"type": "array", "items": {"type": "string"}},
        "evidence": {"type": "array"},
        "blocked_reason": {"type": ["string", "null"]}
    }, "required": ["run_id", "status"]});
    let said = json!({"type": "object", "properties": {
        "run_id": {"type": "string"}, "message": {"type": "string"}
    }, "required": ["run_id", "message"]});
    vec![
        tool(
            "run_goal",
            "Run a goal over a folder of notes: plan, search, assess, replan within bounds, and \
             write a cited report that names its gaps. Waits for the run and returns it (status, \
             report, evidence, gaps), with the run's progress as progress notifications; with \
             wait false, returns its id at once. A step that writes (write_file, with a \
             workspace) pauses the run at awaiting_approval unless approve is auto.",
            json!({"type": "object", "properties": {
                "goal": {"type": "string", "minLength": 1, "description": "what the run should achieve"},
                "notes": {"type": "string", "minLength": 1, "description": "folder of notes (.md, .txt, .jsonl)"},
                "constraints": {"type": "object", "description": "run constraints: comparison_dimensions, required_sections, max_steps, token_budget, …"},
                "plan": {"type": "string", "description": "a plan file to run instead of planning"},
                "workspace": {"type": "string", "description": "folder write_file may write in"},
                "approve": {"type": "string", "enum": ["never", "auto"], "default": "never"},
                "strategy": {"type": "string", "description": "a strategy name (see `stepwise strategies`)"},
                "wait": {"type": "boolean", "default": true}
            }, "required": ["goal", "notes"], "additionalProperties": false}),
            run_out.clone(),
            hints("Run a goal", false, false, false),
        ),
        tool(
            "get_run",
            "A run as `stepwise show RUN --json` prints it: status, plan, step results, report, \
             evidence, gaps, usage and its history.",
            json!({"type": "object", "properties": {"run": run_arg()}, "required": ["run"], "additionalProperties": false}),
            run_out.clone(),
            hints("Get a run", true, false, true),
        ),
        tool(
            "list_runs",
            "The runs in the database, newest first: id, goal, status, start, steps, replans, tokens.",
            json!({"type": "object", "properties": {
                "status": {"type": "string", "description": "only runs with these statuses (comma list)"},
                "since": {"type": "string", "description": "only runs started within this long, e.g. 2h, 7d"},
                "goal": {"type": "string", "description": "only runs whose goal contains this text"},
                "limit": {"type": "integer", "minimum": 1}
            }, "additionalProperties": false}),
            json!({"type": "object", "properties": {"runs": {"type": "array", "items": {"type": "object"}}}, "required": ["runs"]}),
            hints("List runs", true, false, true),
        ),
        tool(
            "approve_step",
            "Approve what a paused run waits for — its plan version, or its side-effect steps \
             with the exact arguments they asked with (one step with `step`) — then resume it \
             (unless resume is false) and return the run. The approved steps then run: a write \
             may overwrite a file.",
            json!({"type": "object", "properties": {
                "run": run_arg(),
                "step": {"type": "string", "description": "approve only this step"},
                "resume": {"type": "boolean", "default": true}
            }, "required": ["run"], "additionalProperties": false}),
            run_out,
            hints("Approve and resume", false, true, false),
        ),
        tool(
            "reject_step",
            "Refuse what a paused run waits for; the run stops for review (a later resume asks again).",
            json!({"type": "object", "properties": {
                "run": run_arg(),
                "reason": {"type": "string"}
            }, "required": ["run"], "additionalProperties": false}),
            said.clone(),
            hints("Reject", false, false, false),
        ),
        tool(
            "cancel_run",
            "End a run that is not being worked on; it cannot be resumed after.",
            json!({"type": "object", "properties": {
                "run": run_arg(),
                "reason": {"type": "string"}
            }, "required": ["run"], "additionalProperties": false}),
            said,
            hints("Cancel a run", false, true, false),
        ),
    ]
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn args(v: Value) -> JsonObject {
        match v {
            Value::Object(m) => m,
            _ => JsonObject::new(),
        }
    }

    #[test]
    fn six_tools_with_schemas_and_hints_that_say_what_they_do() {
        let tools = tools();
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(
            names,
            [
                "run_goal",
                "get_run",
                "list_runs",
                "approve_step",
                "reject_step",
                "cancel_run"
            ]
        );
        for t in &tools {
            let a = t.annotations.as_ref().unwrap();
            let reads = matches!(t.name.as_ref(), "get_run" | "list_runs");
            assert_eq!(a.read_only_hint, Some(reads), "{}", t.name);
            assert!(t.output_schema.is_some(), "{}", t.name);
        }
    }

    #[test]
    fn arguments_become_the_command_line_and_bad_ones_are_refused() {
        let argv = command("get_run", &args(json!({"run": "run_a"}))).unwrap();
        assert_eq!(argv, ["show", "run_a", "--json"]);
        let argv = command("list_runs", &args(json!({"status": "ok", "limit": 3}))).unwrap();
        assert_eq!(argv, ["runs", "--json", "--status", "ok", "--limit", "3"]);
        assert!(command("get_run", &args(json!({}))).is_err());
        assert!(command("get_run", &args(json!({"run": "a", "x": 1}))).is_err());
        assert!(
            command(
                "run_goal",
                &args(json!({"goal": "g", "notes": "n", "approve": "ask"}))
            )
            .is_err()
        );
        assert!(command("list_runs", &args(json!({"limit": 0}))).is_err());
        assert!(command("nope", &JsonObject::new()).is_err());
    }
}
