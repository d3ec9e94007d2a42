//! What a run of an eval scenario returns: its summary, the verdict (the type is
//! `simtape_eval`'s), each verifier's result, and what stopped the run when it did not
//! complete.

use serde::Serialize;
use serde_json::Value;
use simtape::cap::fs::FsError;
use simtape::cap::llm::LlmError;
use simtape::cap::process::ProcessError;
use simtape::scenario::{ScenarioFailure, ScenarioReport, StepError};
use simtape::SimError;
use simtape_eval::run_json::{AgentJson, FailureJson, OutcomeJson, RunJson};
use simtape_eval::{Verdict, VerifierResult};
use simtape_mcp::actor::McpCallError;
use simtape_mcp::world::server::WorldReport;

use crate::command::GateRun;
use crate::transcript::Transcript;

/// Why the agent stopped the run. These are never handed to the model: a replay that cannot
/// answer, or a policy the pipeline broke, makes the run itself meaningless.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
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
    /// A `[harness]` run cannot go on (its state, a part that could not run).
    #[error("[harness]: {0}")]
    Harness(Box<crate::harness_spec::error::HarnessError>),
    /// The agent program ran over its wall-clock timeout and was stopped.
    #[error("the agent program ran over its timeout of {timeout_ms} ms and was stopped")]
    Timeout {
        /// The scenario's `[agent] timeout`.
        timeout_ms: u64,
    },
    /// A request of the agent program matched no recording (an LLM fixture entry, an MCP
    /// cassette's call).
    #[error("the agent program's request matched no recording: {request}")]
    Unmatched {
        /// Which request: the model request's digest, or the MCP server and why.
        request: String,
    },
    /// The agent program's sandbox failed after the run began.
    #[error("the agent program's sandbox failed: {reason}")]
    Sandbox {
        /// The step that failed, and why.
        reason: String,
    },
    /// The agent program tried a connection the `[network]` policy does not allow.
    #[error("the agent program's connection was refused: {denied}")]
    NetDenied {
        /// The policy's refusal (host, port, rules).
        denied: simtape::cap::net::NetError,
    },
    /// An `fs` verifier's path escaped the overlay root (through a symlink).
    #[error("verifier {verifier:?}: {error}")]
    VerifierEscape {
        /// The verifier's name.
        verifier: String,
        /// The escape.
        error: FsError,
    },
    /// A gate verifier's program run hit an unmatched replay, or a program the process
    /// policy does not cover (hermetic).
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
#[non_exhaustive]
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
    /// The model call an MCP server asked the agent for (sampling) failed as no retry helps.
    #[error("the model call the MCP server asked for (sampling): {0}")]
    Model(LlmError),
}

impl AgentError {
    /// Returns a short machine-readable name of the error kind.
    pub fn kind(&self) -> &'static str {
        match self {
            AgentError::Model { error, .. } => model_kind(error),
            AgentError::Tool { error, .. } => match &**error {
                ToolFailure::Fs(_) => "fs_escape",
                ToolFailure::Process(_) => "process_replay",
                ToolFailure::Mcp(_) => "mcp_replay",
                ToolFailure::Model(error) => model_kind(error),
            },
            AgentError::VerifierEscape { .. } => "fs_escape",
            AgentError::Gate { error, .. } => match **error {
                ProcessError::NotCovered { .. } => "tool_disabled",
                _ => "process_replay",
            },
            AgentError::McpList { .. } => "mcp_replay",
            AgentError::Setup(_) => "config",
            AgentError::Harness(error) => error.kind(),
            AgentError::Timeout { .. } => "agent_timeout",
            AgentError::Unmatched { .. } => "llm_unmatched",
            AgentError::NetDenied { .. } => "net_denied",
            AgentError::Sandbox { .. } => "sandbox",
        }
    }
}

/// Returns the kind of a model call's failure.
fn model_kind(error: &LlmError) -> &'static str {
    match error {
        LlmError::Unmatched { .. } => "llm_unmatched",
        LlmError::Denied(_) => "net_denied",
        _ => "llm_error",
    }
}

