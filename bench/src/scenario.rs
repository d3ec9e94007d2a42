//! The reference scenario (`bench/data/reference/reference.toml`): what one eval run costs.
//!
//! The scenario is an agent of 21 model calls (20 turns of two concurrent tool calls, then the
//! answer): 40 tool calls, half file writes in the overlay, half `put`s on an MCP world
//! server, and three verifiers, no wasm. Each run is built from the one loaded
//! [`EvalScenario`] (fixture parsed, world spec compiled once), as a sweep builds its runs, and
//! writes its tape to memory: the tape is on, only the file system is left out.
//!
//! Two measurements, each checked before it counts (every run must pass, and every seed must
//! give the same fingerprint in every round and at every pool size):
//! - **runs per second on one thread**, over `runs` seeds;
//! - **a sweep on a pool of 1 and of 2 threads** over the same seeds, scheduled as
//!   `simtape sweep` schedules them (workers take the next seed from one atomic counter).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use simtape_agent::{EvalScenario, Verdict};

use crate::report::Bar;
use crate::runner::timed;

/// The fewest runs per second the reference scenario must reach on one thread, tape on.
pub const RUNS_PER_S_MIN: f64 = 2_000.0;
/// The least speed-up of a sweep on 2 threads over the same sweep on 1.
pub const SWEEP_SPEEDUP_MIN: f64 = 1.7;

/// Returns the path of the reference scenario.
pub fn reference_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data/reference/reference.toml")
}

/// Loads the reference scenario with everything it references.
pub fn load() -> Result<EvalScenario, String> {
    EvalScenario::load(&reference_path()).map_err(|error| error.to_string())
}

/// What one batch of runs did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    /// Each seed's run fingerprint, in seed order.
    pub fingerprints: Vec<u64>,
    /// Records over all runs.
    pub records: u64,
    /// Tape bytes over all runs.
    pub tape_bytes: u64,
}

/// Runs the seeds `0..runs` on this thread, each with its tape in memory; every run must pass.
pub fn run_batch(eval: &EvalScenario, runs: u64) -> Result<Batch, String> {
    let mut batch = Batch {
        fingerprints: Vec::with_capacity(usize::try_from(runs).unwrap_or(0)),
        records: 0,
        tape_bytes: 0,
    };
    for seed in 0..runs {
        let (fingerprint, records, bytes) = run_one(eval, seed)?;
        batch.fingerprints.push(fingerprint);
        batch.records += records;
        batch.tape_bytes += bytes;
    }
    Ok(batch)
}

/// Runs one seed with its tape in memory; returns (fingerprint, records, tape bytes).
fn run_one(eval: &EvalScenario, seed: u64) -> Result<(u64, u64, u64), String> {
    let mut builder = eval.builder(seed);
    builder.tape_in_memory();
    let report = eval.run_summary(&mut builder);
    if report.verdict != Verdict::Pass {
        return Err(format!("seed {seed}: {}", report.verdict));
    }
    let summary = &report.run.summary;
    let bytes = summary.tape.as_ref().map_or(0, |tape| tape.bytes);
    Ok((summary.fingerprint, summary.records, bytes))
}

/// Runs the seeds `0..runs` on `jobs` threads and returns the fingerprints in seed order.
pub fn sweep(eval: &EvalScenario, runs: u64, jobs: usize) -> Result<Vec<u64>, String> {
    let next = AtomicU64::new(0);
    let mut results: Vec<(u64, Result<u64, String>)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..jobs)
            .map(|_| {
                let next = &next;
                scope.spawn(move || {
                    let mut done = Vec::new();
                    loop {
                        let seed = next.fetch_add(1, Ordering::Relaxed);
                        if seed >= runs {
                            break done;
                        }
                        done.push((seed, run_one(eval, seed).map(|(f, _, _)| f)));
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|worker| worker.join().expect("a sweep worker panicked"))
            .collect()
    });
    results.sort_by_key(|(seed, _)| *seed);
    results.into_iter().map(|(_, result)| result).collect()
}

/// The measurements of the reference scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct Measurement {
    /// Runs per round.
    pub runs: u64,
    /// Host time of each single-thread round.
    pub single: Vec<Duration>,
    /// The same rounds' process CPU time.
    pub single_cpu: Vec<Duration>,
    /// Host time of each sweep round on one thread.
    pub sweep_1: Vec<Duration>,
    /// Host time of each sweep round on two threads.
    pub sweep_2: Vec<Duration>,
    /// Process CPU time (both threads) of each sweep round on two threads.
    pub sweep_2_cpu: Vec<Duration>,
    /// Records per run.
    pub records_per_run: u64,
    /// Tape bytes per run.
    pub tape_bytes_per_run: u64,
}

impl Measurement {
    /// Median runs per second on one thread.
    pub fn runs_per_s(&self) -> f64 {
        self.runs as f64 / median(&self.single).as_secs_f64()
    }

    /// Median runs per second of process CPU time on one thread (shown beside the host
    /// figure: it leaves out time the OS gave to other processes, though not time a
    /// hypervisor gave to other machines).
    pub fn runs_per_cpu_s(&self) -> f64 {
        self.runs as f64 / median(&self.single_cpu).as_secs_f64()
    }

