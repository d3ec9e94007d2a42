//! The built-in agent as an MCP client: what it answers when a server asks it something during
//! a tool call (a recorded server's requests, replayed as the call's steps).
//!
//! * `sampling/createMessage`: a model call through the run's LLM actor, so the fixture
//!   answers it and it is on the tape as the model's request and reply. The request is the
//!   sampling's `systemPrompt` and `messages` (text; any other block as a `[type content]`
//!   note) for the agent's model, in the scope `mcp:<server>`, without tools; the answer
//!   becomes a `CreateMessageResult` (`role`, text `content`, `model`, `stopReason`).
//!   `maxTokens`, `temperature`, `stopSequences` and `modelPreferences` do not reach the
//!   model: the simulation's model request has no such fields.
//! * `roots/list`: the fs root as `file:///` (the agent's view of its filesystem, the same on
//!   every machine), or no roots without `[fs]`.
//! * `ping`: `{}`.
//! * `elicitation/create`: the server's `[[mcp]] elicitation` answers in order, then
//!   `{"action": "decline"}`.
//!
//! Notifications need no answer; they are on the tape as the MCP actor's steps.

use serde_json::{json, Value};
use simtape::cap::llm::{ChatRequest, ChatResponse, Message};
use simtape_mcp::actor::McpClient;

use super::Failure;
use crate::ctx::Ctx;
use crate::report::{AgentError, ToolFailure};

/// The fs root as the agent sees it, in `roots/list`.
const ROOT_URI: &str = "file:///";

/// The agent answering for one tool call to the `[[mcp]]` server at `server`.
pub(crate) struct AgentClient<'a> {
    pub(crate) ctx: &'a Ctx,
    pub(crate) server: usize,
}

impl McpClient for AgentClient<'_> {
    type Error = Failure;

    async fn answer(&self, method: &str, params: &Value) -> Result<Value, Failure> {
        match method {
            "sampling/createMessage" => self.sample(params).await,
            "roots/list" => Ok(self.roots()),
            "ping" => Ok(json!({})),
            "elicitation/create" => Ok(self.elicit()),
            other => Err(Failure::Tool(format!(
                "the MCP server asked the agent {other:?}, which it does not answer"
            ))),
        }
    }
}

impl AgentClient<'_> {
    async fn sample(&self, params: &Value) -> Result<Value, Failure> {
        let server = &self.ctx.shared.eval.mcp[self.server].name;
        let model = self
            .ctx
            .shared
            .eval
            .agent
            .as_ref()
            .map_or("", |agent| agent.model.as_str());
        let mut request = sampling_request(model, server, params);
        let turn = self
            .ctx
            .state
            .transcript
            .borrow()
            .turns
            .last()
            .map_or(0, |t| t.turn);
        match crate::agent::ask(self.ctx, turn, &mut request).await {
            Ok(Some(response)) => Ok(create_message_result(&response)),
            Ok(None) => Err(Failure::Tool(
                "the model call the MCP server asked for (sampling) spent the retry budget".into(),
            )),
            Err(AgentError::Model { error, .. }) => Err(Failure::Fatal(ToolFailure::Model(error))),
            Err(other) => unreachable!("a model call fails only with a model error: {other}"),
        }
    }

    fn roots(&self) -> Value {
        if self.ctx.host.capabilities().fs().is_some() {
            json!({"roots": [{"uri": ROOT_URI, "name": "fs"}]})
        } else {
            json!({"roots": []})
        }
    }

    fn elicit(&self) -> Value {
        let answers = &self.ctx.shared.eval.mcp[self.server].elicitation;
        let mut used = self.ctx.state.elicited.borrow_mut();
        let next = used.entry(self.server).or_insert(0);
        let answer = answers.get(*next).cloned();
        *next += 1;
        answer.unwrap_or_else(|| json!({"action": "decline"}))
    }
}

/// Returns the model request for a sampling request's `params`.
fn sampling_request(model: &str, server: &str, params: &Value) -> ChatRequest {
    let mut messages = Vec::new();
    if let Some(system) = params.get("systemPrompt").and_then(Value::as_str) {
        messages.push(Message::system(system));
    }
    for message in params["messages"].as_array().into_iter().flatten() {
        let text = content_text(&message["content"]);
        messages.push(match message["role"].as_str() {
            Some("assistant") => Message::assistant(text),
            _ => Message::user(text),
        });
    }
    ChatRequest::new(model, messages).with_scope(crate::ctx::mcp_actor_name(server))
}

/// Returns the text of one content block or an array of them, blocks joined by newlines.
fn content_text(content: &Value) -> String {
    let blocks: Vec<&Value> = match content {
        Value::Array(blocks) => blocks.iter().collect(),
        block => vec![block],
    };
    let texts: Vec<String> = blocks
        .into_iter()
        .map(|block| match block["type"].as_str() {
            Some("text") => block["text"].as_str().unwrap_or("").to_string(),
            Some(other) => format!("[{other} content]"),
            None => String::new(),
        })
        .collect();
    texts.join("\n")
}

/// Returns the model's answer as an MCP `CreateMessageResult`.
fn create_message_result(response: &ChatResponse) -> Value {
    let mut result = json!({
        "role": "assistant",
        "content": {"type": "text", "text": response.text},
        "model": response.model,
    });
    if let Some(stop) = stop_reason(&response.stop_reason) {
        result["stopReason"] = json!(stop);
    }
    result
}

/// Returns MCP's name for a stop reason in Anthropic's vocabulary (others pass as they are).
fn stop_reason(anthropic: &str) -> Option<&str> {
    match anthropic {
        "" => None,
        "end_turn" => Some("endTurn"),
        "max_tokens" => Some("maxTokens"),
        "stop_sequence" => Some("stopSequence"),
        "tool_use" => Some("toolUse"),
        other => Some(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sampling_params_become_a_scoped_model_request_and_the_answer_a_result() {
        // Goal: the system prompt leads, roles and text blocks carry over, a non-text block is
        // a note; the answer's stop reason takes MCP's spelling.
        let params = json!({
            "systemPrompt": "Be brief.",
            "maxTokens": 10,
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "hi"}},
                {"role": "assistant", "content": [{"type": "text", "text": "yo"}, {"type": "image", "data": "…"}]},
            ],
        });
        let request = sampling_request("m", "everything", &params);
        let texts: Vec<&str> = request
            .messages
            .iter()
            .map(|m| m.content.as_str())
            .collect();
        assert_eq!(texts, ["Be brief.", "hi", "yo\n[image content]"]);
        assert_eq!(request.scope.as_deref(), Some("mcp:everything"));
        assert!(request.tools.is_empty());
        let response = ChatResponse {
            model: "m".into(),
            text: "ok".into(),
            tool_calls: Vec::new(),
            stop_reason: "end_turn".into(),
            usage: Default::default(),
            thinking: None,
        };
        let result = create_message_result(&response);
        assert_eq!(
            result,
            json!({"role": "assistant", "content": {"type": "text", "text": "ok"},
                   "model": "m", "stopReason": "endTurn"})
        );
    }
}
