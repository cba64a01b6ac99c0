//! Guards. Side-effect tools guarded by the run's lease: right before a
//! call with a side effect leaves, the idempotency log is asked whether the run's lease
//! still holds ([`IdempotencyLog::check_held`]); if not — a worker frozen
//! (SIGSTOP, a long pause) past its lease, whose run another worker took
//! over — the call is not made. What remains is the time between that
//! check and the call's first byte (docs/durability.md). And MCP servers
//! guarded by their starter's life ([`mcp_guard`]).

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;
use stepwise_core::{DynTool, IdempotencyLog, ToolContext, ToolError, ToolRegistry, ToolSpec};

/// A side-effect tool that asks the log before each call.
struct Guarded {
    tool: Arc<dyn DynTool>,
    log: Arc<dyn IdempotencyLog>,
}

impl DynTool for Guarded {
    fn spec(&self) -> &ToolSpec {
        self.tool.spec()
    }

    fn call_json(&self, ctx: ToolContext, args: Value) -> BoxFuture<'_, Result<Value, ToolError>> {
        Box::pin(async move {
            if let Err(e) = self.log.check_held().await {
                return Err(ToolError::transient(format!(
                    "not called: the run's lease no longer holds ({e})"
                )));
            }
            self.tool.call_json(ctx, args).await
        })
    }
}

/// `stepwise mcp-guard COMMAND ARGS…`: runs an MCP server with this
/// process's stdin, stdout and stderr, and ends it when the process that
/// started the guard (a run, a worker, the server) dies — seen as this
/// process being handed to another parent — so a server that does not exit
/// when its stdin closes is not left running. Exits with the server's code.
#[cfg(feature = "mcp")]
pub(crate) fn mcp_guard(argv: &[std::ffi::OsString]) -> crate::error::CliResult {
    use anyhow::anyhow;
    let Some((command, args)) = argv.split_first() else {
        return Err(crate::error::CliError::usage(anyhow!(
            "mcp-guard needs a command"
        )));
    };
    let parent = std::os::unix::process::parent_id();
    let mut child = std::process::Command::new(command)
        .args(args)
        .spawn()
        .map_err(|e| {
            let name = std::path::Path::new(command).display();
            let hint = match e.kind() {
                std::io::ErrorKind::NotFound => format!(" (is `{name}` installed and on PATH?)"),
                _ => String::new(),
            };
            crate::error::CliError::usage(anyhow!("cannot start {name}: {e}{hint}"))
        })?;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => std::process::exit(status.code().unwrap_or(1)),
            Ok(None) => {}
            Err(_) => std::process::exit(1),
        }
        if std::os::unix::process::parent_id() != parent {
            // Its starter is gone: so is the reason to run. The guard leads
            // the server's process group, so what the server started (a
            // wrapper's child, say) goes too — and the guard with them.
            let _ = child.kill();
            let _ = child.wait();
            stepwise_mcp::kill_group(Some(std::process::id()));
            std::process::exit(0);
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

/// The argv prefix stdio MCP servers are started through: this program's
/// own `mcp-guard` (none if its path cannot be found).
#[cfg(feature = "mcp")]
pub(crate) fn mcp_guard_argv() -> Vec<std::ffi::OsString> {
    match std::env::current_exe() {
        Ok(exe) => vec![exe.into_os_string(), "mcp-guard".into(), "--".into()],
        Err(_) => Vec::new(),
    }
}

/// `tools` with each side-effect tool guarded by `log`.
pub(crate) fn guarded(tools: ToolRegistry, log: &Arc<dyn IdempotencyLog>) -> ToolRegistry {
    tools.map(|tool| {
        if tool.spec().side_effect {
            Arc::new(Guarded {
                tool,
                log: Arc::clone(log),
            })
        } else {
            tool
        }
    })
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    use stepwise_core::{IdempotencyRecord, RunId, StepId, StoreError};

    use super::*;

    /// A log whose lease holds while `held` says so.
    struct Log {
        held: AtomicBool,
    }

    impl IdempotencyLog for Log {
        fn begin<'a>(&'a self, _: &'a IdempotencyRecord) -> BoxFuture<'a, Result<(), StoreError>> {
            Box::pin(std::future::ready(Ok(())))
        }
        fn complete<'a>(
            &'a self,
            _: &'a str,
            _: &'a Value,
        ) -> BoxFuture<'a, Result<(), StoreError>> {
            Box::pin(std::future::ready(Ok(())))
        }
        fn get<'a>(
            &'a self,
            _: &'a str,
        ) -> BoxFuture<'a, Result<Option<IdempotencyRecord>, StoreError>> {
            Box::pin(std::future::ready(Ok(None)))
        }
        fn check_held(&self) -> BoxFuture<'_, Result<(), StoreError>> {
            let held = self.held.load(Ordering::SeqCst);
            Box::pin(std::future::ready(if held {
                Ok(())
            } else {
                Err(StoreError::Fenced {
                    run: RunId("r".into()),
                    fence: 1,
                })
            }))
        }
    }

    /// A tool that counts its calls.
    struct Counted {
        spec: ToolSpec,
        calls: Arc<AtomicUsize>,
    }

    impl DynTool for Counted {
        fn spec(&self) -> &ToolSpec {
            &self.spec
        }
        fn call_json(&self, _: ToolContext, _: Value) -> BoxFuture<'_, Result<Value, ToolError>> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            Box::pin(std::future::ready(Ok(Value::Null)))
        }
    }

    fn spec(name: &str, side_effect: bool) -> ToolSpec {
        serde_json::from_value(serde_json::json!({
            "name": name, "description": name, "side_effect": side_effect
        }))
        .unwrap_or_else(|e| panic!("{e}"))
    }

    #[tokio::test]
    async fn a_side_effect_call_is_not_made_once_the_lease_no_longer_holds() {
        let calls = Arc::new(AtomicUsize::new(0));
        let mut tools = ToolRegistry::new();
        for (name, side_effect) in [("order", true), ("read", false)] {
            tools.register_dyn(Arc::new(Counted {
                spec: spec(name, side_effect),
                calls: Arc::clone(&calls),
            }));
        }
        let log = Arc::new(Log {
            held: AtomicBool::new(true),
        });
        let dyn_log: Arc<dyn IdempotencyLog> = log.clone();
        let tools = guarded(tools, &dyn_log);
        let ctx = || ToolContext::new(&RunId("r".into()), &StepId::new("s"), 1);
        let call = |name: &str| {
            let tool = Arc::clone(tools.get(name).unwrap_or_else(|| panic!("{name}")));
            let ctx = ctx();
            async move { tool.call_json(ctx, Value::Null).await }
        };
        assert!(call("order").await.is_ok());
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        log.held.store(false, Ordering::SeqCst);
        let refused = call("order").await.err().unwrap_or_else(|| panic!("made"));
        assert!(refused.to_string().contains("lease"), "{refused}");
        assert_eq!(calls.load(Ordering::SeqCst), 1, "not called");
        // A read-only tool is not asked about: it changes nothing.
        assert!(call("read").await.is_ok());
        assert_eq!(calls.load(Ordering::SeqCst), 2);
    }
}
