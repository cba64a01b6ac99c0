//! `stepwise strategies`: the strategies `run --strategy` and `bench` accept.

use std::sync::Arc;

use anyhow::Context;
use serde::Serialize;
use stepwise_core::strategy::{DEFAULT_STRATEGY, Strategy, StrategyRegistry};

use crate::cli::StrategiesArgs;
use crate::error::CliResult;
use crate::output;
use crate::render::table::Table;

/// The built-in strategies in reading order: the default graph, its two
/// variants along seed 002's replanning axis, the two ReAct loops along the
/// isolation axis, then the router that picks between them.
const ORDER: [&str; 6] = [
    "plan-execute",
    "plan-solve",
    "verified",
    "react",
    "react-isolated",
    "router",
];

/// Every built-in strategy, in [`ORDER`] (any others after, by name).
pub(crate) fn builtin() -> Vec<Arc<dyn Strategy>> {
    let registry = StrategyRegistry::builtin();
    let mut out: Vec<Arc<dyn Strategy>> = ORDER.iter().filter_map(|n| registry.get(n)).collect();
    out.extend(
        registry
            .iter()
            .filter(|s| !ORDER.contains(&s.name()))
            .cloned(),
    );
    out
}

#[derive(Debug, Serialize)]
struct Entry<'a> {
    name: &'a str,
    description: &'a str,
    default: bool,
}

/// Lists the strategies: a table, or JSON.
pub(crate) fn list(args: &StrategiesArgs) -> CliResult {
    let strategies = builtin();
    let entries: Vec<Entry<'_>> = strategies
        .iter()
        .map(|s| Entry {
            name: s.name(),
            description: s.description(),
            default: s.name() == DEFAULT_STRATEGY,
        })
        .collect();
    let text = if args.json {
        let mut json =
            serde_json::to_string_pretty(&entries).context("cannot encode the strategies")?;
        json.push('\n');
        json
    } else {
        table(&entries)
    };
    output::stdout(&text)?;
    Ok(())
}

fn table(entries: &[Entry<'_>]) -> String {
    let mut table = Table::new(&["NAME", "DESCRIPTION"]);
    for e in entries {
        let name = if e.default {
            format!("{} (default)", e.name)
        } else {
            e.name.to_owned()
        };
        table.row([name, e.description.to_owned()]);
    }
    table.render()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_is_listed_once_in_reading_order() {
        let names: Vec<String> = builtin().iter().map(|s| s.name().to_owned()).collect();
        assert_eq!(names, ORDER.map(str::to_owned).to_vec());
    }

    #[test]
    fn the_default_is_marked() {
        let text = table(&[
            Entry {
                name: "plan-execute",
                description: "the graph",
                default: true,
            },
            Entry {
                name: "react",
                description: "a loop",
                default: false,
            },
        ]);
        assert_eq!(
            text,
            "NAME                    DESCRIPTION\n\
             plan-execute (default)  the graph\n\
             react                   a loop\n"
        );
    }
}