/// What stopped a run. Every variant is fatal to the run; its verdict is `blocked` when a
/// policy stopped it ([`EvalFailure::policy`]), else `error`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EvalFailure {
    /// What stops a scripted run too (the core's one failure model): the engine stopped the
    /// run (deadlock, limit, task panic, tape, configuration) or a scripted step failed.
    #[error(transparent)]
    Scenario(#[from] ScenarioFailure),
    /// The agent (or a verifier's gate) hit something that stops the run.
    #[error(transparent)]
    Agent(#[from] AgentError),
}

impl EvalFailure {
    /// Returns a short machine-readable name of the failure kind: the scripted run's
    /// ([`ScenarioFailure::kind`]) or the agent's ([`AgentError::kind`]).
    pub fn kind(&self) -> &'static str {
        match self {
            EvalFailure::Scenario(failure) => failure.kind(),
            EvalFailure::Agent(error) => error.kind(),
        }
    }

    /// Returns the policy that stopped the run, when one did: egress denied (`net_denied`),
    /// a path out of the io boundary (`fs_escape`), a program a gate needs that the process
    /// policy leaves out (`tool_disabled`). A scripted step a policy refuses is stopped by
    /// the same policy as the agent would be ([`simtape::scenario::CallError::policy`]).
    pub fn policy(&self) -> Option<&'static str> {
        match self {
            EvalFailure::Agent(error) => match error.kind() {
                kind @ ("net_denied" | "fs_escape" | "tool_disabled") => Some(kind),
                _ => None,
            },
            EvalFailure::Scenario(failure) => failure.policy(),
        }
    }

    /// Returns the verdict of a run this stopped: blocked when a policy did, else error.
    pub fn verdict(&self) -> Verdict {
        let reason = self.to_string();
        match self.policy() {
            Some(policy) => Verdict::Blocked {
                policy: policy.to_string(),
                reason,
            },
            None => Verdict::Error { reason },
        }
    }
}

impl From<SimError> for EvalFailure {
    fn from(error: SimError) -> EvalFailure {
        EvalFailure::Scenario(ScenarioFailure::Sim(error))
    }
}

impl From<StepError> for EvalFailure {
    fn from(error: StepError) -> EvalFailure {
        EvalFailure::Scenario(ScenarioFailure::Step(error))
    }
}

/// What a run of an eval scenario returns, whatever its verdict.
#[derive(Debug)]
pub struct EvalReport {
    /// The scripted run's part, in the core's results model: the seed, time, counts,
    /// fingerprint and tape (when the engine stopped the run, `records` is the tape's record
    /// count, 0 without a tape, and `fingerprint` is 0), every `outcome` step that ran, and
    /// what the run changed in its overlay.
    pub run: ScenarioReport,
    /// The verdict (also the tape footer's, as its `Display`).
    pub verdict: Verdict,
    /// Each verifier's result, in file order (empty when the run did not complete).
    pub verifiers: Vec<VerifierResult>,
    /// The agent's turns, tool calls and final answer, when the scenario has `[agent]`.
    pub transcript: Option<Transcript>,
    /// What stopped the run, for an `error` verdict.
    pub failure: Option<Box<EvalFailure>>,
    /// Each world-backed `[[mcp]]` server's final state and report, in file order (what
    /// `simtape run --evidence` writes as `world-<server>.json`).
    pub worlds: Vec<WorldOutcome>,
    /// How a `[harness]` run went (sessions, features, invariants), when it completed.
    pub harness: Option<simtape_eval::harness::HarnessOutcome>,
    /// Each `gate` verifier's run that happened, in file order of the gates: its exit code,
    /// or why it did not run (the evidence's `tests.json`).
    pub gates: Vec<GateRun>,
    /// Every property of the scenario in file order, with whether its condition was true
    /// (false, and said, for a run stopped before they were judged).
    pub properties: Vec<simtape_eval::property::PropertyResult>,
    /// How an agent program was contained (`namespaces`, `off`), as the tape header says;
    /// `None` for the built-in agent.
    pub sandbox: Option<String>,
    /// The last lines an agent program wrote to stderr, normalized, when it exited with a
    /// failure: for the FAIL reason people read. Never on the tape (docs/agents.md, "Its
    /// stderr"), so a replay has none.
    pub stderr_tail: Vec<String>,
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

impl EvalReport {
    /// This run as a sweep (or an exploration) records it: its verdict, harness outcome,
    /// retries, model calls and property hits (what each property saw stays with the run).
    pub fn seed_result(&self) -> simtape_eval::sweep::SeedResult {
        let failure_kind = self.failure.as_ref().map(|failure| failure.kind());
        let mut result =
            simtape_eval::sweep::SeedResult::of(&self.run.summary, &self.verdict, failure_kind);
        result.harness = self.harness.clone();
        result.retries = self.transcript.as_ref().map(|t| t.retries);
        result.properties = self
            .properties
            .iter()
            .map(|p| simtape_eval::property::PropertyResult {
                saw: String::new(),
                ..p.clone()
            })
            .collect();
        result.model_calls = self.transcript.as_ref().map(|t| t.turns.len() as u64);
        // An agent program's last stderr lines follow the reason's first line, which alone
        // decides its failure cluster.
        if let Some(reason) = result
            .reason
            .as_mut()
            .filter(|_| !self.stderr_tail.is_empty())
        {
            reason.message.push_str("\nthe agent's stderr ended with:");
            for line in &self.stderr_tail {
                reason.message.push_str("\n  | ");
                reason.message.push_str(line);
            }
        }
        result
    }

