//! What the CLI tests share: a scratch folder that removes itself, and the
//! `stepwise` binary run in isolation from the user's settings and data.
//!
//! Every test that runs the binary builds the command with [`Stepwise`]
//! (`tests/isolation.rs` fails the suite if a test spawns it any other way).
//! Each command gets a fresh, empty HOME and XDG data, config, cache and
//! state folders, a run database of its own (`STEPWISE_DB`, unless the test
//! passes [`Stepwise::db`]), an empty working directory (unless
//! [`Stepwise::current_dir`]), no colour, and none of the environment
//! variables that would pick a model, a provider, a database or a failpoint.
//! When the process has ended, the HOME and XDG folders must still be empty:
//! anything in them — above all `stepwise/stepwise.db`, the default run
//! database — is something the command would have written into the real home
//! of whoever runs `cargo test`, and the test panics, unless it asked for the
//! default database with [`Stepwise::default_db`].
#![allow(dead_code, clippy::unwrap_used, clippy::panic)]

pub(crate) mod log;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{
    Child, ChildStderr, ChildStdin, ChildStdout, Command, ExitStatus, Output, Stdio,
};
use std::sync::Arc;

use serde_json::{Value, json};

/// A fresh folder under the system temp dir, removed when dropped.
pub(crate) struct Scratch(tempfile::TempDir);

impl Scratch {
    /// `<temp>/stepwise-<suite>-<name>-<random>`.
    pub(crate) fn new(suite: &str, name: &str) -> Self {
        Self(
            tempfile::Builder::new()
                .prefix(&format!("stepwise-{suite}-{name}-"))
                .tempdir()
                .unwrap(),
        )
    }

    /// The folder.
    pub(crate) fn path(&self) -> &Path {
        self.0.path()
    }

    /// The run database the tests of this folder share.
    pub(crate) fn db(&self) -> PathBuf {
        self.path().join("runs.db")
    }
}

/// The environment variables a command starts without: they would pick a
/// model, a provider or its key, a database, a failpoint, a delay, a width,
/// or a trace collector (a test's spans never go to the user's).
const REMOVED: [&str; 16] = [
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_SERVICE_NAME",
    "STEPWISE_TRACE_CONTENT",
    "STEPWISE_MODEL",
    "STEPWISE_FAILPOINT",
    "STEPWISE_TOOL_DELAY_MS",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "OLLAMA_BASE_URL",
    "APPDATA",
    "COLUMNS",
    "TERM",
    "XDG_RUNTIME_DIR",
];

/// A stand-in for the user's home: a temporary folder holding an empty
/// HOME, empty XDG folders, an empty working directory and the path of a run
/// database; removed when the last command using it is dropped.
pub(crate) struct Home(tempfile::TempDir);

impl Home {
    pub(crate) fn new() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("stepwise-home-")
            .tempdir()
            .unwrap();
        let home = Self(dir);
        for (_, path) in home.watched() {
            std::fs::create_dir_all(path).unwrap();
        }
        std::fs::create_dir_all(home.work()).unwrap();
        home
    }

    /// `$HOME`.
    pub(crate) fn home(&self) -> PathBuf {
        self.0.path().join("home")
    }

    /// `$XDG_DATA_HOME`.
    pub(crate) fn data(&self) -> PathBuf {
        self.0.path().join("xdg-data")
    }

    /// The working directory unless the test chooses one.
    pub(crate) fn work(&self) -> PathBuf {
        self.0.path().join("work")
    }

    /// `$STEPWISE_DB` unless the test chooses a database.
    pub(crate) fn db(&self) -> PathBuf {
        self.0.path().join("runs.db")
    }

    /// The folders that stand for the user's and must stay empty, with the
    /// variable that points at each.
    fn watched(&self) -> [(&'static str, PathBuf); 5] {
        let root = self.0.path();
        [
            ("HOME", self.home()),
            ("XDG_DATA_HOME", self.data()),
            ("XDG_CONFIG_HOME", root.join("xdg-config")),
            ("XDG_CACHE_HOME", root.join("xdg-cache")),
            ("XDG_STATE_HOME", root.join("xdg-state")),
        ]
    }

    /// For a program that starts the binary itself (an MCP client): the
    /// binary's path and the environment [`Stepwise`] would give it — this
    /// home's folders, its database, no colour — with the variables it
    /// starts without listed apart, to remove. Call
    /// [`assert_untouched`](Self::assert_untouched) after.
    pub(crate) fn for_child(&self) -> (PathBuf, Vec<(&'static str, PathBuf)>, [&'static str; 16]) {
        let mut env: Vec<(&'static str, PathBuf)> = self.watched().into_iter().collect();
        env.push(("STEPWISE_DB", self.db()));
        env.push(("NO_COLOR", PathBuf::from("1")));
        (binary(), env, REMOVED)
    }

    /// Panics if anything appeared in HOME or an XDG folder.
    pub(crate) fn assert_untouched(&self, what: &str) {
        self.check(false, what);
    }

    /// Panics if anything appeared in HOME or an XDG folder; with
    /// `default_db`, the default run database (and its SQLite side files,
    /// under either `$XDG_DATA_HOME` or `$HOME/.local/share`) may.
    fn check(&self, default_db: bool, what: &str) {
        let allowed = |path: &Path| {
            default_db
                && [self.data(), self.home().join(".local/share")]
                    .iter()
                    .any(|base| is_default_db(base, path))
        };
        let mut found = Vec::new();
        for (_, dir) in self.watched() {
            walk(&dir, &mut found);
        }
        found.retain(|p| !allowed(p));
        assert!(
            found.is_empty(),
            "`stepwise {what}` wrote into its stand-in HOME/XDG folders, where it would have \
             written into the real home of whoever runs the tests (the default run database is \
             ~/.local/share/stepwise/stepwise.db): {found:?}. Give it a database (the stand-in's \
             STEPWISE_DB, or Stepwise::db), or call Stepwise::default_db() if the test is about \
             the default path."
        );
    }
}

/// Whether `path` is the default run database under the data folder `base`,
/// one of its SQLite side files (`-wal`, `-shm`, `-journal`), or a folder
/// on the way to it.
fn is_default_db(base: &Path, path: &Path) -> bool {
    let folder = base.join("stepwise");
    let is_db = |name: &str| {
        name.strip_prefix("stepwise.db")
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('-'))
    };
    base.starts_with(path)
        || path == folder
        || (path.parent() == Some(folder.as_path())
            && path.file_name().and_then(OsStr::to_str).is_some_and(is_db))
}