    /// The median over rounds of the round's sweep time on one thread over its sweep time on
    /// two. Each round's two sweeps run back to back, so a ratio compares them under the same
    /// host load, which drifts between rounds.
    pub fn sweep_speedup(&self) -> f64 {
        median_ratio(&self.sweep_1, &self.sweep_2, 1.0)
    }

    /// The speed-up two threads would give with both cores to themselves: per round, twice
    /// the CPU time of the single-thread batch over the CPU time of the two-thread sweep (the
    /// median over rounds). Below 2 only by what the threads cost each other (shared memory,
    /// allocator, locks) or what the host's other work costs them (shared caches).
    pub fn sweep_speedup_cpu(&self) -> f64 {
        median_ratio(&self.single_cpu, &self.sweep_2_cpu, 2.0)
    }

    /// Median host time of one run on one thread, in µs.
    pub fn run_us(&self) -> f64 {
        1e6 / self.runs_per_s()
    }
}

/// Measures `rounds` rounds of `runs` runs each: one thread, then sweeps on 1 and 2 threads,
/// interleaved so load on the host hits all three alike.
pub fn measure(runs: u64, rounds: usize) -> Result<Measurement, String> {
    let eval = load()?;
    // Warm up (and the reference fingerprints every later round must reproduce).
    let reference = run_batch(&eval, runs)?;
    let mut measurement = Measurement {
        runs,
        single: Vec::new(),
        single_cpu: Vec::new(),
        sweep_1: Vec::new(),
        sweep_2: Vec::new(),
        sweep_2_cpu: Vec::new(),
        records_per_run: reference.records / runs.max(1),
        tape_bytes_per_run: reference.tape_bytes / runs.max(1),
    };
    for _ in 0..rounds {
        let (times, batch) = timed(|| run_batch(&eval, runs));
        let batch = batch?;
        measurement.single.push(times.host);
        measurement.single_cpu.push(times.cpu);
        same(&reference.fingerprints, &batch.fingerprints, "one thread")?;
        // Alternate which sweep goes first, so neither always runs on a warmer host.
        let order = match measurement.sweep_1.len() % 2 {
            0 => [1, 2],
            _ => [2, 1],
        };
        for jobs in order {
            let (times, fingerprints) = timed(|| sweep(&eval, runs, jobs));
            same(
                &reference.fingerprints,
                &fingerprints?,
                &format!("{jobs} jobs"),
            )?;
            if jobs == 1 {
                measurement.sweep_1.push(times.host);
            } else {
                measurement.sweep_2.push(times.host);
                measurement.sweep_2_cpu.push(times.cpu);
            }
        }
    }
    Ok(measurement)
}

/// Checks a round reproduced the reference fingerprints.
fn same(reference: &[u64], round: &[u64], what: &str) -> Result<(), String> {
    match reference.iter().zip(round).position(|(a, b)| a != b) {
        Some(seed) => Err(format!(
            "seed {seed} changed its fingerprint ({what}): {:016x} then {:016x}",
            reference[seed], round[seed]
        )),
        None if reference.len() != round.len() => Err(format!("{what}: runs missing")),
        None => Ok(()),
    }
}

/// Returns the median over rounds of `scale × a[i] / b[i]`.
fn median_ratio(a: &[Duration], b: &[Duration], scale: f64) -> f64 {
    let mut ratios: Vec<f64> = a
        .iter()
        .zip(b)
        .map(|(a, b)| scale * a.as_secs_f64() / b.as_secs_f64())
        .collect();
    ratios.sort_by(f64::total_cmp);
    ratios.get(ratios.len() / 2).copied().unwrap_or(0.0)
}

fn median(times: &[Duration]) -> Duration {
    let mut sorted = times.to_vec();
    sorted.sort();
    sorted
        .get(sorted.len() / 2)
        .copied()
        .unwrap_or(Duration::MAX)
}

/// The bars: at least [`RUNS_PER_S_MIN`] runs per second on one thread with the tape on, and
/// a sweep on 2 threads at least [`SWEEP_SPEEDUP_MIN`] times as fast as on 1.
pub fn bars(measurement: &Measurement) -> Vec<Bar> {
    let runs_per_s = measurement.runs_per_s();
    let speedup = measurement.sweep_speedup();
    vec![
        Bar {
            label: format!(
                "reference scenario ≥ {RUNS_PER_S_MIN:.0} runs/s on one thread, tape on"
            ),
            measured: Some(runs_per_s),
            measured_cpu: Some(measurement.runs_per_cpu_s()),
            pass: runs_per_s >= RUNS_PER_S_MIN,
        },
        Bar {
            label: format!("sweep on 2 jobs ≥ {SWEEP_SPEEDUP_MIN:.1}× one job"),
            measured: Some(speedup),
            measured_cpu: Some(measurement.sweep_speedup_cpu()),
            pass: speedup >= SWEEP_SPEEDUP_MIN,
        },
    ]
}
