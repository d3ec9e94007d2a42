//! The agent's records: a zero-latency actor whose requests put the harness's own steps on
//! the tape, between the model's and the tools' records.
//!
//! | operation  | when                                       | body                              |
//! |------------|--------------------------------------------|-----------------------------------|
//! | `start`    | the agent starts, its tools listed         | model, tool names                 |
//! | `turn`     | before each model call                     | turn                              |
//! | `retry`    | before a back-off sleep                    | what, attempt, wait, error        |
//! | `call`     | a tool call starts                         | id, tool name, arguments          |
//! | `result`   | it ends                                    | id, ok, size and SHA-256 of text  |
//! | `end`      | the agent stops                            | reason, turns                     |
//! | `verifier` | a verifier has run                         | name, held, saw                   |
//! | `session`  | a `[harness]` session starts               | session, phase, features          |
//! | `crash`    | the seeded fault kills a session           | session, where                    |
//! | `checkpoint` | a harness session ends cleanly           | session, status, note             |
//! | `health_check` | a harness health check failed          | session, held, saw                |
//! | `resume`   | a session after a crash resumes            | session, checkpoint               |
//!
//! Each is a `request`/`reply` pair of the `agent` actor (the reply is empty).

use serde::Serialize;
use serde_json::Value;
use simtape::actor::{Actor, ActorContext, ActorRef, Answer};

use crate::transcript::EndReason;

/// The actor name the harness's records are under (in the tape's actor table).
pub const AGENT_ACTOR: &str = "agent";

/// The harness's own step, as the tape shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentEvent {
    /// The agent starts with these tools.
    Start {
        /// The model name the requests carry.
        model: String,
        /// The tools offered, in order.
        tools: Vec<String>,
    },
    /// A model turn starts.
    Turn {
        /// The turn (1-based).
        turn: u32,
    },
    /// A failed call is retried after a back-off.
    Retry {
        /// `model` or the tool call's id.
        what: String,
        /// The consecutive failure being retried (1-based).
        attempt: u32,
        /// The back-off, in virtual milliseconds.
        wait_ms: u64,
        /// The error.
        error: String,
    },
    /// A tool call starts.
    Call {
        /// The call id.
        id: String,
        /// The tool's name.
        tool: String,
        /// The arguments.
        arguments: Value,
    },
    /// A tool call ends.
    Result {
        /// The call id.
        id: String,
        /// Whether it succeeded.
        ok: bool,
        /// The result text's size in bytes.
        size: u64,
        /// The result text's SHA-256, hex.
        sha256: String,
    },
    /// The agent stops.
    End {
        /// Why.
        reason: EndReason,
        /// Model turns made.
        turns: u32,
    },
    /// A verifier has run.
    Verifier {
        /// Its name.
        name: String,
        /// Whether it held.
        held: bool,
        /// What it saw.
        saw: String,
    },
    /// A property has been judged.
    Property {
        /// Its name.
        name: String,
        /// How it must hold (`always`, `sometimes`, `reachable`, `unreachable`).
        kind: String,
        /// Whether its condition was true.
        hit: bool,
        /// What its condition saw: the evidence, or the first part that was false.
        saw: String,
    },
    /// A `[harness]` session starts: the initializer (session 0) or a task iteration.
    Session {
        /// The session (0 is the initializer).
        session: u32,
        /// `initializer` or `task`.
        phase: String,
        /// The features it takes on.
        features: Vec<String>,
    },
    /// The seeded crash fault killed a harness session; it leaves no checkpoint.
    Crash {
        /// The session.
        session: u32,
        /// Where: `turn N`, or `before validation`.
        at: String,
    },
    /// A harness session's health check did not hold: the session does no work.
    HealthCheck {
        /// The session.
        session: u32,
        /// Whether it held.
        held: bool,
        /// What it saw.
        saw: String,
    },
    /// A session after a crashed one resumes from a checkpoint.
    Resume {
        /// The session.
        session: u32,
        /// The session whose checkpoint it resumes from.
        checkpoint: u32,
    },
    /// A harness session ended cleanly and wrote its checkpoint.
    Checkpoint {
        /// The session.
        session: u32,
        /// `succeeded` or `failed`.
        status: String,
        /// What happened.
        note: String,
    },
}

/// The actor behind the `agent` records: it answers at once, with nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct AgentLog;

impl Actor for AgentLog {
    type Request = AgentEvent;
    type Response = ();

    fn operation(&self, event: &AgentEvent) -> &'static str {
        match event {
            AgentEvent::Start { .. } => "start",
            AgentEvent::Turn { .. } => "turn",
            AgentEvent::Retry { .. } => "retry",
            AgentEvent::Call { .. } => "call",
            AgentEvent::Result { .. } => "result",
            AgentEvent::End { .. } => "end",
            AgentEvent::Verifier { .. } => "verifier",
            AgentEvent::Property { .. } => "property",
            AgentEvent::Session { .. } => "session",
            AgentEvent::Crash { .. } => "crash",
            AgentEvent::Checkpoint { .. } => "checkpoint",
            AgentEvent::HealthCheck { .. } => "health_check",
            AgentEvent::Resume { .. } => "resume",
        }
    }

    fn handle(&mut self, _: &AgentEvent, _: &mut ActorContext<'_>) -> Answer<()> {
        Answer {
            latency_ns: 0,
            response: (),
        }
    }
}

/// Writes `event` to the tape through the `agent` actor; takes no virtual time.
pub(crate) async fn record(log: ActorRef<AgentLog>, event: AgentEvent) {
    log.call(event).await;
}
