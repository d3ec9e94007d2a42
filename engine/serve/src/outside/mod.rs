//! The outside world's side of the core's seams: what reaches a real provider, a real
//! program or a real file on behalf of a run. The core defines the seams (the model's
//! [`ModelBackend`](simtape::cap::llm::ModelBackend), the process actor's
//! [`ProcessRunner`](simtape::cap::process::ProcessRunner) and
//! [`ProcessRecorder`](simtape::cap::process::ProcessRecorder)) and holds only what stays
//! inside a simulation (fixture replay, process tape replay, WASI guests); this module holds
//! the rest, so the core has no HTTP client, spawns nothing and reads no clock.
//!
//! - `llm_record` — record mode: [`RecordConfig`], [`LlmRecorder`] (a blocking HTTPS client
//!   in the providers' wire formats, [`crate::wire`]), [`record`], [`scenario_recorder`].
//! - `spawn` — [`Spawner`]: a real program in its own process group, timed, capped, cleaned up.
//! - `contained_spawn` — [`ContainedSpawner`]: the same in simtape's sandbox (the default).
//! - `process_tape` — [`ProcessTapeWriter`]: record mode's process tape.
//! - `reach` — [`reachable`]: whether a provider answers a connection, before a recording.

mod contained_spawn;
mod llm_record;
mod process_tape;
mod reach;
mod spawn;

pub use contained_spawn::ContainedSpawner;
pub use llm_record::{
    record, scenario_recorder, LlmRecorder, RecordConfig, MAX_TOKENS_DEFAULT, RESPONSE_BYTES_MAX,
    TIMEOUT_MS_DEFAULT,
};
pub use process_tape::ProcessTapeWriter;
pub use reach::{reachable, ReachError, REACH_TIMEOUT_MS};
pub use spawn::Spawner;
