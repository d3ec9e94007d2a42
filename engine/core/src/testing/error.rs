//! What can go wrong around a seed sweep: a seed variable that does not parse, the first seed
//! that failed, and a failing seed's tape that could not be kept.

use std::fmt;
use std::path::PathBuf;

use super::{SEEDS_ENV, SEED_ENV};

/// A seed variable (`SIMTAPE_SEED`, `SIMTAPE_SEEDS`) that does not parse. Fatal to the sweep:
/// `check_seeds` and `run_test` panic with it before the first seed runs, since running the
/// test's own seeds instead would pass silently where the caller asked for others.
///
/// ```
/// use simtape::testing::{SeedOverride, SeedOverrideError};
/// let error = SeedOverride::parse(Some("seven"), None).unwrap_err();
/// assert_eq!(error, SeedOverrideError::Seed { value: "seven".into() });
/// assert_eq!(error.variable(), "SIMTAPE_SEED");
/// assert_eq!(error.to_string(), "SIMTAPE_SEED=\"seven\" is not a seed (a u64)");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}={:?} is not {}", self.variable(), self.value(), self.expected())]
#[non_exhaustive]
pub enum SeedOverrideError {
    /// `SIMTAPE_SEED` is not a `u64`.
    Seed {
        /// The variable's text (lossy if it was not UTF-8).
        value: String,
    },
    /// `SIMTAPE_SEEDS` is not `A..B`, two `u64`s with `A < B`.
    Range {
        /// The variable's text (lossy if it was not UTF-8).
        value: String,
    },
}

impl SeedOverrideError {
    /// Returns the environment variable at fault.
    pub fn variable(&self) -> &'static str {
        match self {
            SeedOverrideError::Seed { .. } => SEED_ENV,
            SeedOverrideError::Range { .. } => SEEDS_ENV,
        }
    }

    /// Returns the variable's text as it was set.
    pub fn value(&self) -> &str {
        match self {
            SeedOverrideError::Seed { value } | SeedOverrideError::Range { value } => value,
        }
    }

    /// Returns the form the variable takes.
    pub fn expected(&self) -> &'static str {
        match self {
            SeedOverrideError::Seed { .. } => "a seed (a u64)",
            SeedOverrideError::Range { .. } => "a seed range (A..B with A < B, B excluded)",
        }
    }
}

/// The first seed of a sweep that failed: the seed, what failed, where it panicked, the
/// command that replays it, and the tape it left. Fatal to the sweep: no later seed runs.
/// `check_seeds` and `run_test` panic with its `Display`, the report a reader acts on.
#[derive(Debug, thiserror::Error)]
pub struct SeedFailure {
    /// The seed that failed.
    pub seed: u64,
    /// The test's name as `cargo test NAME -- --exact` knows it (`TEST_NAME` when the sweep
    /// ran outside a named test thread).
    pub test: String,
    /// What failed: the check's or the body's error, the panic message, or the run's error
    /// (a deadlock, a limit).
    pub message: String,
    /// Where it panicked, first place first (at most three); empty when it did not panic.
    pub panicked_at: Vec<String>,
    /// The failing run's tape, written where the test keeps tapes, or why it is not there;
    /// `None` for a `check_seeds` sweep, whose runs the check builds itself.
    pub tape: Option<Result<PathBuf, TapeKeepError>>,
}

impl fmt::Display for SeedFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let seed = self.seed;
        write!(f, "seed {seed} failed: {}", self.message)?;
        if !self.panicked_at.is_empty() {
            write!(f, "\n  panicked at: {}", self.panicked_at.join(", then "))?;
        }
        let test = &self.test;
        write!(
            f,
            "\n  replay it alone: {SEED_ENV}={seed} cargo test {test} -- --exact"
        )?;
        match &self.tape {
            Some(Ok(path)) => write!(f, "\n  tape: {}", path.display()),
            Some(Err(why)) => write!(f, "\n  no tape: {why}"),
            None => Ok(()),
        }
    }
}

/// Why a failing seed's tape is not on disk. Not fatal: the failure is reported without it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TapeKeepError {
    /// The run ended without a finished tape (its writer had failed).
    #[error("the run's tape could not be finished")]
    Unfinished,
    /// The tape's directory or file could not be written.
    #[error("could not write {}: {source}", path.display())]
    Write {
        /// Where the tape was to go.
        path: PathBuf,
        /// What the file system said.
        source: std::io::Error,
    },
}
