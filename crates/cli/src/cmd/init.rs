//! `stepwise init [DIR]`: writes a `stepwise.toml` whose every setting is
//! commented out, with what it does and its default, so a new project sees
//! every key the docs name and turns one on by deleting its `# `.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::anyhow;

use crate::cli::InitArgs;
use crate::error::{CliError, CliResult};
use crate::output;

/// The file `init` writes. Lines starting with `## ` are prose; lines
/// starting with `# ` are settings (or table headers) that load as written
/// once that `# ` is removed (`tests::every_setting_loads_uncommented`).
pub(crate) const TEMPLATE: &str = r##"## stepwise.toml: read from the folder a stepwise command runs in.
## Every setting below is commented out and shows its default (or an
## example where there is none): delete the leading "# " to turn it on.
## Unknown keys are refused. API keys never go here: they come from the
## environment or .env (OPENAI_API_KEY, ANTHROPIC_API_KEY).

## The model behind every role (--model and STEPWISE_MODEL override it):
## offline, openai:MODEL, anthropic:MODEL, ollama:MODEL or script:FILE.
# model = "offline"

## Provider endpoints (OPENAI_BASE_URL and the like override them).
# [openai]
# base_url = "https://api.openai.com/v1"   # any OpenAI-compatible server
# [anthropic]
# base_url = "https://api.anthropic.com"
# [ollama]
# base_url = "http://localhost:11434/v1"

## How model calls are retried and timed out (docs/models.md). Times in
## milliseconds; a timeout of 0 means no limit.
# [retry]
# max_attempts = 3              # attempts in all; 1 means no retry
# initial_delay_ms = 500        # backoff before the second attempt
# multiplier = 2.0              # backoff growth per attempt (at least 1.0)
# jitter = 0.2                  # random spread, 0.0 to 1.0
# max_delay_ms = 30000          # cap on every wait, Retry-After included
# connect_timeout_ms = 10000    # reaching the server
# first_byte_timeout_ms = 10000 # request to response headers (Ollama: 60000)
# idle_timeout_ms = 10000       # longest silence within an answer
# call_timeout_ms = 300000      # one whole attempt

## One provider's own retry settings, over [retry] key by key
## ([anthropic.retry] and [ollama.retry] take the same keys).
# [openai.retry]
# first_byte_timeout_ms = 120000  # e.g. a reasoning model that thinks first

## Prices in US dollars per million tokens, by model spec; they turn a
## run's tokens into cost (no price: no cost shown).
# [prices."openai:gpt-4o-mini"]
# input_per_mtok = 0.15
# output_per_mtok = 0.6

## A role on a model of its own (default: `model` above). The roles are
## planner, repairer, executor, assessor, replanner, synthesizer, verifier,
## actor, summarizer and router ([router] is another spelling of
## [roles.router]: use one of the two).
# [roles.planner]
# model = "openai:gpt-4o"
# [roles.assessor]
# model = "openai:gpt-4o-mini"

## Streamed plans: steps start while the planner still writes later ones.
# [planner]
# stream = false

## MCP servers whose tools runs may call, named NAME.tool (docs/tools.md).
## A server has `command` (stdio) or `url` (streamable HTTP), not both.
# [mcp.servers.fs]
# command = "npx"               # looked up on PATH
# args = ["-y", "@modelcontextprotocol/server-filesystem", "./data"]
# env = { SOME_VAR = "..." }    # added to the environment it inherits
# cwd = "."                     # default: the folder of this file
# timeout_ms = 60000            # one call
# startup_timeout_ms = 30000    # start, initialize and list tools
## Per-tool overrides of what the server claims (unset: the server's hints).
# [mcp.servers.fs.tools.write_file]
# side_effect = true            # needs an approval (default unless readOnlyHint)
# idempotent = false            # a call cut off by a crash is re-run on resume
# destructive = true            # said when approval is asked
# timeout_ms = 10000            # over the server's
# enabled = true                # false: plans cannot call it
# [mcp.servers.search]
# url = "http://127.0.0.1:8931/mcp"
# bearer_token_env = "SEARCH_MCP_TOKEN"  # the token comes from the environment only

