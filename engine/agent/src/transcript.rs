//! The transcript: the agent's turns, tool calls and final answer, as people and verifiers
//! read them (the tape holds the same facts, as records).

use serde::Serialize;
use serde_json::Value;

/// Why the agent stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EndReason {
    /// The model answered without tool calls: that text is the final answer.
    FinalAnswer,
    /// `max_turns` model calls were made without a final answer.
    MaxTurns,
    /// A model call failed again with the run's retry budget spent.
    RetryBudgetSpent,
    /// An agent program exited with a failure status or was ended by a signal, whatever it
    /// printed before.
    AgentExit,
}

impl EndReason {
    /// Returns the reason as written in transcripts and verdicts (`final_answer`, …).
    pub fn label(self) -> &'static str {
        match self {
            EndReason::FinalAnswer => "final_answer",
            EndReason::MaxTurns => "max_turns",
            EndReason::RetryBudgetSpent => "retry_budget_spent",
            EndReason::AgentExit => "agent_exit",
        }
    }
}

/// One tool call and its result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TranscriptCall {
    /// The call id the model gave (or the fixture generated).
    pub id: String,
    /// The tool's name as the model sees it.
    pub name: String,
    /// The arguments as the model sent them.
    pub arguments: Value,
    /// Whether the tool succeeded (an error result went back to the model as `error: …`).
    pub ok: bool,
    /// The tool result, as the model received it.
    pub result: String,
}

/// One model turn: what the model said and the tool calls it asked for.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TranscriptTurn {
    /// The turn (1-based).
    pub turn: u32,
    /// The model's text.
    pub text: String,
    /// The tool calls, in the order the model asked for them.
    pub tool_calls: Vec<TranscriptCall>,
}

/// One session of a `[harness]` run: its turns are a section of the transcript.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TranscriptSession {
    /// The session (0 is the initializer).
    pub session: u32,
    /// The features it took on.
    pub features: Vec<String>,
    /// Its first turn's index in [`Transcript::turns`] (its turns run to the next session's).
    pub first_turn: usize,
    /// How it ended: `succeeded`, `failed`, `crashed at turn N`, … (empty while it runs).
    pub ended: String,
}

impl TranscriptSession {
    /// Returns the session's one line (in `simtape run`'s report and the evidence's run log):
    /// the session, its features, its `turns` and their tool calls, how it ended.
    pub fn line(&self, turns: &[TranscriptTurn]) -> String {
        let features = if self.features.is_empty() {
            String::new()
        } else {
            format!(" ({})", self.features.join(", "))
        };
        let calls: usize = turns.iter().map(|turn| turn.tool_calls.len()).sum();
        format!(
            "session {}{features}: {} turn(s), {calls} tool call(s), {}",
            self.session,
            turns.len(),
            self.ended
        )
    }
}

/// The agent's side of a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Transcript {
    /// The turns that got an answer from the model, in order.
    pub turns: Vec<TranscriptTurn>,
    /// The final answer, when the model gave one.
    pub answer: Option<String>,
    /// Why the agent stopped; `None` when the run was stopped first.
    pub end: Option<EndReason>,
    /// Retries taken (model and MCP calls) from the run's budget.
    pub retries: u32,
    /// A `[harness]` run's sessions, in order; empty for a single-session run.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sessions: Vec<TranscriptSession>,
}

impl Transcript {
    /// Returns every tool call of the run, in order.
    pub fn calls(&self) -> impl Iterator<Item = &TranscriptCall> {
        self.turns.iter().flat_map(|turn| turn.tool_calls.iter())
    }

    /// Returns each session with its turns, in order.
    pub fn sections(&self) -> impl Iterator<Item = (&TranscriptSession, &[TranscriptTurn])> {
        self.sessions.iter().enumerate().map(|(index, session)| {
            let end = self
                .sessions
                .get(index + 1)
                .map_or(self.turns.len(), |next| next.first_turn);
            let start = session.first_turn.min(end);
            (session, &self.turns[start..end])
        })
    }

    /// Returns why the agent stopped, as a label (`running` when it never did).
    pub fn end_label(&self) -> &'static str {
        self.end.map_or("running", EndReason::label)
    }
}
