//! [`RunSummary`]: what every report of one run says about the run itself, whatever else it
//! carries. The engine's [`crate::RunReport`] and [`crate::RunError`], the scenario's reports
//! and the eval harness's reports embed it, so its fields are written once.

use std::path::PathBuf;

use crate::tape::TapeSummary;

/// The seed, the virtual time and counts, the fingerprint and the tape of one run.
///
/// ```
/// use simtape::Sim;
/// let mut builder = Sim::builder();
/// builder.seed(7).tape_in_memory();
/// let report = builder.build().unwrap().run(|_host| async {}).unwrap();
/// assert_eq!(report.summary.seed, 7);
/// assert_eq!(report.summary.end_ns, 0);
/// assert!(report.summary.tape.is_some());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RunSummary {
    /// The seed.
    pub seed: u64,
    /// Virtual time at the end, in nanoseconds.
    pub end_ns: u64,
    /// Timer events popped.
    pub events: u64,
    /// Records written (not counting tape meta records).
    pub records: u64,
    /// A fingerprint of every record, kept even without a tape.
    pub fingerprint: u64,
    /// The tape, when one was written and could be finished.
    pub tape: Option<TapeSummary>,
    /// The tape file, when the tape went to a file.
    pub tape_path: Option<PathBuf>,
    /// The properties a Rust pipeline evaluated (`simtape::always!` and the others), by first
    /// evaluation.
    pub properties: Vec<crate::property::Evaluated>,
}

impl RunSummary {
    /// Returns the summary of a run that never started (its builder failed): only the seed.
    pub fn unstarted(seed: u64) -> RunSummary {
        RunSummary {
            seed,
            ..RunSummary::default()
        }
    }
}
