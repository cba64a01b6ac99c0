//! One configured server over its life in a run: started (spawned, or
//! connected to over HTTP), initialised with our client info and protocol
//! version, its tools listed page by page; restarted or reconnected when it
//! died or stopped answering; shut down on exit. Everything rmcp stays here.

use std::collections::VecDeque;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

#[allow(deprecated)]
use rmcp::model::LoggingMessageNotificationParam;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ClientRequest,
    Implementation, ProtocolVersion,
};
use rmcp::service::{NotificationContext, Peer, RoleClient, RunningService, ServiceError};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, serve_client};
use tokio::io::AsyncBufReadExt;

use crate::config::{Endpoint, ServerConfig};

/// The `_meta` key of a side-effecting call's idempotency key: stable
/// across attempts and resumes of one step (see docs/durability.md).
pub const IDEMPOTENCY_KEY_META: &str = "io.stepwise/idempotency_key";

/// The program stdio servers are started through, if one is set
/// ([`set_guard`]).
static GUARD: std::sync::OnceLock<Vec<std::ffi::OsString>> = std::sync::OnceLock::new();

/// Starts every stdio server as `GUARD… COMMAND ARGS…`: a program that runs
/// the server and ends it when the process that started it dies, even by
/// `kill -9` (which leaves no chance to stop the servers, and a server that
/// does not exit when its stdin closes would be orphaned). `stepwise` sets
/// its own `mcp-guard`. Set once per process; later calls are ignored.
pub fn set_guard(argv: Vec<std::ffi::OsString>) {
    if !argv.is_empty() {
        let _ = GUARD.set(argv);
    }
}

fn guard() -> Option<&'static Vec<std::ffi::OsString>> {
    GUARD.get()
}
use crate::error::{McpError, Stderr};

/// Where a server's diagnostics go: every line it writes on stderr, its
/// `notifications/message` log entries, and our own notes on its life
/// (started, exited, restarted). Never into a step's output or a report.
pub type LogFn = Arc<dyn Fn(LogLine<'_>) + Send + Sync>;

/// One diagnostic line of a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogLine<'a> {
    /// The server's configured name.
    pub server: &'a str,
    /// Where the line came from.
    pub kind: LogKind,
    /// The text (one line).
    pub text: &'a str,
}

/// Where a [`LogLine`] came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogKind {
    /// The server process's stderr.
    Stderr,
    /// A `notifications/message` the server sent.
    Notification,
    /// The client: started, exited, restarted, shut down.
    Lifecycle,
}

impl LogKind {
    /// A short tag for log files.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stderr => "stderr",
            Self::Notification => "log",
            Self::Lifecycle => "client",
        }
    }
}

/// How servers are started: who we say we are, and where their diagnostics go.
#[derive(Clone)]
pub struct Options {
    /// `clientInfo.name` in `initialize`.
    pub client_name: String,
    /// `clientInfo.version`.
    pub client_version: String,
    /// Diagnostics; `None` sends them to `tracing` (target `stepwise_mcp`).
    pub log: Option<LogFn>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            client_name: "stepwise".to_owned(),
            client_version: env!("CARGO_PKG_VERSION").to_owned(),
            log: None,
        }
    }
}

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("client_name", &self.client_name)
            .field("client_version", &self.client_version)
            .field("log", &self.log.as_ref().map(|_| "…"))
            .finish()
    }
}

/// The protocol version we ask for: the newest one with an `initialize`
/// handshake, which every server we know of speaks.
pub(crate) const PROTOCOL_VERSION: ProtocolVersion = ProtocolVersion::LATEST_WITH_INITIALIZE;

/// How many stderr lines are kept for error messages.
const TAIL_LINES: usize = 20;
/// Longest stderr line kept (the rest is cut).
const LINE_CHARS: usize = 400;
/// How long a ping may take when a server that timed out is checked.
const PING_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a shut-down server may take to exit before it is killed.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(8);

/// Handles what a server sends unasked: its log messages (deprecated by
/// the newest protocol revision, still sent by servers on older ones).
struct Handler {
    info: ClientConfig,
    server: String,
    log: Logger,
}

#[allow(deprecated)]
impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        self.info.clone()
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let text = match &params.data {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let level = serde_json::to_value(params.level)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        for line in text.lines() {
            self.log.line(
                &self.server,
                LogKind::Notification,
                &format!("[{level}] {line}"),
            );
        }
    }
}