    /// Returns the JSON of this run of `scenario` (what `simtape run --json` prints and the
    /// evidence's `verdict.json` holds).
    pub fn to_json(&self, scenario: &str) -> RunJson {
        let error = self.failure.as_ref().map(|failure| FailureJson {
            kind: failure.kind().to_string(),
            message: failure.to_string(),
        });
        let mut json = RunJson::new(scenario, &self.run.summary, &self.verdict, error);
        json.verifiers = self.verifiers.clone();
        json.properties = self.properties.clone();
        json.sandbox = self.sandbox.clone();
        json.outcomes = self
            .run
            .outcomes
            .iter()
            .map(|(name, value)| OutcomeJson {
                name: name.clone(),
                value: value.clone(),
            })
            .collect();
        json.agent = self.transcript.as_ref().map(|t| AgentJson {
            turns: t.turns.len(),
            tool_calls: t.calls().count(),
            retries: t.retries,
            end: t.end_label(),
            answer: t.answer.clone(),
        });
        json
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use simtape::cap::net::Network;

    #[test]
    fn a_policy_stop_is_blocked_and_anything_else_an_error() {
        // Goal: the agent's egress denied is blocked (`net_denied`); an unmatched replay and
        // a scripted step's failure stay errors.
        let denied = Network::deny().check("api.openai.com", 443).unwrap_err();
        let failure = EvalFailure::Agent(AgentError::Model {
            turn: 1,
            error: LlmError::Denied(denied),
        });
        assert_eq!(failure.policy(), Some("net_denied"));
        assert!(failure
            .verdict()
            .to_string()
            .starts_with("blocked: model call of turn 1: "));
        let unmatched = EvalFailure::Agent(AgentError::Unmatched {
            request: "sha256:00".into(),
        });
        assert_eq!(unmatched.policy(), None);
        assert_eq!(unmatched.verdict().label(), "error");
        // An agent program's connection refused in its sandbox blocks the run; its sandbox
        // failing is an error.
        let program = EvalFailure::Agent(AgentError::NetDenied {
            denied: Network::deny().check("api.openai.com", 443).unwrap_err(),
        });
        assert_eq!(program.policy(), Some("net_denied"));
        assert_eq!(program.verdict().label(), "blocked");
        let broken = EvalFailure::Agent(AgentError::Sandbox {
            reason: "mount overlay at /project: No space left on device".into(),
        });
        assert_eq!(
            (broken.kind(), broken.verdict().label()),
            ("sandbox", "error")
        );
    }
}
