//! The WASI sandbox: a program runs as `<dir>/<program>.wasm` (wasm32-wasip1) under wasmtime,
//! inside the simulation.
//!
//! It is the fourth process mode ([`crate::cap::process::ProcessMode::Wasi`]). The guest sees
//! the simulation and nothing of the host: its clocks read virtual time, `poll_oneoff` waits
//! on simulation timers (a guest sleeping 24 h returns in milliseconds, and other tasks run
//! meanwhile), `random_get` draws from the process actor's seeded stream, its root directory
//! is a clone of the run's overlay whose changes merge back into the fs actor when it exits,
//! and inode numbers, file times and directory order are virtual. Preview 1 cannot create a
//! socket, so there is no network. Fuel bounds compute (and may cost virtual time, see
//! [`NsPerFuel`]); memory and output are capped by [`crate::limits::Limits`].
//!
//! The preview-1 host is our own, not wasmtime-wasi: every function a guest imports is here,
//! so nothing host-side decides what the guest sees (`docs/wasi.md` says why and lists each
//! function).
//!
//! - `abi` — errno values, record layouts, bounds-checked guest memory access.
//! - `vfs` — descriptors, streams and the filesystem view over the overlay; the change log.
//! - `clock` — `clock_time_get`, `clock_res_get`, deadlines, fuel turned into time.
//! - `poll` — `poll_oneoff`.
//! - `linker` — every host function, linked once per engine.
//! - `engine` — the engine and the module cache, shared across actor clones.
//! - `run` — one invocation, from a fresh store to an [`crate::cap::process::Output`].
//!
//! Everything but this file needs the `wasi` cargo feature; without it the mode exists and
//! each call fails with [`crate::cap::process::ProcessError::WasiUnavailable`].

#[cfg(feature = "wasi")]
mod abi;
#[cfg(feature = "wasi")]
mod clock;
#[cfg(feature = "wasi")]
mod engine;
#[cfg(feature = "wasi")]
mod linker;
#[cfg(feature = "wasi")]
mod poll;
#[cfg(feature = "wasi")]
mod run;
#[cfg(feature = "wasi")]
mod vfs;

use std::path::{Path, PathBuf};
#[cfg(feature = "wasi")]
use std::sync::Arc;

use crate::cap::fs::{FsRequest, Overlay};
use crate::cap::process::{Command, Output, ProcessError};
use crate::rng::RngStream;

/// Virtual time charged for fuel: `ns` nanoseconds per `fuel` units, an integer ratio.
///
/// ```
/// use simtape::cap::wasi::NsPerFuel;
/// let ratio = NsPerFuel { ns: 1, fuel: 4 };
/// assert_eq!(ratio.ns_for(1_000), 250);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NsPerFuel {
    /// Nanoseconds of virtual time…
    pub ns: u64,
    /// …per this much fuel (not zero).
    pub fuel: u64,
}

impl NsPerFuel {
    /// Returns the virtual nanoseconds `fuel` units cost, rounded down.
    pub fn ns_for(self, fuel: u64) -> u64 {
        let ns = u128::from(fuel) * u128::from(self.ns) / u128::from(self.fuel.max(1));
        u64::try_from(ns).unwrap_or(u64::MAX)
    }
}

/// The bounds of one guest run (from [`crate::limits::Limits`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct WasmBounds {
    pub(crate) fuel_max: u64,
    pub(crate) memory_bytes_max: u64,
    pub(crate) output_bytes_max: u64,
}

impl WasmBounds {
    pub(crate) fn from_limits(limits: &crate::limits::Limits) -> WasmBounds {
        WasmBounds {
            fuel_max: limits.wasm_fuel_max,
            memory_bytes_max: limits.wasm_memory_bytes_max,
            output_bytes_max: limits.process_output_bytes_max,
        }
    }
}

/// Where the modules are, the fuel-to-time ratio, and (with the feature) the shared engine
/// and module cache.
#[derive(Debug, Clone)]
pub(crate) struct WasiSetup {
    dir: PathBuf,
    pub(crate) ns_per_fuel: Option<NsPerFuel>,
    #[cfg(feature = "wasi")]
    runtime: Arc<engine::Runtime>,
}