/// [`Options::log`], or `tracing`.
#[derive(Clone)]
pub(crate) struct Logger(Option<LogFn>);

impl Logger {
    pub(crate) fn line(&self, server: &str, kind: LogKind, text: &str) {
        match &self.0 {
            Some(log) => log(LogLine { server, kind, text }),
            None => tracing::info!(target: "stepwise_mcp", server, kind = kind.as_str(), "{text}"),
        }
    }
}

/// The last stderr lines of a server, for error messages.
#[derive(Default)]
struct Tail(VecDeque<String>);

impl Tail {
    fn push(&mut self, line: &str) {
        if self.0.len() == TAIL_LINES {
            self.0.pop_front();
        }
        let mut line = line.trim_end().to_owned();
        if line.chars().count() > LINE_CHARS {
            line = line.chars().take(LINE_CHARS).collect::<String>() + "…";
        }
        self.0.push_back(line);
    }
}

/// One live session with a server.
pub(crate) struct Connection {
    /// Which start of the server this is (1, 2, …).
    pub(crate) generation: u64,
    peer: Peer<RoleClient>,
    service: tokio::sync::Mutex<Option<RunningService<RoleClient, Handler>>>,
    /// The process group of a stdio server (its leader's pid).
    pgid: Option<u32>,
    /// Fires when the stderr reader has read everything (the process closed it).
    stderr_done: Option<tokio::sync::watch::Receiver<bool>>,
}

impl Connection {
    /// Whether the session is gone (the process exited, the HTTP session dropped).
    pub(crate) fn is_closed(&self) -> bool {
        self.peer.is_transport_closed()
    }

    pub(crate) fn pid(&self) -> Option<u32> {
        self.pgid
    }

    /// Closes the session and stops the process (stdin closed, then SIGTERM,
    /// then SIGKILL to its whole group).
    async fn close(&self) {
        let service = self.service.lock().await.take();
        if let Some(mut service) = service {
            let _ = service.close_with_timeout(CLOSE_TIMEOUT).await;
        }
        kill_group(self.pgid);
    }
}