/// Every file and folder under `dir`.
fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_dir() {
            walk(&path, out);
        }
        out.push(path);
    }
}

/// The `stepwise` binary cargo built for the tests: named here only, for
/// [`Stepwise`] and [`Home::for_child`].
fn binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_stepwise"))
}

/// The `stepwise` binary, built like a [`Command`] but isolated (see the
/// module's documentation); `output`, `run` and `spawn` then `wait` check
/// that nothing landed in the stand-in home.
pub(crate) struct Stepwise {
    command: Command,
    home: Arc<Home>,
    default_db: bool,
    what: Vec<String>,
}

impl Stepwise {
    /// In a stand-in home of its own.
    pub(crate) fn new() -> Self {
        Self::in_home(&Arc::new(Home::new()))
    }

    /// In `home`, which other commands may share (to read what this one
    /// left, e.g. with [`Stepwise::default_db`]).
    pub(crate) fn in_home(home: &Arc<Home>) -> Self {
        let mut command = Command::new(binary());
        command.current_dir(home.work());
        for (var, path) in home.watched() {
            command.env(var, path);
        }
        command.env("STEPWISE_DB", home.db()).env("NO_COLOR", "1");
        for var in REMOVED {
            command.env_remove(var);
        }
        Self {
            command,
            home: Arc::clone(home),
            default_db: false,
            what: Vec::new(),
        }
    }

    /// `--db <db>`.
    pub(crate) fn db(self, db: &Path) -> Self {
        self.arg("--db").arg(db)
    }

    /// No `--db` and no `STEPWISE_DB`: the run database is the default one,
    /// `$XDG_DATA_HOME/stepwise/stepwise.db` of the stand-in home, and the
    /// check lets it appear there.
    pub(crate) fn default_db(mut self) -> Self {
        self.command.env_remove("STEPWISE_DB");
        self.default_db = true;
        self
    }