impl WasiSetup {
    pub(crate) fn new(dir: &Path) -> WasiSetup {
        WasiSetup {
            dir: dir.to_path_buf(),
            ns_per_fuel: None,
            #[cfg(feature = "wasi")]
            runtime: Arc::new(engine::Runtime::new()),
        }
    }

    /// Returns the module file of `program`, or why it has none. Only a plain file name
    /// can name a module, so a program cannot reach outside the directory.
    #[cfg_attr(not(feature = "wasi"), allow(dead_code))]
    fn module_path(&self, program: &str) -> Result<PathBuf, ProcessError> {
        let plain = !program.is_empty()
            && !program.contains(['/', '\\'])
            && program != "."
            && program != "..";
        let path = self.dir.join(format!("{program}.wasm"));
        if plain && path.is_file() {
            return Ok(path);
        }
        Err(ProcessError::WasmModuleMissing {
            program: program.to_owned(),
            path: path.to_string_lossy().into_owned(),
        })
    }
}

/// How a guest run ended and what it changed.
#[derive(Debug)]
pub(crate) struct GuestRun {
    /// Its output, or why it failed.
    pub(crate) result: Result<Output, ProcessError>,
    /// The guest's filesystem changes, in order (also after a failure: a crashed program
    /// leaves what it wrote).
    pub(crate) changes: Vec<FsRequest>,
}

/// Runs `command` as a guest; it sees `overlay` as `/`.
#[cfg(feature = "wasi")]
pub(crate) async fn run_guest(
    setup: WasiSetup,
    command: &Command,
    overlay: Overlay,
    bounds: WasmBounds,
    rng: RngStream,
) -> GuestRun {
    let prepared =
        setup.module_path(&command.program).and_then(|path| {
            let bytes = crate::input::read_input(&path, crate::limits::InputFile::WasmModule)
                .map_err(|e| ProcessError::WasmModuleMissing {
                    program: command.program.clone(),
                    path: e.to_string(),
                })?;
            setup.runtime.prepare(&command.program, &bytes)
        });
    match prepared {
        Ok(pre) => run::run(pre, command, overlay, bounds, setup.ns_per_fuel, rng).await,
        Err(error) => GuestRun {
            result: Err(error),
            changes: Vec::new(),
        },
    }
}

/// Without the `wasi` feature every guest run fails with a named error.
#[cfg(not(feature = "wasi"))]
pub(crate) async fn run_guest(
    setup: WasiSetup,
    command: &Command,
    _overlay: Overlay,
    _bounds: WasmBounds,
    _rng: RngStream,
) -> GuestRun {
    let _ = setup;
    GuestRun {
        result: Err(ProcessError::WasiUnavailable {
            program: command.program.clone(),
        }),
        changes: Vec::new(),
    }
}

/// Why a WASI module a scenario names cannot be used (`simtape check` reports it).
#[derive(Debug, thiserror::Error)]
pub(crate) enum ModuleError {
    /// The file does not read whole, or is over its cap.
    #[error(transparent)]
    Read(#[from] crate::input::InputProblem),
    /// The file does not start with the WebAssembly magic.
    #[error("not a WebAssembly module (no \\0asm magic)")]
    NoMagic,
    /// The sandbox's engine does not accept it.
    #[cfg_attr(not(feature = "wasi"), allow(dead_code))]
    #[error("{detail}")]
    Invalid { detail: String },
}

/// Checks the WASI module at `path` before any run: within its size cap, and WebAssembly the
/// sandbox accepts (with the `wasi` feature; without it, only the `\0asm` magic is checked).
pub(crate) fn check_module(path: &std::path::Path) -> Result<(), ModuleError> {
    let bytes = crate::input::read_input(path, crate::limits::InputFile::WasmModule)
        .map_err(|error| error.problem)?;
    if !bytes.starts_with(b"\0asm") {
        return Err(ModuleError::NoMagic);
    }
    #[cfg(feature = "wasi")]
    engine::validate(&bytes)?;
    Ok(())
}
