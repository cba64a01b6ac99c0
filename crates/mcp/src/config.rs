//! How a server is reached and what its tools are allowed to claim: the
//! `[mcp.servers.NAME]` tables of `stepwise.toml` (and `--mcp NAME=COMMAND`),
//! as plain serde types with unknown keys refused.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::McpError;

/// One call's time limit when neither the tool nor the server sets one.
pub const DEFAULT_TIMEOUT_MS: u64 = 60_000;

/// How long a server may take to start, initialise and list its tools
/// when its config does not say.
pub const DEFAULT_STARTUP_TIMEOUT_MS: u64 = 30_000;

/// `[mcp.servers.NAME]`: a server started as a child process (`command`,
/// `args`, `env`, `cwd`; spoken to over stdio) or reached over streamable
/// HTTP (`url`, `bearer_token_env`), with per-tool overrides.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    /// The program to start (looked up on `PATH`), for a stdio server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Its arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Variables added to the environment it inherits.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Where it runs; relative paths are resolved against the folder of the
    /// file that configured it (see [`ServerConfig::resolve`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
    /// The endpoint of a streamable HTTP server, e.g. `http://127.0.0.1:8931/mcp`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The environment variable holding the bearer token sent to an HTTP
    /// server. The token itself is never written in a config file or stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bearer_token_env: Option<String>,
    /// One call's time limit for this server's tools, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// How long starting, initialising and listing tools may take, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub startup_timeout_ms: Option<u64>,
    /// `[mcp.servers.NAME.tools.TOOL]`: overrides by the tool's MCP name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tools: BTreeMap<String, ToolOverride>,
}

/// `[mcp.servers.NAME.tools.TOOL]`: what the configuration says about one
/// tool, over what the server's annotations claim.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolOverride {
    /// Whether it changes the world (and so needs an approval). Unset: it
    /// does unless the server says `readOnlyHint: true`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub side_effect: Option<bool>,
    /// Whether repeating a call has no further effect (resume re-runs an
    /// interrupted call only then). Unset: the server's `idempotentHint`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent: Option<bool>,
    /// Whether it may delete or overwrite data (said when approval is
    /// asked). Unset: the server's `destructiveHint`, true if absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive: Option<bool>,
    /// One call's time limit, in milliseconds (over the server's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// `false` leaves the tool out: plans cannot call it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
}

/// How a server is reached, once its config has been checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Endpoint<'a> {
    /// A child process spoken to over stdio.
    Stdio {
        command: &'a str,
        args: &'a [String],
    },
    /// Streamable HTTP.
    Http {
        url: &'a str,
        token_env: Option<&'a str>,
    },
}

impl ServerConfig {
    /// A stdio server: `command` with `args`.
    pub fn stdio(
        command: impl Into<String>,
        args: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        Self {
            command: Some(command.into()),
            args: args.into_iter().map(Into::into).collect(),
            ..Self::default()
        }
    }

    /// A streamable HTTP server at `url`.
    pub fn http(url: impl Into<String>) -> Self {
        Self {
            url: Some(url.into()),
            ..Self::default()
        }
    }

    /// What `--mcp NAME=SPEC` gives: an `http://` or `https://` URL, or a
    /// command line (split like a shell would, with `'…'`, `"…"` and `\`).
    pub fn from_flag(spec: &str) -> Result<Self, String> {
        let spec = spec.trim();
        if spec.starts_with("http://") || spec.starts_with("https://") {
            return Ok(Self::http(spec));
        }
        let words = split_command_line(spec)?;
        let Some((command, args)) = words.split_first() else {
            return Err("the command is empty".to_owned());
        };
        Ok(Self::stdio(command.clone(), args.iter().cloned()))
    }

    /// This config with `cwd` made absolute against `base` (the folder of
    /// the file that configured it, or the current directory for a flag), so
    /// it means the same wherever a resume runs; so is a relative `command`
    /// with a `/` in it (`target/debug/server`), which is found from `cwd`.
    /// A bare name (`npx`) is still looked up on `PATH`.
    #[must_use]
    pub fn resolve(mut self, base: &Path) -> Self {
        if let Some(command) = &self.command
            && command.contains('/')
            && Path::new(command).is_relative()
        {
            let dir = match &self.cwd {
                Some(dir) if dir.is_absolute() => dir.clone(),
                Some(dir) => base.join(dir),
                None => base.to_path_buf(),
            };
            self.command = Some(dir.join(command).display().to_string());
        }
        if self.command.is_some() {
            let cwd = match self.cwd.take() {
                Some(dir) if dir.is_absolute() => dir,
                Some(dir) => base.join(dir),
                None => base.to_path_buf(),
            };
            self.cwd = Some(cwd);
        }
        self
    }

