//! What a run of an eval scenario returns: the verdict, each verifier's result, and what
//! stopped the run when it did not complete.

use std::fmt;
use std::path::PathBuf;

use serde::Serialize;
use serde_json::Value;
use simtape::cap::fs::{FsDiff, FsError};
use simtape::cap::llm::LlmError;
use simtape::cap::process::ProcessError;
use simtape::scenario::StepError;
use simtape::tape::TapeSummary;
use simtape::SimError;
use simtape_mcp::actor::McpCallError;
use simtape_mcp::world::server::WorldReport;

use crate::transcript::Transcript;

/// The verdict of one run.
///
/// * **pass**: at least one verifier ran and every verifier held ("no tests, no pass");
/// * **fail**: the run completed, but a verifier did not hold, or none ran;
/// * **error**: the run could not complete (deadlock, limit, panic, a failed scripted step,
///   an unmatched replay, a denied network call, an fs escape); no verifier ran.
///
/// It displays as the tape footer writes it:
///
/// ```
/// use simtape_agent::Verdict;
/// let fail = Verdict::Fail { verifier: "answer".into(), saw: "expected to contain \"done\", found \"\"".into() };
/// assert_eq!(fail.to_string(), "fail: answer: expected to contain \"done\", found \"\"");
/// assert_eq!(fail.label(), "fail");
/// assert_eq!(Verdict::Pass.to_string(), "pass");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Verdict {
    /// Every verifier held, and at least one ran.
    Pass,
    /// A verifier did not hold (the first, in file order), or none ran (`(none)`).
    Fail {
        /// The verifier's name.
        verifier: String,
        /// What it saw.
        saw: String,
    },
    /// The run could not complete.
    Error {
        /// What stopped it.
        reason: String,
    },
}

/// The verifier name of the failure "no verifier ran".
pub const NO_VERIFIER: &str = "(none)";
/// What the failure "no verifier ran" saw.
pub const NO_VERIFIER_SAW: &str = "no verifier ran: no tests, no pass";

impl Verdict {
    /// Returns `"pass"`, `"fail"` or `"error"`.
    pub fn label(&self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail { .. } => "fail",
            Verdict::Error { .. } => "error",
        }
    }

    /// Returns the verdict of a completed run from its verifiers' results: the first that
    /// did not hold fails the run; no result at all fails it too.
    pub fn of(results: &[VerifierResult]) -> Verdict {
        if results.is_empty() {
            return Verdict::Fail {
                verifier: NO_VERIFIER.to_string(),
                saw: NO_VERIFIER_SAW.to_string(),
            };
        }
        match results.iter().find(|result| !result.held) {
            Some(failed) => Verdict::Fail {
                verifier: failed.name.clone(),
                saw: failed.saw.clone(),
            },
            None => Verdict::Pass,
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Verdict::Pass => f.write_str("pass"),
            Verdict::Fail { verifier, saw } => write!(f, "fail: {verifier}: {saw}"),
            Verdict::Error { reason } => write!(f, "error: {reason}"),
        }
    }
}

/// One verifier's result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VerifierResult {
    /// The verifier's name (`name = "…"`, or `<kind> <target>`).
    pub name: String,
    /// The line of its `[[verify]]` entry.
    pub line: u64,
    /// Whether it held.
    pub held: bool,
    /// What it saw: the evidence when it held, the mismatch when it did not.
    pub saw: String,
}

/// Why the agent stopped the run. These are never handed to the model: a replay that cannot
/// answer, or a policy the pipeline broke, makes the run itself meaningless.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AgentError {
    /// A model call failed in a way no retry helps: no fixture entry matched, an HTTP error
    /// that is not retryable (4xx other than 429), a denied or failed recording.
    #[error("model call of turn {turn}: {error}")]
    Model {
        /// The turn (1-based).
        turn: u32,
        /// What the model actor answered.
        error: LlmError,
    },
    /// A tool call reached something that stops the run: an fs escape, an unmatched process
    /// or MCP replay.
    #[error("tool call {call} ({tool}): {error}")]
    Tool {
        /// The tool's name as the model sees it.
        tool: String,
        /// The call id.
        call: String,
        /// What failed (boxed: it keeps results small).
        error: Box<ToolFailure>,
    },
    /// An MCP server could not list its tools at the start of the agent.
    #[error("MCP server {server:?}: tools/list failed: {error}")]
    McpList {
        /// The `[[mcp]]` server.
        server: String,
        /// What the server answered.
        error: McpCallError,
    },
    /// The scenario lacks what the agent needs (a model, `[fs]` for the fs tools, …); the
    /// scenario check reports these before any run.
    #[error("the scenario cannot run the agent: {0}")]
    Setup(String),
    /// A gate verifier's program run hit an unmatched replay.
    #[error("verifier {verifier:?}: {error}")]
    Gate {
        /// The verifier's name.
        verifier: String,
        /// What the process actor answered (boxed: it keeps results small).
        error: Box<ProcessError>,
    },
}

