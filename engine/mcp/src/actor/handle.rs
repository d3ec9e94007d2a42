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

    /// Calls `tools/call` with `client` taking what the server sends on its own during the
    /// call: each notification ([`McpClient::notified`]) and each request to the client
    /// (`sampling/createMessage`, `elicitation/create`, `roots/list`, `ping`), which
    /// [`McpClient::answer`] answers, awaiting whatever it needs (a model call, say). The
    /// result comes only after the last answer. Each step and each answer is a request and a
    /// reply of the actor on the tape; an answer other than the recorded one is
    /// [`McpCallError::AnswerMismatch`]. The outer error is the client's own, which ends the
    /// call where it stood.
    ///
    /// A server that never speaks during a call (every world, most cassettes) gets a plain
    /// `tools/call`, the same records as [`McpHandle::call_tool`].
    pub async fn call_tool_with<C: McpClient>(
        &self,
        name: impl Into<String>,
        arguments: Value,
        client: &C,
    ) -> Result<Result<Value, McpCallError>, C::Error> {
        let name = name.into();
        if !self.speaks() {
            return Ok(self.call_tool(name, arguments).await);
        }
        let first = McpRequest::CallToolAnswering { name, arguments };
        self.converse(first, client).await
    }

    /// Calls `tools/list` with `client` taking what the server sends on its own meanwhile
    /// (server-everything's `notifications/tools/list_changed`, say), as
    /// [`McpHandle::call_tool_with`] does for a call.
    pub async fn list_tools_with<C: McpClient>(
        &self,
        client: &C,
    ) -> Result<Result<Value, McpCallError>, C::Error> {
        if !self.speaks() {
            return Ok(self.list_tools().await);
        }
        self.converse(McpRequest::ListToolsAnswering, client).await
    }

    fn speaks(&self) -> bool {
        self.0.with_state(|actor| actor.speaks_during_requests())
    }

    /// Sends `first`, then goes through its dialogue's steps with `client` to the result.
    async fn converse<C: McpClient>(
        &self,
        first: McpRequest,
        client: &C,
    ) -> Result<Result<Value, McpCallError>, C::Error> {
        let mut reply = self.0.call(first).await.result;
        loop {
            let step = match reply {
                Ok(step) => step,
                Err(error) => return Ok(Err(error)),
            };
            let request_state = match step.get("requestState").and_then(Value::as_str) {
                Some(state) => state.to_string(),
                None => return Ok(Ok(step)),
            };
            let next = match step.get("resultType").and_then(Value::as_str) {
                Some("notification") => {
                    client.notified(&step["notification"]).await;
                    McpRequest::Continue { request_state }
                }
                Some("input_required") => {
                    let asked = step["inputRequests"]
                        .as_object()
                        .and_then(|requests| requests.values().next())
                        .cloned()
                        .unwrap_or(Value::Null);
                    let method = asked["method"].as_str().unwrap_or("");
                    let result = client.answer(method, &asked["params"]).await?;
                    McpRequest::Answer {
                        request_state,
                        result,
                    }
                }
                _ => return Ok(Ok(step)),
            };
            reply = self.0.call(next).await.result;
        }
    }

    /// Sends `request` and returns the whole reply record (answering request, latency).
    pub async fn call(&self, request: McpRequest) -> McpReply {
        self.0.call(request).await
    }
}

/// What a pipeline does with the messages a server sends on its own during a call (see
/// [`McpHandle::call_tool_with`]), as an MCP client's sampling, elicitation and roots
/// handlers would.
///
/// ```
/// use serde_json::{json, Value};
/// use simtape_mcp::actor::McpClient;
/// /// A client that has no roots and answers pings.
/// struct Bare;
/// impl McpClient for Bare {
///     type Error = String;
///     async fn answer(&self, method: &str, _params: &Value) -> Result<Value, String> {
///         match method {
///             "roots/list" => Ok(json!({"roots": []})),
///             "ping" => Ok(json!({})),
///             other => Err(format!("{other} is not supported")),
///         }
///     }
/// }
/// ```
// The simulation runs on one thread, so the futures need not be `Send`.
#[allow(async_fn_in_trait)]
pub trait McpClient {
    /// What stops a call when the client cannot answer (its model call failed, say).
    type Error;

    /// Returns the result to send back for the server's request `method` with `params`.
    async fn answer(&self, method: &str, params: &Value) -> Result<Value, Self::Error>;

    /// Takes a notification (`{"method", "params"}`); it is on the tape already. The default
    /// does nothing, as a client without a handler for it would.
    async fn notified(&self, notification: &Value) {
        let _ = notification;
    }
}

/// Returns true when a `tools/call` result reports a tool error (`isError: true`).
pub fn is_tool_error(result: &Value) -> bool {
    result.get("isError").and_then(Value::as_bool) == Some(true)
}
