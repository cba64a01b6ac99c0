//! The Python client (clients/python) against a real `stepwise serve` on a
//! loopback port: its own tests (clients/python/tests), run by the
//! virtualenv scripts/test installs it into (STEPWISE_TEST_PYTHON_CLIENT,
//! the venv's python).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

mod common;

use common::{Scratch, Stepwise};

const TOKEN: &str = "acme-0123456789abcdef0123";

#[test]
fn the_python_client_passes_its_tests_against_a_live_server() {
    let python = std::env::var("STEPWISE_TEST_PYTHON_CLIENT").unwrap_or_else(|_| {
        panic!("STEPWISE_TEST_PYTHON_CLIENT is not set: run scripts/test (it installs clients/python into a virtualenv in the build folder and sets it)")
    });
    let site = Scratch::new("python-client", "live");
    let p = site.path();
    let notes = p.join("roots/notes/support");
    std::fs::create_dir_all(&notes).unwrap();
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/notes");
    for entry in std::fs::read_dir(&examples).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, notes.join(path.file_name().unwrap())).unwrap();
    }
    std::fs::create_dir_all(p.join("roots/ws")).unwrap();
    std::fs::write(
        p.join("stepwise.toml"),
        "[serve]\nnotes_roots = [\"roots/notes\"]\nworkspace_root = \"roots/ws\"\n",
    )
    .unwrap();
    let mut running = Stepwise::new()
        .current_dir(p)
        .db(&site.db())
        .args(["serve", "--listen", "127.0.0.1:0"])
        .env("STEPWISE_SERVE_TOKENS", format!("acme:{TOKEN}"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn();
    let mut line = String::new();
    BufReader::new(running.take_stdout().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .trim()
        .strip_prefix("stepwise serve: listening on ")
        .unwrap_or_else(|| panic!("no address printed: {line:?}"))
        .to_owned();
    let client = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../clients/python");
    // Bounded: a client that waited forever would hang the suite.
    let out = Command::new("timeout")
        .arg("300")
        .arg(&python)
        .args(["-m", "unittest", "discover", "-s", "tests", "-v"])
        .current_dir(&client)
        .env("STEPWISE_URL", &url)
        .env("STEPWISE_TOKEN", TOKEN)
        .env("NOTES", "support")
        .env("WORKSPACE", "out")
        .env("PLAN", common::save_plan().to_string())
        .env("PYTHONPATH", client.join("src"))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("the client's python runs");
    running.kill();
    assert!(
        out.status.success(),
        "the Python client's tests failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let report = String::from_utf8_lossy(&out.stderr);
    assert!(report.contains("Ran 6 tests"), "{report}");
}
