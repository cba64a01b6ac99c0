//! `stepwise serve` end to end, over loopback HTTP on a port the system
//! picks: every endpoint, auth (401 without a valid token, another
//! tenant's runs 404 on every route), paths outside the allowed roots,
//! event streams resumed with `Last-Event-ID`, approvals bound to the
//! argument hash, cancel of a running run, shutdown mid-run and resume on
//! restart, runs handed between the server and the CLI, request hygiene,
//! the OpenAPI document and `/metrics`; and a bounded load test (200 event
//! streams over 100 runs, every event received exactly once).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod common;

use common::{Running, Scratch, Stepwise, save_plan};
use stepwise_store::postgres::testing::ScratchDb;

const ACME: &str = "acme-token-0123456789";
const GLOBEX: &str = "globex-token-0123456789";

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

/// A folder laid out as a server's: `stepwise.toml`, a notes root with
/// `rag` (the example notes) and `tiny` (two notes), a workspace root, a
/// notes folder outside the roots and a link to it from inside, the database.
struct Site(Scratch, Option<ScratchDb>);

impl Site {
    /// A site whose run database is a scratch PostgreSQL database, migrated.
    fn on_postgres(name: &str) -> Site {
        Site::on_postgres_with(name, "")
    }

    /// As [`Site::on_postgres`], with `extra_toml` in `[serve]`.
    fn on_postgres_with(name: &str, extra_toml: &str) -> Site {
        let db = ScratchDb::new(name).unwrap_or_else(|e| panic!("{e}"));
        let mut site = Site::new(name, extra_toml);
        site.1 = Some(db);
        let migrated = site.cli(&["migrate"], &[]);
        assert_eq!(migrated.code, 0, "{}", migrated.stderr);
        site
    }

    fn new(name: &str, extra_toml: &str) -> Site {
        let scratch = Scratch::new("serve", name);
        let p = scratch.path();
        let rag = p.join("roots/notes/rag");
        std::fs::create_dir_all(&rag).unwrap();
        for entry in std::fs::read_dir(examples().join("notes")).unwrap() {
            let path = entry.unwrap().path();
            std::fs::copy(&path, rag.join(path.file_name().unwrap())).unwrap();
        }
        let tiny = p.join("roots/notes/tiny");
        std::fs::create_dir_all(&tiny).unwrap();
        std::fs::copy(
            examples().join("notes/pilot-results-q2.md"),
            tiny.join("pilot-results-q2.md"),
        )
        .unwrap();
        std::fs::copy(
            examples().join("notes/latency-budget.txt"),
            tiny.join("latency-budget.txt"),
        )
        .unwrap();
        std::fs::create_dir_all(p.join("roots/ws")).unwrap();
        std::fs::create_dir_all(p.join("outside/secret")).unwrap();
        std::fs::write(p.join("outside/secret/keys.md"), "# Keys\nThe secret.\n").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(p.join("outside"), p.join("roots/notes/escape")).unwrap();
        let toml = format!(
            "[serve]\nnotes_roots = [\"roots/notes\"]\nworkspace_root = \"roots/ws\"\n{extra_toml}\n\
             [[serve.tokens]]\ntenant = \"acme\"\ntoken = \"{ACME}\"\n\
             [[serve.tokens]]\ntenant = \"globex\"\ntoken_env = \"GLOBEX_TOKEN\"\n"
        );
        std::fs::write(p.join("stepwise.toml"), toml).unwrap();
        Site(scratch, None)
    }

    fn path(&self) -> &Path {
        self.0.path()
    }

    /// The `--db` value: the SQLite file, or the PostgreSQL URL.
    fn db(&self) -> PathBuf {
        match &self.1 {
            Some(pg) => PathBuf::from(pg.url()),
            None => self.0.db(),
        }
    }

    /// `stepwise worker` on this site's database, in its folder.
    fn worker(&self, extra: &[&str], env: &[(&str, &str)]) -> Stepwise {
        Stepwise::new()
            .current_dir(self.path())
            .db(&self.db())
            .args(["worker", "--lease-ms", "3000", "--poll-ms", "50"])
            .args(extra)
            .envs(env)
    }

    /// `stepwise serve` here, with `env` on top.
    fn serve(&self, env: &[(&str, &str)]) -> Server {
        Server::start(self, &[], env)
    }

    /// A `stepwise` command on this site's database, in its folder.
    fn cli(&self, args: &[&str], env: &[(&str, &str)]) -> common::Out {
        Stepwise::new()
            .current_dir(self.path())
            .db(&self.db())
            .args(args)
            .envs(env)
            .run()
    }
}

/// A running `stepwise serve`.
struct Server {
    running: Option<Running>,
    url: String,
    stderr: Arc<Mutex<String>>,
    /// The thread copying the server's stderr into `stderr`.
    reader: Option<std::thread::JoinHandle<()>>,
    http: reqwest::Client,
}

/// An HTTP answer: status and JSON body (Null if it was not JSON).
#[derive(Debug)]
struct Answer {
    status: u16,
    body: Value,
    headers: reqwest::header::HeaderMap,
}

impl Answer {
    fn code(&self) -> &str {
        self.body["error"]["code"].as_str().unwrap_or("")
    }
}

impl Server {
    fn start(site: &Site, args: &[&str], env: &[(&str, &str)]) -> Server {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut running = Stepwise::new()
            .current_dir(site.path())
            .db(&site.db())
            .args(["serve", "--listen", "127.0.0.1:0"])
            .args(args)
            .env("GLOBEX_TOKEN", GLOBEX)
            .envs(env)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn();
        let stderr = Arc::new(Mutex::new(String::new()));
        let mut pipe = running.take_stderr().unwrap();
        let sink = Arc::clone(&stderr);
        let reader = std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = pipe.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        let mut line = String::new();
        let mut out = BufReader::new(running.take_stdout().unwrap());
        out.read_line(&mut line).unwrap();
        let url = match line.trim().strip_prefix("stepwise serve: listening on ") {
            Some(url) => url.to_owned(),
            None => {
                let status = running.wait();
                panic!(
                    "no address printed ({status}): {line:?}\n{}",
                    stderr.lock().unwrap()
                );
            }
        };
        assert!(url.starts_with("http://127.0.0.1:"), "{url}");
        Server {
            running: Some(running),
            url,
            stderr,
            reader: Some(reader),
            http: reqwest::Client::builder()
                .pool_max_idle_per_host(0)
                .build()
                .unwrap(),
        }
    }

    fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    async fn request(
        &self,
        method: reqwest::Method,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
    ) -> Answer {
        let mut req = self.http.request(method, format!("{}{path}", self.url));
        if let Some(token) = token {
            req = req.bearer_auth(token);
        }
        if let Some(body) = body {
            req = req.json(&body);
        }
        let response = req.send().await.unwrap();
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let text = response.text().await.unwrap();
        Answer {
            status,
            body: serde_json::from_str(&text).unwrap_or(Value::Null),
            headers,
        }
    }

    async fn get(&self, path: &str, token: &str) -> Answer {
        self.request(reqwest::Method::GET, path, Some(token), None)
            .await
    }

    async fn post(&self, path: &str, token: &str, body: Value) -> Answer {
        self.request(reqwest::Method::POST, path, Some(token), Some(body))
            .await
    }

    /// Submits a run as `token`; returns its id.
    async fn submit(&self, token: &str, body: Value) -> String {
        let answer = self.post("/v1/runs", token, body).await;
        assert_eq!(answer.status, 202, "{answer:?}\n{}", self.stderr());
        assert_eq!(answer.body["status"], "queued");
        let id = answer.body["run_id"].as_str().unwrap().to_owned();
        assert_eq!(
            answer.headers["location"].to_str().unwrap(),
            format!("/v1/runs/{id}")
        );
        id
    }

