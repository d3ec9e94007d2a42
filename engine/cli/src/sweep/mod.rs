//! What the sweep commands print and write beyond the report: the pool of threads, the result
//! stores and the kept tapes are the gateway's (`simtape_serve::sweep`); what the runs
//! decided, the stores' keys and the report are `simtape_eval::sweep`'s.
//!
//! * [`progress`]: the progress line on a terminal, plain lines elsewhere;
//! * [`plan`]: `sweep plan`, the job file of a sweep on Slurm or Kubernetes;
//! * [`known`]: the failure database's known failures, replayed first, and its update.

pub(crate) mod known;
pub(crate) mod plan;
pub(crate) mod progress;
