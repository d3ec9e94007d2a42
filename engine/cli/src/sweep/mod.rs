//! Running a seed sweep: one single-threaded simulation per seed, on a pool of OS threads.
//! What the runs decided, and the report's format, merge and renderings, are
//! `simtape_eval::sweep`'s.
//!
//! * [`pool`]: runs the seeds on `--jobs` threads, each scenario loaded once and shared
//!   read-only, and keeps the tapes of failing seeds;
//! * [`progress`]: the progress line on a terminal, plain lines elsewhere;
//! * [`plan`]: `sweep plan`, the job file of a sweep on Slurm or Kubernetes;
//! * [`cache`]: the result stores of `--resume` and `--cache`, keyed by what decides a run;
//! * [`known`]: the failure database's known failures, replayed first, and its update.
//!
//! Results never depend on `--jobs`: every record is collected, then sorted by
//! (scenario, seed) before anything is reported.

pub(crate) mod cache;
pub(crate) mod known;
pub(crate) mod plan;
pub(crate) mod pool;
pub(crate) mod progress;
