//! The JSON-RPC 2.0 message model for stdio MCP: parse one line into a classified message, and
//! build responses and errors. Pure: bytes and `serde_json::Value`s in and out.

use serde_json::{json, Map, Value};

/// Invalid JSON was received.
pub const PARSE_ERROR: i64 = -32700;
/// The JSON is not a valid JSON-RPC message (also used for over-long lines).
pub const INVALID_REQUEST: i64 = -32600;
/// The method does not exist (or, in replay, was never recorded).
pub const METHOD_NOT_FOUND: i64 = -32601;
/// Invalid method parameters, including a malformed 2026-07-28 `_meta` envelope.
pub const INVALID_PARAMS: i64 = -32602;
/// The server failed internally (in simtape: a server it cannot reach or start).
pub const INTERNAL_ERROR: i64 = -32603;
/// The 2026-07-28 UnsupportedProtocolVersion error.
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
/// A replayed request matched nothing in the cassette. Chosen outside -32768..-32000 because
/// the 2026-07-28 revision asks new application codes to stay out of the reserved range.
pub const REPLAY_MISS: i64 = -31000;

/// One classified JSON-RPC message.
#[derive(Debug, Clone, PartialEq)]
pub enum JsonRpcMessage {
    /// A request: it carries an id and expects a response.
    Request {
        /// The id, a string or an integer.
        id: Value,
        /// The method name.
        method: String,
        /// The params, if present (an object or an array).
        params: Option<Value>,
    },
    /// A notification: a method without an id; never answered.
    Notification {
        /// The method name.
        method: String,
        /// The params, if present.
        params: Option<Value>,
    },
    /// A response (result or error) to an earlier request.
    Response {
        /// The id of the request it answers.
        id: Value,
    },
}

/// A line that is not a usable JSON-RPC message, with the error response it deserves.
#[derive(Debug, Clone, PartialEq)]
pub struct ParseFailure {
    /// The JSON-RPC error code (`PARSE_ERROR` or `INVALID_REQUEST`).
    pub code: i64,
    /// A human-readable reason.
    pub message: String,
    /// The request id when one could be read, else `null`.
    pub id: Value,
}

impl ParseFailure {
    /// Returns the JSON-RPC error response for this failure.
    pub fn to_response(&self) -> Value {
        error_response(&self.id, self.code, &self.message, None)
    }
}

/// Parses one line (without its newline). Returns `Ok(None)` for a blank line, which stdio
/// peers may send between messages and which deserves no answer.
///
/// ```
/// use simtape_mcp::jsonrpc::{parse_line, JsonRpcMessage};
/// let (_, message) = parse_line(br#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#).unwrap().unwrap();
/// assert!(matches!(message, JsonRpcMessage::Request { method, .. } if method == "ping"));
/// ```
pub fn parse_line(line: &[u8]) -> Result<Option<(Value, JsonRpcMessage)>, ParseFailure> {
    let line = trim_ascii(line);
    if line.is_empty() {
        return Ok(None);
    }
    let value: Value = serde_json::from_slice(line).map_err(|e| ParseFailure {
        code: PARSE_ERROR,
        message: format!("Parse error: {e}"),
        id: Value::Null,
    })?;
    let message = classify(&value)?;
    Ok(Some((value, message)))
}

/// Classifies an already-parsed JSON value as a request, notification or response.
pub fn classify(value: &Value) -> Result<JsonRpcMessage, ParseFailure> {
    let Some(object) = value.as_object() else {
        return Err(invalid(
            Value::Null,
            "a JSON-RPC message must be a JSON object",
        ));
    };
    let id = object.get("id").cloned();
    let usable_id = id.clone().filter(valid_id).unwrap_or(Value::Null);
    if object.get("jsonrpc") != Some(&Value::String("2.0".into())) {
        return Err(invalid(usable_id, "`jsonrpc` must be \"2.0\""));
    }
    if let Some(id) = &id {
        if !valid_id(id) {
            return Err(invalid(Value::Null, "`id` must be a string or an integer"));
        }
    }
    match object.get("method") {
        Some(Value::String(method)) => {
            let params = object.get("params").cloned();
            if matches!(&params, Some(p) if !p.is_object() && !p.is_array()) {
                return Err(invalid(usable_id, "`params` must be an object or an array"));
            }
            let method = method.clone();
            Ok(match id {
                Some(id) => JsonRpcMessage::Request { id, method, params },
                None => JsonRpcMessage::Notification { method, params },
            })
        }
        Some(_) => Err(invalid(usable_id, "`method` must be a string")),
        None => match id {
            Some(id) if object.contains_key("result") || object.contains_key("error") => {
                Ok(JsonRpcMessage::Response { id })
            }
            _ => Err(invalid(
                usable_id,
                "neither a request, a notification nor a response",
            )),
        },
    }
}

