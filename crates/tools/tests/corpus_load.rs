//! Loading a corpus from a folder: formats, skipped entries and every error.
// Test helpers outside #[test] fns: clippy's allow-*-in-tests does not reach them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fs;
use std::path::Path;

use stepwise_tools::notes::{Corpus, CorpusError, Origin, SkipReason};

fn write(dir: &Path, name: &str, content: impl AsRef<[u8]>) {
    fs::write(dir.join(name), content).unwrap();
}

fn load_err(dir: &Path) -> CorpusError {
    Corpus::load(dir).unwrap_err()
}

#[test]
fn loads_markdown_text_and_jsonl_sorted_by_id() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "zeta.md",
        "Intro line\n\n## The Title ##\n\nBody.\n",
    );
    write(
        dir.path(),
        "alpha.txt",
        "\n\n  First line is the title  \nmore\n",
    );
    write(dir.path(), "UPPER.MD", "\u{feff}# Shouting\n");
    write(
        dir.path(),
        "more.jsonl",
        "{\"id\": \"m2\", \"title\": \"Two\", \"text\": \"second\"}\n\n   \n{\"id\": \"m1\", \"text\": \"# Derived\\nbody\"}\n",
    );
    let loaded = Corpus::load(dir.path()).unwrap();
    assert!(loaded.skipped.is_empty(), "{:?}", loaded.skipped);
    let corpus = loaded.corpus;
    let ids: Vec<_> = corpus.ids().collect();
    assert_eq!(ids, ["UPPER", "alpha", "m1", "m2", "zeta"]);

    let titles: Vec<_> = corpus.notes().iter().map(|n| n.title.as_str()).collect();
    assert_eq!(
        titles,
        [
            "Shouting",
            "First line is the title",
            "Derived",
            "Two",
            "The Title"
        ]
    );
    // The whole file is the text (minus a byte-order mark).
    assert_eq!(corpus.get("UPPER").unwrap().text, "# Shouting\n");
    assert_eq!(
        corpus.get("zeta").unwrap().text,
        "Intro line\n\n## The Title ##\n\nBody.\n"
    );
    assert_eq!(
        corpus.get("m1").unwrap().origin,
        Origin::JsonlLine {
            path: dir.path().join("more.jsonl"),
            line: 4
        }
    );
}

#[test]
fn entries_that_are_not_notes_are_reported_with_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "note.md", "# A note\n");
    write(dir.path(), "paper.pdf", "%PDF");
    write(dir.path(), "Makefile", "all:");
    write(dir.path(), ".DS_Store", "junk");
    write(dir.path(), "blank.md", "  \n\n");
    write(dir.path(), "blank.jsonl", "\n\n");
    fs::create_dir(dir.path().join("archive")).unwrap();
    write(&dir.path().join("archive"), "old.md", "# Old\n");

    let loaded = Corpus::load(dir.path()).unwrap();
    assert_eq!(loaded.corpus.ids().collect::<Vec<_>>(), ["note"]);
    let skipped: Vec<(String, SkipReason)> = loaded
        .skipped
        .iter()
        .map(|s| {
            let name = s.path.file_name().unwrap().to_string_lossy().into_owned();
            (name, s.reason.clone())
        })
        .collect();
    assert_eq!(
        skipped,
        [
            (".DS_Store".to_owned(), SkipReason::Hidden),
            (
                "Makefile".to_owned(),
                SkipReason::UnsupportedExtension(None)
            ),
            ("archive".to_owned(), SkipReason::Subfolder),
            ("blank.jsonl".to_owned(), SkipReason::EmptyFile),
            ("blank.md".to_owned(), SkipReason::EmptyFile),
            (
                "paper.pdf".to_owned(),
                SkipReason::UnsupportedExtension(Some("pdf".to_owned()))
            ),
        ]
    );
    let shown = loaded.skipped[5].to_string();
    assert!(
        shown.ends_with("paper.pdf: unsupported extension .pdf (expected .md, .txt or .jsonl)"),
        "{shown}"
    );
}

