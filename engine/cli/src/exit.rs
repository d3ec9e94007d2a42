//! Exit codes, one meaning each (also listed in `simtape --help` and docs/cli.md).

/// Success: the run completed, the tapes are equal, the tape is sound.
pub(crate) const OK: u8 = 0;
/// A finding: tapes diverge, a run is not deterministic, a replay differs, a tape is damaged.
pub(crate) const DIVERGED: u8 = 1;
/// Bad usage or bad input: arguments, scenario files, unreadable tapes.
pub(crate) const USAGE: u8 = 2;
/// The simulated run ended in error: deadlock, task panic, limit reached.
pub(crate) const RUN_ERROR: u8 = 3;

/// An error that ends a command with a message and an exit code.
#[derive(Debug)]
pub(crate) struct CliError {
    pub(crate) code: u8,
    pub(crate) message: String,
}

impl CliError {
    /// Bad usage or bad input (exit 2).
    pub(crate) fn usage(message: impl std::fmt::Display) -> CliError {
        CliError {
            code: USAGE,
            message: message.to_string(),
        }
    }
}

/// What a command returns: an exit code, or an error with its own code.
pub(crate) type CliResult = Result<u8, CliError>;