    /// The call timeout of `tool` (its MCP name): the tool's, else the server's, else the default.
    pub fn timeout_ms(&self, tool: &str) -> u64 {
        self.tools
            .get(tool)
            .and_then(|t| t.timeout_ms)
            .or(self.timeout_ms)
            .unwrap_or(DEFAULT_TIMEOUT_MS)
    }

    /// The startup timeout.
    pub fn startup_timeout_ms(&self) -> u64 {
        self.startup_timeout_ms
            .unwrap_or(DEFAULT_STARTUP_TIMEOUT_MS)
    }

    /// Checks what serde cannot: exactly one of `command` and `url`, the keys
    /// that go with each, timeouts above zero, a usable server name.
    pub fn check(&self, server: &str) -> Result<(), McpError> {
        let problem = |problem: String| McpError::Config {
            server: server.to_owned(),
            problem,
        };
        check_name(server).map_err(problem)?;
        match (&self.command, &self.url) {
            (Some(_), Some(_)) => {
                return Err(problem(
                    "has both `command` (stdio) and `url` (HTTP); give one".to_owned(),
                ));
            }
            (None, None) => {
                return Err(problem(
                    "needs `command` (a stdio server) or `url` (a streamable HTTP server)"
                        .to_owned(),
                ));
            }
            (Some(command), None) => {
                if command.trim().is_empty() {
                    return Err(problem("`command` is empty".to_owned()));
                }
                if self.bearer_token_env.is_some() {
                    return Err(problem(
                        "`bearer_token_env` is for HTTP servers (`url`); pass a stdio server its secrets through `env` or the environment".to_owned(),
                    ));
                }
            }
            (None, Some(url)) => {
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err(problem(format!(
                        "`url` {url:?} must start with http:// or https://"
                    )));
                }
                for (key, set) in [
                    ("args", !self.args.is_empty()),
                    ("env", !self.env.is_empty()),
                    ("cwd", self.cwd.is_some()),
                ] {
                    if set {
                        return Err(problem(format!(
                            "`{key}` is for stdio servers (`command`), not for `url`"
                        )));
                    }
                }
                if let Some(var) = &self.bearer_token_env
                    && var.trim().is_empty()
                {
                    return Err(problem("`bearer_token_env` is empty".to_owned()));
                }
            }
        }
        let zero = self.timeout_ms == Some(0)
            || self.startup_timeout_ms == Some(0)
            || self.tools.values().any(|t| t.timeout_ms == Some(0));
        if zero {
            return Err(problem(
                "a timeout of 0 ms would fail every call".to_owned(),
            ));
        }
        Ok(())
    }

    /// How the server is reached (after [`ServerConfig::check`]).
    pub(crate) fn endpoint(&self) -> Option<Endpoint<'_>> {
        match (&self.command, &self.url) {
            (Some(command), None) => Some(Endpoint::Stdio {
                command,
                args: &self.args,
            }),
            (None, Some(url)) => Some(Endpoint::Http {
                url,
                token_env: self.bearer_token_env.as_deref(),
            }),
            _ => None,
        }
    }

    /// The command line or URL, for messages.
    pub fn target(&self) -> String {
        match self.endpoint() {
            Some(Endpoint::Stdio { command, args }) => std::iter::once(command)
                .chain(args.iter().map(String::as_str))
                .map(quote_word)
                .collect::<Vec<_>>()
                .join(" "),
            Some(Endpoint::Http { url, .. }) => url.to_owned(),
            None => "(no command or url)".to_owned(),
        }
    }
}

/// A server name: letters, digits, `_` and `-` (it prefixes its tools'
/// names as `NAME.tool`, so it cannot hold a `.`).
fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("a server needs a name".to_owned());
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(
            "its name may use only letters, digits, `_` and `-` (its tools are named NAME.tool)"
                .to_owned(),
        );
    }
    Ok(())
}

