//! Roles for Stepwise's planning graph. [`offline`] holds the embedded
//! default: deterministic roles that plan sub-questions, judge search results,
//! reformulate failed queries and write an extractive, cited brief — no
//! model, no network, the same output for the same input.

pub mod offline;
