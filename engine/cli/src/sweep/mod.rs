//! What the sweep commands print beyond the report: the pool of threads, the result stores,
//! the kept tapes and the known failures' replay are the gateway's (`simtape_serve::sweep`);
//! what the runs decided, the stores' keys, the report and `sweep plan`'s job files are
//! `simtape_eval::sweep`'s.
//!
//! * [`progress`]: the progress line on a terminal, plain lines elsewhere (`Shown`, the
//!   gateway's sweep `Observer`);
//! * [`known`]: the lines on the failure database's known failures.

pub(crate) mod known;
pub(crate) mod progress;
