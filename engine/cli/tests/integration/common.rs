//! Helpers shared by the CLI's end-to-end test modules.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

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

/// Runs `simtape run SCENARIO --seed SEED --tape TAPE` in `dir` (`tape` relative to it).
pub(crate) fn run_seed(dir: &Path, scenario: &Path, seed: u64, tape: &str) -> Output {
    simtape()
        .current_dir(dir)
        .arg("run")
        .arg(scenario)
        .args(["--seed", &seed.to_string(), "--tape", tape])
        .output()
        .unwrap()
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

/// Returns a command's stdout and stderr, for assertion messages.
pub(crate) fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Runs `command` and asserts it exits 0.
pub(crate) fn run_ok(command: &mut Command) -> Output {
    let output = command.output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    output
}

/// Runs `command`, asserting its exit code and that its output contains `needle`.
pub(crate) fn expect(command: &mut Command, code: i32, needle: &str) {
    let output = command.output().unwrap();
    let shown = text(&output);
    assert_eq!(output.status.code(), Some(code), "{shown}");
    assert!(shown.contains(needle), "{needle:?} in {shown}");
}

/// Checks that the first fenced block after the line holding `anchor` in the doc `doc`
/// (relative to the repository) is `actual`, so a doc's example output cannot go stale. With
/// `SIMTAPE_BLESS_DOCS=1` it rewrites the block instead.
pub(crate) fn check_doc_block(doc: &str, anchor: &str, actual: &str) {
    let path = repo().join(doc);
    let text = std::fs::read_to_string(&path).unwrap();
    let at = text
        .find(anchor)
        .unwrap_or_else(|| panic!("{doc} has no {anchor:?}"));
    let open = at
        + text[at..]
            .find("```")
            .expect("a fenced block after the anchor");
    let start = open + text[open..].find('\n').unwrap() + 1;
    let end = start + text[start..].find("```").expect("the block ends");
    if text[start..end] == *actual {
        return;
    }
    if std::env::var("SIMTAPE_BLESS_DOCS").as_deref() == Ok("1") {
        let updated = format!("{}{actual}{}", &text[..start], &text[end..]);
        std::fs::write(&path, updated).unwrap();
        return;
    }
    panic!(
        "{doc}: the example after {anchor:?} is stale (SIMTAPE_BLESS_DOCS=1 rewrites it); now:\n{actual}"
    );
}

/// The host's live processes whose command line holds `marker` (zombies left out).
pub(crate) fn processes_with(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let Ok(bytes) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let line = String::from_utf8_lossy(&bytes).replace('\0', " ");
        if line.contains(marker) && !stat.contains(") Z ") {
            found.push(line);
        }
    }
    found
}

/// ticket-retry with a whole-run retry budget of 3: the world's 429 on close_ticket takes one
/// retry, so the run fails exactly when comment_ticket's seeded 1/2 chance gives three 429s
/// in a row.
pub(crate) fn three_429s_variant(dir: &Path) -> PathBuf {
    let scenarios = repo().join("scenarios");
    let source = std::fs::read_to_string(scenarios.join("ticket-retry.toml")).unwrap();
    let variant = source
        .replace("retry_budget = 20", "retry_budget = 3")
        .replace(
            "fixture = \"data/",
            &format!("fixture = \"{}/data/", scenarios.display()),
        )
        .replace(
            "world = \"worlds/",
            &format!("world = \"{}/worlds/", scenarios.display()),
        );
    assert_ne!(variant, source);
    let path = dir.join("ticket-retry-3x429.toml");
    std::fs::write(&path, variant).unwrap();
    path
}
