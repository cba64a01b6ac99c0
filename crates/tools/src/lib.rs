//! # stepwise-tools
//!
//! Built-in tools for Stepwise. Today: a local notes corpus ([`notes`]), the
//! two read-only tools over it, `search_notes` and `read_note` ([`tools`]),
//! `compare_results` ([`compare`]), which lines up several searches and
//! flags conflicting figures, and `write_file` ([`write_file`]), the
//! side-effect tool confined to a workspace folder. Register them with [`register_notes_tools`];
//! list their specs without a corpus with [`builtin_specs`].

pub mod compare;
pub mod notes;
pub mod text;
pub mod tools;
pub mod write_file;

pub use compare::{
    CompareResults, CompareResultsArgs, CompareResultsOutput, FigureRow, figure_rows,
};
pub use notes::{Corpus, CorpusError, LoadedCorpus, Note, SearchHit, SkipReason, SkippedFile};
pub use tools::{
    ReadNote, ReadNoteArgs, ReadNoteOutput, SearchNotes, SearchNotesArgs, SearchNotesOutput,
    SearchResult, builtin_specs, register_notes_tools,
};
pub use write_file::{WriteFile, WriteFileArgs, WriteFileOutput};
