//! How a command ends: an [`Outcome`] when it ran to the end, a [`CliError`] when something
//! stopped it; [`exit_code`] is the one place that turns either into the process's exit code
//! (the table is in `simtape --help` and docs/cli.md).

use std::path::PathBuf;

use simtape::oracle::OracleError;
use simtape::scenario::ScenarioError;
use simtape::tape::TapeError;
use simtape_eval::sweep::{MergeError, ReportWriteError};
use simtape_eval::world_eval::EvalError;
use simtape_mcp::world::SpecError;
use simtape_mcp::McpError;
use simtape_serve::evidence::EvidenceError;
use simtape_serve::golden::GoldenError;
use simtape_serve::rerun::RerunError;
use simtape_serve::sweep::SweepError;

/// What a command that ran to the end found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// The run passed, the tapes are equal, the tape is sound (exit 0).
    Success,
    /// Tapes diverge, a run is not deterministic, a replay differs, a tape is damaged, a run
    /// failed a verifier, a sweep has a failing seed (exit 1).
    Finding,
    /// The input it checked has problems, each already reported (exit 2).
    Invalid,
    /// The simulated run ended in error: deadlock, task panic, limit reached (exit 3).
    RunError,
    /// A policy stopped the run: denied egress, an fs escape, a disabled tool a gate needs
    /// (exit 4).
    Blocked,
}