#[test]
fn a_missing_folder_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope");
    let err = load_err(&missing);
    assert!(matches!(err, CorpusError::MissingFolder { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        format!("notes folder {} does not exist", missing.display())
    );
}

#[test]
fn a_file_is_not_a_folder() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "a.md", "# A\n");
    let err = load_err(&dir.path().join("a.md"));
    assert!(matches!(err, CorpusError::NotAFolder { .. }), "{err:?}");
    assert!(err.to_string().contains("a.md is not a folder"), "{err}");
}

#[test]
fn a_folder_without_notes_is_an_error_that_lists_what_was_there() {
    let dir = tempfile::tempdir().unwrap();
    let err = load_err(dir.path());
    assert!(
        matches!(&err, CorpusError::Empty { skipped, .. } if skipped.is_empty()),
        "{err:?}"
    );
    assert!(err.to_string().starts_with("no notes found in "), "{err}");

    write(dir.path(), "slides.pptx", "x");
    let err = load_err(dir.path());
    let CorpusError::Empty { skipped, .. } = &err else {
        panic!("{err:?}");
    };
    assert_eq!(skipped.len(), 1);
    assert!(err.to_string().contains("skipped 1 entry: "), "{err}");
    assert!(
        err.to_string().contains("unsupported extension .pptx"),
        "{err}"
    );
}

#[test]
fn a_note_file_that_is_not_text_is_skipped_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "good.md", "# Good\n");
    write(dir.path(), "latin1.txt", [0x63, 0x61, 0x66, 0xe9, 0x0a]); // "café" in Latin-1
    write(
        dir.path(),
        "image.md",
        [0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a, 0, 0],
    );
    write(
        dir.path(),
        "dump.jsonl",
        b"{\"id\": \"x\", \"text\": \"\xff\"}\n",
    );
    let loaded = Corpus::load(dir.path()).unwrap();
    assert_eq!(loaded.corpus.ids().collect::<Vec<_>>(), ["good"]);
    let skipped: Vec<(String, SkipReason)> = loaded
        .skipped
        .iter()
        .map(|s| {
            let name = s.path.file_name().unwrap().to_str().unwrap().to_owned();
            (name, s.reason.clone())
        })
        .collect();
    assert_eq!(
        skipped,
        [
            ("dump.jsonl".to_owned(), SkipReason::NotUtf8(21)),
            ("image.md".to_owned(), SkipReason::Binary),
            ("latin1.txt".to_owned(), SkipReason::NotUtf8(3)),
        ]
    );
    let said = loaded.skipped[2].to_string();
    assert!(said.contains("latin1.txt: not UTF-8 text"), "{said}");
}

#[test]
fn a_folder_of_only_binary_files_has_no_notes_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "blob.txt", [0u8, 1, 2, 3]);
    let err = load_err(dir.path());
    assert!(matches!(err, CorpusError::Empty { .. }), "{err:?}");
    assert!(err.to_string().contains("binary file"), "{err}");
}

#[test]
fn the_fingerprint_follows_the_notes_content_only() {
    let a = tempfile::tempdir().unwrap();
    write(a.path(), "one.md", "# One\nbody\n");
    write(a.path(), "skip.pptx", "x");
    let b = tempfile::tempdir().unwrap();
    write(b.path(), "one.md", "# One\nbody\n");
    let print = |dir: &Path| Corpus::load(dir).unwrap().fingerprint();
    assert_eq!(print(a.path()), print(b.path()));
    write(b.path(), "two.md", "# Two\n");
    assert_ne!(print(a.path()), print(b.path()));
    write(a.path(), "one.md", "# One\nbody changed\n");
    assert_ne!(print(a.path()), print(b.path()));
}

