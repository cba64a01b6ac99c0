//! Newtype identifiers, so a step id can never be confused with a run id or a tool name.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The id of a step, unique within a run (across every plan version).
#[derive(
    Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(transparent)]
pub struct StepId(pub String);

impl StepId {
    /// Wraps a string as a step id.
    pub fn new(id: impl Into<String>) -> Self {
        Self(id.into())
    }

    /// The id as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for StepId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for StepId {
    fn from(s: &str) -> Self {
        Self(s.to_owned())
    }
}

/// The id of a run. Generated ids sort by creation time (millisecond prefix).
#[derive(
    Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(transparent)]
pub struct RunId(pub String);

impl RunId {
    /// A fresh id: `run_` + milliseconds since the epoch (hex) + 32 random bits.
    pub fn generate() -> Self {
        let millis = chrono::Utc::now().timestamp_millis();
        Self(format!("run_{millis:011x}{:08x}", fastrand::u32(..)))
    }

    /// The id as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
