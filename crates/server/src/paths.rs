//! What a client may name on the server's disk: notes folders under the
//! configured notes roots and workspaces under the workspace root, nothing
//! else.
//!
//! A path is judged by its text before the file system is touched: a `..`
//! anywhere, or an absolute path outside every root, is refused at once, so
//! the server never reads (or even looks up) a path merely because a client
//! named it. Only a path that is lexically under a root is then resolved
//! (symbolic links followed) and checked again, so a link inside a root
//! that points out of it is refused too. Every refusal has the same
//! message shape whether or not the path exists.

use std::path::{Component, Path, PathBuf};

use crate::error::{ApiError, ErrorCode};

/// A configured root: the folder as configured (absolute) and as resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Root {
    configured: PathBuf,
    resolved: PathBuf,
}

impl Root {
    fn new(path: &Path) -> std::io::Result<Root> {
        let configured = std::path::absolute(path)?;
        let resolved = std::fs::canonicalize(&configured)?;
        if !resolved.is_dir() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::NotADirectory,
                format!("{} is not a folder", path.display()),
            ));
        }
        Ok(Root {
            configured,
            resolved,
        })
    }

    /// The part of `path` (absolute, no `..`) under this root, if it is under it.
    fn relative<'p>(&self, path: &'p Path) -> Option<&'p Path> {
        path.strip_prefix(&self.resolved)
            .or_else(|_| path.strip_prefix(&self.configured))
            .ok()
    }
}

/// The roots a client's paths must stay under.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Roots {
    notes: Vec<Root>,
    workspace: Option<Root>,
}

/// A root that cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("{what} {}: {source}", path.display())]
pub struct RootError {
    what: &'static str,
    path: PathBuf,
    #[source]
    source: std::io::Error,
}

