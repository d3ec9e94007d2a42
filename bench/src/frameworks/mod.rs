//! The frameworks under comparison, each running every workload in its own idiom.
//!
//! Each module turns a [`Shape`] into that framework's natural program (tasks and sleeps for
//! simtape and tokio, self-scheduling models for nexosim) and reports an [`Outcome`] that the
//! runner checks against [`Shape::expected`].

pub mod nexosim;
pub mod simtape;
pub mod tokio;

use std::fmt;
use std::path::Path;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::workloads::{Shape, MILLISECOND_NS};

/// One framework (and, for simtape, one tape mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Framework {
    /// simtape without a tape (the run still folds every record into its fingerprint).
    Simtape,
    /// simtape streaming its tape to a file.
    SimtapeTape,
    /// tokio's current-thread runtime with a paused clock.
    Tokio,
    /// nexosim 1.0 on one thread.
    Nexosim,
}

impl Framework {
    /// Every framework, in report order.
    pub const ALL: [Framework; 4] = [
        Framework::Simtape,
        Framework::SimtapeTape,
        Framework::Tokio,
        Framework::Nexosim,
    ];

    /// Returns the framework's name without the tape mode.
    pub fn name(self) -> &'static str {
        match self {
            Framework::Simtape | Framework::SimtapeTape => "simtape",
            Framework::Tokio => "tokio",
            Framework::Nexosim => "nexosim",
        }
    }

    /// Returns true when the case writes a tape.
    pub fn tape(self) -> bool {
        self == Framework::SimtapeTape
    }

    /// Returns the rounding of the framework's timers: tokio's wheel rounds every deadline
    /// up to the next millisecond; the others fire at the exact nanosecond.
    pub fn resolution_ns(self) -> u64 {
        match self {
            Framework::Tokio => MILLISECOND_NS,
            _ => 1,
        }
    }

    /// Runs one workload once. `tape_path` is where a taped case writes its tape; the caller
    /// removes it.
    ///
    /// # Panics
    /// When the framework reports an error: every workload is a valid program, so an error
    /// is a bug in the benchmark or the framework.
    pub fn run(self, shape: Shape, tape_path: &Path) -> Outcome {
        match self {
            Framework::Simtape => simtape::run(shape, None),
            Framework::SimtapeTape => simtape::run(shape, Some(tape_path)),
            Framework::Tokio => tokio::run(shape),
            Framework::Nexosim => nexosim::run(shape),
        }
    }
}

impl fmt::Display for Framework {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Framework::SimtapeTape => f.write_str("simtape+tape"),
            other => f.write_str(other.name()),
        }
    }
}

impl FromStr for Framework {
    type Err = String;

    fn from_str(text: &str) -> Result<Framework, String> {
        Framework::ALL
            .into_iter()
            .find(|f| f.to_string().eq_ignore_ascii_case(text.trim()))
            .ok_or_else(|| {
                format!(
                    "unknown framework {text:?}; expected simtape, simtape+tape, tokio or nexosim"
                )
            })
    }
}

/// The size of a written tape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TapeStats {
    /// Bytes of the tape file (header, records, checkpoints and footer).
    pub bytes: u64,
    /// Records on the tape, checkpoints included, footer excluded.
    pub records: u64,
}

impl TapeStats {
    /// Returns the average bytes per record.
    pub fn bytes_per_record(&self) -> f64 {
        self.bytes as f64 / self.records.max(1) as f64
    }
}

/// What one run of one workload produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    /// Timer events that fired (completed sleeps, or scheduled events for nexosim).
    pub events: u64,
    /// Virtual time at the end of the run, in nanoseconds from its start.
    pub end_ns: u64,
    /// simtape's run fingerprint (a hash of every record); `None` for other frameworks.
    pub fingerprint: Option<u64>,
    /// The tape's size, for a taped run.
    pub tape: Option<TapeStats>,
}