## `stepwise serve`: the HTTP API and dashboard (docs/server.md).
# [serve]
# listen = "127.0.0.1:8472"     # --listen overrides it
# notes_roots = ["notes"]       # notes folders a client may name are under these (must exist)
# workspace_root = "workspaces" # workspaces for write_file (default: none)
# default_model = "offline"     # "offline" or a name in [serve.models]
# cli_runs_tenant = "acme"      # who owns runs started by `stepwise run` (default: no one)
## Bearer tokens, each bound to a tenant (also STEPWISE_SERVE_TOKENS=tenant:token).
# [[serve.tokens]]
# tenant = "acme"
# token_env = "STEPWISE_TOKEN_ACME"  # or token = "..." (a file is easier to leak)
## Names a client may pick -> model specs.
# [serve.models]
# fast = "openai:gpt-4o-mini"
## Names a client may pick -> MCP servers configured above.
# [serve.tool_sets]
# files = { mcp = ["fs"] }
## Limits (these are the defaults).
# [serve.limits]
# max_body_bytes = 1048576      # largest request body
# request_timeout_ms = 30000    # longest a request may take to be answered
# max_running = 4               # runs worked on at once; more wait, queued
# max_queued = 1000             # runs that may wait; beyond it a submit is refused
# max_streams = 1024            # event streams open at once
# max_streams_per_tenant = 256  # one tenant's streams cannot take every slot
# max_concurrency = 16          # most steps a client may run at once in a run
# shutdown_grace_ms = 10000     # how long a shutdown waits for runs to checkpoint
# poll_ms = 500                 # how often streams look at runs driven elsewhere
# max_goal_bytes = 16384        # a longer goal is 400 invalid_request
# max_steps = 200               # the most a client may set max_steps to
# header_read_timeout_ms = 10000  # a connection slower to send a request's head is closed
"##;

/// `stepwise init [DIR]`.
pub(crate) fn init(args: &InitArgs) -> CliResult {
    let dir = args.dir.clone().unwrap_or_else(|| PathBuf::from("."));
    let path = dir.join("stepwise.toml");
    write_new(&path, TEMPLATE)?;
    output::stdout(&format!(
        "wrote {}: every setting is commented out; delete a line's \"# \" to turn it on\n",
        path.display()
    ))?;
    Ok(())
}

/// Writes `text` to a file that must not exist yet (checked by the open
/// itself, so a file that appears meanwhile is not overwritten either).
fn write_new(path: &Path, text: &str) -> CliResult {
    let mut file = match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
    {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            return Err(CliError::usage(anyhow!(
                "{} already exists; not overwriting it (remove it first, or edit it)",
                path.display()
            )));
        }
        Err(e) => {
            return Err(CliError::usage(anyhow!(
                "cannot create {}: {e}",
                path.display()
            )));
        }
    };
    file.write_all(text.as_bytes())
        .map_err(|e| CliError::failed(anyhow!("cannot write {}: {e}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::TEMPLATE;

    /// The template with every setting turned on.
    fn uncommented() -> String {
        TEMPLATE
            .lines()
            .map(|line| line.strip_prefix("# ").unwrap_or(line))
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn every_line_is_prose_a_setting_or_blank() {
        for line in TEMPLATE.lines() {
            let setting = line.strip_prefix("# ");
            let ok = line.is_empty()
                || line.starts_with("## ")
                || setting.is_some_and(|s| s.starts_with('[') || s.contains(" = "));
            assert!(
                ok,
                "neither prose (## ) nor a setting (# key = …): {line:?}"
            );
        }
    }

    #[test]
    fn every_setting_loads_uncommented() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("stepwise.toml"), uncommented()).unwrap();
        let config = crate::config::Config::load(dir.path())
            .unwrap_or_else(|e| panic!("the uncommented template does not load: {e:#}"));
        assert_eq!(config.model_spec(None), "offline");
        assert!(config.price("openai:gpt-4o-mini").is_some());
        assert_eq!(config.role_models().len(), 2);
        assert!(!config.stream_plans());
        assert_eq!(config.call_policy("anthropic:m").retry.max_attempts, 3);
        #[cfg(feature = "serve")]
        {
            let serve = config.serve().unwrap_or_else(|| panic!("[serve] is read"));
            assert_eq!(serve.limits, stepwise_server::Limits::default());
            assert_eq!(serve.tokens.len(), 1);
        }
        // The file as written is all comments: it loads as an empty one.
        let plain = tempfile::tempdir().unwrap();
        std::fs::write(plain.path().join("stepwise.toml"), TEMPLATE).unwrap();
        let config = crate::config::Config::load(plain.path())
            .unwrap_or_else(|e| panic!("the template does not load: {e:#}"));
        assert!(config.role_models().is_empty());
    }
}
