//! The dashboard at `/`, in a real browser: Debian's chromium, headless,
//! driven by `playwright-core` (both installed by `scripts/test`) through
//! `tests/browser/dashboard.mjs`. It signs in, submits a run from the page
//! whose plan writes a file, watches a step turn `succeeded` without a
//! reload, approves the paused `write_file` step from the page (shown with
//! its exact tool and arguments), sees the run end `ok`, and saves a
//! screenshot under `$CARGO_TARGET_TMPDIR/dashboard/`; the same with its
//! event stream cut twice (nothing missed or repeated across reconnects). Also: the page's
//! assets need no token while every API route still does, and with
//! `--insecure-no-auth` the page needs no sign-in.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stderr
)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

mod common;

use common::{Running, Scratch, Stepwise, save_plan};

const TOKEN: &str = "acme-dashboard-token-0123456789";
const CHROMIUM: &str = "/usr/bin/chromium";

fn browser_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser")
}

/// Chromium and the npm driver, or a failure that says how to get them.
fn browser_prerequisites() {
    assert!(
        Path::new(CHROMIUM).exists(),
        "{CHROMIUM} is missing: run scripts/test (it installs Debian's chromium)"
    );
    assert!(
        browser_dir().join("node_modules/playwright-core").exists(),
        "{}/node_modules/playwright-core is missing: run scripts/test (npm ci --prefix crates/cli/tests/browser)",
        browser_dir().display()
    );
}

/// A folder laid out for a server: a notes root with `tiny`, a workspace
/// root, `stepwise.toml` with one token, and the database.
fn site(name: &str) -> Scratch {
    let scratch = Scratch::new("dashboard", name);
    let p = scratch.path();
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/notes");
    let tiny = p.join("roots/notes/tiny");
    std::fs::create_dir_all(&tiny).unwrap();
    for note in ["pilot-results-q2.md", "latency-budget.txt"] {
        std::fs::copy(examples.join(note), tiny.join(note)).unwrap();
    }
    std::fs::create_dir_all(p.join("roots/ws")).unwrap();
    std::fs::write(
        p.join("stepwise.toml"),
        format!(
            "[serve]\nnotes_roots = [\"roots/notes\"]\nworkspace_root = \"roots/ws\"\n\
             [[serve.tokens]]\ntenant = \"acme\"\ntoken = \"{TOKEN}\"\n"
        ),
    )
    .unwrap();
    scratch
}

