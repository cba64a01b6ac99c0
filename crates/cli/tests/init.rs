//! `stepwise init`: writes a commented stepwise.toml, and never overwrites one.
//! (That every setting in it loads once uncommented is a unit test of
//! `cmd::init`, against the config loader itself.)
#![allow(clippy::unwrap_used)]

mod common;

use common::{Scratch, Stepwise};

#[test]
fn init_writes_a_commented_config_and_refuses_to_overwrite_it() {
    let dir = Scratch::new("init", "write");
    let out = Stepwise::new().arg("init").arg(dir.path()).run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let path = dir.path().join("stepwise.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    for key in [
        "# model = \"offline\"",
        "# [retry]",
        "# [serve.limits]",
        "# [mcp.servers.fs]",
    ] {
        assert!(text.contains(key), "{key} missing from:\n{text}");
    }
    assert!(
        text.lines().all(|l| l.is_empty() || l.starts_with('#')),
        "every line is a comment"
    );
    assert!(out.stdout.contains("stepwise.toml"), "{}", out.stdout);

    // A second init refuses: a usage error, the file untouched.
    std::fs::write(&path, "model = \"mine\"\n").unwrap();
    let again = Stepwise::new().arg("init").arg(dir.path()).run();
    assert_eq!(again.code, 2, "{}", again.stderr);
    assert!(again.stderr.contains("already exists"), "{}", again.stderr);
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "model = \"mine\"\n"
    );
}

#[test]
fn init_defaults_to_the_current_directory() {
    let dir = Scratch::new("init", "cwd");
    let out = Stepwise::new().current_dir(dir.path()).arg("init").run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(dir.path().join("stepwise.toml").is_file());
}
