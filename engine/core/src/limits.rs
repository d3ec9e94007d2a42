//! Every bound of a run, in one place, with units last.
//!
//! A run that reaches a limit ends with [`crate::SimError::LimitExceeded`], naming the limit
//! and its value. Scenarios and the builder may lower or raise each one.

use serde::{Deserialize, Serialize};

/// The bounds that keep a run finite.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// Timer events (wakes and actor completions) a run may pop from the timer queue.
    pub events_max: u64,
    /// Virtual time a run may reach, in nanoseconds from the start instant.
    pub virtual_time_max_ns: u64,
    /// Bytes the tape may hold (header, records, embedded blobs and footer).
    pub tape_bytes_max: u64,
    /// Tasks that may be runnable at once.
    pub run_queue_len_max: usize,
    /// Tasks a run may spawn in all.
    pub tasks_max: u64,
    /// Bytes of one encoded record payload (request, reply, user event).
    pub payload_bytes_max: usize,
    /// Messages a bounded channel holds by default.
    pub channel_capacity: usize,
    /// Bytes of stdout, and separately of stderr, kept from one real subprocess; the rest is
    /// dropped and the drop is recorded (see `crate::cap::process`).
    pub process_output_bytes_max: u64,
    /// Fuel (about one unit per wasm instruction) one WASI guest invocation may burn; past
    /// it the guest ends with a named error (see `crate::cap::wasi`).
    pub wasm_fuel_max: u64,
    /// Bytes of linear memory one WASI guest may grow to.
    pub wasm_memory_bytes_max: u64,
    /// Messages an inbox (input from outside an open run, not yet received) or an outbox
    /// (output not yet taken by the run's driver) may hold; see [`crate::inbox`].
    pub mailbox_len_max: usize,
}

/// How long a subprocess group has between TERM and KILL, in milliseconds.
pub const PROCESS_TERM_GRACE_MS: u64 = 2_000;

/// One year of virtual time, in nanoseconds: the default horizon for a run.
const VIRTUAL_TIME_DEFAULT_MAX_NS: u64 = 24 * 3600 * 1_000_000_000 * 365;

/// Ten billion units of fuel: a few seconds of host compute, far more than a tool needs.
const WASM_FUEL_DEFAULT_MAX: u64 = 10_000_000_000;

impl Default for Limits {
    fn default() -> Self {
        Limits {
            events_max: 100_000_000,
            virtual_time_max_ns: VIRTUAL_TIME_DEFAULT_MAX_NS,
            tape_bytes_max: 4 << 30,
            run_queue_len_max: 1 << 20,
            tasks_max: 10_000_000,
            payload_bytes_max: 64 << 20,
            channel_capacity: 1024,
            process_output_bytes_max: 16 << 20,
            wasm_fuel_max: WASM_FUEL_DEFAULT_MAX,
            wasm_memory_bytes_max: 256 << 20,
            mailbox_len_max: 4096,
        }
    }
}

/// A kind of file simtape reads whole, each with the most bytes it reads of one: past its
/// cap a file is refused with its path, the cap and [`INPUT_BYTES_MAX_SETTING`] (read by the
/// command line, never by this crate, and handed over with [`raise_input_bytes_max`]).
/// Tapes are not here: they are streamed a record at a time (`crate::tape`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputFile {
    /// A scenario (TOML).
    Scenario,
    /// An LLM fixture (ours or Harn's JSONL).
    LlmFixture,
    /// A process tape.
    ProcessTape,
    /// A WASI module (`.wasm`).
    WasmModule,
    /// An MCP cassette.
    McpCassette,
    /// An MCP world spec.
    WorldSpec,
    /// An MCP world's final state (`mcp eval --state`).
    WorldState,
    /// A sweep report (`report merge`).
    SweepReport,
    /// The journal an MCP session leaves (`mcp record|world --recover`).
    McpJournal,
    /// A decisions file (`run --decisions`).
    Decisions,
    /// One entry of a sweep's failure database, or a decisions file it names
    /// (docs/failures.md).
    FailureEntry,
}

impl InputFile {
    /// Every kind, in the order of the table in docs/cli.md.
    pub const ALL: [InputFile; 11] = [
        InputFile::Scenario,
        InputFile::LlmFixture,
        InputFile::ProcessTape,
        InputFile::WasmModule,
        InputFile::McpCassette,
        InputFile::WorldSpec,
        InputFile::WorldState,
        InputFile::SweepReport,
        InputFile::McpJournal,
        InputFile::Decisions,
        InputFile::FailureEntry,
    ];

