//! The `wasi` workload: the 24 h sleeper guest (`scenarios/data/wasi/sleeper.wasm`) invoked
//! once per simulation run, with the module already compiled and cached.
//!
//! One process actor is built once and cloned into every run, so its module cache is shared:
//! the first (untimed) run compiles the module, every timed run only instantiates it. Each
//! timed sample is the host time of a whole run (build, one invocation, teardown), so it
//! bounds the invocation from above. Every run uses the same seed and must end at exactly
//! 24 h of virtual time and print the same line; the fuel each burns is kept, and the bar
//! asks that it be the same in every run.

use std::path::{Path, PathBuf};
use std::time::Duration;

use simtape::cap::process::{Command, ExitStatus, Output, ProcessActor};
use simtape::Sim;

use crate::report::Bar;

/// The seed of every run.
pub const WASI_SEED: u64 = 0x5EED;

/// A day of virtual time: what the guest sleeps.
pub const DAY_NS: u64 = 86_400_000_000_000;

/// The median host time bar of one run with a cached module, in milliseconds.
pub const INVOCATION_MS_MAX: f64 = 2.0;

/// Returns the directory of the shipped guest modules.
pub fn guests() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/data/wasi")
}

/// What the workload measured.
#[derive(Debug, Clone, PartialEq)]
pub struct WasiMeasurement {
    /// Host time of each timed run.
    pub samples: Vec<Duration>,
    /// Fuel burned by the guest in each timed run.
    pub fuel: Vec<u64>,
}

impl WasiMeasurement {
    /// Returns the median host time of a run, in milliseconds.
    pub fn median_ms(&self) -> f64 {
        let mut sorted = self.samples.clone();
        sorted.sort();
        sorted
            .get(sorted.len() / 2)
            .map_or(f64::NAN, |median| median.as_secs_f64() * 1_000.0)
    }

    /// Returns whether every run burned the same fuel.
    pub fn fuel_identical(&self) -> bool {
        self.fuel.windows(2).all(|pair| pair[0] == pair[1])
    }
}

/// Runs one simulation with one invocation of the sleeper and checks what it did.
fn run_once(actor: &ProcessActor) -> Result<Output, String> {
    let mut builder = Sim::builder();
    builder.seed(WASI_SEED).no_tape().process(actor.clone());
    let sim = builder.build().map_err(|e| e.to_string())?;
    let report = sim
        .run(|host| async move { host.process().run(Command::new("sleeper")).await })
        .map_err(|e| e.to_string())?;
    let output = report.output.map_err(|e| e.to_string())?;
    let expected = format!("slept {DAY_NS}\n");
    if report.summary.end_ns != DAY_NS || output.stdout != expected.as_bytes() {
        return Err(format!(
            "the sleeper ended at {} ns with {:?}, expected {DAY_NS} ns and {expected:?}",
            report.summary.end_ns,
            String::from_utf8_lossy(&output.stdout)
        ));
    }
    if output.status != ExitStatus::Code(0) {
        return Err(format!("the sleeper exited with {:?}", output.status));
    }
    Ok(output)
}

/// Runs the workload: one untimed run to compile the module, then `runs` timed ones.
pub fn run(runs: usize) -> Result<WasiMeasurement, String> {
    let actor = ProcessActor::wasi(guests());
    run_once(&actor)?;
    let mut measurement = WasiMeasurement {
        samples: Vec::with_capacity(runs),
        fuel: Vec::with_capacity(runs),
    };
    for _ in 0..runs {
        let started = std::time::Instant::now();
        let output = run_once(&actor)?;
        measurement.samples.push(started.elapsed());
        measurement
            .fuel
            .push(output.fuel_consumed.ok_or("a guest run reports its fuel")?);
    }
    Ok(measurement)
}

/// The bars: the median run under [`INVOCATION_MS_MAX`], and the same fuel in every run.
pub fn bars(measurement: &WasiMeasurement) -> Vec<Bar> {
    let median = measurement.median_ms();
    let fuel = measurement.fuel.first().map(|&fuel| fuel as f64);
    vec![
        Bar {
            label: format!(
                "wasi: cached 24 h sleeper run < {INVOCATION_MS_MAX:.0} ms host (median, ms)"
            ),
            measured: Some(median),
            measured_cpu: None,
            pass: median < INVOCATION_MS_MAX,
        },
        Bar {
            label: format!(
                "wasi: fuel identical across {} runs of one seed",
                measurement.fuel.len()
            ),
            measured: fuel,
            measured_cpu: None,
            pass: fuel.is_some() && measurement.fuel_identical(),
        },
    ]
}
