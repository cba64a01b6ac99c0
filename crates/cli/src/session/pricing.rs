//! A run's price, shown only when one model did all its work.

use stepwise_core::RunState;

use crate::config::{Config, Price};

use super::host::Host;

/// The run's model and its price, if `stepwise.toml` has one for it — and
/// only if every role ran on that model: one price for calls to several
/// models would be a wrong cost, so none is shown.
pub(crate) fn price(state: &RunState) -> Option<(String, Price)> {
    let host = Host::of(state).ok()?;
    if host.role_models.values().any(|m| *m != host.model) {
        return None;
    }
    let cwd = std::env::current_dir().ok()?;
    let price = Config::load(&cwd).ok()?.price(&host.model)?;
    Some((host.model, price))
}
