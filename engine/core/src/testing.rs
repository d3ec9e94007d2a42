//! `cargo test` helpers: run a pipeline over many seeds; a failure names the seed and the one
//! command that replays it. And the guard each crate's one integration-test binary keeps
//! against a test file nobody declared ([`assert_test_files_declared`]).
//!
//! ```
//! use std::time::Duration;
//! simtape::testing::check_seeds(0..20, |seed| {
//!     let mut builder = simtape::Sim::builder();
//!     builder.seed(seed);
//!     let report = builder.build().map_err(|e| e.to_string())?.run(|host| async move {
//!         let delay = host.rng("jitter").below(100);
//!         host.sleep(Duration::from_millis(delay)).await;
//!         host.now_ns()
//!     }).map_err(|e| e.to_string())?;
//!     if report.output < 100_000_000 { Ok(()) } else { Err("too slow".to_string()) }
//! });
//! ```

use std::fmt::Display;
use std::path::Path;

/// The environment variable that narrows [`check_seeds`] to one seed.
pub const SEED_ENV: &str = "SIMTAPE_SEED";

/// Runs `check(seed)` for every seed of `seeds`, or only for `$SIMTAPE_SEED` when it is set,
/// and panics at the first failure with the seed, the failure and the replay command.
///
/// # Panics
/// At the first failing seed (that is the point), or when `$SIMTAPE_SEED` is not a number.
pub fn check_seeds<E: Display>(
    seeds: impl IntoIterator<Item = u64>,
    check: impl FnMut(u64) -> Result<(), E>,
) {
    // Reading the environment is banned in the engine core; this is test tooling that runs
    // before and around simulations, never inside one, and the seed it reads is printed.
    #[allow(clippy::disallowed_methods)]
    let only = std::env::var(SEED_ENV).ok().map(|text| {
        text.trim()
            .parse::<u64>()
            .unwrap_or_else(|_| panic!("{SEED_ENV}={text:?} is not a seed (a u64)"))
    });
    if let Err(message) = sweep(seeds, only, check) {
        panic!("{message}");
    }
}

/// The logic of [`check_seeds`], without the environment: returns the failure message.
pub fn sweep<E: Display>(
    seeds: impl IntoIterator<Item = u64>,
    only: Option<u64>,
    mut check: impl FnMut(u64) -> Result<(), E>,
) -> Result<usize, String> {
    let seeds: Vec<u64> = match only {
        Some(seed) => vec![seed],
        None => seeds.into_iter().collect(),
    };
    for &seed in &seeds {
        if let Err(error) = check(seed) {
            let test = std::thread::current()
                .name()
                .unwrap_or("TEST_NAME")
                .to_string();
            return Err(format!(
                "seed {seed} failed: {error}\n\
                 replay it alone: {SEED_ENV}={seed} cargo test {test} -- --exact"
            ));
        }
    }
    Ok(seeds.len())
}

/// Asserts that every `.rs` file beside an integration-test binary's `main.rs` in `dir` is
/// declared there as `mod <name>;`. Cargo builds only what `main.rs` declares, so a file
/// that is not would never compile or run, silently.
///
/// ```
/// // Each crate's tests/integration/main.rs calls it from a #[test]:
/// let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/integration");
/// simtape::testing::assert_test_files_declared(&dir);
/// ```
///
/// # Panics
/// Naming the first file that is not declared, or when `dir` or its `main.rs` cannot be read.
pub fn assert_test_files_declared(dir: &Path) {
    let main = std::fs::read_to_string(dir.join("main.rs"))
        .unwrap_or_else(|e| panic!("{}: {e}", dir.join("main.rs").display()));
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let name = entry.expect("a directory entry").file_name();
        let name = name.to_string_lossy();
        let Some(module) = name.strip_suffix(".rs") else {
            continue;
        };
        assert!(
            module == "main" || main.contains(&format!("mod {module};")),
            "{name} is not declared in {}",
            dir.join("main.rs").display()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_failure_names_the_seed_and_the_replay_command() {
        // Goal: the first failing seed is reported with an env-var command naming this test.
        let failure = sweep(
            0..10,
            None,
            |seed| if seed == 7 { Err("boom") } else { Ok(()) },
        );
        let message = failure.unwrap_err();
        assert!(message.starts_with("seed 7 failed: boom"), "{message}");
        assert!(
            message.contains(
                "SIMTAPE_SEED=7 cargo test testing::tests::the_failure_names_the_seed_and_the_replay_command"
            ),
            "{message}"
        );
        let mut seen = Vec::new();
        let ran = sweep(0..10, Some(3), |seed| {
            seen.push(seed);
            Ok::<(), String>(())
        });
        assert_eq!((ran, seen), (Ok(1), vec![3]));
    }

    #[test]
    fn a_test_file_main_rs_does_not_declare_is_named() {
        // Goal: the guard passes when every file is declared and names the one that is not.
        let dir = std::env::temp_dir().join(format!("simtape-guard-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("main.rs"), "mod declared;\n").unwrap();
        std::fs::write(dir.join("declared.rs"), "").unwrap();
        std::fs::write(dir.join("notes.txt"), "").unwrap();
        assert_test_files_declared(&dir);
        std::fs::write(dir.join("forgotten.rs"), "").unwrap();
        let panic = std::panic::catch_unwind(|| assert_test_files_declared(&dir)).unwrap_err();
        let message = panic.downcast_ref::<String>().unwrap();
        assert!(
            message.starts_with("forgotten.rs is not declared in"),
            "{message}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
