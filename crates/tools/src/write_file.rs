//! `write_file`: the built-in side-effect tool. It writes a text file inside
//! a workspace folder given on the command line and nowhere else: absolute
//! paths, `..` and symlinks are refused, so a plan (or text injected into
//! one) cannot reach outside. It is idempotent by construction: a ledger in
//! `<workspace>/.stepwise/writes.jsonl` remembers each idempotency key, so a
//! retried or resumed step writes its content once.

use std::fs::{self, OpenOptions};
use std::future::{Future, ready};
use std::io::{Read, Write};
use std::path::{Component, Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use stepwise_core::{Effects, Tool, ToolContext, ToolError};

/// Where the ledger of applied writes lives, inside the workspace.
const LEDGER: &str = ".stepwise/writes.jsonl";

/// Writes files inside one workspace folder.
#[derive(Debug, Clone)]
pub struct WriteFile {
    workspace: PathBuf,
}

/// Arguments of `write_file`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteFileArgs {
    /// Path relative to the workspace, e.g. "briefs/rag.md". No absolute
    /// paths, no "..".
    #[schemars(length(min = 1))]
    pub path: String,
    /// The whole text of the file (it replaces any earlier content).
    pub content: String,
}

/// Output of `write_file`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WriteFileOutput {
    /// The path written, relative to the workspace.
    pub path: String,
    /// Bytes in the file.
    pub bytes: usize,
    /// SHA-256 of the content, hex.
    pub sha256: String,
    /// False when this idempotency key had already written this content.
    pub written: bool,
}

#[derive(Debug, Serialize, Deserialize)]
struct LedgerLine {
    key: String,
    path: String,
    sha256: String,
}

