//! One module per subcommand, each a thin layer: read the arguments, call
//! the engine or the store, print through [`crate::render`], and return a
//! [`CliResult`](crate::error::CliResult) whose kind is the exit code.

mod act;
pub(crate) mod approve;
pub(crate) mod bench;
pub(crate) mod cancel;
pub(crate) mod docs;
pub(crate) mod init;
#[cfg(feature = "mcp")]
pub(crate) mod mcp;
pub(crate) mod migrate;
#[cfg(feature = "serve")]
pub(crate) mod pickup;
pub(crate) mod plan;
pub(crate) mod prune;
pub(crate) mod reject;
pub(crate) mod replay;
pub(crate) mod resume;
pub(crate) mod run;
pub(crate) mod runs;
#[cfg(feature = "serve")]
pub(crate) mod serve;
pub(crate) mod show;
pub(crate) mod stats;
pub(crate) mod strategies;
pub(crate) mod tools;
#[cfg(feature = "serve")]
pub(crate) mod wiring;
#[cfg(feature = "serve")]
pub(crate) mod worker;
#[cfg(feature = "postgres")]
pub(crate) mod workers;
