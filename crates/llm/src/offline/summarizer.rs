//! The offline summarizer (`react-isolated`): a search result becomes one
//! line per note (id, title, score, first sentence of its best passage); any
//! other result, its JSON cut short. The engine bounds the length as well.

use std::fmt::Write as _;

use async_trait::async_trait;
use serde_json::Value;
use stepwise_core::Goal;
use stepwise_core::roles::Summarizer;
use stepwise_core::roles::{Reply, RoleError};
use stepwise_core::strategy::react::{MAX_SUMMARY_CHARS, bounded};

use super::search::{hits, sentences};

/// Summarizes tool results without a model.
#[derive(Debug, Clone, Copy, Default)]
pub struct OfflineSummarizer;

/// Notes listed in a search summary.
const NOTES_LISTED: usize = 3;

#[async_trait]
impl Summarizer for OfflineSummarizer {
    async fn summarize(
        &self,
        _goal: &Goal,
        _thought: &str,
        tool: &str,
        output: &Value,
    ) -> Result<Reply<String>, RoleError> {
        let found = hits(output);
        let text = if tool == "search_notes" {
            let mut text = format!("{} result(s)", found.len());
            for h in found.iter().take(NOTES_LISTED) {
                let first = h
                    .passages
                    .first()
                    .and_then(|p| sentences(p).into_iter().next())
                    .unwrap_or_default();
                let _ = write!(
                    text,
                    "; [{}] {} ({:.2}): {}",
                    h.note_id,
                    h.title,
                    h.score,
                    bounded(first, 120)
                );
            }
            text
        } else {
            output.to_string()
        };
        Ok(Reply::free(bounded(&text, MAX_SUMMARY_CHARS)))
    }
}