fn sha256(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn io(what: &str, path: &Path, e: &std::io::Error) -> ToolError {
    ToolError::transient(format!("cannot {what} {}: {e}", path.display()))
}

impl WriteFile {
    /// A tool writing inside `workspace`, which is created if missing.
    pub fn new(workspace: impl Into<PathBuf>) -> Result<Self, std::io::Error> {
        let workspace = workspace.into();
        fs::create_dir_all(&workspace)?;
        Ok(Self {
            workspace: workspace.canonicalize()?,
        })
    }

    /// The tool with no workspace, for listing its spec only (every write fails).
    pub(crate) fn spec_only() -> Self {
        Self {
            workspace: PathBuf::from("/nonexistent/stepwise-workspace"),
        }
    }

    /// The workspace folder (canonical).
    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    /// The absolute target of a relative path, refusing anything that could
    /// leave the workspace.
    fn target(&self, relative: &str) -> Result<PathBuf, ToolError> {
        let rel = Path::new(relative);
        if relative.trim().is_empty() {
            return Err(ToolError::persistent("`path` is empty"));
        }
        let mut target = self.workspace.clone();
        for component in rel.components() {
            match component {
                Component::Normal(part) => {
                    if part == ".stepwise" {
                        return Err(ToolError::persistent(
                            "`.stepwise` is reserved for Stepwise's own records",
                        ));
                    }
                    target.push(part);
                    // Every existing component must be a real folder or file, not a link out.
                    if let Ok(meta) = fs::symlink_metadata(&target)
                        && meta.file_type().is_symlink()
                    {
                        return Err(ToolError::persistent(format!(
                            "{relative:?} goes through a symbolic link; write_file only writes real paths inside the workspace"
                        )));
                    }
                }
                Component::CurDir => {}
                _ => {
                    return Err(ToolError::persistent(format!(
                        "{relative:?} must be a relative path inside the workspace, without `..`"
                    )));
                }
            }
        }
        if target == self.workspace {
            return Err(ToolError::persistent(format!(
                "{relative:?} names the workspace itself, not a file"
            )));
        }
        Ok(target)
    }

    /// Opens the ledger and holds its lock: two processes writing in one
    /// workspace (a worker frozen past its lease and the one that took its
    /// run over) see each other's keys, and never interleave their lines.
    fn locked_ledger(&self) -> Result<(fs::File, Vec<LedgerLine>, bool), ToolError> {
        let path = self.workspace.join(LEDGER);
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir).map_err(|e| io("create", dir, &e))?;
        }
        let mut file = OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(&path)
            .map_err(|e| io("open", &path, &e))?;
        file.lock().map_err(|e| io("lock", &path, &e))?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)
            .map_err(|e| io("read", &path, &e))?;
        // A line cut short by a kill is ignored, and the next one starts on a line of its own.
        let torn = bytes.last().is_some_and(|b| *b != b'\n');
        let lines = String::from_utf8_lossy(&bytes)
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        Ok((file, lines, torn))
    }

    /// Writes once per idempotency key.
    pub fn write(&self, key: &str, args: &WriteFileArgs) -> Result<WriteFileOutput, ToolError> {
        let target = self.target(&args.path)?;
        let hash = sha256(&args.content);
        let output = |written| WriteFileOutput {
            path: args.path.clone(),
            bytes: args.content.len(),
            sha256: hash.clone(),
            written,
        };
        let (mut ledger, lines, torn) = self.locked_ledger()?;
        if let Some(done) = lines.into_iter().find(|l| l.key == key) {
            return if done.path == args.path && done.sha256 == hash {
                Ok(output(false))
            } else {
                Err(ToolError::persistent(format!(
                    "idempotency key {key} already wrote {} with other content; a step's write cannot change on retry",
                    done.path
                )))
            };
        }
        let parent = target.parent().unwrap_or(&self.workspace);
        fs::create_dir_all(parent).map_err(|e| io("create", parent, &e))?;
        // Write to a temporary file and rename: the file is never half-written.
        let tmp = parent.join(format!(
            ".{}.stepwise-tmp",
            target
                .file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
        ));
        let mut file = fs::File::create(&tmp).map_err(|e| io("create", &tmp, &e))?;
        file.write_all(args.content.as_bytes())
            .and_then(|()| file.sync_all())
            .map_err(|e| io("write", &tmp, &e))?;
        fs::rename(&tmp, &target).map_err(|e| io("rename into", &target, &e))?;
        let mut line = serde_json::to_string(&LedgerLine {
            key: key.to_owned(),
            path: args.path.clone(),
            sha256: hash.clone(),
        })
        .map_err(|e| ToolError::persistent(e.to_string()))?;
        line.push('\n');
        if torn {
            line.insert(0, '\n');
        }
        // One write of the whole line: a kill leaves it whole or torn, never glued to the next.
        let path = self.workspace.join(LEDGER);
        ledger
            .write_all(line.as_bytes())
            .and_then(|()| ledger.sync_all())
            .map_err(|e| io("append to", &path, &e))?;
        Ok(output(true))
    }
}

impl Tool for WriteFile {
    const NAME: &'static str = "write_file";
    type Args = WriteFileArgs;
    type Output = WriteFileOutput;

    fn description(&self) -> String {
        "Write a text file inside the workspace folder (side effect: needs an approval). The path is relative to the \
         workspace; absolute paths, `..` and symbolic links are refused."
            .to_owned()
    }

    fn effects(&self) -> Effects {
        Effects {
            side_effect: true,
            idempotent: true,
            timeout_ms: Some(10_000),
        }
    }

