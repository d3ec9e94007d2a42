//! The library's error type. Every variant is fatal to the command that hit it (exit 2);
//! problems in one message of a conversation are JSON-RPC errors, never `McpError`s.

use std::path::PathBuf;

/// What stops a record, replay or verify command.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// A cassette file could not be read or written.
    #[error("{path}: {source}")]
    CassetteIo {
        /// The cassette path.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A cassette file is not a valid cassette (bad JSON, wrong format tag or version).
    #[error("{path}: not a simtape MCP cassette: {reason}")]
    CassetteInvalid {
        /// The cassette path.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The server command could not be started.
    #[error("cannot start server `{command}`: {source}")]
    Spawn {
        /// The program that failed to start.
        command: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Reading or writing stdio (or a child's pipes) failed.
    #[error("stdio: {0}")]
    Io(#[from] std::io::Error),
    /// An output file or a journal could not be written or read.
    #[error("{path}: {source}")]
    Output {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A journal is held by a running simtape process, so it is not left over.
    #[error("{path}: a running simtape process is writing this journal")]
    JournalBusy {
        /// The journal path.
        path: PathBuf,
    },
    /// A journal cannot be rebuilt into its output.
    #[error("{path}: not a usable simtape journal: {reason}")]
    JournalInvalid {
        /// The journal path.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// A live server broke the protocol badly enough that the session cannot go on.
    #[error("live server: {0}")]
    Live(String),
}
