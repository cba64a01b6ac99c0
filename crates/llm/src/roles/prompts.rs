//! Prompt templates: Jinja files (minijinja) embedded in the binary and
//! overridable from a folder, so a user can tune a prompt without a rebuild
//! and a reviewer can read every prompt as a plain file. A template may hold
//! a `system` and a `user` block, which become the system and user messages;
//! without blocks, the whole text is the user message. Variables are listed
//! in `docs/models.md`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use minijinja::value::Serde;
use minijinja::{Environment, ErrorKind, UndefinedBehavior};
use serde::Serialize;
use stepwise_core::Message;

/// The templates, by file name, as shipped.
const EMBEDDED: [(&str, &str); 11] = [
    ("planner.jinja", include_str!("../../prompts/planner.jinja")),
    (
        "repairer.jinja",
        include_str!("../../prompts/repairer.jinja"),
    ),
    (
        "replanner.jinja",
        include_str!("../../prompts/replanner.jinja"),
    ),
    (
        "assessor.jinja",
        include_str!("../../prompts/assessor.jinja"),
    ),
    (
        "assessor_wave.jinja",
        include_str!("../../prompts/assessor_wave.jinja"),
    ),
    (
        "verifier.jinja",
        include_str!("../../prompts/verifier.jinja"),
    ),
    (
        "synthesizer.jinja",
        include_str!("../../prompts/synthesizer.jinja"),
    ),
    (
        "executor.jinja",
        include_str!("../../prompts/executor.jinja"),
    ),
    ("actor.jinja", include_str!("../../prompts/actor.jinja")),
    (
        "summarizer.jinja",
        include_str!("../../prompts/summarizer.jinja"),
    ),
    ("router.jinja", include_str!("../../prompts/router.jinja")),
];

/// A prompt template could not be loaded or rendered.
#[derive(Debug, thiserror::Error)]
pub enum PromptError {
    /// The folder could not be read.
    #[error("cannot read the prompt folder {path}: {source}")]
    Read {
        /// The folder or file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Files in the folder that are not templates Stepwise knows.
    #[error("unknown prompt template(s) in {dir}: {}; the known ones are {}", .unknown.join(", "), known_names().join(", "))]
    Unknown {
        /// The folder.
        dir: PathBuf,
        /// The unknown file names.
        unknown: Vec<String>,
    },
    /// A template has a syntax error.
    #[error("prompt template {name} does not compile: {message}")]
    Syntax {
        /// The template's file name (or path, for an override).
        name: String,
        /// What minijinja said, with the line.
        message: String,
    },
    /// Rendering failed (e.g. an unknown variable).
    #[error("prompt template {name} failed to render: {message}")]
    Render {
        /// The template's file name.
        name: String,
        /// What minijinja said, with the line.
        message: String,
    },
}

fn known_names() -> Vec<&'static str> {
    EMBEDDED.iter().map(|(n, _)| *n).collect()
}

/// The prompt templates roles render: the embedded ones, some perhaps
/// replaced by files from a folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompts {
    sources: BTreeMap<&'static str, String>,
    overridden: Vec<String>,
}

impl Default for Prompts {
    fn default() -> Self {
        Self::embedded()
    }
}

impl Prompts {
    /// The templates shipped with Stepwise.
    pub fn embedded() -> Self {
        Self {
            sources: EMBEDDED
                .iter()
                .map(|(n, s)| (*n, (*s).to_owned()))
                .collect(),
            overridden: Vec::new(),
        }
    }

