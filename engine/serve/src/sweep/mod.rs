//! Running a seed sweep: one single-threaded simulation per seed, on a pool of OS threads,
//! and the result stores on disk. Threads and files are the outside, so they live here, in
//! the gateway; what the runs decided, the stores' keys and the report (its format, merge
//! and renderings) are `simtape_eval::sweep`'s, and the flags and the printing the command
//! line's.
//!
//! * [`pool`]: runs the seeds on `--jobs` threads, each scenario loaded once and shared
//!   read-only, and keeps the tapes of failing seeds;
//! * [`store`]: the result stores of `--resume` and `--cache`, keyed by what decides a run;
//! * [`known`]: the failure database's known failures, replayed first (sweep and ci), and
//!   its update after a sweep;
//! * [`seeds`]: a sweep's runs in order, the known failures first, then the plan.
//!
//! Results never depend on `--jobs`: every record is collected, then sorted by
//! (scenario, seed) before anything is reported.

pub mod known;
pub mod pool;
pub mod seeds;
pub mod store;

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use simtape_eval::failures::{FailureDbError, Replayed};

pub use known::{KnownReplay, ShrunkOutcome, ShrunkReplay};
pub use pool::{Loaded, Plan, Ran, Tasks};
pub use store::Store;

/// What the command line shows of a sweep as it runs: the pool's progress, and what became
/// of the known failures. Every method is called on the thread that started the sweep.
pub trait Observer {
    /// The `count` seeds of the known failures of the database in `dir` run first.
    fn known_first(&mut self, count: usize, dir: &Path) {
        let _ = (count, dir);
    }
    /// What became of the known failures of the database in `dir`: each judged from its
    /// seeds' replay (`None` when no seed was replayed), and the shrunk decisions run again.
    fn known_judged(&mut self, dir: &Path, replayed: Option<&[Replayed]>, shrunk: &[ShrunkReplay]) {
        let _ = (dir, replayed, shrunk);
    }
    /// A pool of `total` runs starts.
    fn pool_started(&mut self, total: u64);
    /// A run ended, passed or not.
    fn run_ended(&mut self, passed: bool);
    /// The pool's runs ended (all of them, or the sweep stopped).
    fn pool_ended(&mut self);
}

/// Runs `tasks` of `plan` on the pool of `jobs` threads; `observer` sees the `total` runs
/// start and end.
fn observed_pool(
    plan: Plan<'_>,
    tasks: Tasks<'_>,
    jobs: usize,
    stop: &AtomicBool,
    total: u64,
    observer: &mut dyn Observer,
) -> Result<Ran, SweepError> {
    observer.pool_started(total);
    let ran = pool::run(plan, tasks, jobs, stop, &mut |passed| {
        observer.run_ended(passed)
    });
    observer.pool_ended();
    ran
}

/// What stopped a sweep's pool: a result store that cannot be read or written. Fatal to the
/// sweep (its workers stop taking seeds); the runs themselves end in verdicts, not errors.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SweepError {
    /// A file or directory of a store, or of the kept tapes, that cannot be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A file in a store that is not a stored result (a sweep did not write it).
    #[error("{}: not a stored sweep result ({source}); remove it to run that seed again", path.display())]
    NotAResult {
        /// The file.
        path: PathBuf,
        /// Why it does not read as one.
        source: serde_json::Error,
    },
    /// The failure database cannot be read or written, or holds a damaged entry.
    #[error(transparent)]
    FailureDb(#[from] FailureDbError),
    /// A known failure's decisions file that cannot be read whole.
    #[error(transparent)]
    InputFile(#[from] simtape::input::InputError),
    /// A known failure's decisions file that does not read or does not fit its scenario.
    #[error(transparent)]
    Decisions(#[from] simtape_eval::decisions::DecisionsFileError),
}

impl SweepError {
    /// Returns the error of a file that cannot be read or written.
    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> SweepError {
        let path = path.into();
        move |source| SweepError::Io { path, source }
    }
}
