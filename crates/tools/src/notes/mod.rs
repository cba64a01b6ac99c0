//! A notes corpus loaded from a folder, searched with BM25.
//!
//! This is the offline retrieval behind the `search_notes` and `read_note`
//! tools (the seeds' `source_notes`): [`Corpus::load`] reads a folder once,
//! splits notes into [`passages`], and indexes them with [`bm25`] over terms
//! from [`tokenize`](mod@tokenize) (English words, Korean/CJK character bigrams).
//!
//! ```
//! use stepwise_tools::notes::{Corpus, Note};
//!
//! let corpus = Corpus::from_notes([
//!     Note::new("ft", "Fine-tuning cost", "A LoRA run cost about $1,800 in total."),
//!     Note::new("ko", "비용", "RAG 도입 비용은 월 400달러 정도였다."),
//! ])
//! .unwrap();
//! assert_eq!(corpus.search("fine-tuning cost", 5)[0].note_id, "ft");
//! assert_eq!(corpus.search("도입 비용", 5)[0].note_id, "ko");
//! ```

pub mod bm25;
pub mod corpus;
pub mod error;
pub mod load;
pub mod names;
pub mod note;
pub mod search;
pub mod skipped;
pub mod vocab;

/// The stems and search terms of the text layer, where they live now.
pub use crate::text::{passages, stem, tokenize};

pub use crate::text::passages::sentences;
pub use bm25::{Bm25Index, Bm25Params};
pub use corpus::{Corpus, Indexing};
pub use error::CorpusError;
pub use load::{LoadProgress, LoadedCorpus};
pub use names::company_names;
pub use note::{Note, Origin};
pub use search::SearchHit;
pub use skipped::{SkipReason, SkippedFile};
pub use vocab::Vocabulary;
