//! Loading the notes a run reads, with what was skipped reported.

use std::path::Path;

use anyhow::anyhow;
use stepwise_tools::notes::{Corpus, LoadedCorpus};

use crate::error::{CliError, CliResult};
use crate::output;

/// Loads the corpus, reporting skipped files on stderr.
pub(crate) fn load_corpus(dir: &Path, quiet: bool) -> CliResult<Corpus> {
    load_notes(dir, quiet).map(|loaded| loaded.corpus)
}

/// Loads the corpus with what was skipped, reporting skipped files on stderr.
pub(crate) fn load_notes(dir: &Path, quiet: bool) -> CliResult<LoadedCorpus> {
    let loaded = crate::loading::load(dir, quiet).map_err(|e| CliError::usage(anyhow!(e)))?;
    if !quiet {
        note_skipped(&loaded);
    }
    Ok(loaded)
}

/// Reports on stderr the files a load left out, and why.
pub(crate) fn note_skipped(loaded: &LoadedCorpus) {
    for skipped in &loaded.skipped {
        output::note(&format!(
            "skipped {}: {}",
            skipped.path.display(),
            skipped.reason
        ));
    }
}
