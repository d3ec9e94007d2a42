//! What a process invocation can fail with.

use serde::Serialize;

use super::tape::ProcessTapeError;

/// The modes a scenario file's `[process]` can give a program besides `hermetic`: the
/// scenario decoder accepts these, and the not-covered error suggests them.
pub const SCENARIO_MODES: [&str; 4] = ["replay", "record", "real", "wasi"];

/// Returns [`SCENARIO_MODES`] for a message: `` `replay`, `real` or `wasi` ``.
pub(crate) fn scenario_modes() -> String {
    let quoted: Vec<String> = SCENARIO_MODES.iter().map(|m| format!("`{m}`")).collect();
    match quoted.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// Why a process call failed. Each variant says whether the run can go on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ProcessError {
    /// The program has no mode and the actor is hermetic. Fatal for the call: give the
    /// program a mode, or run its WASI module (`--process-wasi`).
    #[error(
        "program {program:?} is not covered: hermetic mode runs nothing; give it a mode in [process] programs ({}), or run it as a WASI module with --process-wasi DIR",
        scenario_modes()
    )]
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
    /// The program is in wasi mode but the actor has no WASI directory. Fatal for the call:
    /// give the actor one ([`crate::cap::process::ProcessActor::wasi_dir`]).
    #[error("program {program:?} is in wasi mode but the actor has no WASI directory (ProcessActor::wasi_dir)")]
    NoWasiDir {
        /// The program.
        program: String,
    },
    /// A WASI program was sent to the actor directly; guests run in the calling task, through
    /// [`crate::cap::process::ProcessHandle::run`].
    #[error("program {program:?} is a WASI guest: run it through ProcessHandle::run")]
    WasiOutsideHandle {
        /// The program.
        program: String,
    },
    /// The engine was built without the `wasi` cargo feature, so wasi mode cannot run.
    #[error("program {program:?} is in wasi mode but simtape was built without the wasi feature")]
    WasiUnavailable {
        /// The program.
        program: String,
    },
    /// No module `<dir>/<program>.wasm` (or the program is not a plain file name).
    #[error("program {program:?} has no WASI module: expected {path}")]
    WasmModuleMissing {
        /// The program.
        program: String,
        /// The module file looked for.
        path: String,
    },
    /// The module does not compile or link.
    #[error("the WASI module of {program:?} is invalid: {detail}")]
    WasmInvalid {
        /// The program.
        program: String,
        /// wasmtime's message.
        detail: String,
    },
    /// The module imports something the sandbox does not provide (a non-standard `sock_open`,
    /// for instance: preview 1 itself cannot create sockets).
    #[error("the WASI module of {program:?} imports {module}::{name}, which the sandbox does not provide")]
    WasmImport {
        /// The program.
        program: String,
        /// The import's module.
        module: String,
        /// The import's name.
        name: String,
    },
    /// The guest trapped (an `unreachable`, a bad memory access, a stack overflow, …).
    #[error("WASI guest {program:?} trapped: {message}")]
    WasmTrap {
        /// The program.
        program: String,
        /// The trap.
        message: String,
    },
    /// The guest used up its fuel ([`crate::limits::Limits::wasm_fuel_max`]): an endless
    /// loop ends here, not in a hang.
    #[error("WASI guest {program:?}: fuel exhausted after {fuel}")]
    WasmFuelExhausted {
        /// The program.
        program: String,
        /// The fuel it burned.
        fuel: u64,
    },
    /// The guest grew its memory past [`crate::limits::Limits::wasm_memory_bytes_max`].
    #[error("WASI guest {program:?} asked for {desired_bytes} bytes of memory, over the limit of {max_bytes}")]
    WasmMemoryExceeded {
        /// The program.
        program: String,
        /// The size it asked for.
        desired_bytes: u64,
        /// The limit.
        max_bytes: u64,
    },
    /// The guest's filesystem changes could not be merged into the run's filesystem (another
    /// task removed a directory the guest wrote into, for instance).
    #[error("the filesystem changes of WASI guest {program:?} do not apply: {detail}")]
    WasmFsMerge {
        /// The program.
        program: String,
        /// The fs error.
        detail: String,
    },
    /// Writing the process tape failed; the call's result is not recorded.
    #[error(transparent)]
    Tape(#[from] ProcessTapeError),
    /// The program's mode runs it for real (`real`, `record`), and the actor has no
    /// [`crate::cap::process::ProcessRunner`]: the core starts no process itself. Fatal for
    /// the call: run the scenario through the `simtape` command (its gateway runs programs),
    /// or give the actor a runner ([`crate::cap::process::ProcessActor::with_runner`]).
    #[error("program {program:?} is in {mode} mode, which runs it for real, but the run has no process runner (the core starts no process; simtape-serve's `outside::Spawner` does)")]
    NoRunner {
        /// The program.
        program: String,
        /// `real` or `record`.
        mode: String,
    },
}
