//! How a command that reruns a tape's run (`simtape shrink`, `fork`, `explain`) ends: the
//! rerun itself is the gateway's (`simtape_serve::rerun`).

use simtape_serve::rerun::RerunError;
pub(crate) use simtape_serve::rerun::{reason, records, RecordAt, Rerun, TapeOut};

use std::path::Path;

use crate::exit::{CliError, CliResult, Outcome};

/// Why a command that reruns a tape's run stopped before its end.
pub(crate) enum Stop {
    /// Bad input, or a file that cannot be read or written.
    Cli(CliError),
    /// A rerun that should have given the same run did not (exit 1).
    Differs(String),
}

impl From<CliError> for Stop {
    fn from(error: CliError) -> Stop {
        Stop::Cli(error)
    }
}

impl From<RerunError> for Stop {
    fn from(error: RerunError) -> Stop {
        match error {
            RerunError::Differs(why) => Stop::Differs(why),
            other => Stop::Cli(other.into()),
        }
    }
}

impl Stop {
    /// How the command ends: a `Differs` is printed and is a finding.
    pub(crate) fn ending(result: Result<(), Stop>, command: &str) -> CliResult {
        match result {
            Ok(()) => Ok(Outcome::Success),
            Err(Stop::Cli(error)) => Err(error),
            Err(Stop::Differs(why)) => {
                println!("{command}: {why}");
                Ok(Outcome::Finding)
            }
        }
    }
}

/// Checks that the rerun's tape `again` has the bytes of `tape`, and removes it; when it does
/// not, it stays, and the stop says `why` with the diff command that shows where they part.
pub(crate) fn same_tape(tape: &Path, again: &Path, why: &str) -> Result<(), Stop> {
    Ok(simtape_serve::rerun::same_tape(tape, again, why)?)
}
