//! What stops a diff: a tape that cannot be read, named by its side and path.

use std::fmt;

use serde::Serialize;

use crate::tape::TapeError;

/// Which of the two compared tapes: `A` is the reference, `B` the candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Side {
    /// The first tape given (the reference).
    A,
    /// The second tape given (the candidate).
    B,
}

impl fmt::Display for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Side::A => "A",
            Side::B => "B",
        })
    }
}

/// Why two tapes could not be compared. Every variant is fatal to the diff (the CLI exits 2):
/// the oracle reports only on tapes it could read to their footer, or to where a truncated
/// tape is cut (a killed run's prefix; the report notes the cut).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OracleError {
    /// The tape is missing, not a tape, truncated or corrupt.
    #[error("tape {side}{}: {source}", unless_named(path, source))]
    Tape {
        /// Which tape.
        side: Side,
        /// Its path, or `<memory>`.
        path: String,
        /// What the tape reader found.
        #[source]
        source: TapeError,
    },
    /// The tape's bytes changed between two of the oracle's passes over it (it was being
    /// rewritten while it was compared).
    #[error("tape {side} ({path}) changed while it was being compared")]
    Changed {
        /// Which tape.
        side: Side,
        /// Its path, or `<memory>`.
        path: String,
    },
}

impl OracleError {
    /// Returns which tape the error is about.
    pub fn side(&self) -> Side {
        match self {
            OracleError::Tape { side, .. } | OracleError::Changed { side, .. } => *side,
        }
    }
}

/// Returns ` (PATH)` unless the reader's message already opens with the path, so a path is
/// printed once.
fn unless_named(path: &str, source: &TapeError) -> String {
    if source.to_string().starts_with(path) {
        String::new()
    } else {
        format!(" ({path})")
    }
}
