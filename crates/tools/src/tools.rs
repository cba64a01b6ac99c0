//! The notes tools: `search_notes` and `read_note`.
//!
//! Both only read an immutable, shared [`Corpus`], so they are side-effect
//! free and idempotent: the scheduler may run them in parallel and retry them
//! freely. Bad input (an empty query, an unknown id, a limit out of range) is
//! a *persistent* error — repeating the same call cannot succeed — with a
//! message that tells a planner how to fix the call.

use std::future::{Future, ready};
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use stepwise_core::{Effects, Tool, ToolContext, ToolError, ToolRegistry, ToolSpec};

use crate::notes::Corpus;
use crate::text::tokenize::tokenize;

/// Results returned when `limit` is not given.
pub const DEFAULT_LIMIT: u32 = 5;
/// The largest `limit` accepted.
pub const MAX_LIMIT: u32 = 20;
/// How many ids an unknown-id error lists.
const IDS_IN_ERROR: usize = 5;

/// Read-only and idempotent: the corpus never changes after loading.
const READ_ONLY: Effects = Effects {
    side_effect: false,
    idempotent: true,
    timeout_ms: None,
};

/// Registers `search_notes` and `read_note` over `corpus`, and `compare_results`.
pub fn register_notes_tools(registry: &mut ToolRegistry, corpus: Arc<Corpus>) {
    registry
        .register(SearchNotes::new(Arc::clone(&corpus)))
        .register(ReadNote::new(corpus))
        .register(crate::compare::CompareResults);
}

/// The specs of every built-in tool, without loading anything: the tools are
/// registered over an empty corpus, which changes no spec (names,
/// descriptions and schemas do not depend on the notes).
pub fn builtin_specs() -> Vec<ToolSpec> {
    let mut registry = ToolRegistry::new();
    register_notes_tools(&mut registry, Arc::new(Corpus::empty()));
    registry.register(crate::write_file::WriteFile::spec_only());
    registry.specs()
}

/// Full-text search over the notes corpus.
#[derive(Debug, Clone)]
pub struct SearchNotes {
    corpus: Arc<Corpus>,
}

impl SearchNotes {
    /// The tool over `corpus`.
    pub fn new(corpus: Arc<Corpus>) -> Self {
        Self { corpus }
    }
}

/// Arguments of `search_notes`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchNotesArgs {
    /// Words to look for, in English or Korean (e.g. "fine-tuning cost" or
    /// "파인튜닝 비용"). Matching is by words, not meaning: use the terms the
    /// notes would use.
    #[schemars(length(min = 1))]
    pub query: String,
    /// How many notes to return, best first (1 to 20; default 5).
    #[schemars(range(min = 1, max = 20))]
    pub limit: Option<u32>,
}

/// Output of `search_notes`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SearchNotesOutput {
    /// The query as given.
    pub query: String,
    /// Matching notes, best first; only notes with a score above 0. Empty if
    /// nothing matched.
    pub results: Vec<SearchResult>,
}

/// One matching note.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SearchResult {
    /// Pass to `read_note` for the full text; cite it as the source.
    pub note_id: String,
    /// The note's title.
    pub title: String,
    /// BM25 score of the note's best passage, rounded to 4 decimals; only
    /// comparable within one query.
    pub score: f64,
    /// The note's best matching passages, best first (at most 3).
    pub passages: Vec<String>,
}

impl Tool for SearchNotes {
    const NAME: &'static str = "search_notes";
    type Args = SearchNotesArgs;
    type Output = SearchNotesOutput;

    fn description(&self) -> String {
        "Search the local notes corpus (BM25 keyword search; English and Korean) and return \
         the best matching notes with their most relevant passages. Use read_note with a \
         note_id for the full text."
            .to_owned()
    }

    fn effects(&self) -> Effects {
        READ_ONLY
    }

    /// Synchronous inside: a search over an in-memory index of a notes
    /// folder takes microseconds, not worth a blocking thread.
    fn call(
        &self,
        _ctx: &ToolContext,
        args: SearchNotesArgs,
    ) -> impl Future<Output = Result<SearchNotesOutput, ToolError>> + Send {
        ready(self.search(args))
    }
}

