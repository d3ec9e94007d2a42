//! What a process invocation can fail with.

use serde::Serialize;

use super::tape::ProcessTapeError;

/// Why a process call failed. Each variant says whether the run can go on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[serde(rename_all = "snake_case")]
pub enum ProcessError {
    /// The program has no mode and the actor is hermetic. Fatal for the call: give the
    /// program a mode (real, record or replay).
    #[error("program {program:?} is not covered: hermetic mode runs nothing; give it a mode (real, record or replay)")]
    NotCovered {
        /// The program.
        program: String,
    },
    /// The program's mode needs a process tape (record or replay) and the actor has none.
    #[error("program {program:?} is in {mode} mode but the actor has no process tape for it")]
    NoTape {
        /// The program.
        program: String,
        /// `record` or `replay`.
        mode: String,
    },
    /// The real program could not be started (not found, not executable, bad cwd).
    #[error("cannot start {program:?}: {detail}")]
    Spawn {
        /// The program.
        program: String,
        /// The OS error.
        detail: String,
    },
    /// Capturing or waiting for the real program failed.
    #[error("running {program:?} failed: {detail}")]
    Io {
        /// The program.
        program: String,
        /// The OS error.
        detail: String,
    },
    /// Replay: call `call` matches no unused entry; `field` is the first that differs from
    /// the next unused entry (at `line` of the tape).
    #[error("process tape diverged at call #{call} ({program}): {field} differs from the entry at line {line}: expected {expected}, found {found}")]
    Diverged {
        /// The 1-based number of the replayed call.
        call: u64,
        /// The program the pipeline asked for.
        program: String,
        /// The tape line of the entry compared against.
        line: u64,
        /// `program`, `args`, `cwd` or `stdin_sha256`.
        field: String,
        /// The entry's value, as JSON.
        expected: String,
        /// The call's value, as JSON.
        found: String,
    },
    /// Replay: every entry is used and another call came.
    #[error("process tape exhausted at call #{call}: {program} {args:?}")]
    Exhausted {
        /// The 1-based number of the replayed call.
        call: u64,
        /// The program.
        program: String,
        /// Its arguments.
        args: Vec<String>,
    },
    /// Replay ended with entries nobody asked for (strict mode only).
    #[error(
        "process tape has {count} unused entries, the first at line {first_line} ({first_program})"
    )]
    UnusedEntries {
        /// How many are unused.
        count: u64,
        /// The line of the first unused one.
        first_line: u64,
        /// Its program.
        first_program: String,
    },
    /// Writing the process tape failed; the call's result is not recorded.
    #[error(transparent)]
    Tape(#[from] ProcessTapeError),
}
