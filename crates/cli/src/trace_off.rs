//! Traces left out of this build (the `otel` feature): asking for them —
//! an OTLP endpoint in the environment, or `--trace-content` — is refused,
//! naming the feature, rather than ignored.

use stepwise_core::{Engine, RunId, Store};

/// The variables that turn tracing on (either one), as with `otel`.
const ENDPOINT_VARS: [&str; 2] = [
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
];

/// Nothing to flush.
#[derive(Debug)]
pub(crate) struct Flush;

/// No exporter: an error if traces were asked for.
pub(crate) fn init(content: bool) -> crate::error::CliResult<Option<Flush>> {
    let endpoint = ENDPOINT_VARS.iter().find(|var| {
        std::env::var(var)
            .ok()
            .is_some_and(|v| !v.trim().is_empty())
    });
    match (endpoint, content) {
        (Some(var), _) => Err(crate::error::not_built("otel").context(format!("{var} is set"))),
        (None, true) => Err(crate::error::not_built("otel").context("--trace-content")),
        (None, false) => Ok(None),
    }
}

/// `engine` as it is: nothing traces it.
#[cfg(feature = "serve")]
pub(crate) fn traced(engine: Engine, _run: &RunId, _prior: &[stepwise_core::Event]) -> Engine {
    engine
}

/// `engine` as it is: nothing traces it.
pub(crate) async fn traced_from(engine: Engine, _run: &RunId, _store: &dyn Store) -> Engine {
    engine
}
