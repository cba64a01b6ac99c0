//! `minerva-server`: seed 000's MINERVA tools as a Model Context Protocol
//! server, built on the server side of the official Rust SDK (rmcp) — the
//! other half of the protocol Stepwise's client (crates/mcp) speaks.
//!
//! ```text
//! minerva-server                       # stdio (what stepwise.toml's `command` runs)
//! minerva-server --http [--port N]     # streamable HTTP on 127.0.0.1 (port 0: one is picked)
//! ```
//!
//! Over HTTP the endpoint's URL (`http://127.0.0.1:PORT/mcp`) is the one
//! line written to stdout, once the port is bound. Logs go to stderr; with
//! `--call-log FILE` (or `MINERVA_CALL_LOG`) every call is also appended to
//! FILE as one JSON line, so a test can count the calls a run made.

mod dictionary;
mod parse;
mod server;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use rmcp::ServiceExt;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use crate::dictionary::Dictionary;
use crate::server::Minerva;

const USAGE: &str = "\
minerva-server: seed 000's MINERVA tools (parse_columns, search_standardization_docs,
classify_domain_group, lookup_index_candidates, lookup_abbreviation) over MCP.

Usage: minerva-server [--stdio | --http [--port N]] [--dictionary FILE] [--call-log FILE]

  --stdio            serve over stdin/stdout (the default)
  --http             serve streamable HTTP at http://127.0.0.1:PORT/mcp; the URL is
                     printed on stdout once bound
  --port N           the HTTP port (default 0: the system picks a free one)
  --dictionary FILE  a standard-terms dictionary of the shape of dictionary.json
                     (default: the one built in)
  --call-log FILE    append every call to FILE, one JSON line each

Environment: MINERVA_TRANSPORT (stdio|http), MINERVA_PORT, MINERVA_DICTIONARY,
MINERVA_CALL_LOG, each overridden by its flag.";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Transport {
    Stdio,
    Http,
}

#[derive(Debug)]
struct Options {
    transport: Transport,
    port: u16,
    dictionary: Option<PathBuf>,
    call_log: Option<PathBuf>,
}

enum Parsed {
    Run(Options),
    Help,
    Version,
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Parsed, String> {
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let mut options = Options {
        transport: match env("MINERVA_TRANSPORT").as_deref() {
            None | Some("stdio") => Transport::Stdio,
            Some("http") => Transport::Http,
            Some(other) => return Err(format!("MINERVA_TRANSPORT={other}: stdio or http")),
        },
        port: match env("MINERVA_PORT") {
            None => 0,
            Some(p) => p
                .parse()
                .map_err(|_| format!("MINERVA_PORT={p}: not a port number"))?,
        },
        dictionary: env("MINERVA_DICTIONARY").map(PathBuf::from),
        call_log: env("MINERVA_CALL_LOG").map(PathBuf::from),
    };
    while let Some(arg) = args.next() {
        let mut value = |flag: &str| args.next().ok_or_else(|| format!("{flag} needs a value"));
        match arg.as_str() {
            "--stdio" => options.transport = Transport::Stdio,
            "--http" => options.transport = Transport::Http,
            "--port" => {
                let p = value("--port")?;
                options.port = p
                    .parse()
                    .map_err(|_| format!("--port {p}: not a port number"))?;
            }
            "--dictionary" => options.dictionary = Some(PathBuf::from(value("--dictionary")?)),
            "--call-log" => options.call_log = Some(PathBuf::from(value("--call-log")?)),
            "-h" | "--help" => return Ok(Parsed::Help),
            "-V" | "--version" => return Ok(Parsed::Version),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(Parsed::Run(options))
}

fn say(line: &str) {
    let _ = writeln!(std::io::stderr(), "minerva-server: {line}");
}

#[tokio::main]
async fn main() -> ExitCode {
    let options = match parse_args(std::env::args().skip(1)) {
        Ok(Parsed::Run(o)) => o,
        Ok(Parsed::Help) => {
            let _ = writeln!(std::io::stdout(), "{USAGE}");
            return ExitCode::SUCCESS;
        }
        Ok(Parsed::Version) => {
            let _ = writeln!(
                std::io::stdout(),
                "minerva-server {}",
                env!("CARGO_PKG_VERSION")
            );
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            say(&format!("{e}\n\n{USAGE}"));
            return ExitCode::from(2);
        }
    };
    match serve(options).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            say(&e);
            ExitCode::FAILURE
        }
    }
}

async fn serve(options: Options) -> Result<(), String> {
    let dict = match &options.dictionary {
        None => Dictionary::built_in()?,
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            Dictionary::parse(&text).map_err(|e| format!("{}: {e}", path.display()))?
        }
    };
    let (terms, words, groups) = dict.counts();
    let minerva = Minerva::new(dict, options.call_log.clone())?;
    match options.transport {
        Transport::Stdio => {
            say(&format!(
                "{terms} terms, {words} words, {groups} domain groups; serving over stdio"
            ));
            let running = minerva
                .serve(rmcp::transport::stdio())
                .await
                .map_err(|e| format!("cannot start over stdio: {e}"))?;
            running
                .waiting()
                .await
                .map_err(|e| format!("the stdio server stopped: {e}"))?;
            say("stdin closed; stopped");
            Ok(())
        }
        Transport::Http => {
            let config = StreamableHttpServerConfig::default();
            let stop = config.cancellation_token.clone();
            let service: StreamableHttpService<Minerva, LocalSessionManager> =
                StreamableHttpService::new(move || Ok(minerva.clone()), Default::default(), config);
            let router = axum::Router::new().nest_service("/mcp", service);
            let listener = tokio::net::TcpListener::bind(("127.0.0.1", options.port))
                .await
                .map_err(|e| format!("cannot bind 127.0.0.1:{}: {e}", options.port))?;
            let addr = listener
                .local_addr()
                .map_err(|e| format!("no local address: {e}"))?;
            let url = format!("http://{addr}/mcp");
            {
                let mut out = std::io::stdout().lock();
                writeln!(out, "{url}")
                    .and_then(|()| out.flush())
                    .map_err(|e| format!("cannot write the URL to stdout: {e}"))?;
            }
            say(&format!(
                "{terms} terms, {words} words, {groups} domain groups; serving streamable HTTP at {url}"
            ));
            axum::serve(listener, router)
                .with_graceful_shutdown(async move {
                    shutdown_signal().await;
                    stop.cancel();
                })
                .await
                .map_err(|e| format!("the HTTP server stopped: {e}"))?;
            say("stopped");
            Ok(())
        }
    }
}

/// Ctrl-C, or SIGTERM where there is one.
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]

    use super::*;

    fn parsed(args: &[&str]) -> Result<Parsed, String> {
        parse_args(args.iter().map(|s| (*s).to_owned()))
    }

    #[test]
    fn flags_pick_the_transport_and_port() {
        let Ok(Parsed::Run(o)) = parsed(&["--http", "--port", "8931", "--call-log", "/tmp/x"])
        else {
            panic!("not parsed");
        };
        assert_eq!((o.transport, o.port), (Transport::Http, 8931));
        assert_eq!(o.call_log.as_deref(), Some(std::path::Path::new("/tmp/x")));
        assert!(parsed(&["--port", "x"]).is_err());
        assert!(parsed(&["--bogus"]).is_err());
        assert!(matches!(parsed(&["--help"]), Ok(Parsed::Help)));
    }
}
