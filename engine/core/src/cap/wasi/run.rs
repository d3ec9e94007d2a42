//! One invocation: a fresh store with the guest's state, instantiated from the cached
//! pre-linked module, `_start` called asynchronously, and the way it ended turned into an
//! [`Output`] or a named [`ProcessError`].

use wasmtime::{InstancePre, ResourceLimiter, Store, Trap};

use super::clock::FuelCharge;
use super::vfs::Vfs;
use super::{GuestRun, NsPerFuel, WasmBounds};
use crate::cap::fs::Overlay;
use crate::cap::process::{Command, ExitStatus, Output, ProcessError, Truncation};
use crate::rng::RngStream;

/// Fuel between two yields of a running guest to the simulation's executor: a guest that
/// computes for long still lets other ready tasks run, at points that depend on fuel only.
const FUEL_YIELD_INTERVAL: u64 = 50_000_000;

/// Table elements a guest may grow a table to.
const TABLE_ELEMENTS_MAX: usize = 1 << 20;

/// The store data of one invocation: everything the host functions see.
#[derive(Debug)]
pub(super) struct Guest {
    /// `argv`: the program name, then the arguments.
    pub(super) args: Vec<String>,
    /// `NAME=value` strings, sorted by name.
    pub(super) env: Vec<String>,
    pub(super) vfs: Vfs,
    /// The invocation's own stream, forked from the process actor's.
    pub(super) rng: RngStream,
    pub(super) fuel: FuelCharge,
    limiter: MemoryLimiter,
}

/// `proc_exit(code)`, carried out of the guest as an error.
#[derive(Debug, thiserror::Error)]
#[error("the guest called proc_exit({0})")]
pub(super) struct GuestExit(pub(super) i32);

/// A memory grown past [`WasmBounds::memory_bytes_max`].
#[derive(Debug, thiserror::Error)]
#[error("the guest asked for {desired_bytes} bytes of memory, over the limit of {max_bytes}")]
struct MemoryExceeded {
    desired_bytes: u64,
    max_bytes: u64,
}

#[derive(Debug)]
struct MemoryLimiter {
    max_bytes: u64,
}

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        // An error (not a refused grow) ends the guest with a named error, rather than
        // leaving it to handle an allocation failure in its own way.
        if desired as u64 > self.max_bytes {
            return Err(wasmtime::Error::new(MemoryExceeded {
                desired_bytes: desired as u64,
                max_bytes: self.max_bytes,
            }));
        }
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= TABLE_ELEMENTS_MAX)
    }
}

/// Runs `command` from `pre`; the guest sees `overlay` as its root.
pub(super) async fn run(
    pre: InstancePre<Guest>,
    command: &Command,
    overlay: Overlay,
    bounds: WasmBounds,
    ns_per_fuel: Option<NsPerFuel>,
    rng: RngStream,
) -> GuestRun {
    let started_ns = crate::time::now_ns();
    let start_unix_ns = crate::time::wall_clock_unix_ns().saturating_sub(started_ns as i64);
    let guest = Guest {
        args: std::iter::once(command.program.clone())
            .chain(command.args.iter().cloned())
            .collect(),
        env: command
            .env
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect(),
        vfs: Vfs::new(
            overlay,
            command.stdin.clone(),
            bounds.output_bytes_max,
            u64::try_from(start_unix_ns).unwrap_or(0),
        ),
        rng,
        fuel: FuelCharge::new(bounds.fuel_max, ns_per_fuel),
        limiter: MemoryLimiter {
            max_bytes: bounds.memory_bytes_max,
        },
    };
    let mut store = Store::new(pre.module().engine(), guest);
    store.limiter(|guest| &mut guest.limiter);
    store
        .set_fuel(bounds.fuel_max)
        .expect("the sandbox's engine consumes fuel");
    store
        .fuel_async_yield_interval(Some(FUEL_YIELD_INTERVAL))
        .expect("the sandbox's engine consumes fuel");
    let ended = start(&pre, &mut store).await;
    let remaining = store.get_fuel().unwrap_or(0);
    // Fuel burned after the last clock read still costs time, so the duration includes it.
    let due_ns = store.data_mut().fuel.due_ns(remaining);
    if due_ns > 0 {
        crate::time::sleep_until(crate::time::now_ns().saturating_add(due_ns)).await;
    }
    let fuel_consumed = bounds.fuel_max - remaining;
    let guest = store.data_mut();
    let changes = guest.vfs.finish();
    let result = status_of(ended, &command.program, fuel_consumed).map(|status| Output {
        status,
        stdout: std::mem::take(&mut guest.vfs.stdout.bytes),
        stderr: std::mem::take(&mut guest.vfs.stderr.bytes),
        duration_ns: crate::time::now_ns() - started_ns,
        truncated: Truncation {
            stdout_dropped_bytes: guest.vfs.stdout.dropped,
            stderr_dropped_bytes: guest.vfs.stderr.dropped,
        },
        timed_out: false,
        fuel_consumed: Some(fuel_consumed),
    });
    GuestRun { result, changes }
}

async fn start(pre: &InstancePre<Guest>, store: &mut Store<Guest>) -> wasmtime::Result<()> {
    let instance = pre.instantiate_async(&mut *store).await?;
    let entry = instance.get_typed_func::<(), ()>(&mut *store, "_start")?;
    entry.call_async(&mut *store, ()).await
}

/// Returns the exit status, or the named error of a guest that did not exit.
fn status_of(
    ended: wasmtime::Result<()>,
    program: &str,
    fuel_consumed: u64,
) -> Result<ExitStatus, ProcessError> {
    let error = match ended {
        Ok(()) => return Ok(ExitStatus::Code(0)),
        Err(error) => error,
    };
    if let Some(GuestExit(code)) = error.downcast_ref::<GuestExit>() {
        return Ok(ExitStatus::Code(*code));
    }
    let program = program.to_owned();
    if let Some(exceeded) = error.downcast_ref::<MemoryExceeded>() {
        return Err(ProcessError::WasmMemoryExceeded {
            program,
            desired_bytes: exceeded.desired_bytes,
            max_bytes: exceeded.max_bytes,
        });
    }
    match error.downcast_ref::<Trap>() {
        Some(Trap::OutOfFuel) => Err(ProcessError::WasmFuelExhausted {
            program,
            fuel: fuel_consumed,
        }),
        Some(trap) => Err(ProcessError::WasmTrap {
            program,
            message: trap.to_string(),
        }),
        None => Err(ProcessError::WasmTrap {
            program,
            message: error.to_string(),
        }),
    }
}
