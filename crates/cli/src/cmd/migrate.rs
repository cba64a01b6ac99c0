//! `stepwise migrate`: create or upgrade the run database's schema. For
//! PostgreSQL it is the setup step (other commands refuse a database that is
//! not migrated); an SQLite file is upgraded whenever it is opened, so
//! there it only creates or upgrades the file.

use std::path::PathBuf;

#[cfg(feature = "postgres")]
use anyhow::anyhow;
#[cfg(feature = "postgres")]
use stepwise_store::postgres::{self, Migrated};

use crate::db;
#[cfg(feature = "postgres")]
use crate::error::CliError;
use crate::error::CliResult;
use crate::output;

/// `stepwise migrate [--db PATH|URL]`.
pub(crate) fn migrate(flag: Option<&PathBuf>) -> CliResult {
    let name = db::describe(flag);
    let text = match db::url(flag) {
        #[cfg(not(feature = "postgres"))]
        Some(_) => return Err(crate::error::not_built("postgres")),
        #[cfg(feature = "postgres")]
        Some(url) => match postgres::migrate(&url).map_err(|e| CliError::usage(anyhow!(e)))? {
            Migrated { from, to } if from == to => {
                format!("{name}: up to date (schema version {to})\n")
            }
            Migrated { from: 0, to } => {
                format!("{name}: created the schema `stepwise` (version {to})\n")
            }
            Migrated { from, to } => {
                format!("{name}: migrated from schema version {from} to {to}\n")
            }
        },
        None => {
            db::open(flag)?;
            format!(
                "{name}: up to date (schema version {})\n",
                stepwise_store::SCHEMA_VERSION
            )
        }
    };
    output::stdout(&text)?;
    Ok(())
}
