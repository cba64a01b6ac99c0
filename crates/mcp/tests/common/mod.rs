//! The MCP servers the tests run: the official reference servers from npm
//! (`@modelcontextprotocol/server-filesystem` and `server-memory`, pinned in
//! `tests/npm/package-lock.json`) and `tests/npm/servers/probe.mjs`, a small
//! server on the official SDK for what the reference servers cannot show.
//! A missing install fails the test with the command that installs them.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use stepwise_mcp::{LogKind, LogLine, Options, ServerConfig};

/// `crates/mcp/tests/npm`.
pub(crate) fn npm_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/npm")
}

/// The entry script of an installed package, failing (not skipping) the
/// test when it is not installed.
pub(crate) fn installed(package: &str, script: &str) -> PathBuf {
    let path = npm_dir().join("node_modules").join(package).join(script);
    assert!(
        path.is_file(),
        "{package} is not installed ({} is missing). These tests run against the official MCP \
         reference servers from npm; install the pinned versions with\n\n    \
         npm ci --prefix crates/mcp/tests/npm\n\n(`scripts/test` does it before `cargo test`; \
         it needs node and npm).",
        path.display()
    );
    path
}

/// `node`, failing the test when it is missing.
pub(crate) fn node() -> &'static str {
    let ok = std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "node is not on PATH; the MCP tests run the reference servers with it"
    );
    "node"
}

/// `@modelcontextprotocol/server-filesystem`, allowed into `root`.
pub(crate) fn filesystem(root: &Path) -> ServerConfig {
    let script = installed("@modelcontextprotocol/server-filesystem", "dist/index.js");
    ServerConfig::stdio(
        node(),
        [script.display().to_string(), root.display().to_string()],
    )
}

/// `@modelcontextprotocol/server-memory`, its graph in `file`.
pub(crate) fn memory(file: &Path) -> ServerConfig {
    let script = installed("@modelcontextprotocol/server-memory", "dist/index.js");
    let mut config = ServerConfig::stdio(node(), [script.display().to_string()]);
    config
        .env
        .insert("MEMORY_FILE_PATH".to_owned(), file.display().to_string());
    config
}

/// `servers/probe.mjs` over stdio, appending to `ledger`.
pub(crate) fn probe(ledger: &Path) -> ServerConfig {
    installed("@modelcontextprotocol/sdk", "package.json");
    let script = npm_dir().join("servers/probe.mjs");
    let mut config = ServerConfig::stdio(node(), [script.display().to_string()]);
    config
        .env
        .insert("PROBE_LEDGER".to_owned(), ledger.display().to_string());
    config
}

/// What the servers logged, kept for assertions.
#[derive(Clone, Default)]
pub(crate) struct Log(pub(crate) Arc<Mutex<Vec<(String, LogKind, String)>>>);

impl Log {
    pub(crate) fn options(&self) -> Options {
        let lines = Arc::clone(&self.0);
        Options {
            log: Some(Arc::new(move |l: LogLine<'_>| {
                lines
                    .lock()
                    .unwrap()
                    .push((l.server.to_owned(), l.kind, l.text.to_owned()));
            })),
            ..Options::default()
        }
    }

    pub(crate) fn lines(&self, kind: LogKind) -> Vec<String> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, k, _)| *k == kind)
            .map(|(s, _, t)| format!("{s}: {t}"))
            .collect()
    }
}

/// Whether `pid` is a live process (not a zombie waiting to be reaped).
pub(crate) fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// Live processes whose process group is `pgid`.
pub(crate) fn group(pgid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        // state ppid pgrp …
        if fields.len() > 2 && fields[0] != "Z" && fields[2] == pgid.to_string() {
            out.push(pid);
        }
    }
    out
}

/// Waits up to `secs` for `check`.
pub(crate) fn eventually(secs: u64, check: impl Fn() -> bool) -> bool {
    let deadline = std::time::Instant::now() + Duration::from_secs(secs);
    while std::time::Instant::now() < deadline {
        if check() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    check()
}

/// SIGKILL to one process.
pub(crate) fn kill9(pid: u32) {
    let status = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "kill -9 {pid}");
}