    /// Waits until the run's status (as listed) is one of `want`.
    async fn wait_for(&self, token: &str, run: &str, want: &[&str]) -> Value {
        let start = Instant::now();
        loop {
            let answer = self.get(&format!("/v1/runs/{run}"), token).await;
            assert_eq!(answer.status, 200, "{answer:?}");
            let status = answer.body["status"].as_str().unwrap_or("").to_owned();
            if want.contains(&status.as_str()) {
                return answer.body;
            }
            assert!(
                start.elapsed() < Duration::from_secs(90),
                "run {run} still {status}, not {want:?}\n{}",
                self.stderr()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Opens a run's event stream, after `last` if given.
    async fn stream(&self, token: &str, run: &str, last: Option<u64>) -> Stream {
        let mut req = self
            .http
            .get(format!("{}/v1/runs/{run}/events", self.url))
            .bearer_auth(token)
            .header("accept", "text/event-stream");
        if let Some(last) = last {
            req = req.header("last-event-id", last.to_string());
        }
        let response = req.send().await.unwrap();
        assert_eq!(response.status().as_u16(), 200);
        assert!(
            response.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/event-stream")
        );
        Stream {
            response,
            buf: String::new(),
        }
    }

    /// SIGTERM, then waits for the process to end (at most `within`).
    fn terminate(&mut self, within: Duration) -> (ExitStatus, Duration) {
        let mut running = self.running.take().unwrap();
        let started = Instant::now();
        let status = std::process::Command::new("kill")
            .args(["-TERM", &running.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        loop {
            if let Some(status) = running.try_wait() {
                let took = started.elapsed();
                let _ = running.wait();
                self.drain_stderr();
                return (status, took);
            }
            assert!(
                started.elapsed() < within,
                "still running {within:?} after SIGTERM\n{}",
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits until everything the ended server wrote to stderr is in
    /// `stderr` (its pipe closed), so what it said last can be checked.
    fn drain_stderr(&mut self) {
        if let Some(reader) = self.reader.take() {
            let started = Instant::now();
            while !reader.is_finished() {
                assert!(
                    started.elapsed() < Duration::from_secs(30),
                    "the server's stderr is still open 30 s after it ended (a child of it holds it?)"
                );
                std::thread::sleep(Duration::from_millis(10));
            }
            reader.join().unwrap();
        }
    }

    /// SIGKILL, as a crash would.
    fn kill(&mut self) {
        let mut running = self.running.take().unwrap();
        running.kill();
        let _ = running.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut running) = self.running.take() {
            running.kill();
            let _ = running.wait();
        }
    }
}

/// One server-sent event.
#[derive(Debug, Clone)]
struct Message {
    id: Option<u64>,
    event: String,
    data: String,
}

/// A text/event-stream being read.
struct Stream {
    response: reqwest::Response,
    buf: String,
}

impl Stream {
    /// The next event (comments skipped), or `None` once the server closed it.
    async fn next(&mut self) -> Option<Message> {
        loop {
            if let Some(at) = self.buf.find("\n\n") {
                let block: String = self.buf.drain(..at + 2).collect();
                let mut message = Message {
                    id: None,
                    event: "message".to_owned(),
                    data: String::new(),
                };
                let mut any = false;
                for line in block.lines() {
                    if let Some(v) = line.strip_prefix("id:") {
                        message.id = Some(v.trim().parse().unwrap());
                        any = true;
                    } else if let Some(v) = line.strip_prefix("event:") {
                        message.event = v.trim().to_owned();
                        any = true;
                    } else if let Some(v) = line.strip_prefix("data:") {
                        message.data.push_str(v.strip_prefix(' ').unwrap_or(v));
                        any = true;
                    }
                }
                if any {
                    return Some(message);
                }
                continue;
            }
            match tokio::time::timeout(Duration::from_secs(60), self.response.chunk()).await {
                Ok(Ok(Some(chunk))) => self.buf.push_str(&String::from_utf8_lossy(&chunk)),
                Ok(_) => return None,
                Err(_) => panic!("no event within 60 s; have {:?}", self.buf),
            }
        }
    }

    /// Every event up to and including the first of kind `kind`.
    async fn until(&mut self, kind: &str) -> Vec<Message> {
        let mut seen = Vec::new();
        while let Some(m) = self.next().await {
            let done = m.event == kind;
            seen.push(m);
            if done {
                return seen;
            }
        }
        panic!(
            "the stream ended before {kind}: {:?}",
            seen.iter().map(|m| &m.event).collect::<Vec<_>>()
        );
    }
}

/// A run the notes answer: it ends `ok`.
fn run_body(notes: &str) -> Value {
    let goal = if notes == "tiny" {
        "What is the latency budget for the first token?"
    } else {
        "Should our team adopt retrieval-augmented generation for customer support?"
    };
    json!({"goal": goal, "notes": notes})
}

/// The seqs of the events of a run, as the JSON page lists them.
async fn logged(server: &Server, token: &str, run: &str) -> Vec<Value> {
    let page = server.get(&format!("/v1/runs/{run}/events"), token).await;
    assert_eq!(page.status, 200, "{page:?}");
    let events = page.body["events"].as_array().unwrap().clone();
    assert_eq!(page.body["last_seq"].as_u64(), Some(events.len() as u64));
    events
}

/// Every route of the API, with `{id}` for the run.
const ROUTES: [(&str, &str); 11] = [
    ("POST", "/v1/runs"),
    ("GET", "/v1/runs"),
    ("GET", "/v1/stats"),
    ("GET", "/v1/runs/{id}"),
    ("GET", "/v1/runs/{id}/events"),
    ("GET", "/v1/runs/{id}/approvals"),
    ("POST", "/v1/runs/{id}/approve"),
    ("POST", "/v1/runs/{id}/reject"),
    ("POST", "/v1/runs/{id}/resume"),
    ("POST", "/v1/runs/{id}/cancel"),
    ("GET", "/metrics"),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_refuses_a_missing_or_unknown_token_with_401() {
    let site = Site::new("auth", "");
    let server = site.serve(&[]);
    let run = server.submit(ACME, run_body("tiny")).await;
    for (method, path) in ROUTES {
        let path = path.replace("{id}", &run);
        let method: reqwest::Method = method.parse().unwrap();
        for token in [None, Some("not-a-token-at-all-0000"), Some("")] {
            let mut req = server
                .http
                .request(method.clone(), format!("{}{path}", server.url));
            if let Some(token) = token {
                req = req.header("authorization", format!("Bearer {token}"));
            }
            let response = req
                .header("content-type", "application/json")
                .body("{}")
                .send()
                .await
                .unwrap();
            assert_eq!(response.status().as_u16(), 401, "{method} {path} {token:?}");
            assert!(
                response.headers()["www-authenticate"]
                    .to_str()
                    .unwrap()
                    .starts_with("Bearer")
            );
            let body: Value = response.json().await.unwrap();
            assert_eq!(body["error"]["code"], "unauthorized", "{method} {path}");
        }
        let basic = server
            .http
            .request(method.clone(), format!("{}{path}", server.url))
            .header("authorization", format!("Basic {ACME}"))
            .send()
            .await
            .unwrap();
        assert_eq!(basic.status().as_u16(), 401, "{method} {path} (Basic)");
    }
    // The document is public: it holds no run.
    let doc = server
        .http
        .get(format!("{}/v1/openapi.json", server.url))
        .send()
        .await
        .unwrap();
    assert_eq!(doc.status().as_u16(), 200);
    server.wait_for(ACME, &run, &["ok", "needs_review"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_tenants_runs_are_404_on_every_route() {
    let site = Site::new("tenants", "");
    let server = site.serve(&[]);
    let acme = server.submit(ACME, run_body("tiny")).await;
    let globex = server.submit(GLOBEX, run_body("tiny")).await;
    server.wait_for(ACME, &acme, &["ok", "needs_review"]).await;
    server
        .wait_for(GLOBEX, &globex, &["ok", "needs_review"])
        .await;
    for (method, path) in ROUTES {
        if !path.contains("{id}") {
            continue;
        }
        let path = path.replace("{id}", &acme);
        let method: reqwest::Method = method.parse().unwrap();
        let body = match path.rsplit('/').next().unwrap() {
            "reject" => Some(json!({"reason": "no"})),
            "approve" => Some(json!({"steps": [{"step": "save", "args_hash": "x"}]})),
            _ => Some(json!({})),
        };
        let answer = server
            .request(method.clone(), &path, Some(GLOBEX), body.clone())
            .await;
        assert_eq!(answer.status, 404, "{method} {path}: {answer:?}");
        assert_eq!(answer.code(), "run_not_found", "{method} {path}");
        // Exactly the answer for a run that does not exist.
        let missing = path.replace(&acme, "run_00000000000000000000");
        let nothing = server.request(method, &missing, Some(GLOBEX), body).await;
        assert_eq!(nothing.status, 404);
        assert_eq!(
            nothing.body["error"]["message"]
                .as_str()
                .unwrap()
                .replace("run_00000000000000000000", &acme),
            answer.body["error"]["message"]
        );
    }
    let stream = server
        .http
        .get(format!("{}/v1/runs/{acme}/events", server.url))
        .bearer_auth(GLOBEX)
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status().as_u16(), 404);
    // Each tenant lists its own runs only.
    for (token, mine, theirs) in [(ACME, &acme, &globex), (GLOBEX, &globex, &acme)] {
        let list = server.get("/v1/runs", token).await;
        let ids: Vec<&str> = list.body["runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["run_id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, vec![mine.as_str()], "{theirs} must not be listed");
    }
    // Nothing of acme's run changed.
    let events = logged(&server, ACME, &acme).await;
    assert!(
        events
            .iter()
            .all(|e| e["kind"] != "run_cancelled" && e["kind"] != "run_resumed")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_is_submitted_listed_and_read_as_show_json_prints_it() {
    let site = Site::new("runs", "");
    let server = site.serve(&[]);
    let body = json!({
        "goal": "Should our team adopt retrieval-augmented generation for customer support?",
        "notes": "rag",
        "constraints": {"comparison_dimensions": ["cost", "maintenance"]},
        "strategy": "plan-execute",
        "model": "offline",
        "max_replans": 2,
    });
    let first = server.submit(ACME, body.clone()).await;
    let done = server.wait_for(ACME, &first, &["ok", "needs_review"]).await;
    assert_eq!(done["run_id"], first.as_str());
    assert_eq!(done["strategy"], "plan-execute");
    // GET is exactly `stepwise show RUN --json`.
    let shown = site.cli(&["show", &first, "--json"], &[]);
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    assert_eq!(done, shown.json());
    // The run's settings carry its tenant, beside the CLI's own.
    let started = &done["execution_history"][0];
    assert_eq!(started["kind"], "run_started");
    assert_eq!(started["host"]["tenant"], "acme");
    assert_eq!(started["host"]["model"], "offline");
    assert_eq!(started["max_replans"], 2);
    // Three more, then pages of two, newest first.
    let mut ids = vec![first];
    for _ in 0..3 {
        ids.push(server.submit(ACME, run_body("tiny")).await);
    }
    for id in &ids {
        server.wait_for(ACME, id, &["ok", "needs_review"]).await;
    }
    let mut listed = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            Some(c) => format!("/v1/runs?limit=2&cursor={c}"),
            None => "/v1/runs?limit=2".to_owned(),
        };
        let page = server.get(&path, ACME).await;
        assert_eq!(page.status, 200, "{page:?}");
        let runs = page.body["runs"].as_array().unwrap();
        assert!(runs.len() <= 2);
        listed.extend(
            runs.iter()
                .map(|r| r["run_id"].as_str().unwrap().to_owned()),
        );
        match page.body["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    let mut newest_first = ids.clone();
    newest_first.reverse();
    assert_eq!(listed, newest_first);
    // The list names each run's strategy; without a price, no cost.
    let page = server.get("/v1/runs?limit=200", ACME).await;
    let item = page.body["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["run_id"] == ids[0].as_str())
        .unwrap()
        .clone();
    assert_eq!(item["strategy"], "plan-execute", "{item}");
    assert!(item["cost_usd"].is_null(), "{item}");
    let ok = server.get("/v1/runs?status=ok", ACME).await;
    assert!(
        ok.body["runs"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["status"] == "ok")
    );
    let none = server.get("/v1/runs?status=cancelled", ACME).await;
    assert_eq!(none.body["runs"], json!([]));
    assert_eq!(
        server.get("/v1/runs?status=done", ACME).await.code(),
        "invalid_request"
    );
    assert_eq!(
        server.get("/v1/runs?cursor=run_nope", ACME).await.code(),
        "invalid_request"
    );
    // The JSON page of the log, and after a seq.
    let events = logged(&server, ACME, &ids[0]).await;
    assert_eq!(
        events,
        done["execution_history"].as_array().unwrap().clone()
    );
    let tail = server
        .get(&format!("/v1/runs/{}/events?after=3&limit=2", ids[0]), ACME)
        .await;
    let seqs: Vec<u64> = tail.body["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, vec![4, 5]);
    // A finished run's stream replays its log, then ends.
    let mut stream = server.stream(ACME, &ids[0], None).await;
    let all = stream.until("end").await;
    let ids_seen: Vec<u64> = all.iter().filter_map(|m| m.id).collect();
    assert_eq!(ids_seen, (1..=events.len() as u64).collect::<Vec<_>>());
    assert!(stream.next().await.is_none(), "closed after end");
    let end: Value = serde_json::from_str(&all.last().unwrap().data).unwrap();
    assert_eq!(end["status"], done["status"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notes_and_workspaces_outside_the_roots_are_refused() {
    let site = Site::new("roots", "");
    let server = site.serve(&[]);
    let outside = site.path().join("outside/secret");
    let nowhere = site.path().join("roots/../outside/secret");
    let etc = "/etc";
    let mut refused = vec![
        json!({"goal": "Find the notes", "notes": "../../outside/secret"}),
        json!({"goal": "Find the notes", "notes": "rag/../../../outside/secret"}),
        json!({"goal": "Find the notes", "notes": outside.to_str().unwrap()}),
        json!({"goal": "Find the notes", "notes": nowhere.to_str().unwrap()}),
        json!({"goal": "Find the notes", "notes": etc}),
        json!({"goal": "Find the notes", "notes": "/nonexistent/folder"}),
        json!({"goal": "Find the notes", "notes": ""}),
        json!({"goal": "Find the notes", "notes": "rag", "workspace": "../out"}),
        json!({"goal": "Find the notes", "notes": "rag", "workspace": "/tmp"}),
        json!({"goal": "Find the notes", "notes": "rag", "workspace": outside.to_str().unwrap()}),
    ];
    if cfg!(unix) {
        refused.push(json!({"goal": "Find the notes", "notes": "escape/secret"}));
        refused.push(json!({"goal": "Find the notes", "notes": "escape"}));
        std::os::unix::fs::symlink(
            site.path().join("outside"),
            site.path().join("roots/ws/link"),
        )
        .unwrap();
        refused.push(json!({"goal": "Find the notes", "notes": "rag", "workspace": "link/new"}));
    }
    for body in refused {
        let answer = server.post("/v1/runs", ACME, body.clone()).await;
        assert_eq!(answer.status, 400, "{body}: {answer:?}");
        assert_eq!(answer.code(), "path_not_allowed", "{body}: {answer:?}");
        let message = answer.body["error"]["message"].as_str().unwrap();
        assert!(
            !message.contains("keys.md") && !message.contains("The secret"),
            "{message}"
        );
    }
    assert!(
        !site.path().join("outside/new").exists(),
        "nothing was created through the link"
    );
    let missing = server
        .post(
            "/v1/runs",
            ACME,
            json!({"goal": "Find the notes", "notes": "missing"}),
        )
        .await;
    assert_eq!(missing.code(), "notes_unavailable", "{missing:?}");
    // Nothing was recorded.
    assert_eq!(server.get("/v1/runs", ACME).await.body["runs"], json!([]));
    // Under the roots: a relative name, an absolute path, a new workspace.
    let abs = site.path().join("roots/notes/tiny");
    let run = server
        .submit(
            ACME,
            json!({"goal": "Latency budget?", "notes": abs.to_str().unwrap(), "workspace": "jobs/one"}),
        )
        .await;
    assert!(site.path().join("roots/ws/jobs/one").is_dir());
    let done = server.wait_for(ACME, &run, &["ok", "needs_review"]).await;
    let host = &done["execution_history"][0]["host"];
    assert_eq!(
        Path::new(host["notes"].as_str().unwrap()),
        std::fs::canonicalize(&abs).unwrap()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_resumed_with_last_event_id_misses_and_repeats_nothing() {
    let site = Site::new("resume-stream", "");
    let server = site.serve(&[("STEPWISE_TOOL_DELAY_MS", "150")]);
    let run = server.submit(ACME, run_body("rag")).await;
    let mut seen: Vec<Message> = Vec::new();
    let mut last = None;
    // Three forced disconnects mid-run: each time the connection is dropped
    // after a few events and a new one asks for what follows the last id.
    for round in 0..3 {
        let mut stream = server.stream(ACME, &run, last).await;
        for _ in 0..(2 + round) {
            match stream.next().await {
                Some(m) => {
                    last = m.id.or(last);
                    seen.push(m);
                }
                None => break,
            }
        }
        drop(stream);
    }
    let mut stream = server.stream(ACME, &run, last).await;
    seen.extend(stream.until("end").await);
    let ids: Vec<u64> = seen.iter().filter_map(|m| m.id).collect();
    let log = logged(&server, ACME, &run).await;
    assert_eq!(
        ids,
        (1..=log.len() as u64).collect::<Vec<_>>(),
        "no gap, no duplicate"
    );
    for (m, e) in seen.iter().filter(|m| m.id.is_some()).zip(&log) {
        assert_eq!(m.event, e["kind"].as_str().unwrap());
        assert_eq!(serde_json::from_str::<Value>(&m.data).unwrap(), *e);
    }
    // The disconnects happened while the run was going on.
    assert!(
        log.iter().filter(|e| e["kind"] == "step_started").count() >= 2,
        "{log:?}"
    );
    let bad = server
        .http
        .get(format!("{}/v1/runs/{run}/events", server.url))
        .bearer_auth(ACME)
        .header("accept", "text/event-stream")
        .header("last-event-id", "seven")
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status().as_u16(), 400);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_must_name_the_hash_the_step_asked_with() {
    let site = Site::new("approve", "");
    let server = site.serve(&[]);
    let body = json!({
        "goal": "Save the latency budget",
        "notes": "rag",
        "plan": save_plan(),
        "workspace": "job",
    });
    let run = server.submit(ACME, body.clone()).await;
    server.wait_for(ACME, &run, &["awaiting_approval"]).await;
    let pending = server.get(&format!("/v1/runs/{run}/approvals"), ACME).await;
    assert_eq!(pending.status, 200, "{pending:?}");
    let step = &pending.body["steps"][0];
    assert_eq!(step["step"], "save");
    assert_eq!(step["tool"], "write_file");
    assert_eq!(step["args"]["path"], "latency.md");
    // Said for every step, so a client can warn; write_file only adds files.
    assert_eq!(step["destructive"], false, "{step}");
    let hash = step["args_hash"].as_str().unwrap().to_owned();
    assert!(!site.path().join("roots/ws/job/latency.md").exists());
    let approve = format!("/v1/runs/{run}/approve");
    for (wrong, code) in [
        (
            json!({"steps": [{"step": "save", "args_hash": "0".repeat(hash.len())}]}),
            "stale_approval",
        ),
        (
            json!({"steps": [{"step": "save", "args_hash": &hash}, {"step": "find", "args_hash": &hash}]}),
            "not_pending",
        ),
        (json!({"plan_version": 1}), "not_pending"),
        (json!({}), "nothing_to_approve"),
        (json!({"steps": [{"step": "save"}]}), "invalid_request"),
    ] {
        let answer = server.post(&approve, ACME, wrong.clone()).await;
        assert_eq!(answer.code(), code, "{wrong}: {answer:?}");
    }
    // Nothing was approved by the refused requests, and nothing ran.
    let events = logged(&server, ACME, &run).await;
    assert!(events.iter().all(|e| e["kind"] != "approval_granted"));
    assert!(!site.path().join("roots/ws/job/latency.md").exists());
    let answer = server
        .post(
            &approve,
            ACME,
            json!({"steps": [{"step": "save", "args_hash": hash}]}),
        )
        .await;
    assert_eq!(answer.status, 200, "{answer:?}");
    assert_eq!(answer.body["approved"], json!(["step save"]));
    assert_eq!(answer.body["resumed"], true);
    let done = server.wait_for(ACME, &run, &["ok", "needs_review"]).await;
    assert_eq!(done["status"], "ok", "{done}");
    assert!(site.path().join("roots/ws/job/latency.md").is_file());
    let granted: Vec<&Value> = done["execution_history"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "approval_granted")
        .collect();
    assert_eq!(granted.len(), 1);
    assert_eq!(granted[0]["by"], "acme");
    assert_eq!(
        server
            .post(&approve, ACME, json!({"steps": []}))
            .await
            .code(),
        "not_awaiting_approval"
    );

    // A refusal stops the run for review; a resume asks again.
    let other = server.submit(ACME, body).await;
    server.wait_for(ACME, &other, &["awaiting_approval"]).await;
    let no_reason = server
        .post(
            &format!("/v1/runs/{other}/reject"),
            ACME,
            json!({"reason": " "}),
        )
        .await;
    assert_eq!(no_reason.code(), "invalid_request");
    // Eight concurrent rejects: one records the refusal; each other is a
    // 409 — the run is being changed, or no longer waits for an approval.
    let server = Arc::new(server);
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let server = Arc::clone(&server);
            let path = format!("/v1/runs/{other}/reject");
            tokio::spawn(
                async move { server.post(&path, ACME, json!({"reason": "not now"})).await },
            )
        })
        .collect();
    let mut answers = Vec::new();
    for task in tasks {
        answers.push(task.await.unwrap());
    }
    let (won, lost): (Vec<_>, Vec<_>) = answers.into_iter().partition(|a| a.status == 200);
    assert_eq!(won.len(), 1, "{won:?} {lost:?}");
    for a in &lost {
        assert_eq!(a.status, 409, "{a:?}");
        assert!(
            ["not_awaiting_approval", "run_busy"].contains(&a.code()),
            "{a:?}"
        );
    }
    let rejected = won.into_iter().next().unwrap();
    assert_eq!(rejected.body["status"], "needs_review");
    assert_eq!(rejected.body["rejected"], json!(["step save"]));
    let resumed = server
        .post(&format!("/v1/runs/{other}/resume"), ACME, json!({}))
        .await;
    assert_eq!(resumed.status, 202, "{resumed:?}");
    server.wait_for(ACME, &other, &["awaiting_approval"]).await;
    // A run the CLI approves goes on the same way.
    let approved = site.cli(&["approve", &other], &[("USER", "bob")]);
    assert_eq!(approved.code, 0, "{}", approved.stderr);
    let resumed = server
        .post(&format!("/v1/runs/{other}/resume"), ACME, json!({}))
        .await;
    assert_eq!(resumed.status, 202, "{resumed:?}");
    let done = server.wait_for(ACME, &other, &["ok", "needs_review"]).await;
    assert_eq!(done["status"], "ok");
    let ended = server
        .post(&format!("/v1/runs/{other}/resume"), ACME, json!({}))
        .await;
    assert_eq!(ended.code(), "run_ended");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_reaches_a_running_run_and_stops_it() {
    let site = Site::new("cancel", "");
    // Each tool call takes a minute: far longer than any cancel, so an
    // answer before it proves the step in flight was not waited for.
    let server = site.serve(&[("STEPWISE_TOOL_DELAY_MS", "60000")]);
    let run = server.submit(ACME, run_body("tiny")).await;
    let mut stream = server.stream(ACME, &run, None).await;
    stream.until("step_started").await;
    let asked = Instant::now();
    let answer = server
        .post(
            &format!("/v1/runs/{run}/cancel"),
            ACME,
            json!({"reason": "changed my mind"}),
        )
        .await;
    let took = asked.elapsed();
    assert_eq!(answer.status, 200, "{answer:?}\n{}", server.stderr());
    assert_eq!(answer.body["status"], "cancelled");
    assert!(
        took < Duration::from_secs(60),
        "the step in flight was waited for ({took:?})"
    );
    let rest = stream.until("end").await;
    let cancelled: Vec<&Message> = rest.iter().filter(|m| m.event == "run_cancelled").collect();
    assert_eq!(cancelled.len(), 1);
    let event: Value = serde_json::from_str(&cancelled[0].data).unwrap();
    assert_eq!(event["reason"], "changed my mind");
    let log = logged(&server, ACME, &run).await;
    assert!(log.iter().all(|e| e["kind"] != "step_succeeded"), "{log:?}");
    let shown = site.cli(&["show", &run, "--json"], &[]);
    assert_eq!(shown.json()["status"], "cancelled");
    let again = server
        .post(&format!("/v1/runs/{run}/cancel"), ACME, json!({}))
        .await;
    assert_eq!(again.code(), "run_ended");

    // A queued run is cancelled before it starts; a paused one at rest.
    let site = Site::new("cancel-queued", "[serve.limits]\nmax_running = 1\n");
    // The first run holds the only slot until it is cancelled last, so the
    // second is still queued when it is cancelled, however slow the machine.
    let server = site.serve(&[("STEPWISE_TOOL_DELAY_MS", "60000")]);
    let busy = server.submit(ACME, run_body("tiny")).await;
    let queued = server.submit(ACME, run_body("tiny")).await;
    let list = server.get("/v1/runs?status=queued", ACME).await;
    assert_eq!(list.body["runs"][0]["run_id"], queued.as_str(), "{list:?}");
    let answer = server
        .post(&format!("/v1/runs/{queued}/cancel"), ACME, json!({}))
        .await;
    assert_eq!(answer.body["status"], "cancelled", "{answer:?}");
    let log = logged(&server, ACME, &queued).await;
    let kinds: Vec<&str> = log.iter().map(|e| e["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["run_started", "run_cancelled"]);
    let answer = server
        .post(&format!("/v1/runs/{busy}/cancel"), ACME, json!({}))
        .await;
    assert_eq!(answer.body["status"], "cancelled", "{answer:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_stopped_mid_run_resumes_the_run_when_it_starts_again() {
    let site = Site::new("shutdown", "");
    let mut server = site.serve(&[("STEPWISE_TOOL_DELAY_MS", "1500")]);
    let run = server.submit(ACME, run_body("tiny")).await;
    let mut stream = server.stream(ACME, &run, None).await;
    let before = stream.until("step_started").await;
    let (status, took) = server.terminate(Duration::from_secs(15));
    assert!(status.success(), "{status}\n{}", server.stderr());
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert!(
        server.stderr().contains("last checkpoint"),
        "{}",
        server.stderr()
    );
    // The stream was closed, not ended: the run goes on elsewhere.
    let mut rest = Vec::new();
    while let Some(m) = stream.next().await {
        rest.push(m);
    }
    assert!(rest.iter().all(|m| m.event != "end"), "{rest:?}");
    let shown = site.cli(&["show", &run, "--json"], &[]);
    assert_eq!(shown.json()["status"], "running", "{}", shown.stdout);
    let last = rest
        .iter()
        .chain(before.iter())
        .filter_map(|m| m.id)
        .max()
        .unwrap();

    let server = site.serve(&[]);
    let mut stream = server.stream(ACME, &run, Some(last)).await;
    let after = stream.until("end").await;
    let done = server.wait_for(ACME, &run, &["ok", "needs_review"]).await;
    assert_eq!(done["status"], "ok", "{done}");
    assert!(
        server.stderr().contains("resuming 1 run"),
        "{}",
        server.stderr()
    );
    let log = done["execution_history"].as_array().unwrap();
    let kinds: Vec<&str> = log.iter().map(|e| e["kind"].as_str().unwrap()).collect();
    assert!(kinds.contains(&"run_resumed"), "{kinds:?}");
    assert!(kinds.contains(&"step_interrupted"), "{kinds:?}");
    // Every event once across the two servers.
    let ids: Vec<u64> = before
        .iter()
        .chain(&rest)
        .chain(&after)
        .filter_map(|m| m.id)
        .collect();
    assert_eq!(ids, (1..=log.len() as u64).collect::<Vec<_>>());
    // A step that succeeded before the stop was not run again.
    let mut succeeded = BTreeSet::new();
    for e in log {
        if e["kind"] == "step_succeeded" {
            assert!(
                succeeded.insert(e["step"].as_str().unwrap().to_owned()),
                "{e}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_pass_between_the_server_and_the_cli() {
    let site = Site::new("handover", "cli_runs_tenant = \"acme\"\n");
    // A server run cut short by a crash, resumed by `stepwise resume`.
    let mut server = site.serve(&[("STEPWISE_TOOL_DELAY_MS", "1500")]);
    let run = server.submit(ACME, run_body("tiny")).await;
    let mut stream = server.stream(ACME, &run, None).await;
    stream.until("step_started").await;
    server.kill();
    let resumed = site.cli(&["resume", &run, "--json", "--quiet"], &[]);
    assert_eq!(resumed.code, 0, "{}", resumed.stderr);
    assert_eq!(resumed.json()["status"], "ok");
    assert_eq!(
        resumed.json()["execution_history"][0]["host"]["tenant"],
        "acme",
        "the CLI keeps the server's settings"
    );

    // A CLI run killed mid-run, resumed through the API.
    let notes = site.path().join("roots/notes/tiny");
    let mut cli = Stepwise::new()
        .current_dir(site.path())
        .db(&site.db())
        .args([
            "run",
            "What is the latency budget?",
            "--notes",
            notes.to_str().unwrap(),
            "--run-id",
            "run_from_cli",
            "--quiet",
        ])
        .env("STEPWISE_TOOL_DELAY_MS", "3000")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    let started = Instant::now();
    loop {
        let shown = site.cli(&["show", "run_from_cli", "--events"], &[]);
        if shown.stdout.contains("step_started") {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{}",
            shown.stderr
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    cli.kill();
    let _ = cli.wait();
    let server = site.serve(&[]);
    // The server does not take over a CLI run by itself...
    assert!(!server.stderr().contains("resuming"), "{}", server.stderr());
    let listed = server.get("/v1/runs", ACME).await;
    assert!(
        listed.body["runs"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["run_id"] == "run_from_cli")
    );
    assert_eq!(
        server.get("/v1/runs/run_from_cli", GLOBEX).await.status,
        404
    );
    // ...but resumes it when asked.
    let answer = server
        .post("/v1/runs/run_from_cli/resume", ACME, json!({}))
        .await;
    assert_eq!(answer.status, 202, "{answer:?}");
    let done = server
        .wait_for(ACME, "run_from_cli", &["ok", "needs_review"])
        .await;
    assert_eq!(done["status"], "ok", "{done}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_get_json_errors_with_stable_codes() {
    let site = Site::new(
        "hygiene",
        "[serve.models]\nscripted = \"script:nowhere.json\"\n[serve.limits]\nmax_body_bytes = 2000\n",
    );
    let server = site.serve(&[]);
    let raw = |body: &'static str, content_type: &'static str| {
        server
            .http
            .post(format!("{}/v1/runs", server.url))
            .bearer_auth(ACME)
            .header("content-type", content_type)
            .body(body)
    };
    for (request, status, code) in [
        (
            raw("{\"goal\": ", "application/json"),
            400,
            "malformed_json",
        ),
        (raw("not json", "application/json"), 400, "malformed_json"),
        (
            raw("{\"goal\": \"g\"}", "text/plain"),
            415,
            "unsupported_media_type",
        ),
        (raw("[1, 2]", "application/json"), 400, "invalid_request"),
    ] {
        let response = request.send().await.unwrap();
        assert_eq!(response.status().as_u16(), status, "{code}");
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["error"]["code"], code);
        assert!(body["error"]["message"].as_str().unwrap().len() > 5);
    }
    // A page size outside its bounds is refused, not silently changed.
    for path in ["/v1/runs?limit=0", "/v1/runs?limit=201"] {
        let answer = server.get(path, ACME).await;
        assert_eq!(
            (answer.status, answer.code()),
            (400, "invalid_request"),
            "{path}: {answer:?}"
        );
    }
    assert_eq!(server.get("/v1/runs?limit=200", ACME).await.status, 200);
    let big = json!({"goal": "x".repeat(5_000), "notes": "tiny"});
    let answer = server.post("/v1/runs", ACME, big).await;
    assert_eq!((answer.status, answer.code()), (413, "body_too_large"));
    for (body, code) in [
        (json!({"notes": "tiny"}), "invalid_request"),
        (
            json!({"goal": "Find the notes", "notes": "tiny", "colour": "red"}),
            "invalid_request",
        ),
        (json!({"goal": 7, "notes": "tiny"}), "invalid_request"),
        (
            json!({"goal": "Find the notes", "notes": "tiny", "approve": "ask"}),
            "invalid_request",
        ),
        (
            json!({"goal": "Find the notes", "notes": "tiny", "concurrency": 0}),
            "invalid_request",
        ),
        (
            json!({"goal": "Find the notes", "notes": "tiny", "concurrency": 1000}),
            "invalid_request",
        ),
        (
            json!({"goal": "Find the notes", "notes": "tiny", "max_steps": 0}),
            "invalid_request",
        ),
        (
            json!({"goal": "Find the notes", "notes": "tiny", "constraints": {"comparision_dimensions": ["x"]}}),
            "invalid_constraints",
        ),
        (
            json!({"goal": "Find the notes", "notes": "tiny", "constraints": {"allowed_tools": ["rm_rf"]}}),
            "invalid_constraints",
        ),
        (
            json!({"goal": "Find the notes", "notes": "tiny", "strategy": "guess"}),
            "unknown_strategy",
        ),
        (
            json!({"goal": "Find the notes", "notes": "tiny", "model": "openai:gpt-4o"}),
            "unknown_model",
        ),
        (
            json!({"goal": "Find the notes", "notes": "tiny", "model": "scripted"}),
            "unknown_model",
        ),
        (
            json!({"goal": "Find the notes", "notes": "tiny", "tools": "everything"}),
            "unknown_tool_set",
        ),
    ] {
        let answer = server.post("/v1/runs", ACME, body.clone()).await;
        assert_eq!(answer.status, 400, "{body}: {answer:?}");
        assert_eq!(answer.code(), code, "{body}: {answer:?}");
    }
    // Nothing was recorded by a refused submit.
    assert_eq!(server.get("/v1/runs", ACME).await.body["runs"], json!([]));
    let unknown = server.get("/v2/nothing", ACME).await;
    assert_eq!((unknown.status, unknown.code()), (404, "not_found"));
    let wrong = server
        .request(reqwest::Method::DELETE, "/v1/runs", Some(ACME), None)
        .await;
    assert_eq!((wrong.status, wrong.code()), (405, "method_not_allowed"));
    let wrong = server
        .request(reqwest::Method::PUT, "/v1/runs/x/cancel", Some(ACME), None)
        .await;
    assert_eq!(wrong.status, 405);
    // Without a valid token, a wrong method is 401 like everything else.
    for token in [None, Some("not-a-token-0123456789")] {
        let wrong = server
            .request(reqwest::Method::DELETE, "/v1/runs/x", token, None)
            .await;
        assert_eq!((wrong.status, wrong.code()), (401, "unauthorized"));
    }
}

/// Sends a request's head and only the first `sent` bytes of `body` over a
/// raw connection, then reads the answer: status and JSON body.
fn send_part(url: &str, head: &str, body: &str, sent: usize) -> (u16, Value) {
    use std::io::Write;
    let addr = url.strip_prefix("http://").unwrap();
    let mut conn = std::net::TcpStream::connect(addr).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    write!(
        conn,
        "{head}Host: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}",
        body.len(),
        &body[..sent]
    )
    .unwrap();
    conn.flush().unwrap();
    let mut answer = Vec::new();
    // The server closes the connection after answering (or the read times
    // out, and the answer below is empty).
    let _ = conn.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let status = answer
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let json = answer
        .split_once("\r\n\r\n")
        .and_then(|(_, b)| serde_json::from_str(b).ok())
        .unwrap_or(Value::Null);
    (status, json)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_longer_than_request_timeout_ms_gets_503_timeout() {
    let site = Site::new("timeout", "[serve.limits]\nrequest_timeout_ms = 3000\n");
    let server = site.serve(&[]);
    let head = format!("POST /v1/runs HTTP/1.1\r\nAuthorization: Bearer {ACME}\r\n");
    let body = run_body("tiny").to_string();
    // A client that stops half-way through its body holds the request open
    // until the limit answers it. (The limit is far above what a whole
    // request takes even on a loaded machine, so only the stalled one meets it.)
    let (url, h, b) = (server.url.clone(), head.clone(), body.clone());
    let (status, answer) =
        tokio::task::spawn_blocking(move || send_part(&url, &h, &b, b.len() / 2))
            .await
            .unwrap();
    assert_eq!(
        status,
        503,
        "status 0 = no answer within 60 s: {answer}\n{}",
        server.stderr()
    );
    assert_eq!(answer["error"]["code"], "timeout", "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("3000 ms"),
        "{answer}"
    );
    // Nothing was recorded; the same request sent whole is taken.
    assert_eq!(server.get("/v1/runs", ACME).await.body["runs"], json!([]));
    let url = server.url.clone();
    let (status, answer) =
        tokio::task::spawn_blocking(move || send_part(&url, &head, &body, body.len()))
            .await
            .unwrap();
    assert_eq!(status, 202, "{answer}\n{}", server.stderr());
    assert_eq!(answer["status"], "queued");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openapi_document_lists_every_route_the_server_answers() {
    let site = Site::new("openapi", "");
    let server = site.serve(&[]);
    let doc = server
        .http
        .get(format!("{}/v1/openapi.json", server.url))
        .send()
        .await
        .unwrap();
    assert_eq!(
        doc.headers()["content-type"].to_str().unwrap(),
        "application/json"
    );
    let doc: Value = doc.json().await.unwrap();
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
    let mut documented = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            documented.insert((method.to_uppercase(), path.clone()));
            assert!(op["operationId"].is_string(), "{method} {path}");
            if path == "/v1/openapi.json" {
                // The document itself: no token, nothing to refuse.
                assert!(op["security"].is_null(), "{method} {path}");
                continue;
            }
            assert_eq!(
                op["security"],
                json!([{"bearer": []}]),
                "{method} {path} says it needs a token"
            );
            assert!(
                op["responses"]["default"]["content"]["application/json"].is_object(),
                "{method} {path} documents its errors"
            );
        }
    }
    let mut expected: BTreeSet<(String, String)> = ROUTES
        .iter()
        .map(|(m, p)| ((*m).to_owned(), (*p).to_owned()))
        .collect();
    expected.insert(("GET".to_owned(), "/v1/openapi.json".to_owned()));
    assert_eq!(
        documented, expected,
        "every route the server answers is documented"
    );
    // A real validator takes it (openapi-spec-validator, which
    // scripts/test installs): no `default: null`, every $ref resolved.
    let validator = std::env::var("STEPWISE_TEST_OPENAPI_VALIDATOR").unwrap_or_else(|_| {
        panic!("STEPWISE_TEST_OPENAPI_VALIDATOR is not set: run the tests with scripts/test, which installs openapi-spec-validator")
    });
    let file = site.path().join("openapi.json");
    std::fs::write(&file, doc.to_string()).unwrap();
    let checked = std::process::Command::new(&validator)
        .arg(&file)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {validator}: {e}"));
    assert!(
        checked.status.success(),
        "the OpenAPI document does not validate:\n{}{}",
        String::from_utf8_lossy(&checked.stdout),
        String::from_utf8_lossy(&checked.stderr)
    );
    assert_eq!(
        doc["components"]["securitySchemes"]["bearer"]["scheme"],
        "bearer"
    );
    let submit = &doc["paths"]["/v1/runs"]["post"];
    assert!(submit["responses"]["202"].is_object(), "{submit}");
    let schemas = &doc["components"]["schemas"];
    assert!(
        schemas["SubmitRun"]["required"]
            .as_array()
            .unwrap()
            .contains(&json!("goal")),
        "{schemas}"
    );
    let codes = schemas["ErrorCode"].to_string();
    for code in [
        "unauthorized",
        "run_not_found",
        "stale_approval",
        "body_too_large",
    ] {
        assert!(codes.contains(code), "{code} in {codes}");
    }
    let events = &doc["paths"]["/v1/runs/{id}/events"]["get"];
    assert!(events["responses"]["200"]["content"]["text/event-stream"].is_object());
    // Every documented route is served (a token gets past 401 to the handler).
    let run = server.submit(ACME, run_body("tiny")).await;
    server.wait_for(ACME, &run, &["ok", "needs_review"]).await;
    for (method, path) in &documented {
        let path = path.replace("{id}", &run);
        let answer = server
            .request(method.parse().unwrap(), &path, Some(ACME), Some(json!({})))
            .await;
        assert!(
            ![401, 404, 405].contains(&answer.status),
            "{method} {path}: {answer:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_beyond_max_running_wait_queued_and_metrics_count_them() {
    let site = Site::new(
        "queue",
        "[prices.\"offline\"]\ninput_per_mtok = 1.0\noutput_per_mtok = 2.0\n[serve.limits]\nmax_running = 1\n",
    );
    // Each tool call takes a minute, so the first run is still at work
    // while the queue is looked at, however slow the machine; the server
    // is then stopped and a second one (400 ms a call) finishes the runs.
    let mut server = site.serve(&[("STEPWISE_TOOL_DELAY_MS", "60000")]);
    let ids = [
        server.submit(ACME, run_body("tiny")).await,
        server.submit(ACME, run_body("tiny")).await,
        server.submit(GLOBEX, run_body("tiny")).await,
    ];
    // The first is worked on (once its task has the slot), the others wait.
    let asked = Instant::now();
    loop {
        let list = server.get("/v1/runs", ACME).await;
        let statuses: Vec<String> = list.body["runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["status"].as_str().unwrap().to_owned())
            .collect();
        if statuses == ["queued", "running"] {
            break;
        }
        assert!(
            statuses == ["queued", "queued"] && asked.elapsed() < Duration::from_secs(60),
            "{list:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let metrics = server
        .http
        .get(format!("{}/metrics", server.url))
        .bearer_auth(ACME)
        .send()
        .await
        .unwrap();
    assert!(
        metrics.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain; version=0.0.4")
    );
    let text = metrics.text().await.unwrap();
    assert!(
        text.contains("stepwise_runs{status=\"queued\"} 2\n"),
        "{text}"
    );
    assert!(
        text.contains("stepwise_runs{status=\"running\"} 1\n"),
        "{text}"
    );
    assert!(text.contains("stepwise_runs_working 1\n"), "{text}");
    let (status, _) = server.terminate(Duration::from_secs(30));
    assert!(status.success(), "{status}\n{}", server.stderr());
    let server = site.serve(&[("STEPWISE_TOOL_DELAY_MS", "400")]);
    for id in &ids[..2] {
        server.wait_for(ACME, id, &["ok", "needs_review"]).await;
    }
    server
        .wait_for(GLOBEX, &ids[2], &["ok", "needs_review"])
        .await;
    assert!(
        server.stderr().contains("resuming 3 run(s)"),
        "{}",
        server.stderr()
    );
    // With a price, the list's cost is the run's own `cost.usd`.
    let list = server.get("/v1/runs", ACME).await;
    for item in list.body["runs"].as_array().unwrap() {
        let run = server
            .get(
                &format!("/v1/runs/{}", item["run_id"].as_str().unwrap()),
                ACME,
            )
            .await;
        assert!(run.body["cost"]["usd"].is_f64(), "{:?}", run.body["cost"]);
        assert_eq!(item["cost_usd"], run.body["cost"]["usd"], "{item}");
    }
    // A run paused for an approval is counted as pending.
    let paused = server
        .submit(
            ACME,
            json!({"goal": "Save the latency budget", "notes": "rag", "plan": save_plan(), "workspace": "w"}),
        )
        .await;
    server.wait_for(ACME, &paused, &["awaiting_approval"]).await;
    let text = server
        .http
        .get(format!("{}/metrics", server.url))
        .bearer_auth(GLOBEX)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        text.contains("stepwise_runs{status=\"queued\"} 0\n"),
        "{text}"
    );
    assert!(text.contains("stepwise_approvals_pending 1\n"), "{text}");
    assert!(
        text.contains("stepwise_runs{status=\"awaiting_approval\"} 1\n"),
        "{text}"
    );
    assert!(
        text.contains("# TYPE stepwise_step_duration_seconds histogram\n"),
        "{text}"
    );
    let count = text
        .lines()
        .find_map(|l| {
            l.strip_prefix("stepwise_step_duration_seconds_count{outcome=\"succeeded\"} ")
        })
        .unwrap();
    assert!(count.parse::<u64>().unwrap() >= 3, "{text}");
    let slow = text
        .lines()
        .find_map(|l| {
            l.strip_prefix(
                "stepwise_step_duration_seconds_bucket{outcome=\"succeeded\",le=\"0.25\"} ",
            )
        })
        .unwrap();
    assert_eq!(
        slow, "0",
        "every step took at least the 400 ms delay: {text}"
    );
    assert!(
        text.contains("# TYPE stepwise_model_calls_total counter\n"),
        "{text}"
    );
}

/// Bounded, loopback only: 100 runs submitted at once, two event streams
/// each (200 clients, one of them reconnecting mid-run), every client
/// receives every event of its run exactly once, in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_200_streams_over_100_runs_each_get_every_event_exactly_once() {
    const RUNS: usize = 100;
    let site = Site::new("load", "[serve.limits]\nmax_running = 8\n");
    let server = Arc::new(site.serve(&[]));
    let started = Instant::now();
    let mut runs = Vec::new();
    for i in 0..RUNS {
        let body = json!({
            "goal": format!("What is the latency budget of the pilot? ({i})"),
            "notes": "tiny",
        });
        runs.push(server.submit(ACME, body).await);
    }
    let mut clients = tokio::task::JoinSet::new();
    for (i, run) in runs.iter().enumerate() {
        for reconnect in [false, true] {
            let server = Arc::clone(&server);
            let run = run.clone();
            clients.spawn(async move {
                let mut seen: Vec<Message> = Vec::new();
                let mut stream = server.stream(ACME, &run, None).await;
                if reconnect {
                    // Drop the connection after a few events, go on from the last id.
                    for _ in 0..(1 + i % 5) {
                        match stream.next().await {
                            Some(m) if m.event != "end" => seen.push(m),
                            _ => break,
                        }
                    }
                    let last = seen.iter().filter_map(|m| m.id).max();
                    drop(stream);
                    stream = server.stream(ACME, &run, last).await;
                }
                seen.extend(stream.until("end").await);
                (run, seen)
            });
        }
    }
    let mut received = 0;
    let mut clients_done = 0;
    while let Some(result) = clients.join_next().await {
        let (run, seen) = result.unwrap();
        let log = logged(&server, ACME, &run).await;
        let ids: Vec<u64> = seen.iter().filter_map(|m| m.id).collect();
        assert_eq!(
            ids,
            (1..=log.len() as u64).collect::<Vec<_>>(),
            "run {run}: every event exactly once"
        );
        for (m, e) in seen.iter().filter(|m| m.id.is_some()).zip(&log) {
            assert_eq!(serde_json::from_str::<Value>(&m.data).unwrap(), *e);
        }
        let end: Value = serde_json::from_str(&seen.last().unwrap().data).unwrap();
        assert!(
            ["ok", "needs_review"].contains(&end["status"].as_str().unwrap()),
            "{end}"
        );
        received += ids.len();
        clients_done += 1;
    }
    assert_eq!(clients_done, 2 * RUNS);
    let took = started.elapsed();
    eprintln!("load: {RUNS} runs, {clients_done} streams, {received} events received in {took:?}");
    assert!(took < Duration::from_secs(240), "{took:?}");
    let text = server
        .http
        .get(format!("{}/metrics", server.url))
        .bearer_auth(ACME)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(text.contains("stepwise_event_streams 0\n"), "{text}");
}

#[test]
fn the_server_refuses_to_start_without_tokens_unsafe_or_misconfigured() {
    let scratch = Scratch::new("serve", "refusals");
    let dir = scratch.path();
    std::fs::create_dir_all(dir.join("notes")).unwrap();
    let token = format!("[[serve.tokens]]\ntenant = \"a\"\ntoken = \"{ACME}\"\n");
    let cases = [
        (
            "[serve]\nnotes_roots = [\"notes\"]\n".to_owned(),
            vec![],
            "no bearer tokens",
        ),
        (
            format!("[serve]\nnotes_root = [\"notes\"]\n{token}"),
            vec![],
            "unknown field `notes_root`",
        ),
        (
            format!("[serve]\nnotes_roots = [\"missing\"]\n{token}"),
            vec![],
            "notes root",
        ),
        (
            format!("[serve]\n[serve.limits]\nmax_runing = 1\n{token}"),
            vec![],
            "unknown field `max_runing`",
        ),
        (
            "[serve]\n[[serve.tokens]]\ntenant = \"a\"\ntoken_env = \"UNSET_TOKEN_VAR\"\n"
                .to_owned(),
            vec![],
            "UNSET_TOKEN_VAR is not set",
        ),
        (
            format!("[serve]\n[serve.tool_sets.files]\nmcp = [\"fs\"]\n{token}"),
            vec![],
            "MCP server \"fs\"",
        ),
        (
            format!("[serve]\ndefault_model = \"fast\"\n{token}"),
            vec![],
            "default_model",
        ),
        (
            String::new(),
            vec!["--insecure-no-auth", "--listen", "0.0.0.0:0"],
            "only works on a loopback address",
        ),
        (
            token.replace("[[", "[serve]\n[["),
            vec!["--listen", "localhost"],
            "--listen localhost",
        ),
    ];
    for (toml, args, expected) in cases {
        std::fs::write(dir.join("stepwise.toml"), &toml).unwrap();
        let mut all = vec!["serve"];
        if !args.contains(&"--listen") {
            all.extend(["--listen", "127.0.0.1:0"]);
        }
        all.extend(args);
        let out = Stepwise::new()
            .current_dir(dir)
            .db(&scratch.db())
            .args(all)
            .stdout(Stdio::piped())
            .run();
        assert_eq!(out.code, 2, "{toml}: {}", out.stderr);
        assert!(out.stderr.contains(expected), "{toml}: {}", out.stderr);
        assert!(out.stdout.is_empty(), "it never listened: {}", out.stdout);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_auth_on_loopback_every_request_acts_for_the_local_tenant() {
    let site = Site::new("no-auth", "");
    let notes = site.path().join("roots/notes/tiny");
    let cli = site.cli(
        &[
            "run",
            "What is the latency budget for the first token?",
            "--notes",
            notes.to_str().unwrap(),
            "--run-id",
            "run_cli",
            "--quiet",
        ],
        &[],
    );
    assert_eq!(cli.code, 0, "{}", cli.stderr);
    let server = Server::start(&site, &["--insecure-no-auth"], &[]);
    assert!(
        server.stderr().contains("WARNING: --insecure-no-auth"),
        "{}",
        server.stderr()
    );
    let submitted = server
        .request(
            reqwest::Method::POST,
            "/v1/runs",
            None,
            Some(run_body("tiny")),
        )
        .await;
    assert_eq!(submitted.status, 202, "{submitted:?}");
    let run = submitted.body["run_id"].as_str().unwrap().to_owned();
    server.wait_for("ignored", &run, &["ok"]).await;
    let listed = server
        .request(reqwest::Method::GET, "/v1/runs", None, None)
        .await;
    let ids: Vec<&str> = listed.body["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["run_id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [run.as_str(), "run_cli"],
        "the CLI's runs are local's too"
    );
    let done = server.get(&format!("/v1/runs/{run}"), "ignored").await;
    assert_eq!(done.body["execution_history"][0]["host"]["tenant"], "local");
}

/// The run as `GET /v1/runs` lists it.
async fn listed(server: &Server, run: &str) -> Value {
    let list = server.get("/v1/runs", ACME).await;
    assert_eq!(list.status, 200, "{list:?}");
    list.body["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["run_id"] == run)
        .cloned()
        .unwrap_or_else(|| panic!("{run} not listed: {list:?}"))
}

fn kinds(log: &[Value]) -> Vec<&str> {
    log.iter().map(|e| e["kind"].as_str().unwrap()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_the_server_queues_runs_and_workers_work_on_them() {
    let site = Site::on_postgres("serve-pg");
    let server = site.serve(&[]);

    // Submitted runs wait in the queue: nothing works on them but workers.
    let run = server.submit(ACME, run_body("tiny")).await;
    let gone = server.submit(ACME, run_body("tiny")).await;
    let cancelled = server
        .post(&format!("/v1/runs/{gone}/cancel"), ACME, json!({}))
        .await;
    assert_eq!(cancelled.body["status"], "cancelled", "{cancelled:?}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let item = listed(&server, &run).await;
    assert_eq!(item["status"], "queued", "{item}");
    assert_eq!(item["held_by"], Value::Null, "{item}");
    let queued = server.get("/v1/runs?status=queued", ACME).await;
    let ids: Vec<&Value> = queued.body["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["run_id"])
        .collect();
    assert_eq!(ids, [&json!(run)], "{queued:?}");
    // A resume of a run still waiting is refused: it is in the queue already.
    let again = server
        .post(&format!("/v1/runs/{run}/resume"), ACME, json!({}))
        .await;
    assert_eq!(again.code(), "run_busy", "{again:?}");
    assert_eq!(
        kinds(&logged(&server, ACME, &run).await),
        ["run_started"],
        "{}",
        server.stderr()
    );

    // A worker starts it as the server would have: no `run_resumed`.
    let worker = site.worker(&["--drain"], &[]);
    let out = tokio::task::spawn_blocking(move || worker.run())
        .await
        .unwrap();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let got = server.get(&format!("/v1/runs/{run}"), ACME).await;
    assert_eq!(got.body["status"], "ok", "{got:?}\n{}", out.stderr);
    let shown = site.cli(&["show", &run, "--json"], &[]);
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    assert_eq!(got.body, shown.json());
    let log = logged(&server, ACME, &run).await;
    assert!(!kinds(&log).contains(&"run_resumed"), "{:?}", kinds(&log));
    assert_eq!(listed(&server, &run).await["status"], "ok");
    // The run cancelled while queued stayed cancelled: the worker let it be.
    assert_eq!(
        kinds(&logged(&server, ACME, &gone).await),
        ["run_started", "run_cancelled"]
    );

    // A side effect: the run pauses for approval in a worker, is approved
    // through the API with resume, and a worker finishes it.
    let mut worker = site
        .worker(&[], &[("STEPWISE_TOOL_DELAY_MS", "800")])
        .stderr(Stdio::null())
        .spawn();
    let pid = worker.id().to_string();
    let body = json!({
        "goal": "Save the latency budget",
        "notes": "rag",
        "plan": save_plan(),
        "workspace": "job",
    });
    let saving = server.submit(ACME, body).await;
    let start = Instant::now();
    let holder = loop {
        let item = listed(&server, &saving).await;
        if let Some(holder) = item["held_by"].as_str() {
            assert_eq!(item["status"], "running", "{item}");
            break holder.to_owned();
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no worker took {saving}: {item}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(
        holder.ends_with(&format!(":{pid}")),
        "{holder} is not worker {pid}"
    );
    server.wait_for(ACME, &saving, &["awaiting_approval"]).await;
    let ws = site.path().join("roots/ws/job");
    assert!(!ws.join("latency.md").exists());
    let pending = server
        .get(&format!("/v1/runs/{saving}/approvals"), ACME)
        .await;
    let hash = pending.body["steps"][0]["args_hash"]
        .as_str()
        .unwrap()
        .to_owned();
    // Approved as soon as it shows paused: the server waits for the worker
    // to give the lease back rather than refusing.
    let approved = server
        .post(
            &format!("/v1/runs/{saving}/approve"),
            ACME,
            json!({"steps": [{"step": "save", "args_hash": &hash}], "resume": true}),
        )
        .await;
    assert_eq!(approved.status, 200, "{approved:?}");
    assert_eq!(approved.body["resumed"], true, "{approved:?}");
    let done = server
        .wait_for(ACME, &saving, &["ok", "failed", "needs_review"])
        .await;
    assert_eq!(done["status"], "ok", "{done}");
    assert!(ws.join("latency.md").is_file());
    let ledger = std::fs::read_to_string(ws.join(".stepwise/writes.jsonl")).unwrap();
    assert_eq!(ledger.lines().count(), 1, "{ledger}");
    let log = logged(&server, ACME, &saving).await;
    let resumed: Vec<&Value> = log.iter().filter(|e| e["kind"] == "run_resumed").collect();
    assert_eq!(resumed.len(), 1, "{:?}", kinds(&log));
    // The resume's `by` reached the worker through the queue.
    assert_eq!(resumed[0]["by"], "acme");
    assert_eq!(
        site.cli(&["show", &saving, "--json"], &[]).json(),
        server.get(&format!("/v1/runs/{saving}"), ACME).await.body
    );

    // A cancel reaches a run a worker is working on: the worker stops it
    // and records `run_cancelled` under its lease.
    let cancelling = server.submit(ACME, run_body("rag")).await;
    let start = Instant::now();
    while listed(&server, &cancelling).await["held_by"].as_str() != Some(holder.as_str()) {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the worker never took {cancelling}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let answer = server
        .post(
            &format!("/v1/runs/{cancelling}/cancel"),
            ACME,
            json!({"reason": "changed my mind"}),
        )
        .await;
    assert_eq!(answer.status, 200, "{answer:?}");
    assert_eq!(answer.body["status"], "cancelled", "{answer:?}");
    let log = logged(&server, ACME, &cancelling).await;
    let kinds = kinds(&log);
    assert_eq!(kinds.last(), Some(&"run_cancelled"), "{kinds:?}");
    assert_eq!(
        kinds.iter().filter(|k| **k == "run_cancelled").count(),
        1,
        "{kinds:?}"
    );
    assert!(!kinds.contains(&"synthesized"), "{kinds:?}");
    assert_eq!(log.last().unwrap()["reason"], "changed my mind");
    let start = Instant::now();
    while !listed(&server, &cancelling).await["held_by"].is_null() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the worker kept the cancelled run's lease"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    worker.kill();
}

/// A step asks for an approval while others are still in flight: the run
/// is `running`, not paused, and a worker holds it. The approval is handed
/// to that worker, which records it once the other steps are done, and the
/// run goes on to its end with no resume asked for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_an_approval_given_mid_run_reaches_the_worker() {
    let site = Site::on_postgres("serve-pg-approve");
    let server = site.serve(&[]);
    let mut worker = site
        .worker(&[], &[("STEPWISE_TOOL_DELAY_MS", "700")])
        .stderr(Stdio::null())
        .spawn();
    let pid = worker.id().to_string();
    // `save` waits for an approval after `find` (0.7 s); the chain of four
    // searches beside it keeps the run busy for 2.8 s.
    let chain = |id: &str, after: Option<&str>| {
        let mut step = json!({"id": id, "description": "Find the cost", "tool": "search_notes",
            "args": {"query": "operating cost"}, "acceptance_criteria": ["a passage"]});
        if let Some(after) = after {
            step["depends_on"] = json!([after]);
        }
        step
    };
    let mut plan = save_plan();
    let steps = plan["steps"].as_array_mut().unwrap();
    steps.push(chain("c1", None));
    steps.push(chain("c2", Some("c1")));
    steps.push(chain("c3", Some("c2")));
    steps.push(chain("c4", Some("c3")));
    let body = json!({"goal": "Save the latency budget", "notes": "rag", "plan": plan, "workspace": "mid"});
    let run = server.submit(ACME, body).await;
    let start = Instant::now();
    let hash = loop {
        let pending = server.get(&format!("/v1/runs/{run}/approvals"), ACME).await;
        if let Some(hash) = pending.body["steps"][0]["args_hash"].as_str() {
            assert_eq!(pending.body["status"], "running", "{pending:?}");
            break hash.to_owned();
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "save never asked for its approval: {pending:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let item = listed(&server, &run).await;
    assert_eq!(item["status"], "running", "{item}");
    let holder = item["held_by"].as_str().unwrap_or_default().to_owned();
    assert!(holder.ends_with(&format!(":{pid}")), "{item}");

    let approved = server
        .post(
            &format!("/v1/runs/{run}/approve"),
            ACME,
            json!({"steps": [{"step": "save", "args_hash": &hash}]}),
        )
        .await;
    assert_eq!(approved.status, 200, "{approved:?}");
    assert_eq!(approved.body["delivered_to"], json!(holder), "{approved:?}");
    assert_eq!(
        approved.body["approved"],
        json!(["step save"]),
        "{approved:?}"
    );
    assert_eq!(approved.body["status"], "running", "{approved:?}");
    // A stale hash is refused at once, as for a paused run.
    let stale = server
        .post(
            &format!("/v1/runs/{run}/approve"),
            ACME,
            json!({"steps": [{"step": "save", "args_hash": "0000"}]}),
        )
        .await;
    assert_eq!(stale.code(), "stale_approval", "{stale:?}");

    let done = server
        .wait_for(ACME, &run, &["ok", "failed", "needs_review"])
        .await;
    assert_eq!(done["status"], "ok", "{done}");
    let ws = site.path().join("roots/ws/mid");
    assert!(ws.join("latency.md").is_file());
    let ledger = std::fs::read_to_string(ws.join(".stepwise/writes.jsonl")).unwrap();
    assert_eq!(ledger.lines().count(), 1, "{ledger}");
    let log = logged(&server, ACME, &run).await;
    let granted: Vec<&Value> = log
        .iter()
        .filter(|e| e["kind"] == "approval_granted")
        .collect();
    assert_eq!(granted.len(), 1, "{:?}", kinds(&log));
    assert_eq!(granted[0]["by"], "acme");
    assert_eq!(granted[0]["args_hash"], json!(hash));
    // Recorded by the worker, under its lease, with no one else's write.
    let resumed: Vec<&Value> = log.iter().filter(|e| e["kind"] == "run_resumed").collect();
    assert_eq!(resumed.len(), 1, "{:?}", kinds(&log));
    assert_eq!(resumed[0]["by"], "acme");
    let db = site.1.as_ref().unwrap();
    let fences = db
        .query(&format!(
            "SELECT DISTINCT g.holder FROM stepwise.events e JOIN stepwise.lease_grants g
             ON g.run_id = e.run_id AND g.fence = e.fence WHERE e.run_id = '{run}'"
        ))
        .unwrap();
    assert_eq!(fences, [[Some(holder.clone())]], "{fences:?}");
    worker.kill();
}

/// On PostgreSQL `max_queued` bounds the runs waiting for a worker: a
/// submit beyond it is `503 queue_full` and records nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_max_queued_bounds_the_workers_queue() {
    let site = Site::on_postgres_with("serve-pg-full", "[serve.limits]\nmax_queued = 2\n");
    let server = site.serve(&[]);
    let first = server.submit(ACME, run_body("tiny")).await;
    let second = server.submit(ACME, run_body("tiny")).await;
    let full = server.post("/v1/runs", ACME, run_body("tiny")).await;
    assert_eq!(full.status, 503, "{full:?}");
    assert_eq!(full.code(), "queue_full", "{full:?}");
    let list = server.get("/v1/runs", ACME).await;
    let mut ids: Vec<&str> = list.body["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["run_id"].as_str().unwrap())
        .collect();
    ids.sort_unstable();
    let mut want = [first.as_str(), second.as_str()];
    want.sort_unstable();
    assert_eq!(ids, want, "{list:?}");
    // Once a worker has worked the queue off, there is room again.
    let worker = site.worker(&["--drain"], &[]);
    let out = tokio::task::spawn_blocking(move || worker.run())
        .await
        .unwrap();
    assert_eq!(out.code, 0, "{}", out.stderr);
    server.submit(ACME, run_body("tiny")).await;
}

/// Every run id the tenant's list holds (one page of up to 200).
async fn listed_ids(server: &Server, token: &str) -> BTreeSet<String> {
    let page = server.get("/v1/runs?limit=200", token).await;
    assert_eq!(page.status, 200, "{page:?}");
    page.body["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["run_id"].as_str().unwrap().to_owned())
        .collect()
}

/// 30 concurrent submits past `max_queued` on SQLite: each refusal is
/// `503 queue_full` with `Retry-After` and records nothing; each accepted
/// run is listed and finishes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_submit_records_nothing_and_says_when_to_retry() {
    let site = Site::new(
        "queue-full",
        "[serve.limits]\nmax_running = 1\nmax_queued = 3\n",
    );
    let server = Arc::new(site.serve(&[("STEPWISE_TOOL_DELAY_MS", "300")]));
    let before = listed_ids(&server, ACME).await;
    let mut tasks = Vec::new();
    for _ in 0..30 {
        let server = Arc::clone(&server);
        tasks.push(tokio::spawn(async move {
            server.post("/v1/runs", ACME, run_body("tiny")).await
        }));
    }
    let mut accepted = BTreeSet::new();
    let mut refused = 0;
    for task in tasks {
        let answer = task.await.unwrap();
        match answer.status {
            202 => {
                accepted.insert(answer.body["run_id"].as_str().unwrap().to_owned());
            }
            503 => {
                assert_eq!(answer.code(), "queue_full", "{answer:?}");
                assert_eq!(answer.headers["retry-after"], "5", "{answer:?}");
                refused += 1;
            }
            other => panic!("{other}: {answer:?}"),
        }
    }
    assert!(refused > 0, "30 submits past max_queued = 3: none refused");
    assert_eq!(accepted.len() + refused, 30);
    let after = listed_ids(&server, ACME).await;
    let new: BTreeSet<String> = after.difference(&before).cloned().collect();
    assert_eq!(new, accepted, "the list grew by the accepted runs only");
    for run in &accepted {
        let done = server
            .wait_for(ACME, run, &["ok", "needs_review", "failed"])
            .await;
        assert_eq!(done["status"], "ok", "{done}");
    }
}

/// A crash with runs queued behind `max_running`: after the restart (with
/// a smaller queue, even) every accepted run finishes, queued ones included.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_queued_when_the_server_crashed_all_finish_after_the_restart() {
    let site = Site::new(
        "queued-crash",
        "[serve.limits]\nmax_running = 1\nmax_queued = 2\n",
    );
    let mut server = site.serve(&[("STEPWISE_TOOL_DELAY_MS", "1500")]);
    let mut runs = Vec::new();
    for _ in 0..3 {
        runs.push(server.submit(ACME, run_body("tiny")).await);
    }
    let mut stream = server.stream(ACME, &runs[0], None).await;
    stream.until("step_started").await;
    server.kill();
    // Restarted with a smaller queue: runs it had accepted are not refused.
    let toml = site.path().join("stepwise.toml");
    let text = std::fs::read_to_string(&toml).unwrap();
    std::fs::write(&toml, text.replace("max_queued = 2", "max_queued = 1")).unwrap();
    let server = site.serve(&[]);
    for run in &runs {
        let done = server
            .wait_for(ACME, run, &["ok", "needs_review", "failed"])
            .await;
        assert_eq!(done["status"], "ok", "{run}: {done}");
    }
    assert!(
        server.stderr().contains("resuming 3 run(s)"),
        "{}",
        server.stderr()
    );
}

/// Requests a run could only fail on are refused up front, each `400`
/// with a message naming the limit, and record nothing: a blank goal, a
/// goal past `max_goal_bytes`, `max_steps` past the server's bound, a plan
/// naming a tool the run cannot use.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_past_the_limits_are_refused_before_anything_is_recorded() {
    let site = Site::new(
        "limits",
        "[serve.limits]\nmax_goal_bytes = 200\nmax_steps = 50\n",
    );
    let server = site.serve(&[]);
    let before = listed_ids(&server, ACME).await;
    let long = "Why? ".repeat(41);
    let plan = json!({"steps": [{
        "id": "s1", "description": "order", "tool": "shop.place_order",
        "args": {}, "acceptance_criteria": ["an order id"]
    }]});
    for (body, says) in [
        (json!({"goal": "", "notes": "tiny"}), "goal is empty"),
        (json!({"goal": "   ", "notes": "tiny"}), "goal is empty"),
        (json!({"goal": "asdf", "notes": "tiny"}), "is a single word"),
        (json!({"goal": "???", "notes": "tiny"}), "has no words"),
        (json!({"goal": long, "notes": "tiny"}), "at most 200"),
        (
            json!({"goal": "What is the latency budget?", "notes": "tiny", "max_steps": 1_000_000}),
            "between 1 and 50",
        ),
        (
            json!({"goal": "What is the latency budget?", "notes": "tiny", "constraints": {"max_steps": 51}}),
            "between 1 and 50",
        ),
        (
            json!({"goal": "Place the order", "notes": "tiny", "plan": plan}),
            "shop.place_order",
        ),
    ] {
        let answer = server.post("/v1/runs", ACME, body.clone()).await;
        assert_eq!(answer.status, 400, "{body}: {answer:?}");
        assert_eq!(answer.code(), "invalid_request", "{body}: {answer:?}");
        let message = answer.body["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{body}: {message}");
    }
    assert_eq!(listed_ids(&server, ACME).await, before, "nothing recorded");
    // Within the limits, the same server takes the run.
    let ok = server
        .post(
            "/v1/runs",
            ACME,
            json!({"goal": "What is the latency budget?", "notes": "tiny", "max_steps": 50}),
        )
        .await;
    assert_eq!(ok.status, 202, "{ok:?}");
}

/// Connections that never finish a request's head are closed after
/// `header_read_timeout_ms`; the server keeps answering others.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_open_connections_are_closed_after_the_header_read_timeout() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let site = Site::new(
        "half-open",
        "[serve.limits]\nheader_read_timeout_ms = 300\n",
    );
    let server = site.serve(&[]);
    let addr = server.url.trim_start_matches("http://").to_owned();
    let mut held = Vec::new();
    for _ in 0..20 {
        let mut socket = tokio::net::TcpStream::connect(&addr).await.unwrap();
        socket
            .write_all(b"GET /v1/runs HTTP/1.1\r\nHost: x\r\n")
            .await
            .unwrap();
        held.push(socket);
    }
    let started = Instant::now();
    for mut socket in held {
        let mut buf = [0u8; 512];
        // Closed: end of stream (perhaps after a 408 answer), or a reset.
        let closed = tokio::time::timeout(Duration::from_secs(5), async {
            loop {
                match socket.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
            }
        })
        .await;
        assert!(
            closed.is_ok(),
            "a half-open connection still held after 5 s"
        );
    }
    assert!(started.elapsed() < Duration::from_secs(5));
    let page = server.get("/v1/runs", ACME).await;
    assert_eq!(page.status, 200, "{page:?}");
}

/// One tenant's event streams cannot take every slot: past
/// `max_streams_per_tenant` its next stream is `503 too_many_streams` (with
/// `Retry-After`), while another tenant still opens one; a closed stream
/// gives its slot back. A stream over a finished run still sends every
/// event once, read from the log a page at a time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_cannot_take_every_event_stream() {
    let site = Site::new(
        "tenant-streams",
        "[serve.limits]\nmax_streams_per_tenant = 2\n",
    );
    let server = site.serve(&[("STEPWISE_TOOL_DELAY_MS", "2000")]);
    let run = server.submit(ACME, run_body("tiny")).await;
    let theirs = server.submit(GLOBEX, run_body("tiny")).await;
    let first = server.stream(ACME, &run, None).await;
    let _second = server.stream(ACME, &run, None).await;
    let refused = server
        .http
        .get(format!("{}/v1/runs/{run}/events", server.url))
        .bearer_auth(ACME)
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status().as_u16(), 503);
    assert_eq!(refused.headers()["retry-after"], "5");
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["code"], "too_many_streams", "{body}");
    // Another tenant is not held up by acme's streams.
    let mut other = server.stream(GLOBEX, &theirs, None).await;
    drop(first);
    // The slot comes back once the server sees the stream closed.
    let started = Instant::now();
    let mut third = loop {
        let answer = server
            .http
            .get(format!("{}/v1/runs/{run}/events", server.url))
            .bearer_auth(ACME)
            .header("accept", "text/event-stream")
            .send()
            .await
            .unwrap();
        if answer.status().as_u16() == 200 {
            break Stream {
                response: answer,
                buf: String::new(),
            };
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the slot never came back"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let events = third.until("end").await;
    let ids: Vec<u64> = events.iter().filter_map(|m| m.id).collect();
    assert_eq!(
        ids,
        (1..=ids.len() as u64).collect::<Vec<_>>(),
        "every event once"
    );
    other.until("end").await;
}

/// Every documented route answers as its schema says: a run is submitted,
/// listed, read, streamed as a JSON page, paused for an approval, approved
/// (and refused once), rejected, resumed and cancelled, and each answer's
/// JSON — errors included — is checked against the OpenAPI document by
/// `openapi-schema-validator` (tests/fixtures/check_responses.py).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_documented_route_answers_as_its_schema_says() {
    let validator = std::env::var("STEPWISE_TEST_OPENAPI_VALIDATOR").unwrap_or_else(|_| {
        panic!("STEPWISE_TEST_OPENAPI_VALIDATOR is not set: run the tests with scripts/test")
    });
    let python = Path::new(&validator).with_file_name("python");
    let site = Site::new("schemas", "");
    let server = site.serve(&[]);
    let mut samples: Vec<Value> = Vec::new();
    let mut keep = |method: &str, path: &str, a: &Answer| {
        assert_ne!(a.body, Value::Null, "{method} {path}: not JSON: {a:?}");
        samples.push(json!({"method": method, "path": path, "status": a.status, "body": a.body}));
    };
    let body = json!({
        "goal": "Save the latency budget",
        "notes": "rag",
        "plan": save_plan(),
        "workspace": "job",
    });
    let submitted = server.post("/v1/runs", ACME, body.clone()).await;
    keep("POST", "/v1/runs", &submitted);
    let run = submitted.body["run_id"].as_str().unwrap().to_owned();
    let refused = server.post("/v1/runs", ACME, json!({"goal": ""})).await;
    keep("POST", "/v1/runs", &refused);
    server.wait_for(ACME, &run, &["awaiting_approval"]).await;
    keep("GET", "/v1/runs", &server.get("/v1/runs", ACME).await);
    keep("GET", "/v1/stats", &server.get("/v1/stats", ACME).await);
    keep(
        "GET",
        "/v1/runs/{id}",
        &server.get(&format!("/v1/runs/{run}"), ACME).await,
    );
    keep(
        "GET",
        "/v1/runs/{id}",
        &server.get("/v1/runs/nope", ACME).await,
    );
    keep(
        "GET",
        "/v1/runs/{id}/events",
        &server.get(&format!("/v1/runs/{run}/events"), ACME).await,
    );
    let pending = server.get(&format!("/v1/runs/{run}/approvals"), ACME).await;
    keep("GET", "/v1/runs/{id}/approvals", &pending);
    let hash = pending.body["steps"][0]["args_hash"]
        .as_str()
        .unwrap()
        .to_owned();
    let approve = format!("/v1/runs/{run}/approve");
    keep(
        "POST",
        "/v1/runs/{id}/approve",
        &server.post(&approve, ACME, json!({})).await,
    );
    let approved = server
        .post(
            &approve,
            ACME,
            json!({"steps": [{"step": "save", "args_hash": hash}]}),
        )
        .await;
    keep("POST", "/v1/runs/{id}/approve", &approved);
    server.wait_for(ACME, &run, &["ok"]).await;
    keep(
        "GET",
        "/v1/runs/{id}",
        &server.get(&format!("/v1/runs/{run}"), ACME).await,
    );
    // A second run: rejected, resumed, then cancelled while it waits.
    let other = server.submit(ACME, body).await;
    server.wait_for(ACME, &other, &["awaiting_approval"]).await;
    keep(
        "POST",
        "/v1/runs/{id}/reject",
        &server
            .post(
                &format!("/v1/runs/{other}/reject"),
                ACME,
                json!({"reason": "not now"}),
            )
            .await,
    );
    keep(
        "POST",
        "/v1/runs/{id}/resume",
        &server
            .post(&format!("/v1/runs/{other}/resume"), ACME, json!({}))
            .await,
    );
    server.wait_for(ACME, &other, &["awaiting_approval"]).await;
    keep(
        "POST",
        "/v1/runs/{id}/cancel",
        &server
            .post(&format!("/v1/runs/{other}/cancel"), ACME, json!({}))
            .await,
    );
    keep(
        "POST",
        "/v1/runs/{id}/cancel",
        &server
            .post(&format!("/v1/runs/{other}/cancel"), ACME, json!({}))
            .await,
    );
    let openapi = server
        .http
        .get(format!("{}/v1/openapi.json", server.url))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let doc_file = site.path().join("openapi.json");
    std::fs::write(&doc_file, openapi).unwrap();
    let samples_file = site.path().join("samples.json");
    std::fs::write(&samples_file, Value::Array(samples).to_string()).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/check_responses.py");
    let checked = std::process::Command::new(&python)
        .arg(&script)
        .arg(&doc_file)
        .arg(&samples_file)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", python.display()));
    assert!(
        checked.status.success(),
        "responses that do not match the OpenAPI document:\n{}{}",
        String::from_utf8_lossy(&checked.stdout),
        String::from_utf8_lossy(&checked.stderr)
    );
}