/// Returns a success response carrying `result` for request `id`.
pub fn result_response(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// Returns an error response for request `id`, with optional `data`.
pub fn error_response(id: &Value, code: i64, message: &str, data: Option<Value>) -> Value {
    let mut error = Map::new();
    error.insert("code".into(), json!(code));
    error.insert("message".into(), json!(message));
    if let Some(data) = data {
        error.insert("data".into(), data);
    }
    json!({"jsonrpc": "2.0", "id": id, "error": error})
}

/// Returns a notification message.
pub fn notification(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": method, "params": params})
}

/// Returns true when `message` is a response (it has an id and a result or an error, and no
/// method).
pub fn is_response(message: &Value) -> bool {
    message.get("method").is_none()
        && message.get("id").is_some()
        && (message.get("result").is_some() || message.get("error").is_some())
}

/// Returns true when `message` is a request (a method and an id).
pub fn is_request(message: &Value) -> bool {
    message.get("method").is_some_and(Value::is_string) && message.get("id").is_some()
}

/// Returns true when `message` is a notification (a method and no id).
pub fn is_notification(message: &Value) -> bool {
    message.get("method").is_some_and(Value::is_string) && message.get("id").is_none()
}

/// Returns the method of a request or notification.
pub fn method_of(message: &Value) -> Option<&str> {
    message.get("method").and_then(Value::as_str)
}

fn valid_id(id: &Value) -> bool {
    id.is_string() || id.is_i64() || id.is_u64()
}

fn invalid(id: Value, message: &str) -> ParseFailure {
    ParseFailure {
        code: INVALID_REQUEST,
        message: format!("Invalid Request: {message}"),
        id,
    }
}

fn trim_ascii(mut bytes: &[u8]) -> &[u8] {
    while let [first, rest @ ..] = bytes {
        if first.is_ascii_whitespace() {
            bytes = rest;
        } else {
            break;
        }
    }
    while let [rest @ .., last] = bytes {
        if last.is_ascii_whitespace() {
            bytes = rest;
        } else {
            break;
        }
    }
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_requests_notifications_and_responses() {
        // Goal: the three message shapes are told apart, string and integer ids both accepted.
        let request = parse_line(br#"{"jsonrpc":"2.0","id":"a","method":"tools/list"}"#);
        assert!(matches!(
            request,
            Ok(Some((_, JsonRpcMessage::Request { .. })))
        ));
        let note = parse_line(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        assert!(matches!(
            note,
            Ok(Some((_, JsonRpcMessage::Notification { .. })))
        ));
        let response = parse_line(br#"{"result":{},"jsonrpc":"2.0","id":3}"#);
        assert!(matches!(
            response,
            Ok(Some((_, JsonRpcMessage::Response { .. })))
        ));
        assert_eq!(parse_line(b"  \r").unwrap(), None);
    }

    #[test]
    fn malformed_input_is_a_jsonrpc_error_not_a_panic() {
        // Goal: bad JSON, wrong shapes and null ids map to -32700 / -32600 with a usable id.
        assert_eq!(parse_line(b"{nope").unwrap_err().code, PARSE_ERROR);
        assert_eq!(parse_line(b"[1,2]").unwrap_err().code, INVALID_REQUEST);
        let no_version = parse_line(br#"{"id":4,"method":"ping"}"#).unwrap_err();
        assert_eq!(
            (no_version.code, no_version.id),
            (INVALID_REQUEST, json!(4))
        );
        let null_id = parse_line(br#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#);
        assert_eq!(null_id.unwrap_err().code, INVALID_REQUEST);
        let bad_params = parse_line(br#"{"jsonrpc":"2.0","id":1,"method":"x","params":3}"#);
        assert_eq!(bad_params.unwrap_err().id, json!(1));
    }

    #[test]
    fn fuzzed_lines_never_panic() {
        // Goal: random byte mutations of real messages never panic the parser (seeded, so a
        // failure reproduces).
        let seeds: [&[u8]; 3] = [
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"},"_meta":{"progressToken":"t"}}}"#,
            br#"{"result":{"tools":[{"name":"a","inputSchema":{"type":"object"}}]},"jsonrpc":"2.0","id":"x"}"#,
            br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9}}"#,
        ];
        let mut state: u64 = 0x5eed_1234_abcd_0001;
        let mut next = move || {
            // xorshift64*: tiny, seeded, and good enough to pick mutation sites.
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            state.wrapping_mul(0x2545_f491_4f6c_dd1d)
        };
        for round in 0..20_000u64 {
            let mut line = seeds[(round % 3) as usize].to_vec();
            let mutations = 1 + next() % 8;
            for _ in 0..mutations {
                let at = (next() as usize) % (line.len() + 1);
                match next() % 4 {
                    0 if at < line.len() => line[at] = next() as u8,
                    1 => line.insert(at, next() as u8),
                    2 if at < line.len() => {
                        line.remove(at);
                    }
                    _ => line.truncate(at),
                }
            }
            let outcome = std::panic::catch_unwind(|| {
                if let Err(failure) = parse_line(&line) {
                    let _ = failure.to_response();
                }
            });
            assert!(outcome.is_ok(), "round {round} panicked on {line:?}");
        }
    }
}