impl Roots {
    /// The roots, each resolved (it must exist and be a folder).
    pub fn new(notes: &[PathBuf], workspace: Option<&Path>) -> Result<Roots, RootError> {
        let notes = notes
            .iter()
            .map(|p| {
                Root::new(p).map_err(|source| RootError {
                    what: "notes root",
                    path: p.clone(),
                    source,
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let workspace = workspace
            .map(|p| {
                Root::new(p).map_err(|source| RootError {
                    what: "workspace root",
                    path: p.to_path_buf(),
                    source,
                })
            })
            .transpose()?;
        Ok(Roots { notes, workspace })
    }

    /// Whether any notes root is configured.
    pub fn has_notes(&self) -> bool {
        !self.notes.is_empty()
    }

    /// A notes folder a client named: relative to a notes root (the first
    /// under which it exists), or absolute under one. Returns it resolved.
    pub fn notes(&self, requested: &str) -> Result<PathBuf, ApiError> {
        if self.notes.is_empty() {
            return Err(ApiError::new(
                ErrorCode::PathNotAllowed,
                "this server allows no notes folders ([serve] notes_roots is empty)",
            ));
        }
        let path = lexical(requested, "notes")?;
        let candidates: Vec<(&Root, PathBuf)> = if path.is_absolute() {
            self.notes
                .iter()
                .filter_map(|r| r.relative(&path).map(|rel| (r, r.resolved.join(rel))))
                .take(1)
                .collect()
        } else {
            self.notes
                .iter()
                .map(|r| (r, r.resolved.join(&path)))
                .collect()
        };
        if candidates.is_empty() {
            return Err(outside("notes", requested));
        }
        for (root, candidate) in &candidates {
            // Only paths lexically under a root get this far.
            let Ok(resolved) = std::fs::canonicalize(candidate) else {
                continue;
            };
            if !resolved.starts_with(&root.resolved) {
                return Err(outside("notes", requested));
            }
            if !resolved.is_dir() {
                return Err(ApiError::new(
                    ErrorCode::NotesUnavailable,
                    format!("notes {requested:?} is not a folder"),
                ));
            }
            return Ok(resolved);
        }
        Err(ApiError::new(
            ErrorCode::NotesUnavailable,
            format!("there is no notes folder {requested:?} under the server's notes roots"),
        ))
    }

    /// A workspace a client named, relative to the workspace root or
    /// absolute under it; the folders that do not exist yet are created,
    /// one at a time, each checked to be under the root before the next.
    pub fn workspace(&self, requested: &str) -> Result<PathBuf, ApiError> {
        let Some(root) = &self.workspace else {
            return Err(ApiError::new(
                ErrorCode::PathNotAllowed,
                "this server allows no workspaces ([serve] workspace_root is not set)",
            ));
        };
        let path = lexical(requested, "workspace")?;
        let relative = if path.is_absolute() {
            root.relative(&path)
                .ok_or_else(|| outside("workspace", requested))?
                .to_path_buf()
        } else {
            path
        };
        let mut at = root.resolved.clone();
        for part in relative.components() {
            let Component::Normal(name) = part else {
                continue;
            };
            let next = at.join(name);
            if std::fs::symlink_metadata(&next).is_err() {
                match std::fs::create_dir(&next) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                    Err(_) => {
                        return Err(ApiError::new(
                            ErrorCode::PathNotAllowed,
                            format!(
                                "cannot create workspace {requested:?} under the workspace root"
                            ),
                        ));
                    }
                }
            }
            let resolved =
                std::fs::canonicalize(&next).map_err(|_| outside("workspace", requested))?;
            if !resolved.starts_with(&root.resolved) || !resolved.is_dir() {
                return Err(outside("workspace", requested));
            }
            at = resolved;
        }
        Ok(at)
    }
}

/// The path as text, refused if it could climb out of anything: empty, a
/// NUL byte, a `..` component, or a Windows prefix.
fn lexical(requested: &str, what: &str) -> Result<PathBuf, ApiError> {
    if requested.is_empty() || requested.contains('\0') {
        return Err(ApiError::new(
            ErrorCode::PathNotAllowed,
            format!("{what} must name a folder"),
        ));
    }
    let path = Path::new(requested);
    for part in path.components() {
        match part {
            Component::ParentDir => {
                return Err(ApiError::new(
                    ErrorCode::PathNotAllowed,
                    format!("{what} {requested:?} may not contain `..`"),
                ));
            }
            Component::Prefix(_) => return Err(outside(what, requested)),
            Component::RootDir | Component::CurDir | Component::Normal(_) => {}
        }
    }
    Ok(path.to_path_buf())
}

fn outside(what: &str, requested: &str) -> ApiError {
    ApiError::new(
        ErrorCode::PathNotAllowed,
        format!("{what} {requested:?} is not under a folder this server allows"),
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    struct Fixture {
        _dir: tempfile::TempDir,
        base: PathBuf,
        roots: Roots,
    }

    fn fixture() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        for d in ["notes/a", "notes/b", "more/c", "outside/secret", "ws"] {
            std::fs::create_dir_all(base.join(d)).unwrap();
        }
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(base.join("outside"), base.join("notes/escape")).unwrap();
            std::os::unix::fs::symlink(base.join("notes/a"), base.join("notes/inside")).unwrap();
            std::os::unix::fs::symlink(base.join("outside"), base.join("ws/out")).unwrap();
        }
        let roots = Roots::new(
            &[base.join("notes"), base.join("more")],
            Some(&base.join("ws")),
        )
        .unwrap();
        Fixture {
            _dir: dir,
            base,
            roots,
        }
    }

    #[test]
    fn notes_under_a_root_are_resolved() {
        let f = fixture();
        assert_eq!(f.roots.notes("a").unwrap(), f.base.join("notes/a"));
        assert_eq!(f.roots.notes("c").unwrap(), f.base.join("more/c"));
        assert_eq!(f.roots.notes("./b").unwrap(), f.base.join("notes/b"));
        let abs = f.base.join("more/c");
        assert_eq!(f.roots.notes(abs.to_str().unwrap()).unwrap(), abs);
        #[cfg(unix)]
        assert_eq!(f.roots.notes("inside").unwrap(), f.base.join("notes/a"));
    }

    #[test]
    fn notes_outside_the_roots_are_refused() {
        let f = fixture();
        let code = |p: &str| f.roots.notes(p).map_err(|e| e.code);
        assert_eq!(code("../outside"), Err(ErrorCode::PathNotAllowed));
        assert_eq!(code("a/../../outside"), Err(ErrorCode::PathNotAllowed));
        assert_eq!(code("/etc"), Err(ErrorCode::PathNotAllowed));
        assert_eq!(
            code("/nonexistent/anything"),
            Err(ErrorCode::PathNotAllowed)
        );
        let secret = f.base.join("outside/secret");
        assert_eq!(
            code(secret.to_str().unwrap()),
            Err(ErrorCode::PathNotAllowed)
        );
        #[cfg(unix)]
        {
            assert_eq!(code("escape"), Err(ErrorCode::PathNotAllowed));
            assert_eq!(code("escape/secret"), Err(ErrorCode::PathNotAllowed));
        }
        assert_eq!(code(""), Err(ErrorCode::PathNotAllowed));
        assert_eq!(code("missing"), Err(ErrorCode::NotesUnavailable));
    }

    #[test]
    fn workspaces_are_created_under_the_root_only() {
        let f = fixture();
        assert_eq!(f.roots.workspace("job/1").unwrap(), f.base.join("ws/job/1"));
        assert!(f.base.join("ws/job/1").is_dir());
        let code = |p: &str| f.roots.workspace(p).map_err(|e| e.code);
        assert_eq!(code("../x"), Err(ErrorCode::PathNotAllowed));
        assert_eq!(code("/tmp/x"), Err(ErrorCode::PathNotAllowed));
        #[cfg(unix)]
        {
            assert_eq!(code("out/new"), Err(ErrorCode::PathNotAllowed));
            assert!(
                !f.base.join("outside/new").exists(),
                "nothing created through the link"
            );
        }
        let none = Roots::new(&[], None).unwrap();
        assert_eq!(
            none.workspace("x").map_err(|e| e.code),
            Err(ErrorCode::PathNotAllowed)
        );
        assert_eq!(
            none.notes("x").map_err(|e| e.code),
            Err(ErrorCode::PathNotAllowed)
        );
    }
}
