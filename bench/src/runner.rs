//! Runs the cases in interleaved rounds and checks every run against the workload's
//! expected figures.
//!
//! Every round runs every case once, so a drift in host load (the machine is shared) hits
//! all cases alike; the report takes the median over rounds. A run whose events or end time
//! differ from [`Shape::expected`], or whose fingerprint changes between rounds or with the
//! tape mode, stops the benchmark: a faster run that does different work is no result.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::frameworks::{Framework, Outcome};
use crate::workloads::{Shape, Size, Workload};

/// One workload on one framework.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Case {
    /// The workload.
    pub workload: Workload,
    /// The framework and tape mode.
    pub framework: Framework,
}

impl fmt::Display for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.workload, self.framework)
    }
}

/// What to run.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The workloads' size.
    pub size: Size,
    /// Rounds; every round runs every case once.
    pub rounds: usize,
    /// The workloads, in report order.
    pub workloads: Vec<Workload>,
    /// The frameworks, in report order.
    pub frameworks: Vec<Framework>,
}

impl Plan {
    /// Returns every case of the plan, in the order a round runs them.
    pub fn cases(&self) -> Vec<Case> {
        self.workloads
            .iter()
            .flat_map(|&workload| {
                self.frameworks.iter().map(move |&framework| Case {
                    workload,
                    framework,
                })
            })
            .collect()
    }
}

/// The runs of one case.
#[derive(Debug, Clone)]
pub struct Measurement {
    /// The case.
    pub case: Case,
    /// Host (wall) time of each round's run, construction and teardown included.
    pub host_times: Vec<Duration>,
    /// Process CPU time of each round's run: the same span, minus time spent descheduled.
    pub cpu_times: Vec<Duration>,
    /// What every run produced (identical in every round).
    pub outcome: Outcome,
}

impl Measurement {
    /// Returns events per second of host time, at the median.
    pub fn events_per_s(&self) -> f64 {
        self.outcome.events as f64 / median_seconds(&self.host_times)
    }

    /// Returns events per second of process CPU time, at the median.
    pub fn events_per_cpu_s(&self) -> f64 {
        self.outcome.events as f64 / median_seconds(&self.cpu_times)
    }
}

/// Returns the median in seconds (the mean of the middle two for an even count).
fn median_seconds(times: &[Duration]) -> f64 {
    let mut seconds: Vec<f64> = times.iter().map(Duration::as_secs_f64).collect();
    seconds.sort_by(f64::total_cmp);
    let middle = seconds.len() / 2;
    if seconds.len() % 2 == 1 {
        seconds[middle]
    } else {
        (seconds[middle - 1] + seconds[middle]) / 2.0
    }
}

/// A run that did not do the workload's work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckFailed {
    /// The case.
    pub case: Case,
    /// What differed.
    pub detail: String,
}

impl fmt::Display for CheckFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.case, self.detail)
    }
}

impl std::error::Error for CheckFailed {}

/// Returns where a case writes its tape inside `tape_dir`.
pub fn tape_path(tape_dir: &Path, case: Case) -> PathBuf {
    tape_dir.join(format!("{}.tape", case.workload))
}

/// Runs `plan`, calling `on_run` after each run, and returns one measurement per case in
/// [`Plan::cases`] order. Taped cases write under `tape_dir` and their tapes are removed after
/// each run (outside the measured time).
pub fn run(
    plan: &Plan,
    tape_dir: &Path,
    mut on_run: impl FnMut(usize, Case, Duration),
) -> Result<Vec<Measurement>, CheckFailed> {
    assert!(plan.rounds > 0, "a benchmark needs at least one round");
    let cases = plan.cases();
    let mut measurements: Vec<Option<Measurement>> = vec![None; cases.len()];
    for round in 0..plan.rounds {
        for (index, &case) in cases.iter().enumerate() {
            let shape = case.workload.shape(plan.size);
            let path = tape_path(tape_dir, case);
            let (times, outcome) = timed(|| case.framework.run(shape, &path));
            if case.framework.tape() {
                // A leftover tape only wastes disk; the next run truncates it anyway.
                let _ = std::fs::remove_file(&path);
            }
            on_run(round, case, times.host);
            let slot = &mut measurements[index];
            match slot {
                None => {
                    check_expected(case, shape, &outcome)?;
                    *slot = Some(Measurement {
                        case,
                        host_times: vec![times.host],
                        cpu_times: vec![times.cpu],
                        outcome,
                    });
                }
                Some(first) => {
                    check_repeatable(case, &first.outcome, &outcome)?;
                    first.host_times.push(times.host);
                    first.cpu_times.push(times.cpu);
                }
            }
        }
    }
    let measurements: Vec<Measurement> = measurements
        .into_iter()
        .map(|m| m.expect("every case ran at least once"))
        .collect();
    check_tape_neutral(&measurements)?;
    Ok(measurements)
}

/// The time one run took.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Times {
    /// Host (wall-clock) time.
    pub(crate) host: Duration,
    /// CPU time of the whole process, every thread.
    pub(crate) cpu: Duration,
}

/// Runs `work` and returns the host and process CPU time it took. The benchmark measures
/// host time on purpose; these are its only clock reads.
#[allow(clippy::disallowed_methods, clippy::disallowed_types)]
pub(crate) fn timed<T>(work: impl FnOnce() -> T) -> (Times, T) {
    let cpu_started = cpu_time::ProcessTime::now();
    let started = std::time::Instant::now();
    let value = work();
    let host = started.elapsed();
    (
        Times {
            host,
            cpu: cpu_started.elapsed(),
        },
        value,
    )
}

fn check_expected(case: Case, shape: Shape, outcome: &Outcome) -> Result<(), CheckFailed> {
    let expected = shape.expected(case.framework.resolution_ns());
    if outcome.events != expected.events || outcome.end_ns != expected.end_ns {
        return Err(CheckFailed {
            case,
            detail: format!(
                "ran {} events ending at {} ns; the draws give {} events ending at {} ns",
                outcome.events, outcome.end_ns, expected.events, expected.end_ns
            ),
        });
    }
    Ok(())
}

fn check_repeatable(case: Case, first: &Outcome, again: &Outcome) -> Result<(), CheckFailed> {
    if first.events != again.events
        || first.end_ns != again.end_ns
        || first.fingerprint != again.fingerprint
    {
        return Err(CheckFailed {
            case,
            detail: format!("a later round differs from the first: {again:?} vs {first:?}"),
        });
    }
    Ok(())
}

/// Checks that writing the tape does not change what simtape does: both modes of a workload
/// must end with the same fingerprint.
fn check_tape_neutral(measurements: &[Measurement]) -> Result<(), CheckFailed> {
    for taped in measurements
        .iter()
        .filter(|m| m.case.framework == Framework::SimtapeTape)
    {
        let untaped = measurements.iter().find(|m| {
            m.case.workload == taped.case.workload && m.case.framework == Framework::Simtape
        });
        if let Some(untaped) = untaped {
            if untaped.outcome.fingerprint != taped.outcome.fingerprint {
                return Err(CheckFailed {
                    case: taped.case,
                    detail: format!(
                        "fingerprint {:?} differs from the untaped run's {:?}",
                        taped.outcome.fingerprint, untaped.outcome.fingerprint
                    ),
                });
            }
        }
    }
    Ok(())
}