fn quote_word(word: &str) -> String {
    if !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:@=+,".contains(c))
    {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// Splits a command line into words: whitespace separates, `'…'` is
/// literal, `"…"` allows `\"` and `\\`, a bare `\` escapes the next character.
pub fn split_command_line(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err("a `'` is not closed".to_owned()),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\')) => word.push(c),
                            Some(c) => {
                                word.push('\\');
                                word.push(c);
                            }
                            None => return Err("a `\"` is not closed".to_owned()),
                        },
                        Some(c) => word.push(c),
                        None => return Err("a `\"` is not closed".to_owned()),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some(c) => word.push(c),
                    None => return Err("a `\\` ends the line".to_owned()),
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn a_flag_is_a_url_or_a_command_line() {
        assert_eq!(
            ServerConfig::from_flag("http://127.0.0.1:8931/mcp").unwrap(),
            ServerConfig::http("http://127.0.0.1:8931/mcp")
        );
        let c = ServerConfig::from_flag(r#"npx -y '@scope/server x' "a \"b\"" c\ d"#).unwrap();
        assert_eq!(c.command.as_deref(), Some("npx"));
        assert_eq!(c.args, ["-y", "@scope/server x", "a \"b\"", "c d"]);
        assert_eq!(c.target(), r#"npx -y '@scope/server x' 'a "b"' 'c d'"#);
        assert!(ServerConfig::from_flag("  ").is_err());
        assert!(ServerConfig::from_flag("npx 'open").is_err());
    }

    #[test]
    fn a_config_is_either_stdio_or_http_with_the_keys_that_go_with_it() {
        let ok = ServerConfig::stdio("node", ["server.js"]);
        ok.check("fs").unwrap();
        let err = |c: &ServerConfig, name: &str| c.check(name).unwrap_err().to_string();
        assert!(err(&ok, "my.fs").contains("only letters"));
        assert!(err(&ServerConfig::default(), "x").contains("needs `command`"));
        let both = ServerConfig {
            url: Some("http://x".into()),
            ..ok.clone()
        };
        assert!(err(&both, "x").contains("both"));
        let token_on_stdio = ServerConfig {
            bearer_token_env: Some("T".into()),
            ..ok.clone()
        };
        assert!(err(&token_on_stdio, "x").contains("bearer_token_env"));
        let args_on_http = ServerConfig {
            args: vec!["a".into()],
            ..ServerConfig::http("http://x/mcp")
        };
        assert!(err(&args_on_http, "x").contains("`args`"));
        assert!(err(&ServerConfig::http("ftp://x"), "x").contains("http://"));
        let zero = ServerConfig {
            timeout_ms: Some(0),
            ..ok
        };
        assert!(err(&zero, "x").contains("0 ms"));
    }

    #[test]
    fn timeouts_come_from_the_tool_then_the_server_then_the_default() {
        let mut c = ServerConfig::stdio("node", ["s.js"]);
        assert_eq!(c.timeout_ms("a"), DEFAULT_TIMEOUT_MS);
        c.timeout_ms = Some(500);
        c.tools.insert(
            "a".into(),
            ToolOverride {
                timeout_ms: Some(50),
                ..ToolOverride::default()
            },
        );
        assert_eq!((c.timeout_ms("a"), c.timeout_ms("b")), (50, 500));
        let resolved = c.resolve(Path::new("/base"));
        assert_eq!(resolved.cwd.as_deref(), Some(Path::new("/base")));
        let relative = ServerConfig {
            cwd: Some("data".into()),
            ..ServerConfig::stdio("node", ["s.js"])
        };
        assert_eq!(
            relative.resolve(Path::new("/base")).cwd.as_deref(),
            Some(Path::new("/base/data"))
        );
        let local =
            ServerConfig::stdio("target/debug/server", ["--stdio"]).resolve(Path::new("/base"));
        assert_eq!(local.command.as_deref(), Some("/base/target/debug/server"));
        let on_path = ServerConfig::stdio("npx", ["-y", "x"]).resolve(Path::new("/base"));
        assert_eq!(on_path.command.as_deref(), Some("npx"));
    }
}
