//! `stepwise completions` and `stepwise man`: generated from the real
//! command line, so they name its subcommands.
#![allow(clippy::unwrap_used)]

mod common;

use common::Stepwise;

#[test]
fn bash_completions_name_the_subcommands() {
    let out = Stepwise::new().args(["completions", "bash"]).run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("_stepwise()"), "{}", out.stdout);
    for sub in [
        "run",
        "resume",
        "runs",
        "show",
        "approve",
        "init",
        "completions",
        "man",
    ] {
        assert!(
            out.stdout.split_whitespace().any(|w| w == sub),
            "{sub} missing from the bash completions"
        );
    }
    for shell in ["zsh", "fish", "powershell"] {
        let out = Stepwise::new().args(["completions", shell]).run();
        assert_eq!(out.code, 0, "{shell}: {}", out.stderr);
        assert!(out.stdout.contains("stepwise"), "{shell}");
    }
    let bad = Stepwise::new().args(["completions", "tcsh"]).run();
    assert_eq!(bad.code, 2, "an unknown shell is a usage error");
}

#[test]
fn man_prints_a_roff_page_naming_run() {
    let out = Stepwise::new().arg("man").run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    // clap_mangen's preamble (roff requests), then the title header.
    let head: Vec<&str> = out.stdout.lines().take(4).collect();
    assert!(head.iter().all(|l| l.starts_with('.')), "{head:?}");
    assert!(
        head.iter().any(|l| l.starts_with(".TH stepwise 1")),
        "{head:?}"
    );
    assert!(out.stdout.contains("stepwise\\-run(1)"), "{}", out.stdout);
    assert!(
        !out.stdout.contains("mcp\\-guard"),
        "hidden commands stay hidden"
    );
}
