//! Why an MCP call inside a simulation has no result.

use serde::Serialize;
use serde_json::Value;

use crate::matching::Miss;

/// Why a call got no result. A tool error result (`isError: true`) is not one of these: it is
/// a result, as MCP clients see it.
#[derive(Debug, Clone, PartialEq, Serialize, thiserror::Error)]
#[non_exhaustive]
pub enum McpCallError {
    /// The server answered with a JSON-RPC error: a recorded one, or for a world an injected
    /// fault (`rpc_error`, `timeout`) or bad params. Not fatal: a pipeline handles it as it
    /// would a live server's error.
    #[error("the server answered JSON-RPC error {code}: {message}")]
    Rpc {
        /// The `seq` of the recorded request; for a world, the request's 1-based number at
        /// this actor.
        request_seq: u64,
        /// The error code (`-32602` invalid params, `-32601` method not found, …).
        code: i64,
        /// The error message.
        message: String,
        /// The error data, if any.
        data: Option<Value>,
    },
    /// No recorded request matches. Fatal for a replay: the pipeline asked something the
    /// recording never did; the message names the closest recorded request and the first
    /// field where it differs.
    #[error("{message}")]
    Unmatched {
        /// The method called.
        method: String,
        /// The exchange index of the closest recorded request, if the cassette has any.
        closest: Option<u64>,
        /// A JSON pointer (rooted at the request) to the first field that differs from it.
        pointer: Option<String>,
        /// The full explanation, as `simtape mcp replay` words it.
        message: String,
    },
    /// The matching recorded request was never answered (it was cancelled while recording).
    /// Fatal for a replay: re-record without the cancellation.
    #[error("recorded request #{request_seq} was never answered (cancelled while recording)")]
    Unanswered {
        /// The `seq` of the recorded request.
        request_seq: u64,
    },
    /// The pipeline answered a server request (sampling, elicitation, roots) other than the
    /// recording's client did. Fatal for a replay, like an unmatched request: the server's
    /// recorded result depended on the recorded answer.
    #[error("{message}")]
    AnswerMismatch {
        /// The `seq` of the recorded `tools/call` the server request belongs to.
        request_seq: u64,
        /// The server request's method.
        method: String,
        /// A JSON pointer (rooted at the answer: `/result/…`) to the first difference.
        pointer: String,
        /// The full explanation.
        message: String,
    },
    /// The recorded answer is not a usable JSON-RPC response. Fatal: fix the cassette.
    #[error("recorded answer to request #{request_seq} is malformed: {reason}")]
    Malformed {
        /// The `seq` of the recorded request.
        request_seq: u64,
        /// What is wrong with it.
        reason: String,
    },
}

impl McpCallError {
    /// Returns the error for a request that matched nothing.
    pub(crate) fn unmatched(miss: &Miss) -> McpCallError {
        McpCallError::Unmatched {
            method: miss.method.clone(),
            closest: miss.closest.as_ref().map(|c| c.index as u64),
            pointer: miss.closest.as_ref().map(|c| c.difference.pointer.clone()),
            message: miss.message(),
        }
    }
}
