//! Wasi mode: the actor's WASI settings, and the guest run in the calling task.
//!
//! An actor's `handle` answers synchronously, but a guest waits on simulation timers, so it
//! cannot run there. [`ProcessHandle::run`] first asks the actor (without a record) whether
//! the program is in wasi mode; if so it takes the actor's WASI settings and a stream forked
//! from the actor's, writes the `request` record, drives the guest itself, merges the guest's
//! filesystem changes into the fs actor (an `apply` request of its own), and writes the
//! `reply` record. The tape shows the call where it happened, like any other call.

use std::path::Path;

use super::actor::{
    Output, ProcessActor, ProcessHandle, ProcessMode, ProcessReply, ProcessRequest,
};
use super::{Command, ProcessError};
use crate::cap::fs::{FsHandle, Overlay};
use crate::cap::wasi::{self, NsPerFuel, WasiSetup, WasmBounds};
use crate::rng::RngStream;
use crate::tape::RecordKind;

/// What a run in wasi mode gets from the actor.
#[derive(Debug)]
enum WasiPlan {
    /// Run the guest: the settings, the bounds, and a stream forked from the actor's (boxed:
    /// a ChaCha state is large).
    Guest(WasiSetup, WasmBounds, Box<RngStream>),
    /// A fault rule fired: this output, and no guest runs.
    Injected(Output),
}

impl ProcessActor {
    /// Returns an actor that runs every program as `<dir>/<program>.wasm` in the WASI sandbox.
    ///
    /// ```
    /// use simtape::cap::process::{Command, ProcessActor, ProcessError};
    /// let mut builder = simtape::Sim::builder();
    /// builder.process(ProcessActor::wasi("no-such-dir"));
    /// let report = builder.build().unwrap().run(|host| async move {
    ///     host.process().run(Command::new("tool")).await
    /// }).unwrap();
    /// // Without the `wasi` feature the error is `WasiUnavailable`.
    /// assert!(matches!(
    ///     report.output,
    ///     Err(ProcessError::WasmModuleMissing { .. } | ProcessError::WasiUnavailable { .. })
    /// ));
    /// ```
    pub fn wasi(dir: impl AsRef<Path>) -> ProcessActor {
        ProcessActor::hermetic()
            .default_mode(ProcessMode::Wasi)
            .wasi_dir(dir)
    }

    /// Sets the directory of the WASI modules: a program in wasi mode runs
    /// `<dir>/<program>.wasm`. Clones of the actor share one engine and module cache.
    pub fn wasi_dir(mut self, dir: impl AsRef<Path>) -> ProcessActor {
        let ns_per_fuel = self.wasi.as_ref().and_then(|setup| setup.ns_per_fuel);
        let mut setup = WasiSetup::new(dir.as_ref());
        setup.ns_per_fuel = ns_per_fuel;
        self.wasi = Some(setup);
        self
    }

    /// Makes a guest's compute cost virtual time: `ratio.ns` per `ratio.fuel` units of fuel,
    /// charged when the guest reads a clock, polls, or exits.
    ///
    /// # Panics
    /// When the actor has no WASI directory yet, or `ratio.fuel` is zero.
    pub fn wasi_ns_per_fuel(mut self, ratio: NsPerFuel) -> ProcessActor {
        assert!(ratio.fuel > 0, "a fuel-to-time ratio needs fuel above zero");
        let setup = self
            .wasi
            .as_mut()
            .expect("set the WASI directory (ProcessActor::wasi_dir) before its fuel ratio");
        setup.ns_per_fuel = Some(ratio);
        self
    }

    /// Sets the WASI directory and makes wasi the mode of every program without one: the
    /// default when there is none, and, when the default is replay, every program the
    /// replay tape has no entry for (`simtape run --process-wasi DIR`).
    pub fn wasi_fallback(mut self, dir: impl AsRef<Path>) -> ProcessActor {
        if self.fallback == Some(ProcessMode::Replay) {
            for entry in self.unused_entries() {
                self.modes
                    .entry(entry.program)
                    .or_insert(Some(ProcessMode::Replay));
            }
        }
        if matches!(self.fallback, None | Some(ProcessMode::Replay)) {
            self.fallback = Some(ProcessMode::Wasi);
        }
        self.wasi_dir(dir)
    }

    /// Returns `None` for a program not in wasi mode; otherwise what its run gets. Fault
    /// rules count the run here, as `handle` counts a native one.
    fn wasi_plan(
        &mut self,
        command: &Command,
        rng: &mut RngStream,
    ) -> Option<Result<WasiPlan, ProcessError>> {
        if self.mode_of(&command.program).ok()? != ProcessMode::Wasi {
            return None;
        }
        if let Some(output) = self.injected(command, rng) {
            return Some(Ok(WasiPlan::Injected(output)));
        }
        let Some(setup) = &self.wasi else {
            return Some(Err(ProcessError::NoWasiDir {
                program: command.program.clone(),
            }));
        };
        let guest_rng = RngStream::fork(rng.next_u64(), "wasi");
        Some(Ok(WasiPlan::Guest(
            setup.clone(),
            self.wasm,
            Box::new(guest_rng),
        )))
    }
}

impl ProcessHandle {
    /// Runs `command` as a WASI guest when its program is in wasi mode; otherwise hands the
    /// command back for the actor.
    pub(super) async fn run_wasi(
        &self,
        command: Command,
    ) -> Result<Result<Output, ProcessError>, Command> {
        let Some(plan) = self
            .actor
            .with_state_and_rng(|actor, rng| actor.wasi_plan(&command, rng))
        else {
            return Err(command);
        };
        let request = ProcessRequest::Run(command);
        self.actor.record(RecordKind::Request, "run", &request);
        let ProcessRequest::Run(command) = request else {
            unreachable!("built as a run request above")
        };
        let result = match plan {
            Ok(WasiPlan::Guest(setup, bounds, rng)) => {
                self.guest(setup, &command, bounds, *rng).await
            }
            Ok(WasiPlan::Injected(output)) => Ok(output),
            Err(error) => Err(error),
        };
        let reply = result.map(ProcessReply::Ran);
        self.actor.record(RecordKind::Reply, "run", &reply);
        Ok(reply.map(|reply| match reply {
            ProcessReply::Ran(output) => output,
            ProcessReply::Finished => unreachable!("a guest run answers with its output"),
        }))
    }

    async fn guest(
        &self,
        setup: WasiSetup,
        command: &Command,
        bounds: WasmBounds,
        rng: RngStream,
    ) -> Result<Output, ProcessError> {
        let overlay = match self.fs {
            Some(fs) => fs.with_state(|fs| fs.overlay().clone()),
            None => Overlay::in_memory(),
        };
        let run = wasi::run_guest(setup, command, overlay, bounds, rng).await;
        let (Some(fs), false) = (self.fs, run.changes.is_empty()) else {
            return run.result;
        };
        let merged = FsHandle::new(fs).apply(run.changes).await;
        match (run.result, merged) {
            (Ok(_), Err(error)) => Err(ProcessError::WasmFsMerge {
                program: command.program.clone(),
                detail: error.to_string(),
            }),
            (result, _) => result,
        }
    }
}
