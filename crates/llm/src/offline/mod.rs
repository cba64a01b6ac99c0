//! The offline roles: the embedded default, needing no model.
//!
//! - [`OfflinePlanner`] asks one sub-question per dimension the goal and its
//!   constraints name ([`Asked`]), or the goal itself when they name none:
//!   one `search_notes` step each, plus a `compare_results` step that
//!   depends on every gathering step.
//! - [`OfflineAssessor`] checks a search step's acceptance criteria: a result
//!   scoring at least [`MIN_SCORE`] with a sentence about the sub-question in
//!   a note on the goal's topic ([`Lexicon`] holds the corpus's words).
//! - [`OfflineReplanner`] reformulates only the failing sub-questions, with
//!   the [`Reformulator`] the assessor also asks whether a gap is recoverable.
//! - [`OfflineSynthesizer`] writes an extractive brief with `[note_id]`
//!   citations, flagged contradictions and an "Unresolved gaps" section.
//! - [`OfflineRepairer`] drops the steps a diagnostic names.
//! - [`OfflineVerifier`] scores an iteration (`verified`), [`OfflineActor`]
//!   and [`OfflineSummarizer`] drive the ReAct strategies, and
//!   [`OfflineRouter`] classifies goals (`router`).

mod actions;
mod actor;
mod asked;
mod assessor;
mod judge;
mod planner;
mod reformulate;
mod relevance;
mod repairer;
mod replanner;
mod router;
mod search;
mod summarizer;
mod synonyms;
mod synthesizer;
mod verifier;

use std::sync::Arc;

use stepwise_core::Roles;
use stepwise_tools::notes::Corpus;

pub use actor::OfflineActor;
pub use asked::Asked;
pub use assessor::OfflineAssessor;
pub use planner::{OfflinePlanner, sub_questions};
pub use reformulate::Reformulator;
pub use relevance::Lexicon;
pub use repairer::OfflineRepairer;
pub use replanner::OfflineReplanner;
pub use router::OfflineRouter;
pub use summarizer::OfflineSummarizer;
pub use synthesizer::OfflineSynthesizer;
pub use verifier::OfflineVerifier;

/// A search result must score at least this (BM25) to count as evidence.
pub const MIN_SCORE: f64 = 0.5;

/// Notes a search step asks for: enough that the notes answering a
/// dimension are among them when notes on other things share its words;
/// the judge then keeps what is about it.
pub(crate) const SEARCH_LIMIT: usize = 6;

/// The offline roles over a notes corpus.
pub fn roles(corpus: Arc<Corpus>) -> Roles {
    let lexicon = Arc::new(Lexicon::new(corpus));
    let reformulator = Arc::new(Reformulator::new(Arc::clone(&lexicon)));
    Roles::new(
        Arc::new(OfflinePlanner),
        Arc::new(OfflineRepairer),
        Arc::new(OfflineAssessor::new(Arc::clone(&reformulator))),
        Arc::new(OfflineReplanner::new(Arc::clone(&reformulator))),
        Arc::new(OfflineSynthesizer::new(Arc::clone(&lexicon))),
    )
    .with_verifier(Arc::new(OfflineVerifier::new(Arc::clone(&lexicon))))
    .with_actor(Arc::new(OfflineActor::new(
        reformulator,
        OfflineSynthesizer::new(lexicon),
    )))
    .with_summarizer(Arc::new(OfflineSummarizer))
    .with_router(Arc::new(OfflineRouter))
}

/// The gap recorded when a sub-question finds no evidence; the same text for
/// the original step and its reformulations, so a later success resolves it.
pub fn gap_for(sub_question: &str) -> String {
    format!("No evidence in the notes for: {sub_question}")
}
