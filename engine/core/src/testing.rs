//! `cargo test` helpers: run a pipeline over many seeds; a failure names the seed and the one
//! command that replays it.
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
    if let Err(failure) = sweep(seeds, only, check) {
        panic!("{failure}");
    }
}

/// The first seed of a sweep that failed: fatal to the test, which panics with it. It
/// displays the seed, the error and the command that replays the seed alone.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "seed {seed} failed: {error}\nreplay it alone: {SEED_ENV}={seed} cargo test {test} -- --exact"
)]
pub struct SeedFailure {
    /// The seed.
    pub seed: u64,
    /// The check's error, as text.
    pub error: String,
    /// The test's name (`TEST_NAME` off a test thread).
    pub test: String,
}

/// The logic of [`check_seeds`], without the environment: returns how many seeds ran, or
/// the first that failed.
pub fn sweep<E: Display>(
    seeds: impl IntoIterator<Item = u64>,
    only: Option<u64>,
    mut check: impl FnMut(u64) -> Result<(), E>,
) -> Result<usize, SeedFailure> {
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
            return Err(SeedFailure {
                seed,
                error: error.to_string(),
                test,
            });
        }
    }
    Ok(seeds.len())
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
        let message = failure.unwrap_err().to_string();
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
            Ok::<(), &str>(())
        });
        assert_eq!((ran, seen), (Ok(1), vec![3]));
    }
}
