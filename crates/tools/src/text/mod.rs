//! The text layer: one analysis shared by search, relevance, assessment
//! and comparison, so a query, a note and a goal meet only through the
//! same steps (the search engines' single analyzer).
//!
//! - **words**: [`words`] and [`stem`] give a text's content words as stems
//!   (Snowball for English through `rust-stemmers`; Korean words without
//!   their particles and endings); [`mentions`] tells variants apart from
//!   look-alikes and finds a Korean term at the head of a compound. Search
//!   indexes Korean as character bigrams ([`tokenize`]) so compounds meet
//!   without a dictionary.
//! - **sentences**: [`sentences`] keeps dates, list numbers and
//!   abbreviations whole (`2025. 3. 30.`, `1. …`, `e.g.`).
//! - **cues**: [`cues`] finds, from one data file per language, the
//!   sentences that state nothing about a decision (deferrals, bylines,
//!   options set aside, notes about something else) and the words by which
//!   a goal lists what it asks.

pub mod cues;
pub mod figure_words;
pub mod passages;
pub mod stem;
pub mod tokenize;
pub mod words;

pub use cues::{Cue, has_any_cue, has_cue};
pub use passages::sentences;
pub use stem::{is_hangul, mentions, same_stem, stem, words};
pub use tokenize::{is_stop_word, tokenize};
