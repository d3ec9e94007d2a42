//! Subprocesses: per program, run for real, record into a process tape, or replay from one.
//!
//! A pipeline asks [`ProcessHandle::run`] for a [`Command`]. The [`ProcessActor`] picks the
//! program's [`ProcessMode`]:
//!
//! - **real**: the program runs (through the actor's [`ProcessRunner`]) and nothing is
//!   written down;
//! - **record**: it runs and one [`TapeEntry`] is appended to the process tape (through its
//!   [`ProcessRecorder`]);
//! - **replay**: the first unused entry matching (program, args, cwd, stdin digest) answers;
//!   no process starts;
//! - none (the default, hermetic): [`ProcessError::NotCovered`].
//!
//! Every call takes the program's duration (observed, or recorded) as virtual latency, so a
//! replay moves the clock exactly as the recording did. The core runs no real program: real
//! and record mode go through the [`ProcessRunner`] and [`ProcessRecorder`] seam ([`runner`]),
//! which the gateway crate (`simtape-serve`, `outside`) implements. A real run blocks inside
//! the actor's `handle`: the simulation is paused meanwhile. The bounds it gets
//! ([`RunBounds`]): a timeout, then TERM and KILL after
//! [`crate::limits::PROCESS_TERM_GRACE_MS`], and at most
//! [`crate::limits::Limits::process_output_bytes_max`] bytes of each of stdout and stderr; the
//! dropped count is in [`Output::truncated`] and in the process tape.
//!
//! Each call is a `request`/`reply` pair on the simulation tape, with stdin, stdout and
//! stderr as `{size, sha256}`. See `docs/process.md` for the process tape format.
//!
//! - [`tape`] — the process tape file: [`ProcessTape`], [`TapeEntry`], its errors.
//! - [`runner`] — the seam to the outside: [`ProcessRunner`], [`ProcessRecorder`], [`RunBounds`].
//! - `replay` — matching calls to entries; divergence, exhaustion, unused entries.
//! - [`normalize`] — normalized views of output for comparing recordings.
//! - [`from_tape`] — a process tape from a run's tape, its outputs found by digest.
//! - `actor` — [`ProcessActor`], [`ProcessHandle`], the request and reply types.
//! - `wasi_mode` — wasi mode: the actor's WASI settings and the guest run in the calling task.
//! - `faults` — injected failing runs by call number or seeded rate
//!   ([`ProcessActor::with_faults`]).

mod actor;
mod error;
mod faults;
pub mod from_tape;
pub mod normalize;
mod replay;
pub mod runner;
pub mod tape;
mod wasi_mode;

pub use actor::{
    Command, Output, ProcessActor, ProcessHandle, ProcessMode, ProcessReply, ProcessRequest,
    Truncation,
};
pub(crate) use error::scenario_modes;
pub use error::{ProcessError, SCENARIO_MODES};
pub use from_tape::{process_tape_from_tape, TapeProcessTape};
pub use normalize::Normalizer;
pub use replay::UnusedEntry;
pub use runner::{ProcessRecorder, ProcessRunner, RunBounds};
pub use tape::{Captured, ExitStatus, ProcessTape, ProcessTapeError, TapeEntry};
