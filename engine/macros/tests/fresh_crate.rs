//! `#[simtape::test]` as a user meets it: `cargo test` on a fresh crate (`../fixture`, which
//! depends on `simtape` alone) whose plain `assert!` fails for some seeds. The failure must
//! name the seed, the replay command and the kept tape, and the replay command must rerun
//! that seed alone and write the same tape bytes.
//!
//! The child cargo shares this test's target directory and the workspace lockfile, runs
//! offline, and builds only the fixture and what it needs (simtape without `wasi`): about a
//! minute the first time, a second or two after that.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const TEST_NAME: &str = "replies_within_five_seconds";

/// The variables cargo sets for a test it runs (besides `CARGO_PKG_*`), none of them the
/// child's business.
const CARGO_SETS_FOR_TESTS: [&str; 8] = [
    "CARGO_MANIFEST_DIR",
    "CARGO_MANIFEST_PATH",
    "CARGO_CRATE_NAME",
    "CARGO_BIN_NAME",
    "CARGO_PRIMARY_PACKAGE",
    "CARGO_TARGET_TMPDIR",
    "CARGO_RUSTC_CURRENT_DIR",
    "OUT_DIR",
];

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixture")
}

fn target_dir() -> PathBuf {
    simtape::testing::target_dir(&workspace_root())
}

/// Runs `cargo test TEST_NAME -- --exact` on the fixture with `env` set (and no other seed
/// variable), as a user would run the failing test.
fn cargo_test(env: &[(&str, &str)]) -> Output {
    // Tests may read the environment; CARGO is the cargo that runs this test.
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    command
        .current_dir(workspace_root())
        .args(["test", "--offline", "--locked", "--quiet"])
        .args(["-p", "simtape-macros-fixture", "--features", "failing"])
        .args(["--test", "first", TEST_NAME, "--", "--exact"])
        .env("CARGO_TARGET_DIR", target_dir())
        .env("RUST_BACKTRACE", "0")
        .env_remove(simtape::testing::SEED_ENV)
        .env_remove(simtape::testing::SEEDS_ENV);
    // What cargo set for this test would look, to the child's build scripts, like a changed
    // environment (ring reruns when CARGO_MANIFEST_DIR changes) and rebuild half the tree.
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        if name.starts_with("CARGO_PKG_") || CARGO_SETS_FOR_TESTS.contains(&&*name) {
            command.env_remove(&*name);
        }
    }
    for (name, value) in env {
        command.env(name, value);
    }
    command.output().expect("cargo starts")
}

/// The failure report in the test's output: the `seed N failed:` line and its indented lines,
/// with the paths a user's own crate would show (its files relative to the crate, its tape
/// under `target/`).
fn report(output: &Output) -> String {
    let stdout = String::from_utf8_lossy(&output.stdout);
    let start = 1 + stdout
        .find("\nseed ")
        .unwrap_or_else(|| panic!("no failure report in:\n{stdout}"));
    let lines: Vec<&str> = stdout[start..]
        .lines()
        .enumerate()
        .take_while(|(index, line)| *index == 0 || line.starts_with("  "))
        .map(|(_, line)| line)
        .collect();
    let fixture = fixture_dir()
        .canonicalize()
        .unwrap()
        .strip_prefix(workspace_root().canonicalize().unwrap())
        .unwrap()
        .display()
        .to_string();
    let target = target_dir().display().to_string();
    lines
        .join("\n")
        .replace(&format!("{fixture}/"), "")
        .replace(&target, "target")
}

fn seed_of(report: &str) -> u64 {
    let rest = report.strip_prefix("seed ").unwrap();
    rest[..rest.find(' ').unwrap()].parse().unwrap()
}

#[test]
fn a_fresh_crate_fails_naming_the_seed_the_command_and_the_tape_and_the_command_replays_it() {
    // Goal: the failure is actionable as printed, and the replay writes identical tape bytes.
    let first = cargo_test(&[]);
    assert!(!first.status.success(), "the fixture's test must fail");
    let report = report(&first);
    let seed = seed_of(&report);
    let tape_name = format!("simtape/{TEST_NAME}-{seed}.tape");
    let expected_end = format!(
        "\n  panicked at: tests/first.rs:9:5\n  replay it alone: SIMTAPE_SEED={seed} cargo test \
         {TEST_NAME} -- --exact\n  tape: target/{tape_name}"
    );
    assert!(report.ends_with(&expected_end), "{report}");
    assert!(report.contains("waited 5"), "{report}");

    let docs = std::fs::read_to_string(workspace_root().join("docs/testing.md")).unwrap();
    assert!(
        docs.contains(&report),
        "docs/testing.md shows this output:\n{report}"
    );
    let example = std::fs::read_to_string(fixture_dir().join("tests/first.rs")).unwrap();
    assert!(
        docs.contains(&example),
        "docs/testing.md shows tests/first.rs"
    );

    let tape = target_dir().join(&tape_name);
    let bytes = std::fs::read(&tape).unwrap();
    std::fs::remove_file(&tape).unwrap();
    let again = cargo_test(&[(simtape::testing::SEED_ENV, &seed.to_string())]);
    assert!(!again.status.success());
    assert_eq!(self::report(&again), report);
    assert_eq!(
        std::fs::read(&tape).unwrap(),
        bytes,
        "the replay's tape differs"
    );

    // The seeds before the failing one pass, and a passing sweep keeps no tape.
    std::fs::remove_file(&tape).unwrap();
    let before = cargo_test(&[(simtape::testing::SEEDS_ENV, &format!("0..{seed}"))]);
    assert!(
        before.status.success(),
        "{}",
        String::from_utf8_lossy(&before.stdout)
    );
    assert!(!tape.exists());
}
