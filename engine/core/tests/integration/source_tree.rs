//! The engine's own source, as the structure tests read it: the workspace root and every
//! `.rs` file under a directory, in path order.

use std::path::{Path, PathBuf};

/// The workspace root.
pub(crate) fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every `.rs` file under `dir`, in path order.
pub(crate) fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    walk(dir, &mut found);
    found
}

/// Every `.rs` file under `dir`, in path order, as (its path from the workspace root, its
/// text).
pub(crate) fn texts(dir: &Path) -> Vec<(String, String)> {
    sources(dir)
        .into_iter()
        .map(|file| {
            let text = std::fs::read_to_string(&file).unwrap();
            let shown = file
                .strip_prefix(root())
                .unwrap_or(&file)
                .display()
                .to_string();
            (shown, text)
        })
        .collect()
}

fn walk(dir: &Path, found: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            walk(&path, found);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            found.push(path);
        }
    }
}
