//! The typed handle pipeline code calls an MCP server through.

use serde_json::Value;
use simtape::actor::ActorRef;

use super::{McpActor, McpCallError, McpReply, McpRequest};

/// A handle to one registered MCP server; copy it freely into the pipeline's tasks.
///
/// ```no_run
/// # async fn example(tickets: simtape_mcp::actor::McpHandle) -> Result<(), simtape_mcp::actor::McpCallError> {
/// let result = tickets.call_tool("create", serde_json::json!({"title": "Printer on fire"})).await?;
/// if simtape_mcp::actor::is_tool_error(&result) {
///     // The tool ran and reported a failure; the model usually sees this text.
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct McpHandle(pub ActorRef<McpActor>);

impl McpHandle {
    /// Wraps the actor reference returned by `Builder::actor`.
    pub fn new(actor: ActorRef<McpActor>) -> McpHandle {
        McpHandle(actor)
    }

    /// Calls `tools/list` and returns the result (`{"tools": [...]}`).
    pub async fn list_tools(&self) -> Result<Value, McpCallError> {
        self.0.call(McpRequest::ListTools).await.result
    }

    /// Calls `tools/call` and returns the result (`content`, `structuredContent`,
    /// `isError`). A tool error result is `Ok`; see [`is_tool_error`].
    pub async fn call_tool(
        &self,
        name: impl Into<String>,
        arguments: Value,
    ) -> Result<Value, McpCallError> {
        let request = McpRequest::CallTool {
            name: name.into(),
            arguments,
        };
        self.0.call(request).await.result
    }

    /// Calls `tools/call` answering the requests the server makes of its client during the
    /// call: `answer(method, params)` is asked for each (`sampling/createMessage`,
    /// `elicitation/create`, `roots/list`) and returns the result to send back. Each question
    /// and each answer is a request and a reply of the actor, on the tape; an answer other
    /// than the recorded one is [`McpCallError::AnswerMismatch`].
    pub async fn call_tool_answering(
        &self,
        name: impl Into<String>,
        arguments: Value,
        mut answer: impl FnMut(&str, &Value) -> Value,
    ) -> Result<Value, McpCallError> {
        let first = McpRequest::CallToolAnswering {
            name: name.into(),
            arguments,
        };
        let mut result = self.0.call(first).await.result?;
        while result.get("resultType").and_then(Value::as_str) == Some("input_required") {
            let request_state = result["requestState"].as_str().unwrap_or("").to_string();
            let asked = result["inputRequests"]
                .as_object()
                .and_then(|requests| requests.values().next())
                .cloned()
                .unwrap_or(Value::Null);
            let given = answer(asked["method"].as_str().unwrap_or(""), &asked["params"]);
            let next = McpRequest::Answer {
                request_state,
                result: given,
            };
            result = self.0.call(next).await.result?;
        }
        Ok(result)
    }

    /// Sends `request` and returns the whole reply record (answering request, latency).
    pub async fn call(&self, request: McpRequest) -> McpReply {
        self.0.call(request).await
    }
}

/// Returns true when a `tools/call` result reports a tool error (`isError: true`).
pub fn is_tool_error(result: &Value) -> bool {
    result.get("isError").and_then(Value::as_bool) == Some(true)
}