impl SearchNotes {
    fn search(&self, args: SearchNotesArgs) -> Result<SearchNotesOutput, ToolError> {
        let limit = args.limit.unwrap_or(DEFAULT_LIMIT);
        if !(1..=MAX_LIMIT).contains(&limit) {
            return Err(ToolError::persistent(format!(
                "limit must be between 1 and {MAX_LIMIT}, got {limit}"
            )));
        }
        if args.query.trim().is_empty() {
            return Err(ToolError::persistent(
                "query is empty; give a few words to search the notes for",
            ));
        }
        if tokenize(&args.query).is_empty() {
            return Err(ToolError::persistent(format!(
                "query {:?} has no searchable words (only punctuation or common words like \
                 \"the\"); use content words such as a topic, product or metric",
                args.query
            )));
        }
        let results = self
            .corpus
            .search(&args.query, limit as usize)
            .into_iter()
            .map(|hit| SearchResult {
                note_id: hit.note_id,
                title: hit.title,
                score: (hit.score * 1e4).round() / 1e4,
                passages: hit.passages,
            })
            .collect();
        Ok(SearchNotesOutput {
            query: args.query,
            results,
        })
    }
}

/// Reads one note by id.
#[derive(Debug, Clone)]
pub struct ReadNote {
    corpus: Arc<Corpus>,
}

impl ReadNote {
    /// The tool over `corpus`.
    pub fn new(corpus: Arc<Corpus>) -> Self {
        Self { corpus }
    }
}

/// Arguments of `read_note`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadNoteArgs {
    /// The note's id, exactly as a `search_notes` result gave it in `note_id`.
    #[schemars(length(min = 1))]
    pub id: String,
}

/// Output of `read_note`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ReadNoteOutput {
    /// The note's id; cite it as the source.
    pub note_id: String,
    /// The note's title.
    pub title: String,
    /// The note's full text.
    pub text: String,
}

impl Tool for ReadNote {
    const NAME: &'static str = "read_note";
    type Args = ReadNoteArgs;
    type Output = ReadNoteOutput;

    fn description(&self) -> String {
        "Read the full text of one note from the local notes corpus, by the note_id that \
         search_notes returned."
            .to_owned()
    }

    fn effects(&self) -> Effects {
        READ_ONLY
    }

    fn call(
        &self,
        _ctx: &ToolContext,
        args: ReadNoteArgs,
    ) -> impl Future<Output = Result<ReadNoteOutput, ToolError>> + Send {
        ready(self.read(&args.id))
    }
}

impl ReadNote {
    fn read(&self, id: &str) -> Result<ReadNoteOutput, ToolError> {
        match self.corpus.get(id) {
            Some(note) => Ok(ReadNoteOutput {
                note_id: note.id.clone(),
                title: note.title.clone(),
                text: note.text.clone(),
            }),
            None => Err(ToolError::persistent(unknown_id_message(&self.corpus, id))),
        }
    }
}

/// "no note with id X; known ids start with …", plus a suggestion when the
/// id differs only in case — a common slip when a model retypes an id.
fn unknown_id_message(corpus: &Corpus, id: &str) -> String {
    if corpus.is_empty() {
        return format!("no note with id {id:?}; the notes corpus is empty");
    }
    let known: Vec<String> = corpus
        .ids()
        .take(IDS_IN_ERROR)
        .map(|i| format!("{i:?}"))
        .collect();
    let more = corpus.len().saturating_sub(IDS_IN_ERROR);
    let mut message = format!(
        "no note with id {id:?}; known ids start with {}",
        known.join(", ")
    );
    if more > 0 {
        message.push_str(&format!(" (and {more} more; use search_notes to find one)"));
    }
    if let Some(close) = corpus.ids().find(|i| i.eq_ignore_ascii_case(id)) {
        message.push_str(&format!("; did you mean {close:?}?"));
    }
    message
}
