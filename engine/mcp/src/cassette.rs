//! The cassette: every message of one recorded stdio MCP conversation, both directions, in
//! order, as raw JSON values (so unknown and future fields survive), plus the exchanges
//! (request, response, latency) derived from them.

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::era;
use crate::error::McpError;
use crate::jsonrpc::{is_notification, is_request, is_response, method_of};
use crate::limits::CASSETTE_MESSAGES_MAX;

/// The `format` tag every cassette carries.
pub const FORMAT: &str = "simtape-mcp-cassette";
/// The cassette format version this build reads and writes.
pub const VERSION: u64 = 1;

/// A recorded conversation with one MCP server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cassette {
    /// Always [`FORMAT`].
    pub format: String,
    /// Always [`VERSION`].
    pub version: u64,
    /// The server command line as recorded (after redaction).
    pub server: Vec<String>,
    /// Every message, in the order the recorder saw it.
    pub messages: Vec<CassetteEntry>,
}

/// Who sent a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Party {
    /// The client (our stdin).
    Client,
    /// The server (the child's stdout).
    Server,
}

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CassetteEntry {
    /// Position in the conversation, from 0.
    pub seq: u64,
    /// Who sent it.
    pub from: Party,
    /// Milliseconds since the recording started.
    pub at_ms: u64,
    /// The session it belongs to, when the recording holds several (a Streamable HTTP
    /// recording: one per `Mcp-Session-Id`); absent for the one session of a stdio recording.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<u64>,
    /// For a response: milliseconds between the request and this response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<u64>,
    /// The JSON-RPC message, exactly as sent (after redaction).
    pub message: Value,
}

/// A request and what answered it, derived from the messages.
#[derive(Debug, Clone, PartialEq)]
pub struct Exchange {
    /// Which side sent the request.
    pub from: Party,
    /// The `seq` of the request.
    pub request_seq: u64,
    /// The request message.
    pub request: Value,
    /// The response message, if one came.
    pub response: Option<Value>,
    /// Milliseconds from request to response, if a response came.
    pub latency_ms: Option<u64>,
    /// The `notifications/progress` messages sent for this request, in order.
    pub progress: Vec<Value>,
}

impl Exchange {
    /// Returns the request's method.
    pub fn method(&self) -> &str {
        method_of(&self.request).unwrap_or("")
    }

    /// Returns the request's params.
    pub fn params(&self) -> Option<&Value> {
        self.request.get("params")
    }
}

impl Cassette {
    /// Returns an empty cassette for a server command line.
    pub fn new(server: Vec<String>) -> Cassette {
        Cassette {
            format: FORMAT.into(),
            version: VERSION,
            server,
            messages: Vec::new(),
        }
    }

    /// Appends a message, numbering it.
    pub fn push(&mut self, from: Party, at_ms: u64, message: Value) {
        let seq = self.messages.len() as u64;
        self.messages.push(CassetteEntry {
            seq,
            from,
            at_ms,
            session: None,
            latency_ms: None,
            message,
        });
    }

    /// Fills in `latency_ms` on every response from the `at_ms` of its request.
    pub fn fill_latencies(&mut self) {
        let pairs = pair_requests(&self.messages);
        for (request, response) in pairs
            .into_iter()
            .enumerate()
            .filter_map(|(i, r)| Some((i, r?)))
        {
            let start = self.messages[request].at_ms;
            let entry = &mut self.messages[response];
            entry.latency_ms = Some(entry.at_ms.saturating_sub(start));
        }
    }