#[cfg(unix)]
#[test]
fn a_broken_link_to_a_note_is_unreadable_not_skipped() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "good.md", "# Good\n");
    std::os::unix::fs::symlink(dir.path().join("gone.md"), dir.path().join("link.md")).unwrap();
    let err = load_err(dir.path());
    assert!(matches!(err, CorpusError::Unreadable { .. }), "{err:?}");
    assert!(err.to_string().contains("link.md"), "{err}");
}

#[test]
fn a_bad_jsonl_line_is_named_by_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "{\"id\":\"a\",\"text\":\"x\"}\n\n{\"id\": \"b\"}\n",
            3,
            "missing \"text\"",
        ),
        ("{\"id\":\"a\",\"text\":\"x\"\n", 1, "invalid JSON: "),
        ("\"just a string\"\n", 1, "found a string"),
        (
            "{\"id\": [\"a\"], \"text\": \"x\"}\n",
            1,
            "\"id\" must be a string, found an array",
        ),
        (
            "{\"id\": \"a\", \"title\": 5, \"text\": \"x\"}\n",
            1,
            "\"title\" must be a string",
        ),
    ];
    for (content, line, what) in cases {
        write(dir.path(), "notes.jsonl", content);
        let err = load_err(dir.path());
        let CorpusError::BadJsonl { line: got, .. } = &err else {
            panic!("{err:?}");
        };
        assert_eq!(*got, line, "{content}");
        let message = err.to_string();
        assert!(
            message.contains(&format!("notes.jsonl line {line}: ")),
            "{message}"
        );
        assert!(message.contains(what), "{message}");
    }
}

#[test]
fn duplicate_ids_name_both_places() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "a.md", "# A\n");
    write(dir.path(), "a.txt", "A again\n");
    let err = load_err(dir.path());
    assert_eq!(
        err.to_string(),
        format!(
            "duplicate note id \"a\": in {} and in {}",
            dir.path().join("a.md").display(),
            dir.path().join("a.txt").display()
        )
    );

    fs::remove_file(dir.path().join("a.txt")).unwrap();
    write(
        dir.path(),
        "b.jsonl",
        "{\"id\":\"x\",\"text\":\"1\"}\n{\"id\":\"a\",\"text\":\"2\"}\n",
    );
    let err = load_err(dir.path());
    assert!(
        err.to_string().ends_with("b.jsonl line 2"),
        "a file and a JSONL line: {err}"
    );

    fs::remove_file(dir.path().join("a.md")).unwrap();
    write(
        dir.path(),
        "b.jsonl",
        "{\"id\":\"x\",\"text\":\"1\"}\n{\"id\":\"x\",\"text\":\"2\"}\n",
    );
    let err = load_err(dir.path());
    let message = err.to_string();
    assert!(message.contains("b.jsonl line 1 and in "), "{message}");
    assert!(message.ends_with("b.jsonl line 2"), "{message}");
}

#[test]
fn the_example_corpus_loads_cleanly() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/notes");
    let loaded = Corpus::load(&dir).unwrap();
    assert!(loaded.skipped.is_empty(), "{:?}", loaded.skipped);
    let corpus = loaded.corpus;
    assert!((13..=20).contains(&corpus.len()), "{}", corpus.len());
    for note in corpus.notes() {
        let words = note.text.split_whitespace().count();
        assert!((80..=250).contains(&words), "{}: {words} words", note.id);
        assert!(!note.title.is_empty(), "{}", note.id);
    }
    assert_eq!(
        corpus.get("fine-tuning-cost").unwrap().title,
        "Fine-tuning cost breakdown"
    );
    assert_eq!(
        corpus.get("latency-budget").unwrap().title,
        "Latency budget for the support assistant"
    );
    let korean = Corpus::load(dir.join("../notes-ko")).unwrap();
    assert!(korean.skipped.is_empty(), "{:?}", korean.skipped);
    assert!(korean.corpus.len() >= 5);
    assert_eq!(
        korean.corpus.get("ko-fine-tuning-cost").unwrap().title,
        "파인튜닝 비용 산정"
    );
}
