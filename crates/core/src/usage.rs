//! Usage counters: what a run cost, so a person can see it and budgets can stop it.

use std::ops::AddAssign;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Model calls, tokens, tool calls and wall time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Usage {
    /// Calls to a model (offline roles make none).
    pub llm_calls: u64,
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Tool calls, one per step attempt.
    pub tool_calls: u64,
    /// Milliseconds from the first event to the last.
    pub wall_time_ms: u64,
}

impl Usage {
    /// The usage of one model call.
    pub fn llm_call(input_tokens: u64, output_tokens: u64) -> Self {
        Self {
            llm_calls: 1,
            input_tokens,
            output_tokens,
            ..Self::default()
        }
    }

    /// Nothing was spent.
    pub fn is_zero(&self) -> bool {
        *self == Self::default()
    }
}

impl AddAssign for Usage {
    fn add_assign(&mut self, rhs: Self) {
        self.llm_calls += rhs.llm_calls;
        self.input_tokens += rhs.input_tokens;
        self.output_tokens += rhs.output_tokens;
        self.tool_calls += rhs.tool_calls;
        self.wall_time_ms += rhs.wall_time_ms;
    }
}
