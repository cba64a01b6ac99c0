//! `stepwise plan validate` and `stepwise plan schema`: check a plan file
//! the way `stepwise run --plan` would, and print the format it must have.

use anyhow::{Context, anyhow};
use stepwise_core::plan::plan_json_schema;
use stepwise_core::plan::validate::validate as validate_plan;
use stepwise_core::{Constraints, Diagnostic, Limits, ToolCatalog};

use crate::cli::ValidateArgs;
use crate::error::{CliError, CliResult, ErrorKind};
use crate::input;
use crate::output;
use crate::render::plural;

/// The built-in tool a run has only with `--workspace`.
const WRITE_FILE: &str = <stepwise_tools::WriteFile as stepwise_core::tool::Tool>::NAME;

/// Validates a plan file: exit 0 valid, 1 invalid (every problem printed),
/// 2 when the plan, tools or constraints cannot be read.
pub(crate) fn validate(args: &ValidateArgs) -> CliResult {
    let plan = input::read_json(&args.file).map_err(CliError::usage)?;
    let specs = match &args.tools {
        Some(path) => input::read_tools(path).map_err(CliError::usage)?,
        None => crate::cmd::tools::run_specs(&args.mcp)?,
    };
    let catalog = ToolCatalog::new(specs).map_err(|e| {
        CliError::usage(match &args.tools {
            Some(path) => anyhow!("{} is not a valid tools file: {e}", path.display()),
            None => anyhow!("the tools are broken: {e}"),
        })
    })?;
    let constraints = match &args.constraints {
        Some(arg) => input::read_constraints(arg).map_err(CliError::usage)?,
        None => Constraints::default(),
    };
    // The same bound `stepwise run` applies, so a plan that validates here runs there.
    let max_steps = Some(
        args.max_steps
            .or(constraints.max_steps)
            .unwrap_or(stepwise_core::engine::DEFAULT_MAX_STEPS),
    );
    let diagnostics = validate_plan(
        &plan.value,
        Limits {
            tools: &catalog,
            max_steps,
            constraints: &constraints,
        },
    );
    let (text, valid) = match &diagnostics {
        Ok(_) if args.json => ("[]\n".to_owned(), true),
        Ok(steps) => {
            let mut text = format!(
                "{}: valid plan, {}\n",
                plan.name,
                plural(steps.len(), "step")
            );
            // What `run --plan` will need besides the plan: the tools it
            // calls that a run only has when asked for.
            let writes: Vec<&str> = steps
                .steps()
                .iter()
                .filter(|s| s.tool == WRITE_FILE)
                .map(|s| s.id.as_str())
                .collect();
            if args.workspace.is_none() && !writes.is_empty() {
                text.push_str(&format!(
                    "a run of it needs --workspace DIR: {} {} {WRITE_FILE}\n",
                    writes.join(", "),
                    if writes.len() == 1 { "calls" } else { "call" },
                ));
            }
            (text, true)
        }
        Err(diags) if args.json => {
            let json = serde_json::to_string_pretty(diags).context("cannot encode the problems")?;
            (format!("{json}\n"), false)
        }
        Err(diags) => (human(&plan.name, diags), false),
    };
    output::stdout(&text)?;
    if valid {
        Ok(())
    } else {
        // Read, and found wanting: the problems are the output.
        Err(CliError::quiet(ErrorKind::Failed))
    }
}

/// One line per diagnostic, `FILE#/json/pointer: [code] step id: message`,
/// then a count.
fn human(name: &str, diagnostics: &[Diagnostic]) -> String {
    let mut text = String::new();
    for d in diagnostics {
        if d.path.is_empty() {
            text.push_str(&format!("{name}: {d}\n"));
        } else {
            text.push_str(&format!("{name}#{}: {d}\n", d.path));
        }
    }
    text.push_str(&format!(
        "{} in {name}\n",
        plural(diagnostics.len(), "problem")
    ));
    text
}

/// Prints the plan JSON Schema.
pub(crate) fn schema() -> CliResult {
    let text =
        serde_json::to_string_pretty(&plan_json_schema()).context("cannot encode the schema")?;
    output::stdout(&format!("{text}\n"))?;
    Ok(())
}
