//! Retry policy for transient step failures, and the class of a failure
//! that decides whether it is retried: plain data, read by the scheduler.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The class of a failure. Every error type that can end a step maps to one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FailureClass {
    /// Timeout, 429, 5xx, connection reset: retry with backoff.
    Transient,
    /// Bad arguments, 4xx, "not found", acceptance unmet: never retried blindly.
    Persistent,
    /// Budget exhausted, approval denied: the run cannot go on by itself.
    Fatal,
}

impl fmt::Display for FailureClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Transient => "transient",
            Self::Persistent => "persistent",
            Self::Fatal => "fatal",
        })
    }
}

/// Capped exponential backoff with jitter. Only transient failures are retried.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RetryPolicy {
    /// Attempts in all, the first included. 1 means no retry.
    pub max_attempts: u32,
    /// Delay before the second attempt, in milliseconds.
    pub initial_delay_ms: u64,
    /// Delays never exceed this, Retry-After included.
    pub max_delay_ms: u64,
    /// Growth factor per attempt.
    pub multiplier: f64,
    /// Random spread, as a fraction of the delay (0.2 = ±20 %), so that
    /// parallel steps hitting one rate limit do not retry in lockstep.
    pub jitter: f64,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 3,
            initial_delay_ms: 250,
            max_delay_ms: 10_000,
            multiplier: 2.0,
            jitter: 0.2,
        }
    }
}

impl RetryPolicy {
    /// No retries at all.
    pub fn none() -> Self {
        Self {
            max_attempts: 1,
            ..Self::default()
        }
    }

    /// Whether an attempt numbered `attempt` (from 1) that failed transiently may be followed by another.
    pub fn allows_retry_after(&self, attempt: u32) -> bool {
        attempt < self.max_attempts
    }

    /// The delay before attempt `attempt + 1`, honouring a Retry-After hint.
    /// `unit` is a uniform sample in [0, 1) for the jitter.
    pub fn delay_ms(&self, attempt: u32, retry_after_ms: Option<u64>, unit: f64) -> u64 {
        let exponent = i32::try_from(attempt.saturating_sub(1)).unwrap_or(i32::MAX);
        let base = (self.initial_delay_ms as f64) * self.multiplier.max(1.0).powi(exponent);
        let spread = self.jitter.clamp(0.0, 1.0) * (2.0 * unit.clamp(0.0, 1.0) - 1.0);
        let jittered = (base * (1.0 + spread))
            .min(self.max_delay_ms as f64)
            .max(0.0) as u64;
        jittered
            .max(retry_after_ms.unwrap_or(0))
            .min(self.max_delay_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_grow_and_are_capped() {
        let p = RetryPolicy {
            jitter: 0.0,
            ..RetryPolicy::default()
        };
        assert_eq!(p.delay_ms(1, None, 0.5), 250);
        assert_eq!(p.delay_ms(2, None, 0.5), 500);
        assert_eq!(p.delay_ms(3, None, 0.5), 1000);
        assert_eq!(p.delay_ms(30, None, 0.5), 10_000);
    }

    #[test]
    fn jitter_stays_within_its_band() {
        let p = RetryPolicy::default();
        assert_eq!(p.delay_ms(1, None, 0.0), 200);
        assert_eq!(p.delay_ms(1, None, 1.0), 300);
    }

    #[test]
    fn retry_after_is_honoured_up_to_the_cap() {
        let p = RetryPolicy {
            jitter: 0.0,
            ..RetryPolicy::default()
        };
        assert_eq!(p.delay_ms(1, Some(3_000), 0.5), 3_000);
        assert_eq!(p.delay_ms(1, Some(60_000), 0.5), 10_000);
    }

    #[test]
    fn attempts_are_bounded() {
        let p = RetryPolicy::default();
        assert!(p.allows_retry_after(2));
        assert!(!p.allows_retry_after(3));
        assert!(!RetryPolicy::none().allows_retry_after(1));
    }
}