    fn call(
        &self,
        ctx: &ToolContext,
        args: WriteFileArgs,
    ) -> impl Future<Output = Result<WriteFileOutput, ToolError>> + Send {
        ready(self.write(&ctx.idempotency_key, &args))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(path: &str, content: &str) -> WriteFileArgs {
        WriteFileArgs {
            path: path.into(),
            content: content.into(),
        }
    }

    fn tool() -> (tempfile::TempDir, WriteFile) {
        let dir = tempfile::tempdir().unwrap();
        let tool = WriteFile::new(dir.path().join("ws")).unwrap();
        (dir, tool)
    }

    #[test]
    fn writes_inside_the_workspace_once_per_key() {
        let (_dir, tool) = tool();
        let first = tool.write("k1", &args("briefs/rag.md", "# RAG\n")).unwrap();
        assert!(first.written);
        assert_eq!(
            fs::read_to_string(tool.workspace().join("briefs/rag.md")).unwrap(),
            "# RAG\n"
        );
        // A retry with the same key is a no-op, even if the file changed since.
        fs::write(tool.workspace().join("briefs/rag.md"), "edited by hand").unwrap();
        let again = tool.write("k1", &args("briefs/rag.md", "# RAG\n")).unwrap();
        assert!(!again.written);
        assert_eq!(
            fs::read_to_string(tool.workspace().join("briefs/rag.md")).unwrap(),
            "edited by hand"
        );
        // Another key writes again.
        assert!(
            tool.write("k2", &args("briefs/rag.md", "v2"))
                .unwrap()
                .written
        );
        // The same key with other content is refused.
        let err = tool
            .write("k1", &args("briefs/rag.md", "other"))
            .unwrap_err();
        assert!(err.message.contains("other content"), "{}", err.message);
    }

    #[test]
    fn a_torn_ledger_line_is_ignored_and_never_glued_to_the_next() {
        let (_dir, tool) = tool();
        assert!(tool.write("k1", &args("a.md", "a")).unwrap().written);
        // A writer killed mid-append left half a line without its newline.
        let ledger = tool.workspace().join(LEDGER);
        let mut file = OpenOptions::new().append(true).open(&ledger).unwrap();
        file.write_all(br#"{"key":"k2","pa"#).unwrap();
        drop(file);
        assert!(tool.write("k3", &args("c.md", "c")).unwrap().written);
        assert!(
            tool.write("k3", &args("c.md", "c"))
                .is_ok_and(|o| !o.written)
        );
        let text = fs::read_to_string(&ledger).unwrap();
        let whole: Vec<&str> = text
            .lines()
            .filter(|l| serde_json::from_str::<LedgerLine>(l).is_ok())
            .collect();
        assert_eq!(whole.len(), 2, "{text}");
        assert!(text.ends_with("}\n"), "{text}");
    }

    #[test]
    fn concurrent_writers_keep_one_whole_line_per_key() {
        let (_dir, tool) = tool();
        std::thread::scope(|scope| {
            for t in 0..8 {
                let tool = tool.clone();
                scope.spawn(move || {
                    for i in 0..25 {
                        // Every key is written by two threads at once; it must land once.
                        let key = format!("k{}", (t / 2) * 100 + i);
                        tool.write(&key, &args(&format!("{key}.md"), &key)).unwrap();
                    }
                });
            }
        });
        let text = fs::read_to_string(tool.workspace().join(LEDGER)).unwrap();
        let mut keys: Vec<String> = text
            .lines()
            .map(|l| serde_json::from_str::<LedgerLine>(l).unwrap().key)
            .collect();
        let total = keys.len();
        keys.sort();
        keys.dedup();
        assert_eq!((total, keys.len()), (100, 100));
    }

    #[test]
    fn paths_that_escape_are_refused() {
        let (dir, tool) = tool();
        for bad in [
            "/etc/passwd",
            "../outside.txt",
            "a/../../b.txt",
            "",
            ".",
            ".stepwise/writes.jsonl",
        ] {
            let err = tool.write("k", &args(bad, "x")).unwrap_err();
            assert_eq!(err.class, stepwise_core::FailureClass::Persistent, "{bad}");
        }
        assert!(!dir.path().join("outside.txt").exists());
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_out_of_the_workspace_are_refused() {
        let (dir, tool) = tool();
        let outside = dir.path().join("outside");
        fs::create_dir_all(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, tool.workspace().join("link")).unwrap();
        let err = tool.write("k", &args("link/x.txt", "x")).unwrap_err();
        assert!(err.message.contains("symbolic link"), "{}", err.message);
        assert!(!outside.join("x.txt").exists());
        std::os::unix::fs::symlink(outside.join("f.txt"), tool.workspace().join("f.txt")).unwrap();
        assert!(tool.write("k", &args("f.txt", "x")).is_err());
        assert!(!outside.join("f.txt").exists());
    }
}
