//! `stepwise tools`: every tool a run can call — the built-in ones and those
//! of the MCP servers in stepwise.toml (and `--mcp`), which are started to
//! list them — with its source and side-effect class, as a table or, with
//! `--json`, each spec with its schemas.

use anyhow::{Context, anyhow};
use serde_json::{Value, json};
use stepwise_core::ToolSpec;

use crate::cli::ToolsArgs;
use crate::config::Config;
use crate::error::{CliError, CliResult};
use crate::mcp::ToolInfo;
use crate::output;
use crate::render::table::Table;

/// One listed tool: where it comes from, and for an MCP tool what the
/// server said about it.
struct Listed {
    spec: ToolSpec,
    source: String,
    mcp: Option<ToolInfo>,
}

impl Listed {
    fn builtin(spec: ToolSpec) -> Self {
        Self {
            spec,
            source: "built-in".to_owned(),
            mcp: None,
        }
    }

    fn mcp(info: ToolInfo) -> Self {
        Self {
            spec: info.spec.clone(),
            source: format!("mcp:{}", info.server),
            mcp: Some(info),
        }
    }

    /// The spec's fields, then `source`, `effect` and, for an MCP tool, the
    /// server, its name there, its hints and its call timeout.
    fn json(&self) -> anyhow::Result<Value> {
        let mut value = serde_json::to_value(&self.spec).context("cannot encode a tool")?;
        if let Value::Object(map) = &mut value {
            map.insert("source".to_owned(), json!(self.source));
            map.insert("effect".to_owned(), json!(effect(&self.spec)));
            if let Some(info) = &self.mcp {
                map.insert(
                    "mcp".to_owned(),
                    json!({
                        "server": info.server,
                        "tool": info.tool,
                        "hints": info.hints,
                        "overridden": info.overridden,
                    }),
                );
                map.insert("timeout_ms".to_owned(), json!(info.timeout_ms));
            }
        }
        Ok(value)
    }
}

/// The side-effect class, in words.
fn effect(spec: &ToolSpec) -> String {
    if !spec.side_effect {
        return "read-only".to_owned();
    }
    let mut words = vec!["side effect"];
    if spec.destructive {
        words.push("destructive");
    }
    if spec.idempotent {
        words.push("idempotent");
    }
    words.join(", ")
}

/// Every tool a run here could call: the built-in ones, then the tools of
/// the MCP servers in stepwise.toml and `--mcp` (started to ask them, then
/// stopped).
fn listed(mcp_flags: &[String]) -> CliResult<Vec<Listed>> {
    let cwd = std::env::current_dir()
        .map_err(|e| CliError::usage(anyhow!("cannot read the current directory: {e}")))?;
    let servers = Config::load(&cwd)?.mcp_servers(mcp_flags, &cwd)?;
    let mut listed: Vec<Listed> = crate::host::builtin_specs()
        .into_iter()
        .map(Listed::builtin)
        .collect();
    if !servers.is_empty() {
        let infos = crate::db::block_on(async {
            let mcp = crate::mcp::start(&servers, None).await?;
            let infos = mcp.infos();
            mcp.shutdown().await;
            Ok::<_, CliError>(infos)
        })??;
        listed.extend(infos.into_iter().map(Listed::mcp));
    }
    Ok(listed)
}

/// The specs of [`listed`], for `plan validate`.
pub(crate) fn run_specs(mcp_flags: &[String]) -> CliResult<Vec<ToolSpec>> {
    Ok(listed(mcp_flags)?.into_iter().map(|l| l.spec).collect())
}

/// Lists the tools: a table, or their specs as JSON.
pub(crate) fn list(args: &ToolsArgs) -> CliResult {
    let listed = listed(&args.mcp)?;
    let text = if args.json {
        let values = listed
            .iter()
            .map(Listed::json)
            .collect::<anyhow::Result<Vec<_>>>()?;
        let json = serde_json::to_string_pretty(&values).context("cannot encode the tools")?;
        format!("{json}\n")
    } else {
        table(&listed)
    };
    output::stdout(&text)?;
    Ok(())
}

fn table(listed: &[Listed]) -> String {
    if listed.is_empty() {
        return "no tools\n".to_owned();
    }
    let mut table = Table::new(&["NAME", "SOURCE", "EFFECT", "DESCRIPTION"]);
    for tool in listed {
        let description = tool
            .spec
            .description
            .lines()
            .next()
            .unwrap_or_default()
            .trim();
        let effect = effect(&tool.spec);
        table.row([
            tool.spec.name.as_str(),
            tool.source.as_str(),
            effect.as_str(),
            description,
        ]);
    }
    table.render()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str, side_effect: bool) -> ToolSpec {
        ToolSpec {
            description: format!("Does {name}.\nMore detail."),
            side_effect,
            ..ToolSpec::new(name, "")
        }
    }

    #[test]
    fn the_table_has_one_line_per_tool_with_its_source_and_effect() {
        let mut write = spec("fs.write_file", true);
        write.destructive = true;
        write.idempotent = true;
        let listed = [
            Listed::builtin(spec("search_notes", false)),
            Listed::builtin(spec("send_mail", true)),
            Listed {
                spec: write,
                source: "mcp:fs".to_owned(),
                mcp: None,
            },
        ];
        assert_eq!(
            table(&listed),
            "NAME           SOURCE    EFFECT                                DESCRIPTION\n\
             search_notes   built-in  read-only                             Does search_notes.\n\
             send_mail      built-in  side effect                           Does send_mail.\n\
             fs.write_file  mcp:fs    side effect, destructive, idempotent  Does fs.write_file.\n"
        );
        assert_eq!(table(&[]), "no tools\n");
    }
}