/// What stopped a command. Every variant is fatal to the command; `main` prints it after
/// `error: `.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CliError {
    /// Arguments that cannot work together, or ask for more than a command takes.
    #[error("{0}")]
    Usage(String),
    /// A file or directory that cannot be read, created or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// An output stream that cannot be written (`stdout`, the export).
    #[error("{stream}: {source}")]
    Write {
        /// What was being written.
        stream: &'static str,
        /// Why.
        source: std::io::Error,
    },
    /// A scenario file with a problem, at its file:line:field.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    /// Input that does not parse or does not fit: a cassette, a world, a state, a report.
    #[error("{0}")]
    Input(String),
    /// Two tapes the oracle cannot compare (one does not read).
    #[error(transparent)]
    Oracle(#[from] OracleError),
    /// A tape that cannot be opened (input) or is damaged (a finding), with its file when
    /// the message does not name it.
    #[error("{}{error}", tape_prefix(path.as_deref(), error))]
    Tape {
        /// The tape file, to prefix the message with.
        path: Option<PathBuf>,
        /// What is wrong.
        error: TapeError,
    },
    /// An MCP cassette, server or stream that fails.
    #[error(transparent)]
    Mcp(#[from] McpError),
    /// An MCP world spec with a problem.
    #[error(transparent)]
    World(#[from] SpecError),
    /// World states that cannot be scored.
    #[error(transparent)]
    WorldEval(#[from] EvalError),
    /// An input file that cannot be read whole: missing, a device, past its size cap.
    #[error(transparent)]
    InputFile(#[from] simtape::input::InputError),
    /// Shard reports that do not merge, with the file of the report at fault when there is
    /// one.
    #[error("{}{error}", path.as_ref().map(|p| format!("{}: ", p.display())).unwrap_or_default())]
    Merge {
        /// The report file the error is about.
        path: Option<PathBuf>,
        /// Why the reports do not merge.
        error: MergeError,
    },
    /// A sweep report that cannot be written.
    #[error(transparent)]
    ReportWrite(#[from] ReportWriteError),
}

impl From<SweepError> for CliError {
    /// A file of a store or of the failure database as an I/O error; anything else as bad
    /// input or usage (exit 2 either way).
    fn from(error: SweepError) -> CliError {
        match error {
            SweepError::Io { path, source } => CliError::Io { path, source },
            SweepError::FailureDb(error) => crate::sweep::known::db_error(error),
            SweepError::InputFile(error) => CliError::InputFile(error),
            SweepError::Decisions(error) => CliError::Usage(error.to_string()),
            other => CliError::Input(other.to_string()),
        }
    }
}

impl From<GoldenError> for CliError {
    fn from(error: GoldenError) -> CliError {
        match error {
            GoldenError::Io { path, source } => CliError::Io { path, source },
            other => CliError::Input(other.to_string()),
        }
    }
}

impl From<RerunError> for CliError {
    /// A tape as a tape error, a file as an I/O error; anything else as bad input (exit 2).
    fn from(error: RerunError) -> CliError {
        match error {
            RerunError::Tape { path, error } => CliError::Tape {
                path: Some(path),
                error,
            },
            RerunError::Io { path, source } => CliError::Io { path, source },
            other => CliError::Input(other.to_string()),
        }
    }
}

impl From<EvidenceError> for CliError {
    fn from(error: EvidenceError) -> CliError {
        match error {
            EvidenceError::Io { path, source } => CliError::Io { path, source },
            other => CliError::Input(other.to_string()),
        }
    }
}

impl CliError {
    /// Returns the error of a file that cannot be read or written.
    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> CliError {
        let path = path.into();
        move |source| CliError::Io { path, source }
    }

    /// Returns the error of an output stream that cannot be written.
    pub(crate) fn write(stream: &'static str) -> impl Fn(std::io::Error) -> CliError + Copy {
        move |source| CliError::Write { stream, source }
    }
}

/// Returns `PATH: ` to open a tape error's message with, unless the message already does, so
/// a path is printed once.
fn tape_prefix(path: Option<&std::path::Path>, error: &TapeError) -> String {
    match path.map(|p| p.display().to_string()) {
        Some(shown) if !error.to_string().starts_with(&shown) => format!("{shown}: "),
        _ => String::new(),
    }
}

/// Whether a tape error says the file is no tape at all: it does not open, is empty or of
/// another format, or has a version this build does not read. Such a file is bad input
/// (exit 2) for every command; damage found inside a tape is a finding (exit 1).
fn is_not_a_tape(error: &TapeError) -> bool {
    matches!(
        error,
        TapeError::Io { .. } | TapeError::NotATape { .. } | TapeError::UnsupportedVersion { .. }
    )
}

/// What a command returns.
pub(crate) type CliResult = Result<Outcome, CliError>;

/// Returns the process's exit code for how a command ended: 0 success, 1 a finding, 2 bad
/// usage or bad input, 3 a run that ended in error, 4 a run a policy blocked.
pub(crate) fn exit_code(result: &CliResult) -> u8 {
    const SUCCESS: u8 = 0;
    const FINDING: u8 = 1;
    const USAGE: u8 = 2;
    const RUN_ERROR: u8 = 3;
    const BLOCKED: u8 = 4;
    match result {
        Ok(Outcome::Success) => SUCCESS,
        Ok(Outcome::Finding) => FINDING,
        Ok(Outcome::Invalid) => USAGE,
        Ok(Outcome::RunError) => RUN_ERROR,
        Ok(Outcome::Blocked) => BLOCKED,
        // One rule for every command that reads a tape (docs/cli.md).
        Err(CliError::Tape { error, .. })
        | Err(CliError::Oracle(OracleError::Tape { source: error, .. })) => {
            if is_not_a_tape(error) {
                USAGE
            } else {
                FINDING
            }
        }
        Err(
            CliError::Usage(_)
            | CliError::Io { .. }
            | CliError::Write { .. }
            | CliError::Scenario(_)
            | CliError::Input(_)
            | CliError::InputFile(_)
            | CliError::Oracle(_)
            | CliError::Mcp(_)
            | CliError::World(_)
            | CliError::WorldEval(_)
            | CliError::Merge { .. }
            | CliError::ReportWrite(_),
        ) => USAGE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_ending_has_its_exit_code() {
        // Goal: the table of docs/cli.md: 0 success, 1 a finding (a damaged tape too), 2 bad
        // usage or input (a tape that does not open too), 3 a run error, 4 blocked.
        assert_eq!(exit_code(&Ok(Outcome::Success)), 0);
        assert_eq!(exit_code(&Ok(Outcome::Finding)), 1);
        assert_eq!(exit_code(&Ok(Outcome::Invalid)), 2);
        assert_eq!(exit_code(&Ok(Outcome::RunError)), 3);
        assert_eq!(exit_code(&Ok(Outcome::Blocked)), 4);
        assert_eq!(exit_code(&Err(CliError::Usage("x".into()))), 2);
        let unreadable = TapeError::Io {
            path: "t.tape".into(),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        };
        let tape = |error| CliError::Tape { path: None, error };
        assert_eq!(exit_code(&Err(tape(unreadable))), 2);
        let empty = TapeError::NotATape {
            expected: "SIMTAPE\0".into(),
            found: String::new(),
        };
        assert_eq!(exit_code(&Err(tape(empty))), 2);
        let damaged = TapeError::BadHeader {
            detail: "cut short".into(),
        };
        assert_eq!(exit_code(&Err(tape(damaged))), 1);
    }
}
