//! Running a seed sweep: one single-threaded simulation per seed, on a pool of OS threads,
//! and the result stores on disk. Threads and files are the outside, so they live here, in
//! the gateway; what the runs decided, the stores' keys and the report (its format, merge
//! and renderings) are `simtape_eval::sweep`'s, and the flags and the printing the command
//! line's.
//!
//! * [`pool`]: runs the seeds on `--jobs` threads, each scenario loaded once and shared
//!   read-only, and keeps the tapes of failing seeds;
//! * [`store`]: the result stores of `--resume` and `--cache`, keyed by what decides a run.
//!
//! Results never depend on `--jobs`: every record is collected, then sorted by
//! (scenario, seed) before anything is reported.

pub mod pool;
pub mod store;

use std::path::PathBuf;

pub use pool::{Loaded, Plan, Ran, Tasks};
pub use store::Store;

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
}

impl SweepError {
    /// Returns the error of a file that cannot be read or written.
    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> SweepError {
        let path = path.into();
        move |source| SweepError::Io { path, source }
    }
}