/// The capability error behind an [`AgentError::Tool`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ToolFailure {
    /// An fs call escaped the overlay root.
    #[error(transparent)]
    Fs(#[from] FsError),
    /// A process call that the process tape cannot answer.
    #[error(transparent)]
    Process(#[from] ProcessError),
    /// An MCP call that the cassette cannot answer.
    #[error(transparent)]
    Mcp(#[from] McpCallError),
}

impl AgentError {
    /// Returns a short machine-readable name of the error kind.
    pub fn kind(&self) -> &'static str {
        match self {
            AgentError::Model { error, .. } => match error {
                LlmError::Unmatched { .. } => "llm_unmatched",
                LlmError::Denied(_) => "net_denied",
                _ => "llm_error",
            },
            AgentError::Tool { error, .. } => match **error {
                ToolFailure::Fs(_) => "fs_escape",
                ToolFailure::Process(_) => "process_replay",
                ToolFailure::Mcp(_) => "mcp_replay",
            },
            AgentError::Gate { .. } => "process_replay",
            AgentError::McpList { .. } => "mcp_replay",
            AgentError::Setup(_) => "config",
        }
    }
}

/// What stopped a run. Every variant is fatal to the run; its verdict is `error`.
#[derive(Debug, thiserror::Error)]
pub enum EvalFailure {
    /// The engine stopped the run (deadlock, limit, task panic, tape, configuration).
    #[error(transparent)]
    Sim(#[from] SimError),
    /// A scripted step failed.
    #[error(transparent)]
    Step(#[from] StepError),
    /// The agent (or a verifier's gate) hit something that stops the run.
    #[error(transparent)]
    Agent(#[from] AgentError),
}

impl EvalFailure {
    /// Returns a short machine-readable name of the failure kind: the engine's kinds
    /// ([`SimError::kind`]), `step_failed`, or the agent's ([`AgentError::kind`]).
    pub fn kind(&self) -> &'static str {
        match self {
            EvalFailure::Sim(error) => error.kind(),
            EvalFailure::Step(_) => "step_failed",
            EvalFailure::Agent(error) => error.kind(),
        }
    }
}

/// What a run of an eval scenario returns, whatever its verdict.
#[derive(Debug)]
pub struct EvalReport {
    /// The seed.
    pub seed: u64,
    /// Virtual time at the end, in nanoseconds.
    pub end_ns: u64,
    /// Timer events popped.
    pub events: u64,
    /// Records written (not counting tape meta records); when the engine stopped the run,
    /// the tape's record count (0 without a tape).
    pub records: u64,
    /// A fingerprint of every record; 0 when the engine stopped the run.
    pub fingerprint: u64,
    /// The tape, when one was written.
    pub tape: Option<TapeSummary>,
    /// The tape file, when the tape went to a file.
    pub tape_path: Option<PathBuf>,
    /// The verdict (also the tape footer's, as its `Display`).
    pub verdict: Verdict,
    /// Each verifier's result, in file order (empty when the run did not complete).
    pub verifiers: Vec<VerifierResult>,
    /// Every scripted `outcome` step that ran, as `(name, value)`, in the order they ran.
    pub outcomes: Vec<(String, Value)>,
    /// What the run changed in its overlay, when the scenario has `[fs]`.
    pub fs_diff: Option<FsDiff>,
    /// The agent's turns, tool calls and final answer, when the scenario has `[agent]`.
    pub transcript: Option<Transcript>,
    /// What stopped the run, for an `error` verdict.
    pub failure: Option<Box<EvalFailure>>,
    /// Each world-backed `[[mcp]]` server's final state and report, in file order (what
    /// `simtape run --evidence` writes as `world-<server>.json`).
    pub worlds: Vec<WorldOutcome>,
}

/// A world server's end of a run: its final state, and its goal and collateral-damage report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WorldOutcome {
    /// The `[[mcp]]` server's name.
    pub server: String,
    /// The world's state at the end of the run.
    pub state: Value,
    /// Goal assertions, collateral damage and every tool call, as `simtape mcp world` reports.
    pub report: WorldReport,
}