    /// Returns every request (from either side) with its response and progress, in order.
    pub fn exchanges(&self) -> Vec<Exchange> {
        let pairs = pair_requests(&self.messages);
        let mut exchanges = Vec::new();
        for (index, entry) in self.messages.iter().enumerate() {
            if !is_request(&entry.message) {
                continue;
            }
            let response = pairs[index].map(|r| &self.messages[r]);
            let token = era::progress_token(entry.message.get("params"));
            let end = pairs[index].unwrap_or(self.messages.len());
            let progress = match token {
                Some(token) => self.messages[index + 1..end]
                    .iter()
                    .filter(|e| e.from != entry.from && is_progress_for(&e.message, token))
                    .map(|e| e.message.clone())
                    .collect(),
                None => Vec::new(),
            };
            exchanges.push(Exchange {
                from: entry.from,
                request_seq: entry.seq,
                request: entry.message.clone(),
                response: response.map(|r| r.message.clone()),
                latency_ms: response
                    .map(|r| r.latency_ms.unwrap_or(r.at_ms.saturating_sub(entry.at_ms))),
                progress,
            });
        }
        exchanges
    }

    /// Returns the client's requests and notifications, in order (what `verify` re-sends).
    pub fn client_messages(&self) -> impl Iterator<Item = &Value> {
        self.messages
            .iter()
            .filter(|e| e.from == Party::Client)
            .map(|e| &e.message)
            .filter(|m| is_request(m) || is_notification(m))
    }

    /// Reads and checks a cassette file.
    pub fn load(path: &Path) -> Result<Cassette, McpError> {
        let bytes = simtape::input::read_input(path, simtape::limits::InputFile::McpCassette)
            .map_err(|error| McpError::CassetteIo {
                path: path.into(),
                source: error.into_io(),
            })?;
        Cassette::parse(&bytes, path)
    }

    /// Checks cassette bytes as [`Cassette::load`] does; `path` only names them in errors.
    pub fn parse(bytes: &[u8], path: &Path) -> Result<Cassette, McpError> {
        let invalid = |reason: String| McpError::CassetteInvalid {
            path: path.into(),
            reason,
        };
        let cassette: Cassette =
            serde_json::from_slice(bytes).map_err(|e| invalid(e.to_string()))?;
        if cassette.format != FORMAT {
            return Err(invalid(format!(
                "format is {:?}, expected {FORMAT:?}",
                cassette.format
            )));
        }
        if cassette.version != VERSION {
            return Err(invalid(format!(
                "version {} is not supported (this build reads version {VERSION})",
                cassette.version
            )));
        }
        if cassette.messages.len() > CASSETTE_MESSAGES_MAX {
            return Err(invalid(format!(
                "more than {CASSETTE_MESSAGES_MAX} messages"
            )));
        }
        Ok(cassette)
    }

    /// Checks that the cassette can serve a simulated run: it holds at least one request
    /// from the client, and every recorded `tools/list` result lists tools (an array of
    /// objects with a string `name`). The error names the message and the field; a cassette
    /// that fails here would give a run no tools, or fail it on its first call.
    pub fn check_servable(&self) -> Result<(), Unservable> {
        if !self
            .messages
            .iter()
            .any(|e| e.from == Party::Client && is_request(&e.message))
        {
            return Err(Unservable::NoClientRequest);
        }
        let pairs = pair_requests(&self.messages);
        for (request, response) in self.messages.iter().zip(&pairs) {
            let (Some(response), Some("tools/list")) = (response, method_of(&request.message))
            else {
                continue;
            };
            let Some(result) = self.messages[*response].message.get("result") else {
                continue;
            };
            let problem = match result.get("tools") {
                Some(Value::Array(tools)) => tools
                    .iter()
                    .position(|tool| !tool.get("name").is_some_and(Value::is_string))
                    .map(|at| ToolsProblem::Unnamed { at }),
                Some(other) => Some(ToolsProblem::NotAnArray {
                    found: other.to_string(),
                }),
                None => Some(ToolsProblem::Missing),
            };
            if let Some(problem) = problem {
                return Err(Unservable::ToolList {
                    seq: self.messages[*response].seq,
                    problem,
                });
            }
        }
        Ok(())
    }
}

