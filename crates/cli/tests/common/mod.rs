//! What the CLI tests share: a scratch folder that removes itself, and the
//! `stepwise` binary run in isolation from the user's settings and data.
#![allow(dead_code, clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// A fresh folder under the system temp dir, removed when dropped.
pub(crate) struct Scratch(PathBuf);

impl Scratch {
    /// `<temp>/stepwise-<suite>-<pid>-<name>`, emptied first.
    pub(crate) fn new(suite: &str, name: &str) -> Self {
        let p =
            std::env::temp_dir().join(format!("stepwise-{suite}-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Self(p)
    }

    /// The folder.
    pub(crate) fn path(&self) -> &Path {
        &self.0
    }

    /// The run database the tests of this folder share.
    pub(crate) fn db(&self) -> PathBuf {
        self.0.join("runs.db")
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
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

/// Runs `stepwise` with its own database `db`, `cwd` as working directory
/// and HOME (no `stepwise.toml`, `.env` or home-directory writes of the
/// user's), no colour, and none of the environment variables that would
/// pick a model, a database or a failpoint; then `env` on top.
pub(crate) fn stepwise(cwd: &Path, db: &Path, args: &[&str], env: &[(&str, &str)]) -> Out {
    let mut c = Command::new(env!("CARGO_BIN_EXE_stepwise"));
    c.arg("--db")
        .arg(db)
        .args(args)
        .current_dir(cwd)
        .env("HOME", cwd)
        .env("NO_COLOR", "1")
        .env_remove("STEPWISE_DB")
        .env_remove("STEPWISE_MODEL")
        .env_remove("STEPWISE_FAILPOINT")
        .env_remove("STEPWISE_TOOL_DELAY_MS");
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
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
