//! The errors that end a run. Each names what stopped the run, when (virtual time) and where.

use crate::limits::LimitName;
use crate::tape::TapeError;

/// A task that was waiting when the run deadlocked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaitingTask {
    /// The task id (as on the tape).
    pub id: u32,
    /// The task's name.
    pub name: String,
    /// What the task awaits, e.g. `recv on channel "jobs"`.
    pub awaiting: String,
}

/// Why a run ended without completing. Every variant is fatal to the run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SimError {
    /// A task panicked.
    #[error("task {name:?} (#{task}) panicked at t={}: {message}", crate::time::format_ns(*t_ns))]
    TaskPanicked {
        /// The task id.
        task: u32,
        /// The task name.
        name: String,
        /// Virtual time of the panic, in nanoseconds.
        t_ns: u64,
        /// The panic message.
        message: String,
    },
    /// Tasks wait, nothing is runnable and no timer is pending.
    #[error("deadlock at t={}: {} task(s) waiting with nothing runnable and no timer pending: {}",
        crate::time::format_ns(*t_ns), waiting.len(), format_waiting(waiting))]
    Deadlock {
        /// Virtual time of the deadlock.
        t_ns: u64,
        /// Every waiting task and what it awaits, by task id.
        waiting: Vec<WaitingTask>,
    },
    /// The driver of an open run ended it before its main task finished.
    #[error("stopped at t={} before the main task finished: {} task(s) waiting: {}",
        crate::time::format_ns(*t_ns), waiting.len(), format_waiting(waiting))]
    Stopped {
        /// Virtual time of the stop.
        t_ns: u64,
        /// Every waiting task and what it awaits, by task id.
        waiting: Vec<WaitingTask>,
    },
    /// A limit was reached.
    #[error("limit {limit} = {value} reached at t={}", crate::time::format_ns(*t_ns))]
    LimitExceeded {
        /// Which limit.
        limit: LimitName,
        /// Its value.
        value: u64,
        /// Virtual time when it was reached.
        t_ns: u64,
    },
    /// The tape could not be written.
    #[error("tape: {0}")]
    Tape(#[from] TapeError),
    /// The run was configured wrongly.
    #[error("invalid configuration: {0}")]
    Config(String),
}

fn format_waiting(waiting: &[WaitingTask]) -> String {
    waiting
        .iter()
        .map(|w| format!("{:?} (#{}) awaits {}", w.name, w.id, w.awaiting))
        .collect::<Vec<_>>()
        .join("; ")
}

impl SimError {
    /// Returns a short machine-readable name of the error kind.
    pub fn kind(&self) -> &'static str {
        match self {
            SimError::TaskPanicked { .. } => "task_panicked",
            SimError::Deadlock { .. } => "deadlock",
            SimError::Stopped { .. } => "stopped",
            SimError::LimitExceeded { .. } => "limit_exceeded",
            SimError::Tape(_) => "tape",
            SimError::Config(_) => "config",
        }
    }
}