/// Why a cassette cannot serve a simulated run ([`Cassette::check_servable`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Unservable {
    /// No request from the client: a run would have nothing to replay.
    #[error(
        "the cassette records no request from the client (record one with `simtape mcp record`)"
    )]
    NoClientRequest,
    /// A recorded `tools/list` result does not list tools.
    #[error("message {seq} (the response to tools/list): {problem}")]
    ToolList {
        /// The response's `seq` in the cassette.
        seq: u64,
        /// What is wrong with its `result.tools`.
        problem: ToolsProblem,
    },
}

/// What is wrong with a recorded `tools/list` result's `result.tools`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolsProblem {
    /// It is not there.
    #[error("`result.tools` is missing")]
    Missing,
    /// It is not an array.
    #[error("`result.tools` is {found}, expected an array of tools")]
    NotAnArray {
        /// The value there, as JSON.
        found: String,
    },
    /// A tool has no string `name`.
    #[error("`result.tools[{at}]` has no string `name`")]
    Unnamed {
        /// The tool's index.
        at: usize,
    },
}

fn is_progress_for(message: &Value, token: &Value) -> bool {
    method_of(message) == Some("notifications/progress")
        && message.pointer("/params/progressToken") == Some(token)
}

/// For each message index, the index of the response answering it (requests only). A response
/// answers the earliest still-open request from the other side of its session with the same
/// id, so ids that are reused after completion pair correctly.
pub(crate) fn pair_requests(messages: &[CassetteEntry]) -> Vec<Option<usize>> {
    let mut pairs = vec![None; messages.len()];
    let mut open: Vec<usize> = Vec::new();
    for (index, entry) in messages.iter().enumerate() {
        if is_request(&entry.message) {
            open.push(index);
        } else if is_response(&entry.message) {
            let id = entry.message.get("id");
            let found = open.iter().position(|&r| {
                messages[r].from != entry.from
                    && messages[r].session == entry.session
                    && messages[r].message.get("id") == id
            });
            if let Some(position) = found {
                pairs[open.remove(position)] = Some(index);
            }
        }
    }
    pairs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Builds a cassette from (from, at_ms, message) triples.
    pub(crate) fn cassette_of(messages: Vec<(Party, u64, Value)>) -> Cassette {
        let mut cassette = Cassette::new(vec!["server".into()]);
        for (from, at, message) in messages {
            cassette.push(from, at, message);
        }
        cassette.fill_latencies();
        cassette
    }

    #[test]
    fn exchanges_pair_by_id_and_collect_progress() {
        // Goal: responses pair with their requests even out of order and with reused ids,
        // and progress notifications attach to the request whose token they carry.
        use Party::{Client, Server};
        let cassette = cassette_of(vec![
            (
                Client,
                0,
                json!({"jsonrpc":"2.0","id":1,"method":"a","params":{"_meta":{"progressToken":"t"}}}),
            ),
            (Client, 1, json!({"jsonrpc":"2.0","id":2,"method":"b"})),
            (
                Server,
                3,
                json!({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}),
            ),
            (
                Server,
                4,
                json!({"jsonrpc":"2.0","id":2,"result":{"b":true}}),
            ),
            (
                Server,
                9,
                json!({"jsonrpc":"2.0","id":1,"result":{"a":true}}),
            ),
            (Client, 10, json!({"jsonrpc":"2.0","id":1,"method":"c"})),
            (
                Server,
                12,
                json!({"jsonrpc":"2.0","id":1,"result":{"c":true}}),
            ),
        ]);
        let exchanges = cassette.exchanges();
        assert_eq!(exchanges.len(), 3);
        assert_eq!(exchanges[0].latency_ms, Some(9));
        assert_eq!(exchanges[0].progress.len(), 1);
        assert_eq!(exchanges[1].latency_ms, Some(3));
        assert_eq!(exchanges[2].response.as_ref().unwrap()["result"]["c"], true);
        assert_eq!(cassette.messages[6].latency_ms, Some(2));
    }
}
