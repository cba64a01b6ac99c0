//! `stepwise tools`: the built-in tools, as a table or their specs as JSON.

use anyhow::Context;
use stepwise_core::ToolSpec;

use crate::cli::ToolsArgs;
use crate::error::CliResult;
use crate::output;
use crate::render::table::Table;

/// The built-in tools' specs, sorted by name.
pub(crate) fn builtin_specs() -> Vec<ToolSpec> {
    let mut specs = stepwise_tools::builtin_specs();
    specs.sort_by(|a, b| a.name.cmp(&b.name));
    specs
}

/// Lists the built-in tools: a table, or their specs as JSON.
pub(crate) fn list(args: &ToolsArgs) -> CliResult {
    let specs = builtin_specs();
    let text = if args.json {
        let json = serde_json::to_string_pretty(&specs).context("cannot encode the tools")?;
        format!("{json}\n")
    } else {
        table(&specs)
    };
    output::stdout(&text)?;
    Ok(())
}

fn table(specs: &[ToolSpec]) -> String {
    if specs.is_empty() {
        return "no built-in tools\n".to_owned();
    }
    let mut table = Table::new(&["NAME", "EFFECT", "DESCRIPTION"]);
    for spec in specs {
        let effect = if spec.side_effect {
            "side effect"
        } else {
            "read-only"
        };
        let description = spec.description.lines().next().unwrap_or_default().trim();
        table.row([spec.name.as_str(), effect, description]);
    }
    table.render()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn spec(name: &str, side_effect: bool) -> ToolSpec {
        ToolSpec {
            name: name.to_owned(),
            description: format!("Does {name}.\nMore detail."),
            args_schema: json!({"type": "object"}),
            side_effect,
            idempotent: false,
            timeout_ms: None,
        }
    }

    #[test]
    fn the_table_has_one_line_per_tool() {
        let text = table(&[spec("search_notes", false), spec("send_mail", true)]);
        assert_eq!(
            text,
            "NAME          EFFECT       DESCRIPTION\n\
             search_notes  read-only    Does search_notes.\n\
             send_mail     side effect  Does send_mail.\n"
        );
        assert_eq!(table(&[]), "no built-in tools\n");
    }
}
