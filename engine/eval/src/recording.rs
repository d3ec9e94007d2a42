//! Record once, then test forever (`simtape record`): what a recording of an agent program
//! leaves behind besides its scenario. The command line runs the program against the real
//! provider; this module decides the rest.
//!
//! - [`loosened_fixture`] — the fixture a later run replays: one entry per answered call of
//!   the recording's tape, matched on the call's last message (a tool result, or the user's
//!   message) rather than on the whole conversation, so words added to the user's message or
//!   an edit of an earlier turn still replay.
//! - [`snapshot_project`] — the copy of the project the program ran in, which the scenario's
//!   `[fs] root` names, less what a checkout rebuilds (`.git`, virtual environments, caches).

use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};
use simtape::cap::llm::{fixture_from_tape_matching, FromTapeError, TapeFixture};
use simtape::tape::TapeReader;

/// Directory names a snapshot leaves out: version control, installed packages, virtual
/// environments and caches, which the project rebuilds and the agent should not read.
pub const SNAPSHOT_SKIPPED: &[&str] = &[
    ".git",
    ".hg",
    "node_modules",
    "target",
    ".venv",
    "venv",
    "__pycache__",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
    ".tox",
];

/// The most files a snapshot copies: a project bigger than this is not what an agent's
/// working copy looks like (point `simtape record` at a smaller directory).
pub const SNAPSHOT_FILES_MAX: usize = 10_000;

/// The most bytes a snapshot copies, summed over its files.
pub const SNAPSHOT_BYTES_MAX: u64 = 200 * 1024 * 1024;

/// Returns the `match` of the loosened entry for a call whose request holds `messages` (role,
/// content), system prompts included: the last message's content as a substring, under
/// `last_tool_result` when it is a tool's result, else `last_message`. A call whose last
/// message is empty gets an empty match, which holds for any request (its entry is `once`,
/// so the entries still answer in the order they were recorded).
///
/// ```
/// use simtape_eval::recording::loosened_match;
/// let messages = [
///     ("system".to_string(), "You are terse.".to_string()),
///     ("user".to_string(), "Add 2 and 3.".to_string()),
///     ("assistant".to_string(), String::new()),
///     ("tool".to_string(), "5".to_string()),
/// ];
/// let matcher = serde_json::Value::Object(loosened_match(&messages));
/// assert_eq!(matcher.to_string(), r#"{"last_tool_result":{"contains":"5"}}"#);
/// let matcher = serde_json::Value::Object(loosened_match(&messages[..2]));
/// assert_eq!(matcher.to_string(), r#"{"last_message":{"contains":"Add 2 and 3."}}"#);
/// ```
pub fn loosened_match(messages: &[(String, String)]) -> Map<String, Value> {
    let mut matcher = Map::new();
    if let Some((role, content)) = messages.last().filter(|(_, c)| !c.trim().is_empty()) {
        let key = if role == "tool" {
            "last_tool_result"
        } else {
            "last_message"
        };
        matcher.insert(key.into(), json!({ "contains": content }));
    }
    matcher
}

/// Reads the answered model calls of a recording's tape into the loosened fixture (see the
/// module map); `origin` names the tape in the fixture's first comment line. Each entry
/// keeps the recorded answer, its request digest and its virtual latency.
pub fn loosened_fixture<R: Read>(
    reader: TapeReader<R>,
    origin: &str,
) -> Result<TapeFixture, FromTapeError> {
    let seed = reader.header().seed;
    let comment = format!(
        "Recorded by `simtape record` ({origin}, seed {seed}): each entry matches its call's \
         last message or tool result (docs/llm-fixtures.md)."
    );
    fixture_from_tape_matching(reader, &comment, |call| loosened_match(call.messages))
}

/// What a snapshot copied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Snapshot {
    /// The files (and symbolic links) copied.
    pub files: usize,
    /// Their bytes.
    pub bytes: u64,
}

/// Why a snapshot stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SnapshotError {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// The project holds more than [`SNAPSHOT_FILES_MAX`] files or [`SNAPSHOT_BYTES_MAX`]
    /// bytes (less what a snapshot skips).
    #[error(
        "{project} is too big to snapshot (over {SNAPSHOT_FILES_MAX} files or \
         {SNAPSHOT_BYTES_MAX} bytes): record from the directory the agent works in"
    )]
    TooBig {
        /// The project directory.
        project: PathBuf,
    },
}

/// Copies the project directory `project` into `to` (created), leaving out the directories
/// named in [`SNAPSHOT_SKIPPED`] and the paths in `leave_out` (the recording's own output
/// directory when it lies inside the project). Symbolic links are copied as links. Entries
/// are visited in name order, so the same project gives the same copy.
pub fn snapshot_project(
    project: &Path,
    to: &Path,
    leave_out: &[PathBuf],
) -> Result<Snapshot, SnapshotError> {
    let mut copied = Snapshot { files: 0, bytes: 0 };
    copy_dir(project, to, leave_out, &mut copied, project)?;
    Ok(copied)
}

fn copy_dir(
    from: &Path,
    to: &Path,
    leave_out: &[PathBuf],
    copied: &mut Snapshot,
    project: &Path,
) -> Result<(), SnapshotError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| SnapshotError::Io { path, source }
    };
    std::fs::create_dir_all(to).map_err(io(to))?;
    let mut entries: Vec<_> = std::fs::read_dir(from)
        .map_err(io(from))?
        .collect::<Result<_, _>>()
        .map_err(io(from))?;
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for entry in entries {
        let source = entry.path();
        let name = entry.file_name();
        if leave_out.contains(&source) || SNAPSHOT_SKIPPED.iter().any(|skip| name == *skip) {
            continue;
        }
        let target = to.join(&name);
        let kind = entry.file_type().map_err(io(&source))?;
        if kind.is_dir() {
            copy_dir(&source, &target, leave_out, copied, project)?;
            continue;
        }
        if kind.is_symlink() {
            let points_to = std::fs::read_link(&source).map_err(io(&source))?;
            std::os::unix::fs::symlink(points_to, &target).map_err(io(&target))?;
        } else if kind.is_file() {
            copied.bytes += std::fs::copy(&source, &target).map_err(io(&target))?;
        } else {
            // A socket or a fifo: nothing a copy could carry.
            continue;
        }
        copied.files += 1;
        if copied.files > SNAPSHOT_FILES_MAX || copied.bytes > SNAPSHOT_BYTES_MAX {
            return Err(SnapshotError::TooBig {
                project: project.to_path_buf(),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_leaves_out_caches_and_the_output_directory() {
        // Goal: the copy has the project's files, not its .git, caches, or the recording's
        // own output directory inside it.
        #[allow(clippy::disallowed_methods)] // Why: a test's scratch space, outside any run.
        let root = std::env::temp_dir().join(format!("simtape-snapshot-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let project = root.join("project");
        for file in [
            "agent.py",
            "src/lib.py",
            ".git/HEAD",
            "out/llm.jsonl",
            "__pycache__/a.pyc",
        ] {
            let path = project.join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "x").unwrap();
        }
        let to = root.join("copy");
        let copied = snapshot_project(&project, &to, &[project.join("out")]).unwrap();
        assert_eq!(copied, Snapshot { files: 2, bytes: 2 });
        assert!(to.join("src/lib.py").is_file());
        assert!(!to.join(".git").exists());
        assert!(!to.join("out").exists());
        std::fs::remove_dir_all(&root).unwrap();
    }
}
