//! The process capability's seam to the outside world: what runs a program for real and what
//! writes a recorded run down.
//!
//! The core replays programs from a process tape and runs WASI guests in the simulation; it
//! starts no process, reads no wall clock and writes no process tape itself. A program in
//! `real` or `record` mode goes to the actor's [`ProcessRunner`], and a recorded run to its
//! [`ProcessRecorder`]; the gateway crate (`simtape-serve`, module `outside`) implements both
//! and the `simtape` command gives them to every scenario it loads. Without a runner such a
//! program fails with [`ProcessError::NoRunner`].

use super::actor::{Command, Output};
use super::tape::{ProcessTapeError, TapeEntry};
use super::ProcessError;

/// How a real run is bounded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunBounds {
    /// Wall-clock time the program may run before its group gets TERM.
    pub timeout_ms: u64,
    /// Time between TERM and KILL.
    pub grace_ms: u64,
    /// Bytes kept of each of stdout and stderr.
    pub output_bytes_max: u64,
}

/// Runs programs for real. It blocks inside the actor's `handle`: the simulation is paused
/// while the program runs (no virtual time passes, no other task runs), and the observed
/// duration becomes the call's virtual latency.
pub trait ProcessRunner: std::fmt::Debug + Send + Sync {
    /// Runs `command` within `bounds` and waits for it (and everything it started) to end.
    fn run(&self, command: &Command, bounds: &RunBounds) -> Result<Output, ProcessError>;
}

/// Writes the runs of programs in `record` mode down, one process tape entry each. Clones of
/// one actor (one per run a `Builder` builds) share it, so every run appends to one tape.
pub trait ProcessRecorder: std::fmt::Debug + Send + Sync {
    /// Appends one entry.
    fn append(&self, entry: &TapeEntry) -> Result<(), ProcessTapeError>;
}
