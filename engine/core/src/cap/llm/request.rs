//! The provider-neutral chat model: what a pipeline asks a model and what it gets back.
//!
//! The shapes are the common denominator of OpenAI Chat Completions, OpenAI Responses and
//! Anthropic Messages, so record mode maps each wire format
//! onto them without losing what replay matches on.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Instructions to the model.
    System,
    /// The user (or the pipeline speaking for it).
    User,
    /// The model's earlier turns.
    Assistant,
    /// The result of a tool call, answering the assistant's `tool_calls`.
    Tool,
}

/// A tool call the model asks for (or asked for, in an earlier assistant message).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call id that the tool result refers back to.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments, as a JSON object.
    pub arguments: serde_json::Value,
}

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Who wrote it.
    pub role: Role,
    /// Its text (for a tool message, the tool result).
    pub content: String,
    /// The tool calls of an assistant message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// For a tool message, the id of the call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl Message {
    /// Returns a system message.
    pub fn system(content: impl Into<String>) -> Message {
        Message::plain(Role::System, content)
    }

    /// Returns a user message.
    pub fn user(content: impl Into<String>) -> Message {
        Message::plain(Role::User, content)
    }

    /// Returns an assistant message without tool calls.
    pub fn assistant(content: impl Into<String>) -> Message {
        Message::plain(Role::Assistant, content)
    }

    /// Returns a tool-result message answering the call `tool_call_id`.
    pub fn tool_result(tool_call_id: impl Into<String>, content: impl Into<String>) -> Message {
        Message {
            tool_call_id: Some(tool_call_id.into()),
            ..Message::plain(Role::Tool, content)
        }
    }

    fn plain(role: Role, content: impl Into<String>) -> Message {
        Message {
            role,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    /// The tool's name.
    pub name: String,
    /// What it does, for the model.
    #[serde(default)]
    pub description: String,
    /// The JSON schema of its arguments.
    #[serde(default)]
    pub parameters: serde_json::Value,
}

impl ToolDefinition {
    /// Returns a tool with a name only (enough for matching by tool name).
    pub fn named(name: impl Into<String>) -> ToolDefinition {
        ToolDefinition {
            name: name.into(),
            description: String::new(),
            parameters: serde_json::Value::Null,
        }
    }
}

/// A request's match text, joined only when a match condition or usage rule reads it: most
/// fixtures match by turn or last message, and the join grows with the conversation.
#[derive(Debug)]
pub struct MatchText<'a> {
    request: &'a ChatRequest,
    joined: std::cell::OnceCell<String>,
}

impl<'a> MatchText<'a> {
    /// Returns the (not yet joined) match text of `request`.
    pub fn of(request: &'a ChatRequest) -> MatchText<'a> {
        MatchText {
            request,
            joined: std::cell::OnceCell::new(),
        }
    }

    /// Returns [`ChatRequest::match_text`], joined on first use.
    pub fn get(&self) -> &str {
        self.joined.get_or_init(|| self.request.match_text())
    }
}

/// One model call.
///
/// ```
/// use simtape::cap::llm::{ChatRequest, Message};
/// let request = ChatRequest::new("gpt-x", vec![Message::user("Weather in Paris?")]);
/// assert_eq!(request.digest().len(), 64);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    /// The model name.
    pub model: String,
    /// The conversation so far.
    pub messages: Vec<Message>,
    /// The tools offered. Shared, so the calls of one conversation hand the model the same
    /// list without copying it, and the LLM actor knows an unchanged list by its address.
    #[serde(default)]
    pub tools: Arc<[ToolDefinition]>,
    /// The fixture scope this call belongs to (an agent's name, say); `None` is unscoped.
    #[serde(default)]
    pub scope: Option<String>,
}

impl ChatRequest {
    /// Returns a request without tools or scope.
    pub fn new(model: impl Into<String>, messages: Vec<Message>) -> ChatRequest {
        ChatRequest {
            model: model.into(),
            messages,
            tools: Arc::new([]),
            scope: None,
        }
    }

    /// Returns the request with `tools` offered (a `Vec`, or an `Arc` to share one list).
    pub fn with_tools(mut self, tools: impl Into<Arc<[ToolDefinition]>>) -> ChatRequest {
        self.tools = tools.into();
        self
    }

    /// Returns the request in `scope`.
    pub fn with_scope(mut self, scope: impl Into<String>) -> ChatRequest {
        self.scope = Some(scope.into());
        self
    }

    /// Returns the request digest: SHA-256 over the digests of each message's canonical JSON
    /// (object keys sorted, no spaces) and of the head (model, scope, the tool list's digest),
    /// as hex. `docs/llm-fixtures.md` gives the exact definition.
    pub fn digest(&self) -> String {
        super::digest::request_digest(self)
    }

    /// Returns the text a `text` match sees: every non-system message's content, joined by `\n`.
    pub fn match_text(&self) -> String {
        // System prompts are left out, as in Harn's match text, so one fixture matches the
        // same conversation under different instructions.
        let parts: Vec<&str> = self
            .messages
            .iter()
            .filter(|m| m.role != Role::System)
            .map(|m| m.content.as_str())
            .collect();
        parts.join("\n")
    }

    /// Returns the last message's content, if any.
    pub fn last_message(&self) -> Option<&str> {
        self.messages.last().map(|m| m.content.as_str())
    }

    /// Returns the content of the last tool-result message, if any.
    pub fn last_tool_result(&self) -> Option<&str> {
        self.messages
            .iter()
            .rev()
            .find(|m| m.role == Role::Tool)
            .map(|m| m.content.as_str())
    }

    /// Returns the bytes the usage rule counts as input: every message's content and tool-call
    /// arguments, plus the tool definitions.
    pub fn input_bytes(&self) -> u64 {
        let messages: u64 = self
            .messages
            .iter()
            .map(super::digest::message_input_bytes)
            .sum();
        messages + super::digest::tools_input_bytes(&self.tools)
    }
}

/// Token counts of one answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Usage {
    /// Tokens of the prompt.
    pub input_tokens: u64,
    /// Tokens of the answer.
    pub output_tokens: u64,
}

/// The model's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatResponse {
    /// The model name the answer claims.
    pub model: String,
    /// The answer's text (may be empty when it only calls tools).
    pub text: String,
    /// The tool calls it asks for.
    pub tool_calls: Vec<ToolCall>,
    /// Why it stopped: `end_turn`, `tool_use`, `max_tokens`, … (Anthropic's vocabulary).
    pub stop_reason: String,
    /// Token counts.
    pub usage: Usage,
    /// The model's extended thinking before its answer, when it gave any. Last, and left out of
    /// the record when `None`, so tapes of answers without thinking keep their bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<Thinking>,
}

/// A thinking block: the reasoning text and the signature the provider sealed it with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Thinking {
    /// The reasoning text.
    pub text: String,
    /// The provider's signature over it. Agents send it back unchanged in later turns; simtape
    /// never checks it (thinking blocks are not part of a request's match text or digest).
    pub signature: String,
}

impl ChatResponse {
    /// Returns the bytes the usage rule counts as output: the text plus each tool call's name
    /// and JSON arguments.
    pub fn output_bytes(&self) -> u64 {
        let calls: u64 = self
            .tool_calls
            .iter()
            .map(|c| c.name.len() as u64 + super::digest::json_len(&c.arguments))
            .sum();
        let thinking = self.thinking.as_ref().map_or(0, |t| t.text.len() as u64);
        self.text.len() as u64 + calls + thinking
    }
}