    /// Returns what a file of this kind is called in messages.
    pub fn name(self) -> &'static str {
        match self {
            InputFile::Scenario => "scenario file",
            InputFile::LlmFixture => "LLM fixture",
            InputFile::ProcessTape => "process tape",
            InputFile::WasmModule => "WASI module",
            InputFile::McpCassette => "MCP cassette",
            InputFile::WorldSpec => "world spec",
            InputFile::WorldState => "world state",
            InputFile::SweepReport => "sweep report",
            InputFile::McpJournal => "MCP journal",
            InputFile::Decisions => "decisions file",
            InputFile::FailureEntry => "failure database entry",
        }
    }

    /// Returns the default cap on one file of this kind, in bytes.
    pub(crate) const fn default_bytes_max(self) -> u64 {
        match self {
            // Hand-written text: far above any real one, far below a mistake.
            InputFile::Scenario => 4 << 20,
            InputFile::WorldSpec => 16 << 20,
            // Recorded conversations, outputs and modules: big, but held in memory whole.
            InputFile::LlmFixture
            | InputFile::ProcessTape
            | InputFile::WasmModule
            | InputFile::McpCassette
            | InputFile::McpJournal => 256 << 20,
            InputFile::WorldState => 64 << 20,
            // One short line per draw a run makes.
            InputFile::Decisions => 64 << 20,
            // A report of `SWEEP_RUNS_MAX` runs at a few hundred bytes each.
            InputFile::SweepReport => 4 << 30,
            // An entry is a few KiB; a seed's decisions file about 70 bytes a decision.
            InputFile::FailureEntry => 16 << 20,
        }
    }

    /// Returns the cap on one file of this kind, in bytes: the default, or the raised value
    /// when that is larger.
    pub fn bytes_max(self) -> u64 {
        self.default_bytes_max()
            .max(INPUT_BYTES_MAX_RAISED.load(std::sync::atomic::Ordering::Relaxed))
    }
}

/// The environment variable that raises every [`InputFile`] cap to at least its value, in
/// bytes. The command line reads it; the engine never does.
pub const INPUT_BYTES_MAX_SETTING: &str = "SIMTAPE_INPUT_BYTES_MAX";

/// The value of [`INPUT_BYTES_MAX_SETTING`], once the command line has read it (0: unset).
/// Process-wide because the files are read deep inside loaders; it can only refuse or admit a
/// file, never change what a run does with one.
static INPUT_BYTES_MAX_RAISED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Raises every input file cap to at least `bytes` for the rest of the process.
pub fn raise_input_bytes_max(bytes: u64) {
    INPUT_BYTES_MAX_RAISED.store(bytes, std::sync::atomic::Ordering::Relaxed);
}

// Relationships between limits, checked when the crate compiles.
const _: () = assert!(crate::tape::BLOB_THRESHOLD_DEFAULT_BYTES < 64 << 20);
const _: () = assert!(crate::tape::BUFFER_BYTES < (4u64 << 30) as usize);

/// Which limit a run reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LimitName {
    /// See [`Limits::events_max`].
    EventsMax,
    /// See [`Limits::virtual_time_max_ns`].
    VirtualTimeMaxNs,
    /// See [`Limits::tape_bytes_max`].
    TapeBytesMax,
    /// See [`Limits::run_queue_len_max`].
    RunQueueLenMax,
    /// See [`Limits::tasks_max`].
    TasksMax,
    /// See [`Limits::payload_bytes_max`].
    PayloadBytesMax,
    /// See [`Limits::mailbox_len_max`].
    MailboxLenMax,
}

impl LimitName {
    /// Returns the limit's name as written in scenarios.
    pub fn as_str(self) -> &'static str {
        match self {
            LimitName::EventsMax => "events_max",
            LimitName::VirtualTimeMaxNs => "virtual_time_max_ns",
            LimitName::TapeBytesMax => "tape_bytes_max",
            LimitName::RunQueueLenMax => "run_queue_len_max",
            LimitName::TasksMax => "tasks_max",
            LimitName::PayloadBytesMax => "payload_bytes_max",
            LimitName::MailboxLenMax => "mailbox_len_max",
        }
    }
}

impl std::fmt::Display for LimitName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wasm_limits_have_defaults_and_decode_by_name() {
        // Goal: the WASI guest bounds default to 10^10 fuel and 256 MiB, and a scenario's
        // `[limits]` can set each by its name.
        let limits = Limits::default();
        assert_eq!(limits.wasm_fuel_max, 10_000_000_000);
        assert_eq!(limits.wasm_memory_bytes_max, 256 << 20);
        let set: Limits = toml::from_str("wasm_fuel_max = 5\nwasm_memory_bytes_max = 65536\n")
            .expect("both limits are known");
        assert_eq!((set.wasm_fuel_max, set.wasm_memory_bytes_max), (5, 65_536));
    }
}
