//! Roles for Stepwise's planning graph. [`offline`] holds the embedded
//! default: deterministic roles that plan sub-questions, judge search results,
//! reformulate failed queries and write an extractive, cited brief — no
//! model, no network, the same output for the same input.

pub mod call;
pub mod offline;
pub mod providers;
pub mod replay;
pub mod roles;
pub mod script;
pub mod steps;
pub mod structured;
