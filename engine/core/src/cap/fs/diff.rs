//! The run's filesystem diff: structured (exact bytes) and rendered as a unified diff.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

/// A file the run created.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileAdded {
    /// Path relative to the overlay root, `/`-separated.
    pub path: String,
    /// The file's bytes at the end of the run.
    pub bytes: Vec<u8>,
}

/// A file the run changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileModified {
    /// Path relative to the overlay root, `/`-separated.
    pub path: String,
    /// The bytes in the real directory.
    pub before: Vec<u8>,
    /// The bytes at the end of the run.
    pub after: Vec<u8>,
}

/// A file the run deleted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileDeleted {
    /// Path relative to the overlay root, `/`-separated.
    pub path: String,
    /// The bytes in the real directory.
    pub bytes: Vec<u8>,
}

/// What a run changed under the overlay root: regular files only (empty directories and
/// symlinks are not part of it), each list sorted by path. A file rewritten with its own
/// bytes is no change.
///
/// ```
/// use simtape::cap::fs::{FsDiff, FileModified};
/// let diff = FsDiff {
///     modified: vec![FileModified { path: "a.txt".into(), before: b"x\n".to_vec(), after: b"y\n".to_vec() }],
///     ..FsDiff::default()
/// };
/// assert!(diff.unified().contains("-x\n+y\n"));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct FsDiff {
    /// Files that did not exist in the real directory.
    pub added: Vec<FileAdded>,
    /// Files whose bytes changed.
    pub modified: Vec<FileModified>,
    /// Files of the real directory that no longer exist.
    pub deleted: Vec<FileDeleted>,
}

/// One file's path with its bytes before and after (`None`: absent on that side).
type FileSides<'a> = (&'a str, Option<&'a [u8]>, Option<&'a [u8]>);

/// Lines of unchanged context around each hunk, as `diff -u` and git use.
const CONTEXT_LINES: usize = 3;

impl FsDiff {
    /// Compares two sets of files keyed by path.
    pub(crate) fn between(
        before: &BTreeMap<String, Vec<u8>>,
        after: &BTreeMap<String, Vec<u8>>,
    ) -> FsDiff {
        let mut diff = FsDiff::default();
        for (path, bytes) in after {
            match before.get(path) {
                None => diff.added.push(FileAdded {
                    path: path.clone(),
                    bytes: bytes.clone(),
                }),
                Some(old) if old != bytes => diff.modified.push(FileModified {
                    path: path.clone(),
                    before: old.clone(),
                    after: bytes.clone(),
                }),
                Some(_) => {}
            }
        }
        for (path, bytes) in before {
            if !after.contains_key(path) {
                diff.deleted.push(FileDeleted {
                    path: path.clone(),
                    bytes: bytes.clone(),
                });
            }
        }
        diff
    }

    /// Returns whether the run changed nothing.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.modified.is_empty() && self.deleted.is_empty()
    }

    /// Renders the diff in unified format with `a/` and `b/` prefixes and `@@` hunks, in path
    /// order, so `git apply` accepts it. A file that is not UTF-8 text (or holds a NUL byte)
    /// is one `Binary files … differ` line.
    pub fn unified(&self) -> String {
        let mut files: Vec<FileSides<'_>> = Vec::new();
        files.extend(
            self.added
                .iter()
                .map(|f| (f.path.as_str(), None, Some(&f.bytes[..]))),
        );
        files.extend(
            self.modified
                .iter()
                .map(|f| (f.path.as_str(), Some(&f.before[..]), Some(&f.after[..]))),
        );
        files.extend(
            self.deleted
                .iter()
                .map(|f| (f.path.as_str(), Some(&f.bytes[..]), None)),
        );
        files.sort_by(|a, b| a.0.cmp(b.0));
        files
            .into_iter()
            .map(|(path, before, after)| render_file(path, before, after))
            .collect()
    }

    /// Writes [`FsDiff::unified`] to the file at `path` (for `simtape run --emit-diff`).
    pub fn write_to(&self, path: impl AsRef<Path>) -> std::io::Result<()> {
        std::fs::write(path, self.unified())
    }
}

fn render_file(path: &str, before: Option<&[u8]>, after: Option<&[u8]>) -> String {
    let old_name = before.map_or("/dev/null".to_string(), |_| format!("a/{path}"));
    let new_name = after.map_or("/dev/null".to_string(), |_| format!("b/{path}"));
    let mut out = format!("diff --git a/{path} b/{path}\n");
    match (before, after) {
        (None, _) => out.push_str("new file mode 100644\n"),
        (_, None) => out.push_str("deleted file mode 100644\n"),
        _ => {}
    }
    let (Some(old_text), Some(new_text)) = (text(before), text(after)) else {
        out.push_str(&format!("Binary files {old_name} and {new_name} differ\n"));
        return out;
    };
    let diff = similar::TextDiff::from_lines(old_text, new_text);
    let body = diff
        .unified_diff()
        .context_radius(CONTEXT_LINES)
        .header(&old_name, &new_name)
        .to_string();
    out.push_str(&body);
    out
}

/// Returns the text of a side (an absent side is empty text), or `None` for binary bytes.
fn text(bytes: Option<&[u8]>) -> Option<&str> {
    let bytes = bytes.unwrap_or_default();
    if bytes.contains(&0) {
        return None;
    }
    std::str::from_utf8(bytes).ok()
}