/// `stepwise serve` on 127.0.0.1, a port the system picks; its URL.
fn serve(site: &Scratch, args: &[&str]) -> (Running, String) {
    let log = std::fs::File::create(site.path().join("serve.log")).unwrap();
    let mut running = Stepwise::new()
        .current_dir(site.path())
        .db(&site.db())
        .args(["serve", "--listen", "127.0.0.1:0"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::from(log))
        .spawn();
    let mut line = String::new();
    BufReader::new(running.take_stdout().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .trim()
        .strip_prefix("stepwise serve: listening on ")
        .unwrap_or_else(|| {
            panic!(
                "no address printed: {line:?}\n{}",
                std::fs::read_to_string(site.path().join("serve.log")).unwrap_or_default()
            )
        })
        .to_owned();
    (running, url)
}

/// Runs the browser driver; what it saw, as JSON.
fn drive(env: &[(&str, &str)]) -> Value {
    let out = Command::new("node")
        .arg(browser_dir().join("dashboard.mjs"))
        .current_dir(browser_dir())
        .envs(env.iter().copied())
        .output()
        .expect("node is needed to drive the browser (scripts/test needs it too)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the browser run failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("the driver printed no JSON ({e}): {stdout}"))
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// The approval scenario, driven from the page: what the driver saw and
/// what `stepwise show --json` says of the run afterwards. With
/// `cut_streams`, the first two event streams the page opens are cut short.
fn approval_flow(name: &str, cut_streams: bool) -> (Value, Value) {
    browser_prerequisites();
    let site = site(name);
    let (mut server, url) = serve(&site, &[]);
    let out_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("dashboard");
    std::fs::create_dir_all(&out_dir).unwrap();
    let screenshot = out_dir.join(format!("{name}.png"));
    let _ = std::fs::remove_file(&screenshot);
    let profile = site.path().join("chromium-profile");
    let seen = drive(&[
        ("STEPWISE_URL", url.as_str()),
        ("STEPWISE_TOKEN", TOKEN),
        ("DASH_NOTES", "tiny"),
        ("DASH_WORKSPACE", "w1"),
        ("DASH_PLAN", &save_plan().to_string()),
        ("DASH_SCREENSHOT", screenshot.to_str().unwrap()),
        ("DASH_PROFILE", profile.to_str().unwrap()),
        ("DASH_CUT_STREAMS", if cut_streams { "1" } else { "" }),
    ]);
    assert_eq!(seen["errors"], json!([]), "{seen}");
    assert_eq!(seen["noReload"], "same page", "the page reloaded: {seen}");
    assert_eq!(
        seen["reportRaw"], false,
        "raw Markdown in the report: {seen}"
    );
    assert!(
        seen["reportCode"].as_u64().unwrap_or(0) >= 1,
        "the Actions line's `write_file` as code: {seen}"
    );
    // Before the approval the page showed the step waiting, with the exact
    // tool and the arguments the step asks with.
    assert_eq!(seen["runStatusBefore"], "awaiting_approval", "{seen}");
    assert_eq!(seen["saveStatusBefore"], "pending", "{seen}");
    assert_eq!(seen["tool"], "write_file", "{seen}");
    assert_eq!(seen["args"]["path"], "latency.md", "{seen}");
    let content = seen["args"]["content"].as_str().unwrap();
    assert!(content.contains("1.5 seconds"), "{seen}");
    // The approval reached the run: the file holds what the page showed.
    let written = site.path().join("roots/ws/w1/latency.md");
    assert_eq!(
        std::fs::read_to_string(&written).unwrap_or_default(),
        content
    );
    // The run ended ok, as `stepwise show` says, approved by the tenant.
    let run = seen["runId"].as_str().unwrap();
    server.kill();
    let shown = Stepwise::new()
        .current_dir(site.path())
        .db(&site.db())
        .args(["show", run, "--json"])
        .run()
        .json();
    assert_eq!(shown["status"], "ok");
    let history = shown["execution_history"].as_array().unwrap();
    assert!(
        history
            .iter()
            .any(|e| e["kind"] == "approval_granted" && e["step"] == "save" && e["by"] == "acme"),
        "{shown}"
    );
    // Every event was drawn once: the rows are the log.
    assert_eq!(
        seen["events"].as_u64(),
        Some(history.len() as u64),
        "{seen}"
    );
    // The list row and the report's citation came from the same output.
    assert_eq!(seen["listed"][1], "ok", "{seen}");
    assert_eq!(seen["listed"][4], "2/2", "{seen}");
    // The one run, approved by a person on the way: ok, not closed-loop,
    // recovered from its pause.
    let health = seen["health"].as_str().unwrap();
    assert!(health.starts_with("1 runs · 1 ok · "), "{health}");
    assert!(health.contains("closed loop 0%"), "{health}");
    assert!(health.contains("recovered 100%"), "{health}");
    let quotes: Vec<&str> = shown["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["quote"].as_str().unwrap())
        .collect();
    assert!(
        quotes.contains(&seen["citedQuote"].as_str().unwrap()),
        "{seen}"
    );
    assert!(seen["critical"].as_u64().unwrap() >= 1, "{seen}");
    let png = std::fs::read(&screenshot).unwrap();
    assert!(png.starts_with(b"\x89PNG"), "no screenshot");
    eprintln!("screenshot: {}", screenshot.display());
    (seen, shown)
}

/// A list of numbers in the driver's JSON.
fn numbers(v: &Value, pick: &str) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|e| {
            if pick.is_empty() {
                e.as_f64().unwrap()
            } else {
                e[pick].as_f64().unwrap()
            }
        })
        .collect()
}

#[test]
fn a_run_is_submitted_watched_and_approved_from_the_page_in_headless_chromium() {
    let (seen, _) = approval_flow("run-page", false);
    // The figure docs/server.md reports (printed, not asserted).
    let mut lags = numbers(&seen["latency"]["events"], "lag_ms");
    assert!(!lags.is_empty(), "no event was seen live: {seen}");
    lags.sort_by(f64::total_cmp);
    let mut steps = numbers(&seen["latency"]["steps"], "lag_ms");
    steps.sort_by(f64::total_cmp);
    eprintln!(
        "event appended -> row drawn: {} events, median {:.1} ms, p95 {:.1} ms, max {:.1} ms; \
         step event -> status drawn in the graph: {} changes, median {:.1} ms, max {:.1} ms",
        lags.len(),
        percentile(&lags, 0.5),
        percentile(&lags, 0.95),
        lags[lags.len() - 1],
        steps.len(),
        if steps.is_empty() {
            f64::NAN
        } else {
            percentile(&steps, 0.5)
        },
        steps.last().copied().unwrap_or(f64::NAN),
    );
}

#[test]
fn a_cut_event_stream_resumes_from_last_event_id_with_nothing_missed_or_repeated() {
    let (seen, shown) = approval_flow("cut-streams", true);
    let last = shown["execution_history"].as_array().unwrap().len() as u64;
    // Cut twice (once with nothing sent, once repeating an event the page
    // had), the stream was reopened each time from the same Last-Event-ID...
    let after = seen["streamed"]["after"].as_u64().unwrap();
    let streams: Vec<u64> = numbers(&seen["streams"], "")
        .into_iter()
        .map(|n| n as u64)
        .collect();
    assert!(streams.len() >= 3, "{seen}");
    assert_eq!(streams[..3], [after; 3], "{seen}");
    // ...and delivered every event after it exactly once, in order.
    let streamed: Vec<u64> = numbers(&seen["streamed"]["seqs"], "")
        .into_iter()
        .map(|n| n as u64)
        .collect();
    assert_eq!(streamed, (after + 1..=last).collect::<Vec<_>>(), "{seen}");
}

#[test]
fn without_auth_on_loopback_the_page_needs_no_sign_in() {
    browser_prerequisites();
    let site = site("no-auth");
    let (_server, url) = serve(&site, &["--insecure-no-auth"]);
    let out_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("dashboard");
    std::fs::create_dir_all(&out_dir).unwrap();
    let profile = site.path().join("chromium-profile");
    let seen = drive(&[
        ("STEPWISE_URL", url.as_str()),
        ("DASH_MODE", "no-auth"),
        (
            "DASH_SCREENSHOT",
            out_dir.join("runs-no-auth.png").to_str().unwrap(),
        ),
        ("DASH_PROFILE", profile.to_str().unwrap()),
    ]);
    assert_eq!(seen["signIn"], false, "{seen}");
    assert_eq!(seen["who"], "no auth (loopback only)", "{seen}");
    assert_eq!(seen["errors"], json!([]), "{seen}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_needs_no_token_and_every_api_route_still_does() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let site = site("assets");
    let (_server, url) = serve(&site, &[]);
    let http = reqwest::Client::new();
    let mut app = String::new();
    for (path, kind) in [
        ("/", "text/html"),
        ("/dashboard/app.js", "text/javascript"),
        ("/dashboard/style.css", "text/css"),
    ] {
        let res = http.get(format!("{url}{path}")).send().await.unwrap();
        assert_eq!(res.status().as_u16(), 200, "{path}");
        let headers = res.headers().clone();
        assert!(
            headers["content-type"].to_str().unwrap().starts_with(kind),
            "{path}: {headers:?}"
        );
        // Only this origin's scripts and connections; no cookie is set.
        let csp = headers["content-security-policy"].to_str().unwrap();
        assert!(csp.contains("script-src 'self'") && csp.contains("connect-src 'self'"));
        assert!(!headers.contains_key("set-cookie"), "{path}");
        let body = res.text().await.unwrap();
        assert!(!body.contains("acme"), "{path} holds no tenant data");
        if path.ends_with("app.js") {
            app = body;
        }
    }
    // The page is embedded: it names no other origin.
    let app = app.replace("http://www.w3.org/2000/svg", "SVG_NAMESPACE");
    assert!(
        !app.contains("http://") && !app.contains("https://") && !app.contains("//cdn"),
        "app.js names another origin"
    );
    // Serving the page opened nothing: without the header, the API is 401.
    let submitted = http
        .post(format!("{url}/v1/runs"))
        .bearer_auth(TOKEN)
        .json(&json!({"goal": "What is the latency budget?", "notes": "tiny"}))
        .send()
        .await
        .unwrap();
    assert_eq!(submitted.status().as_u16(), 202);
    let run: Value = submitted.json().await.unwrap();
    let id = run["run_id"].as_str().unwrap();
    for (method, path) in [
        ("GET", "/v1/runs".to_owned()),
        ("POST", "/v1/runs".to_owned()),
        ("GET", format!("/v1/runs/{id}")),
        ("GET", format!("/v1/runs/{id}/events")),
        ("GET", format!("/v1/runs/{id}/approvals")),
        ("POST", format!("/v1/runs/{id}/approve")),
        ("POST", format!("/v1/runs/{id}/reject")),
        ("POST", format!("/v1/runs/{id}/resume")),
        ("POST", format!("/v1/runs/{id}/cancel")),
        ("GET", "/metrics".to_owned()),
    ] {
        let res = http
            .request(method.parse().unwrap(), format!("{url}{path}"))
            .header("accept", "text/event-stream")
            .header("content-type", "application/json")
            .body("{}")
            .send()
            .await
            .unwrap();
        assert_eq!(res.status().as_u16(), 401, "{method} {path}");
    }
}