/// SIGKILL to a process group that should be gone already (its leader may
/// have left children behind). A group that no longer exists is fine.
pub fn kill_group(pgid: Option<u32>) {
    #[cfg(unix)]
    if let Some(pgid) = pgid.and_then(|p| i32::try_from(p).ok()).filter(|p| *p > 1) {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(pgid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    #[cfg(not(unix))]
    let _ = pgid;
}

/// What a call came back with, before it is mapped to a tool result.
pub(crate) enum CallOutcome {
    /// The server answered (maybe with `isError`).
    Answered(CallToolResult),
    /// The server answered with a JSON-RPC error.
    Refused(String),
    /// The session failed after the request may have reached the server.
    Lost(String),
    /// No answer in time; the request was cancelled.
    TimedOut(u64),
    /// The server could not be (re)started: nothing was sent.
    Unavailable(String),
}

struct State {
    conn: Option<Arc<Connection>>,
    /// The generation that last timed out: pinged before its next use.
    suspect: Option<u64>,
    closed: bool,
}

/// A configured server and its current session.
pub(crate) struct Server {
    pub(crate) name: String,
    pub(crate) config: ServerConfig,
    options: Options,
    log: Logger,
    state: tokio::sync::Mutex<State>,
    tail: Arc<StdMutex<Tail>>,
    generation: AtomicU64,
    /// Process groups started and not yet stopped, for a synchronous stop
    /// when the set is dropped without a shutdown.
    groups: Arc<StdMutex<Vec<u32>>>,
}

impl Server {
    pub(crate) fn new(name: String, config: ServerConfig, options: Options) -> Self {
        let log = Logger(options.log.clone());
        Self {
            name,
            config,
            options,
            log,
            state: tokio::sync::Mutex::new(State {
                conn: None,
                suspect: None,
                closed: false,
            }),
            tail: Arc::default(),
            generation: AtomicU64::new(0),
            groups: Arc::default(),
        }
    }

    pub(crate) fn note(&self, text: &str) {
        self.log.line(&self.name, LogKind::Lifecycle, text);
    }

    fn stderr_tail(&self) -> Stderr {
        Stderr(
            self.tail
                .lock()
                .map(|t| t.0.iter().cloned().collect())
                .unwrap_or_default(),
        )
    }

    /// Starts the first session and lists the tools (every page), within
    /// the startup timeout.
    pub(crate) async fn start(&self) -> Result<Vec<rmcp::model::Tool>, McpError> {
        let ms = self.config.startup_timeout_ms();
        let started = tokio::time::timeout(Duration::from_millis(ms), async {
            let conn = self.connect().await?;
            let tools = conn.peer.list_all_tools().await;
            Ok::<_, McpError>((conn, tools))
        })
        .await;
        let (conn, tools) = match started {
            Ok(Ok(pair)) => pair,
            Ok(Err(e)) => {
                self.stop_groups();
                return Err(e);
            }
            Err(_) => {
                self.stop_groups();
                return Err(McpError::StartupTimeout {
                    server: self.name.clone(),
                    target: self.config.target(),
                    ms,
                    stderr: self.stderr_tail(),
                });
            }
        };
        let tools = match tools {
            Ok(tools) => tools,
            Err(e) => {
                conn.close().await;
                self.forget_group(conn.pgid);
                return Err(McpError::ListTools {
                    server: self.name.clone(),
                    target: self.config.target(),
                    message: describe(&e),
                    stderr: self.stderr_tail(),
                });
            }
        };
        self.state.lock().await.conn = Some(conn);
        Ok(tools)
    }

    /// A new session: spawns the process (or opens the HTTP session) and
    /// runs the `initialize` handshake.
    async fn connect(&self) -> Result<Arc<Connection>, McpError> {
        let generation = self.generation.fetch_add(1, Ordering::SeqCst) + 1;
        let info = ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new(&self.options.client_name, &self.options.client_version)
                .with_title("Stepwise"),
        )
        .with_protocol_version(PROTOCOL_VERSION);
        let handler = Handler {
            info,
            server: self.name.clone(),
            log: self.log.clone(),
        };
        let target = self.config.target();
        let init_error = |message: String, tail: Stderr| McpError::Initialize {
            server: self.name.clone(),
            target: target.clone(),
            message,
            stderr: tail,
        };
        match self.config.endpoint() {
            Some(Endpoint::Stdio { command, args }) => {
                let mut cmd = match guard() {
                    // Through the guard: it ends the server if this process dies.
                    Some(guard) => {
                        let mut cmd = tokio::process::Command::new(&guard[0]);
                        cmd.args(&guard[1..]).arg(command);
                        cmd
                    }
                    None => tokio::process::Command::new(command),
                };
                cmd.args(args)
                    .envs(&self.config.env)
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .kill_on_drop(true);
                if let Some(dir) = &self.config.cwd {
                    cmd.current_dir(dir);
                }
                let mut wrap = process_wrap::tokio::CommandWrap::from(cmd);
                #[cfg(unix)]
                wrap.wrap(process_wrap::tokio::ProcessGroup::leader());
                let (transport, stderr) = TokioChildProcess::builder(wrap)
                    .stderr(Stdio::piped())
                    .spawn()
                    .map_err(|e| McpError::Spawn {
                        server: self.name.clone(),
                        target: target.clone(),
                        message: match e.kind() {
                            std::io::ErrorKind::NotFound => {
                                format!("{e} (is `{command}` installed and on PATH?)")
                            }
                            _ => e.to_string(),
                        },
                        stderr: Stderr::default(),
                    })?;
                let pgid = transport.id();
                if let (Some(pid), Ok(mut groups)) = (pgid, self.groups.lock()) {
                    groups.push(pid);
                }
                let stderr_done = stderr.map(|stderr| self.read_stderr(stderr));
                match serve_client(handler, transport).await {
                    Ok(service) => {
                        self.note(&format!(
                            "started `{target}` (pid {}, start {generation}, protocol {})",
                            pgid.map_or_else(|| "?".to_owned(), |p| p.to_string()),
                            negotiated(&service)
                        ));
                        Ok(Arc::new(Connection {
                            generation,
                            peer: service.peer().clone(),
                            service: tokio::sync::Mutex::new(Some(service)),
                            pgid,
                            stderr_done,
                        }))
                    }
                    Err(e) => {
                        // Let the reader catch what it printed before it died.
                        if let Some(mut done) = stderr_done {
                            let _ = tokio::time::timeout(
                                Duration::from_millis(1_000),
                                done.wait_for(|d| *d),
                            )
                            .await;
                        }
                        kill_group(pgid);
                        self.forget_group(pgid);
                        Err(init_error(e.to_string(), self.stderr_tail()))
                    }
                }
            }
            Some(Endpoint::Http { url, token_env }) => {
                let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_owned())
                    .reinit_on_expired_session(true);
                if let Some(var) = token_env {
                    let token = std::env::var(var)
                        .ok()
                        .filter(|t| !t.is_empty())
                        .ok_or_else(|| McpError::MissingToken {
                            server: self.name.clone(),
                            var: var.to_owned(),
                        })?;
                    config = config.auth_header(token);
                }
                // reqwest without a TLS provider of its own: ring, as crates/llm.
                let _ = rustls::crypto::ring::default_provider().install_default();
                // No redirects: a server that moved says so, and the token
                // never follows a redirect anywhere.
                let client = reqwest::Client::builder()
                    .pool_max_idle_per_host(0)
                    .redirect(reqwest::redirect::Policy::none())
                    .build()
                    .map_err(|e| {
                        init_error(
                            format!("cannot build an HTTP client: {e}"),
                            Stderr::default(),
                        )
                    })?;
                let transport = StreamableHttpClientTransport::with_client(client, config);
                let service = serve_client(handler, transport)
                    .await
                    .map_err(|e| init_error(e.to_string(), Stderr::default()))?;
                self.note(&format!(
                    "connected to {url} (session {generation}, protocol {})",
                    negotiated(&service)
                ));
                Ok(Arc::new(Connection {
                    generation,
                    peer: service.peer().clone(),
                    service: tokio::sync::Mutex::new(Some(service)),
                    pgid: None,
                    stderr_done: None,
                }))
            }
            None => Err(McpError::Config {
                server: self.name.clone(),
                problem: "needs `command` or `url`".to_owned(),
            }),
        }
    }

    /// Copies the server's stderr, line by line, to the log and the tail.
    fn read_stderr(
        &self,
        stderr: tokio::process::ChildStderr,
    ) -> tokio::sync::watch::Receiver<bool> {
        let (tx, rx) = tokio::sync::watch::channel(false);
        let tail = Arc::clone(&self.tail);
        let log = self.log.clone();
        let name = self.name.clone();
        tokio::spawn(async move {
            let mut lines = tokio::io::BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if let Ok(mut tail) = tail.lock() {
                    tail.push(&line);
                }
                log.line(&name, LogKind::Stderr, &line);
            }
            let _ = tx.send(true);
        });
        rx
    }

    fn forget_group(&self, pgid: Option<u32>) {
        if let (Some(pgid), Ok(mut groups)) = (pgid, self.groups.lock()) {
            groups.retain(|g| *g != pgid);
        }
    }

    /// Kills every process group this server started and has not stopped.
    pub(crate) fn stop_groups(&self) {
        let groups = self
            .groups
            .lock()
            .map(|mut g| std::mem::take(&mut *g))
            .unwrap_or_default();
        for pgid in groups {
            kill_group(Some(pgid));
        }
    }

    /// The session to call on: the current one if it is alive (a session
    /// that timed out is pinged first), else a new one. `Err`: the server
    /// could not be restarted, said for the step's failure.
    async fn session(&self) -> Result<Arc<Connection>, String> {
        let mut state = self.state.lock().await;
        if state.closed {
            return Err(format!("mcp server {} has been shut down", self.name));
        }
        if let Some(conn) = state.conn.clone()
            && !conn.is_closed()
        {
            if state.suspect != Some(conn.generation) {
                return Ok(conn);
            }
            let ping = conn
                .peer
                .send_request(ClientRequest::PingRequest(Default::default()));
            if matches!(tokio::time::timeout(PING_TIMEOUT, ping).await, Ok(Ok(_))) {
                state.suspect = None;
                return Ok(conn);
            }
            self.note("did not answer a ping after a timed-out call; restarting it");
        }
        if let Some(old) = state.conn.take() {
            if old.is_closed() {
                self.note(&match old.pgid {
                    Some(pid) => format!("the server process (pid {pid}) exited; restarting it"),
                    None => "the session was dropped; reconnecting".to_owned(),
                });
            }
            old.close().await;
            self.forget_group(old.pgid);
        }
        let ms = self.config.startup_timeout_ms();
        let conn = match tokio::time::timeout(Duration::from_millis(ms), self.connect()).await {
            Ok(Ok(conn)) => conn,
            Ok(Err(e)) => return Err(format!("could not restart it: {e}")),
            Err(_) => {
                self.stop_groups();
                return Err(format!("could not restart it within {ms} ms"));
            }
        };
        state.conn = Some(Arc::clone(&conn));
        state.suspect = None;
        Ok(conn)
    }

    /// Marks a session that failed or timed out.
    async fn mark(&self, generation: u64, dead: bool) {
        let mut state = self.state.lock().await;
        if state
            .conn
            .as_ref()
            .is_some_and(|c| c.generation == generation)
        {
            if dead {
                if let Some(old) = state.conn.take() {
                    old.close().await;
                    self.forget_group(old.pgid);
                }
            } else {
                state.suspect = Some(generation);
            }
        }
    }

    /// Calls `tool` (its MCP name) within `timeout_ms`; `idempotency_key`,
    /// if given, goes in the request's `_meta` as [`IDEMPOTENCY_KEY_META`].
    pub(crate) async fn call(
        &self,
        tool: &str,
        arguments: serde_json::Map<String, serde_json::Value>,
        idempotency_key: Option<&str>,
        timeout_ms: u64,
    ) -> CallOutcome {
        let conn = match self.session().await {
            Ok(conn) => conn,
            Err(why) => return CallOutcome::Unavailable(why),
        };
        let mut params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
        if let Some(key) = idempotency_key {
            let mut meta = serde_json::Map::new();
            meta.insert(IDEMPOTENCY_KEY_META.to_owned(), key.into());
            params.meta = Some(meta.into());
        }
        // Dropping the call future (the step was cancelled) sends
        // notifications/cancelled; a timeout drops it the same way.
        let call = conn.peer.call_tool(params);
        match tokio::time::timeout(Duration::from_millis(timeout_ms), call).await {
            Err(_) => {
                self.mark(conn.generation, false).await;
                CallOutcome::TimedOut(timeout_ms)
            }
            Ok(Ok(result)) => CallOutcome::Answered(result),
            Ok(Err(ServiceError::McpError(e))) => CallOutcome::Refused(e.message.into_owned()),
            Ok(Err(e)) => {
                let dead = conn.is_closed()
                    || matches!(
                        e,
                        ServiceError::TransportClosed | ServiceError::TransportSend(_)
                    );
                let why = describe(&e);
                self.mark(conn.generation, dead).await;
                CallOutcome::Lost(if dead && conn.pgid.is_some() {
                    format!("the server process exited during the call ({why})")
                } else {
                    why
                })
            }
        }
    }

    /// The pid of the current process, if a stdio server is running.
    pub(crate) async fn pid(&self) -> Option<u32> {
        let state = self.state.lock().await;
        state
            .conn
            .as_ref()
            .filter(|c| !c.is_closed())
            .and_then(|c| c.pid())
    }

    /// Closes the session and stops the process; no restart after this.
    pub(crate) async fn shutdown(&self) {
        let conn = {
            let mut state = self.state.lock().await;
            state.closed = true;
            state.conn.take()
        };
        if let Some(conn) = conn {
            conn.close().await;
            if let Some(mut done) = conn.stderr_done.clone() {
                let _ =
                    tokio::time::timeout(Duration::from_millis(500), done.wait_for(|d| *d)).await;
            }
            self.forget_group(conn.pgid);
            self.note("shut down");
        }
        self.stop_groups();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop_groups();
    }
}

/// The protocol version a session settled on.
fn negotiated(service: &RunningService<RoleClient, Handler>) -> String {
    service
        .peer_info()
        .map_or_else(|| "unknown".to_owned(), |i| i.protocol_version.to_string())
}

/// A service error in words.
fn describe(e: &ServiceError) -> String {
    match e {
        ServiceError::McpError(e) => e.message.to_string(),
        ServiceError::TransportClosed => "the connection closed".to_owned(),
        other => other.to_string(),
    }
}
