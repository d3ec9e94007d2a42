//! What the eval pipeline takes from the driver of an agent program outside the simulation
//! (`[agent] kind = "command"`; the driver is `simtape-serve`'s, which owns the process, the
//! sockets and the wall clock).
//!
//! The driver starts a run with [`crate::EvalScenario::start_command`], passing the future
//! that serves the agent inside the simulation; that future ends with a [`CommandEnd`] built
//! only from the run's recorded inputs (so a replay rebuilds it). The pipeline then runs the
//! verifiers as it does for the built-in agent: the transcript answers `answer` and
//! `tool_called`, the overlay (which the future filled with the agent's changes) answers
//! `fs`, and the recorded gate runs answer `gate`. The agent's exit is judged too: an agent
//! that exits non-zero fails the run through a verifier of its own.

use serde::{Deserialize, Serialize};

use crate::transcript::Transcript;

/// How the agent process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentExit {
    /// It exited with this status.
    Exited(i32),
    /// A signal ended it.
    Signaled,
    /// It ran over its wall-clock `timeout` and was stopped (the run is an ERROR).
    TimedOut,
}

impl AgentExit {
    /// Describes the exit in a verifier's `saw`.
    pub fn describe(self) -> String {
        match self {
            AgentExit::Exited(code) => format!("exited with status {code}"),
            AgentExit::Signaled => "was ended by a signal".to_string(),
            AgentExit::TimedOut => "ran over its timeout and was stopped".to_string(),
        }
    }
}

/// A `gate` verifier's program, run in the agent's working directory after the agent ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GateRun {
    /// Its exit code (`None` when it could not start or a signal ended it).
    pub exit_code: Option<i32>,
    /// Why it did not run, when it did not.
    pub error: Option<String>,
}

/// How an external agent's session ended, as recorded on the tape.
#[derive(Debug, Clone, PartialEq)]
pub struct CommandEnd {
    /// The agent's turns, tool calls and answer, from its native output.
    pub transcript: Transcript,
    /// How the process ended.
    pub exit: AgentExit,
    /// Each `gate` verifier's run, in `[[verify]]` order of the gates.
    pub gates: Vec<GateRun>,
    /// The first request no recording matched (a model request's digest, an MCP server and
    /// why): such a run is an ERROR whatever the verifiers say.
    pub unmatched: Option<String>,
    /// The first connection the `[network]` policy refused the program (in its sandbox):
    /// such a run is BLOCKED.
    pub denied: Option<simtape::cap::net::NetError>,
    /// The program's sandbox failed after the run began (the step, and why): such a run is
    /// an ERROR.
    pub sandbox_failed: Option<String>,
}

/// The name of the verifier that judges the agent's exit.
pub const EXIT_VERIFIER: &str = "agent exits 0";

/// One session of an agent program that a `[harness]` run asks its driver for: the driver
/// starts the program in a directory that mirrors the run's filesystem, with `task` as its
/// task, and ends it when it asks for a model turn past `max_turns`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRequest {
    /// The session (1 for the first task session).
    pub session: u32,
    /// The features it takes on.
    pub features: Vec<String>,
    /// Its task: the objective, its features, where the state is.
    pub task: String,
    /// The model turns it may take: the turn budget, or the turn a seeded crash kills it at.
    pub max_turns: u32,
}

/// How one session of an agent program ended, built from the run's recorded inputs only
/// (so a replay rebuilds it).
#[derive(Debug, Clone, PartialEq)]
pub struct SessionEnd {
    /// Its turns, tool calls and answer, from the program's native output.
    pub transcript: Transcript,
    /// How the process ended.
    pub exit: AgentExit,
    /// Whether the driver ended it because it asked for a turn past its `max_turns`.
    pub turns_spent: bool,
    /// The first request no recording matched: the run is an ERROR.
    pub unmatched: Option<String>,
    /// The first connection the `[network]` policy refused: the run is BLOCKED.
    pub denied: Option<simtape::cap::net::NetError>,
    /// The session's sandbox failed (the step, and why): the run is an ERROR.
    pub sandbox_failed: Option<String>,
}

/// The driver's side of an agent program inside the simulation, for a `[harness]` run: one
/// session at a time, each a process of its own (`simtape-serve` implements it).
pub trait ProgramSessions {
    /// Runs one session; its changes to the working directory are in the run's overlay when
    /// the future ends.
    fn session(
        &self,
        request: SessionRequest,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = SessionEnd>>>;
}
