//! The tools of the `[[mcp]]` servers: listed once when the agent starts, offered to the model
//! as `<server>__<tool>`, called through each server's actor.
//!
//! A JSON-RPC error that a client would retry (429 or 503, any error whose data carries
//! `retryAfterMs`, a timeout, -32001) is retried with the run's back-off and budget; once the
//! budget is spent, or for any other JSON-RPC error, the model gets the error as the tool's
//! result. A request the cassette cannot answer stops the run, and so does an answer of the
//! agent's to a recorded server request that differs from the recorded one
//! ([`super::mcp_client`] gives the answers).

use serde_json::{json, Value};
use simtape::cap::llm::ToolDefinition;
use simtape_mcp::actor::{is_tool_error, McpCallError, McpHandle};
use simtape_mcp::world::server::TIMEOUT_CODE;

use super::mcp_client::AgentClient;
use super::{Failure, Kind, Tool};
use crate::ctx::Ctx;
use crate::log::AgentEvent;
use crate::report::{AgentError, ToolFailure};
use crate::retry::wait_ms;

/// Joins a server's name and its tool's name into the name the model sees.
pub(crate) const SEPARATOR: &str = "__";

/// Lists the tools of the server named `server` (`tools/list`, once).
pub(crate) async fn list(ctx: &Ctx, server: &str) -> Result<Vec<Tool>, AgentError> {
    let Some(index) = ctx.shared.server_index(server) else {
        return Err(AgentError::Setup(format!(
            "the agent's tools name MCP server {server:?}, which no [[mcp]] entry defines"
        )));
    };
    let client = AgentClient { ctx, server: index };
    let listed = handle(ctx, index).list_tools_with(&client).await;
    let listing = match listed {
        Ok(Ok(listing)) => listing,
        Ok(Err(error)) => {
            let server = server.to_string();
            return Err(AgentError::McpList { server, error });
        }
        // What the server asked while listing, before the first turn, could not be answered.
        Err(Failure::Fatal(ToolFailure::Model(error))) => {
            return Err(AgentError::Model { turn: 0, error })
        }
        Err(Failure::Fatal(other)) => unreachable!("the agent's MCP answers fail only so: {other}"),
        Err(Failure::Tool(why)) => {
            return Err(AgentError::Setup(format!(
                "MCP server {server:?}: tools/list: {why}"
            )))
        }
    };
    let listed = listing.get("tools").and_then(Value::as_array);
    let tools = listed
        .into_iter()
        .flatten()
        .filter_map(|tool| {
            let name = tool.get("name")?.as_str()?;
            let description = tool.get("description").and_then(Value::as_str);
            let parameters = tool
                .get("inputSchema")
                .cloned()
                .unwrap_or_else(|| json!({"type": "object"}));
            let definition = ToolDefinition {
                name: format!("{server}{SEPARATOR}{name}"),
                description: description.unwrap_or_default().to_string(),
                parameters,
            };
            Some(Tool::new(definition, Kind::Mcp(index)))
        })
        .collect();
    Ok(tools)
}

/// Returns the server's own name of a tool from the name the model sees. Server names have
/// no `__`, so the first one ends the prefix.
pub(crate) fn tool_name(full: &str) -> &str {
    full.split_once(SEPARATOR).map_or(full, |(_, tool)| tool)
}

fn handle(ctx: &Ctx, index: usize) -> McpHandle {
    McpHandle::new(ctx.shared.refs.mcp[index])
}

/// Calls `tool` on the server at `index`, retrying what a client would retry.
pub(crate) async fn call(
    ctx: &Ctx,
    index: usize,
    tool: &str,
    call_id: &str,
    arguments: &Value,
) -> Result<String, Failure> {
    let server = handle(ctx, index);
    let mut failures = 0;
    loop {
        let client = AgentClient { ctx, server: index };
        let error = match server
            .call_tool_with(tool, arguments.clone(), &client)
            .await?
        {
            Ok(result) => return result_text(&result),
            Err(error) if retryable(&error) => error,
            Err(error) => return Err(error.into()),
        };
        failures += 1;
        if !ctx.take_retry() {
            return Err(Failure::Tool(format!("{error} (retry budget spent)")));
        }
        let wait = ctx.retries.backoff_ms(failures, retry_after_ms(&error));
        let retry = AgentEvent::Retry {
            what: call_id.to_string(),
            attempt: failures,
            wait_ms: wait,
            error: error.to_string(),
        };
        ctx.record(retry).await;
        wait_ms(wait).await;
    }
}

/// Returns whether a client would retry this error.
fn retryable(error: &McpCallError) -> bool {
    match error {
        McpCallError::Rpc { code, .. } => {
            matches!(*code, 429 | 503 | TIMEOUT_CODE) || retry_after_ms(error).is_some()
        }
        _ => false,
    }
}

/// Returns the error's `retryAfterMs` hint.
fn retry_after_ms(error: &McpCallError) -> Option<u64> {
    match error {
        McpCallError::Rpc {
            data: Some(data), ..
        } => data.get("retryAfterMs")?.as_u64(),
        _ => None,
    }
}

/// Returns a `tools/call` result as the model reads it: the text contents joined by
/// newlines, else the structured content as JSON; an `isError` result is a tool error.
fn result_text(result: &Value) -> Result<String, Failure> {
    let texts: Vec<&str> = result
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|item| item.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|item| item.get("text")?.as_str())
        .collect();
    let text = match (texts.is_empty(), result.get("structuredContent")) {
        (false, _) => texts.join("\n"),
        (true, Some(structured)) => structured.to_string(),
        (true, None) => String::new(),
    };
    if is_tool_error(result) {
        Err(Failure::Tool(text))
    } else {
        Ok(text)
    }
}
