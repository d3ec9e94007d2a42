//! What the simulation orders the driver of an agent program to do in a `[harness]` run:
//! start a session's process, or stop it (docs in `sessions`). A leaf: the gateway gives the
//! stop order and the driver carries the orders out, and neither imports the sessions
//! module, which runs above both.

use crate::workdir::FileChange;

/// What the simulation asks of the driver of an agent program in a `[harness]` run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionOrder {
    /// Start a session.
    Start(SessionStart),
    /// Stop the running session's process: it asked for a turn past its budget.
    Stop {
        /// The session.
        session: u32,
    },
}

/// A session to start: the program's task, and the files its directory must hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionStart {
    /// The session (1 for the first task session).
    pub session: u32,
    /// Its task.
    pub task: String,
    /// The run's files against the `[fs]` root, as the overlay holds them now: the harness's
    /// state files and every earlier session's work.
    pub files: Vec<FileChange>,
}
