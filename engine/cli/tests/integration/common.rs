//! Helpers shared by the CLI's end-to-end test modules.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Returns a command running the `simtape` binary under test.
pub(crate) fn simtape() -> Command {
    Command::new(env!("CARGO_BIN_EXE_simtape"))
}

/// Returns the repository root.
pub(crate) fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// Makes an empty directory for one test, under the target's temp directory: `area`
/// separates the test binaries, `name` the tests.
pub(crate) fn scratch(area: &str, name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(area).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Reads a JSON file.
pub(crate) fn load_json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Returns every file under `dir` with its bytes, sorted by path relative to `dir`.
pub(crate) fn files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(next) = pending.pop() {
        for entry in std::fs::read_dir(&next).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else {
                let bytes = std::fs::read(&path).unwrap();
                found.push((path.strip_prefix(dir).unwrap().to_path_buf(), bytes));
            }
        }
    }
    found.sort();
    found
}

/// Returns a finished command's standard output then standard error, as text.
pub(crate) fn output_text(output: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}
