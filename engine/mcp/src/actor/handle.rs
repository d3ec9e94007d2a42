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

    /// Sends `request` and returns the whole reply record (answering request, latency).
    pub async fn call(&self, request: McpRequest) -> McpReply {
        self.0.call(request).await
    }
}

/// Returns true when a `tools/call` result reports a tool error (`isError: true`).
pub fn is_tool_error(result: &Value) -> bool {
    result.get("isError").and_then(Value::as_bool) == Some(true)
}
