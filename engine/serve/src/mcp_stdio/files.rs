//! The MCP sessions' output files, each written whole or not at all (`crate::files`).

use std::io;
use std::path::{Path, PathBuf};

use simtape_mcp::{Cassette, McpError};

pub use crate::files::write_atomic;

/// Writes a value as pretty JSON with a final newline, atomically.
pub fn write_json_atomic(path: &Path, value: &impl serde::Serialize) -> io::Result<()> {
    let mut text = serde_json::to_vec_pretty(value).map_err(io::Error::other)?;
    text.push(b'\n');
    write_atomic(path, &text)
}

/// Writes `cassette` to `path` as pretty JSON with a trailing newline, atomically.
pub fn save_cassette(cassette: &Cassette, path: &Path) -> Result<(), McpError> {
    let mut text = serde_json::to_string_pretty(cassette).expect("a Value tree always serializes");
    text.push('\n');
    write_atomic(path, text.as_bytes()).map_err(|source| McpError::CassetteIo {
        path: path.into(),
        source,
    })
}

/// The absolute form of a path, for a journal header that is read later, maybe from another
/// directory.
pub fn absolute(path: &Path) -> String {
    std::path::absolute(path)
        .unwrap_or_else(|_| path.to_path_buf())
        .display()
        .to_string()
}

/// Returns a free name beside `path` for an output rebuilt from a left journal:
/// `out.json` → `out.recovered.json`, then `out.recovered-2.json`, … (never an existing file).
pub fn recovered_path(path: &Path) -> PathBuf {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let extension = path
        .extension()
        .map(|e| format!(".{}", e.to_string_lossy()))
        .unwrap_or_default();
    (1u32..)
        .map(|n| {
            let counter = if n == 1 {
                String::new()
            } else {
                format!("-{n}")
            };
            path.with_file_name(format!("{stem}.recovered{counter}{extension}"))
        })
        .find(|candidate| !candidate.exists())
        .expect("some counter is free")
}

/// An empty scratch directory for one unit test of this crate's file handling.
#[cfg(test)]
pub(crate) fn test_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("simtape-mcp-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_the_file_and_leaves_no_temporary() {
        // Goal: the target holds the new bytes and the directory holds nothing else.
        let dir = test_dir("atomic");
        let target = dir.join("out.json");
        std::fs::write(&target, "old").unwrap();
        write_atomic(&target, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "new");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