    /// The embedded templates, each replaced by a file of the same name in
    /// `dir` if there is one. Files with other names are an error (a typo
    /// would otherwise be silently ignored); hidden files are skipped.
    /// Every override is compiled now, so a syntax error shows at startup.
    pub fn from_dir(dir: impl AsRef<Path>) -> Result<Self, PromptError> {
        let dir = dir.as_ref();
        let read_err = |path: &Path| {
            let path = path.to_owned();
            move |source| PromptError::Read { path, source }
        };
        let mut prompts = Self::embedded();
        let mut unknown = Vec::new();
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .map_err(read_err(dir))?
            .collect::<Result<_, _>>()
            .map_err(read_err(dir))?;
        entries.sort_by_key(std::fs::DirEntry::file_name);
        for entry in entries {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue;
            }
            let Some(known) = EMBEDDED.iter().map(|(n, _)| *n).find(|n| *n == name) else {
                unknown.push(name);
                continue;
            };
            let path = entry.path();
            let source = std::fs::read_to_string(&path).map_err(read_err(&path))?;
            compile_check(&path.display().to_string(), &source)?;
            prompts.sources.insert(known, source);
            prompts.overridden.push(name);
        }
        if !unknown.is_empty() {
            return Err(PromptError::Unknown {
                dir: dir.to_owned(),
                unknown,
            });
        }
        Ok(prompts)
    }

    /// File names of the templates replaced from a folder.
    pub fn overridden(&self) -> &[String] {
        &self.overridden
    }

    /// A template's source, by file name (e.g. `planner.jinja`).
    pub fn source(&self, name: &str) -> Option<&str> {
        self.sources.get(name).map(String::as_str)
    }

    /// Renders template `name` with `context` into messages: the `system`
    /// block (if any) as a system message, the `user` block (or the whole
    /// text, without blocks) as the user message.
    pub fn render(
        &self,
        name: &str,
        context: &impl Serialize,
    ) -> Result<Vec<Message>, PromptError> {
        let render_err = |e: minijinja::Error| PromptError::Render {
            name: name.to_owned(),
            message: describe(&e),
        };
        let source = self.source(name).ok_or_else(|| PromptError::Render {
            name: name.to_owned(),
            message: format!(
                "no such template; the known ones are {}",
                known_names().join(", ")
            ),
        })?;
        let env = environment();
        let template =
            env.template_from_named_str(name, source)
                .map_err(|e| PromptError::Syntax {
                    name: name.to_owned(),
                    message: describe(&e),
                })?;
        let mut captured = template
            .render_captured(minijinja::Value::from(Serde(context)))
            .map_err(render_err)?;
        let mut block = |block: &str| {
            captured.with_state_mut(|state| match state.render_block(block) {
                Ok(text) => Ok(Some(text)),
                Err(e) if e.kind() == ErrorKind::UnknownBlock => Ok(None),
                Err(e) => Err(e),
            })
        };
        let system = block("system").map_err(render_err)?;
        let user = block("user").map_err(render_err)?;
        let mut messages = Vec::new();
        let user = match (user, &system) {
            (Some(user), _) => user,
            (None, None) => captured.output().to_owned(),
            (None, Some(_)) => String::new(),
        };
        if let Some(system) = system
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
        {
            messages.push(Message::system(system));
        }
        messages.push(Message::user(user.trim().to_owned()));
        Ok(messages)
    }
}

/// Strict about undefined variables in output and loops (a typo in an
/// override fails loudly), lenient in `if` tests (optional parts).
fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::SemiStrict);
    env.set_auto_escape_callback(|_| minijinja::AutoEscape::None);
    // Block tags on lines of their own leave no blank lines behind.
    if let Ok(syntax) = minijinja::syntax::SyntaxConfig::builder()
        .trim_blocks(true)
        .lstrip_blocks(true)
        .build()
    {
        env.set_syntax(syntax);
    }
    env
}

fn compile_check(name: &str, source: &str) -> Result<(), PromptError> {
    environment()
        .template_from_named_str(name, source)
        .map(|_| ())
        .map_err(|e| PromptError::Syntax {
            name: name.to_owned(),
            message: describe(&e),
        })
}

/// The error with its line, if minijinja knows it.
fn describe(e: &minijinja::Error) -> String {
    match e.line() {
        Some(line) => format!("{e} (line {line})"),
        None => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_replace_and_unknown_files_are_refused() {
        let dir = std::env::temp_dir().join(format!("stepwise-prompts-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("planner.jinja"), "Plan {{ goal }} now.").unwrap();
        std::fs::write(dir.join(".hidden"), "x").unwrap();
        let p = Prompts::from_dir(&dir).unwrap();
        assert_eq!(p.overridden(), ["planner.jinja"]);
        let msgs = p
            .render("planner.jinja", &serde_json::json!({"goal": "X"}))
            .unwrap();
        assert_eq!(msgs, vec![Message::user("Plan X now.")]);
        std::fs::write(dir.join("planer.jinja"), "typo").unwrap();
        let err = Prompts::from_dir(&dir).unwrap_err().to_string();
        assert!(
            err.contains("planer.jinja") && err.contains("planner.jinja"),
            "{err}"
        );
        std::fs::remove_file(dir.join("planer.jinja")).unwrap();
        std::fs::write(dir.join("assessor.jinja"), "{% if %}").unwrap();
        assert!(matches!(
            Prompts::from_dir(&dir),
            Err(PromptError::Syntax { .. })
        ));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn every_embedded_template_compiles_and_has_both_blocks() {
        for (name, source) in EMBEDDED {
            compile_check(name, source).unwrap();
            assert!(source.contains("{% block system %}") && source.contains("{% block user %}"));
        }
        let verifier = Prompts::embedded()
            .render(
                "verifier.jinja",
                &serde_json::json!({"goal": "g", "constraints": "", "iteration": 1,
                    "results": [], "unanswered": [], "gaps": []}),
            )
            .unwrap();
        assert_eq!(verifier.len(), 2);
    }

    #[test]
    fn blocks_become_system_and_user_messages() {
        let mut p = Prompts::embedded();
        p.sources.insert(
            "executor.jinja",
            "{% block system %}Be {{ x }}.{% endblock %}{% block user %}Do {{ x }}.{% endblock %}"
                .to_owned(),
        );
        let msgs = p
            .render("executor.jinja", &serde_json::json!({"x": "brief"}))
            .unwrap();
        assert_eq!(
            msgs,
            vec![Message::system("Be brief."), Message::user("Do brief.")]
        );
        let err = p
            .render("executor.jinja", &serde_json::json!({}))
            .unwrap_err();
        assert!(matches!(err, PromptError::Render { .. }));
    }
}