    pub(crate) fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.what.push(arg.as_ref().to_string_lossy().into_owned());
        self.command.arg(arg);
        self
    }

    pub(crate) fn args<S: AsRef<OsStr>>(self, args: impl IntoIterator<Item = S>) -> Self {
        args.into_iter().fold(self, Self::arg)
    }

    pub(crate) fn current_dir(mut self, dir: impl AsRef<Path>) -> Self {
        self.command.current_dir(dir);
        self
    }

    pub(crate) fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.command.env(key, value);
        self
    }

    pub(crate) fn envs(self, vars: &[(&str, &str)]) -> Self {
        vars.iter().fold(self, |c, (k, v)| c.env(k, v))
    }

    pub(crate) fn env_remove(mut self, key: impl AsRef<OsStr>) -> Self {
        self.command.env_remove(key);
        self
    }

    pub(crate) fn stdin(mut self, cfg: Stdio) -> Self {
        self.command.stdin(cfg);
        self
    }

    pub(crate) fn stdout(mut self, cfg: Stdio) -> Self {
        self.command.stdout(cfg);
        self
    }

    pub(crate) fn stderr(mut self, cfg: Stdio) -> Self {
        self.command.stderr(cfg);
        self
    }

    /// Runs it to the end, capturing both streams.
    pub(crate) fn output(mut self) -> Output {
        let out = self.command.output().unwrap();
        self.home.check(self.default_db, &self.what.join(" "));
        out
    }

    /// Runs it to the end; what it printed, as text.
    pub(crate) fn run(self) -> Out {
        let out = self.output();
        Out {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Starts it; [`Running::wait`] or [`Running::wait_with_output`] check
    /// the stand-in home once it has ended.
    pub(crate) fn spawn(mut self) -> Running {
        let child = self.command.spawn().unwrap();
        Running {
            child: Some(child),
            home: self.home,
            default_db: self.default_db,
            what: self.what.join(" "),
        }
    }
}

/// A started [`Stepwise`]; killed if dropped before it was waited for.
pub(crate) struct Running {
    child: Option<Child>,
    home: Arc<Home>,
    default_db: bool,
    what: String,
}

impl Running {
    fn child(&mut self) -> &mut Child {
        self.child.as_mut().unwrap()
    }

    pub(crate) fn id(&self) -> u32 {
        self.child.as_ref().unwrap().id()
    }

    /// Its standard input, if piped (taken: dropping it closes the pipe).
    pub(crate) fn take_stdin(&mut self) -> Option<ChildStdin> {
        self.child().stdin.take()
    }

    /// Its standard error, if piped.
    pub(crate) fn take_stderr(&mut self) -> Option<ChildStderr> {
        self.child().stderr.take()
    }

    /// Its standard output, if piped.
    pub(crate) fn take_stdout(&mut self) -> Option<ChildStdout> {
        self.child().stdout.take()
    }

    /// Whether it has ended, without waiting.
    pub(crate) fn try_wait(&mut self) -> Option<ExitStatus> {
        self.child().try_wait().ok().flatten()
    }

    /// SIGKILL.
    pub(crate) fn kill(&mut self) {
        let _ = self.child().kill();
    }

    pub(crate) fn wait(mut self) -> ExitStatus {
        let status = self.child().wait().unwrap();
        self.home.check(self.default_db, &self.what);
        status
    }

    pub(crate) fn wait_with_output(mut self) -> Output {
        let out = self.child.take().unwrap().wait_with_output().unwrap();
        self.home.check(self.default_db, &self.what);
        out
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            if child.try_wait().ok().flatten().is_none() {
                let _ = child.kill();
            }
            let _ = child.wait();
        }
    }
}

/// What a run of the binary printed, and its exit code (-1 if a signal ended it).
pub(crate) struct Out {
    pub(crate) code: i32,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl Out {
    /// Stdout as JSON; panics with both streams if it is not.
    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}\n{}", self.stdout, self.stderr))
    }
}

/// Runs `stepwise --db <db>` in `cwd` (see [`Stepwise`]), then `env` on top.
pub(crate) fn stepwise(cwd: &Path, db: &Path, args: &[&str], env: &[(&str, &str)]) -> Out {
    Stepwise::new()
        .current_dir(cwd)
        .db(db)
        .args(args)
        .envs(env)
        .run()
}

/// Every built-in strategy, as `stepwise strategies` lists them.
pub(crate) const STRATEGIES: [&str; 6] = [
    "plan-execute",
    "plan-solve",
    "verified",
    "react",
    "react-isolated",
    "router",
];

/// Note ids that a run's search steps actually returned (`--json` output).
pub(crate) fn retrieved(json: &Value) -> Vec<String> {
    json["step_results"]
        .as_object()
        .unwrap()
        .values()
        .flat_map(|r| {
            r["output"]["results"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter_map(|h| h["note_id"].as_str().map(str::to_owned))
        .collect()
}

/// A step's attempts in a run's `--json` output, less those a crash or a
/// takeover cut short (`step_interrupted`): what an uninterrupted run counts.
pub(crate) fn attempts_uninterrupted(v: &Value, step: &str) -> u64 {
    let cut = v["execution_history"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "step_interrupted" && e["step"] == step)
        .count() as u64;
    v["step_results"][step]["attempts"].as_u64().unwrap() - cut
}

/// A plan that searches the notes for the latency budget, then writes the
/// first passage it found to `latency.md`: a side effect, so the run waits
/// for an approval of that `write_file` step.
pub(crate) fn save_plan() -> Value {
    json!({"steps": [
        {"id": "find", "description": "Find the latency budget", "tool": "search_notes",
         "args": {"query": "latency budget first token"}, "acceptance_criteria": ["a passage"]},
        {"id": "save", "description": "Save it", "tool": "write_file", "depends_on": ["find"],
         "args": {"path": "latency.md", "content": "${find.output.results[0].passages[0]}"},
         "acceptance_criteria": ["written"]}
    ]})
}
