//! The replay server: a pure, dual-era stdio MCP server over a cassette. One input line in,
//! the messages to write out; no clock, no I/O, so every behaviour is unit-testable.
//!
//! Era handling: `initialize`, `notifications/initialized` and `ping` are answered in the
//! handshake era; `server/discover` and requests carrying the 2026-07-28 `_meta` envelope are
//! answered in the modern era (envelope checked, `-32022` for an unknown version, `resultType`
//! and cache hints added when the recording came from a handshake-era server). Either era is
//! served whatever era the cassette was recorded in: the missing handshake answer is
//! synthesized from the other one.

use serde_json::{json, Value};

use crate::cassette::{Cassette, Exchange};
use crate::era::{self, LATEST_HANDSHAKE_VERSION, META_SERVER_INFO};
use crate::jsonrpc::{
    error_response, parse_line, result_response, Message, ParseFailure, INVALID_PARAMS,
    INVALID_REQUEST, METHOD_NOT_FOUND, REPLAY_MISS,
};
use crate::limits::LINE_BYTES_MAX;
use crate::matching::Matcher;
use crate::redact::Redactor;

/// Methods that are malformed without params (answered `-32602` rather than a replay miss).
const METHODS_NEEDING_PARAMS: &[&str] = &[
    "initialize",
    "tools/call",
    "resources/read",
    "prompts/get",
    "completion/complete",
];

/// A dual-era MCP server that answers from a cassette.
#[derive(Debug, Clone)]
pub struct ReplayServer {
    exchanges: Vec<Exchange>,
    matcher: Matcher,
    initialize: Option<Value>,
    discover: Option<Value>,
    server_info: Option<Value>,
    redactor: Redactor,
}

impl ReplayServer {
    /// Builds a server over the client-initiated exchanges of `cassette`. The redactor is
    /// applied to live requests before matching, so a request that carried a secret when it
    /// was recorded still matches its redacted recording.
    pub fn new(cassette: &Cassette, redactor: Redactor) -> ReplayServer {
        let (exchanges, matcher) = crate::matching::client_index(cassette);
        let recorded_result = |method: &str| {
            exchanges
                .iter()
                .filter(|e| e.method() == method)
                .find_map(|e| e.response.as_ref()?.get("result").cloned())
        };
        let initialize = recorded_result("initialize");
        let discover = recorded_result("server/discover");
        let server_info = initialize
            .as_ref()
            .and_then(|r| r.get("serverInfo").cloned())
            .or_else(|| {
                let pointer = format!("/_meta/{}", META_SERVER_INFO.replace('/', "~1"));
                discover.as_ref()?.pointer(&pointer).cloned()
            });
        ReplayServer {
            matcher,
            exchanges,
            initialize,
            discover,
            server_info,
            redactor,
        }
    }

    /// Handles one input line and returns the messages to send back, in order.
    pub fn handle_line(&mut self, line: &[u8]) -> Vec<Value> {
        match parse_line(line) {
            Ok(None) => Vec::new(),
            Ok(Some((_, message))) => self.handle_message(message),
            Err(failure) => vec![failure.to_response()],
        }
    }

    /// Returns the error answered for a line longer than [`LINE_BYTES_MAX`].
    pub fn line_too_long(length_bytes: usize) -> Value {
        ParseFailure {
            code: INVALID_REQUEST,
            message: format!(
                "Invalid Request: line of {length_bytes} bytes exceeds the limit of {LINE_BYTES_MAX} bytes"
            ),
            id: Value::Null,
        }
        .to_response()
    }

    /// Handles one classified message. Notifications and responses from the client need no
    /// answer: a cancellation can only name a request that was already answered, because
    /// replay answers each request before reading the next line.
    pub fn handle_message(&mut self, message: Message) -> Vec<Value> {
        match message {
            Message::Request { id, method, params } => self.handle_request(&id, &method, params),
            Message::Notification { .. } | Message::Response { .. } => Vec::new(),
        }
    }

    fn handle_request(&mut self, id: &Value, method: &str, params: Option<Value>) -> Vec<Value> {
        let modern = era::requested_modern_version(params.as_ref()).is_some();
        if params.is_none() && METHODS_NEEDING_PARAMS.contains(&method) {
            let message = format!("Invalid params: {method} requires params");
            return vec![error_response(id, INVALID_PARAMS, &message, None)];
        }
        if method == "initialize" {
            return vec![result_response(id, self.initialize_result(params.as_ref()))];
        }
        if method == "ping" && !modern {
            return vec![result_response(id, json!({}))];
        }
        if modern || method == "server/discover" {
            if let Err((code, message, data)) = era::check_modern_envelope(params.as_ref()) {
                return vec![error_response(id, code, &message, data)];
            }
        }
        if method == "server/discover" {
            return vec![result_response(id, self.discover_result())];
        }
        self.answer_from_cassette(id, method, params, modern)
    }

    fn initialize_result(&self, params: Option<&Value>) -> Value {
        let requested = params
            .and_then(|p| p.get("protocolVersion"))
            .and_then(Value::as_str);
        if let Some(recorded) = &self.initialize {
            let mut result = recorded.clone();
            let recorded_version = recorded
                .get("protocolVersion")
                .and_then(Value::as_str)
                .unwrap_or(LATEST_HANDSHAKE_VERSION);
            result["protocolVersion"] = json!(era::negotiate_handshake_version(
                requested,
                recorded_version
            ));
            return result;
        }
        let version = era::negotiate_handshake_version(requested, LATEST_HANDSHAKE_VERSION);
        let discover = self.discover.clone().unwrap_or_else(|| json!({}));
        era::initialize_from_discover(&discover, &version)
    }

    fn discover_result(&self) -> Value {
        if let Some(recorded) = &self.discover {
            return recorded.clone();
        }
        let initialize = self.initialize.clone().unwrap_or_else(|| json!({}));
        let mut result = era::discover_from_initialize(&initialize);
        if result.get("_meta").is_none() {
            result["_meta"] = json!({ META_SERVER_INFO: self.fallback_server_info() });
        }
        result
    }

    fn fallback_server_info(&self) -> Value {
        self.server_info.clone().unwrap_or_else(
            || json!({"name": "simtape-mcp-replay", "version": env!("CARGO_PKG_VERSION")}),
        )
    }

    fn answer_from_cassette(
        &mut self,
        id: &Value,
        method: &str,
        params: Option<Value>,
        modern: bool,
    ) -> Vec<Value> {
        let mut key_params = era::matching_params(params.as_ref());
        self.redactor.redact_value(&mut key_params);
        let index = match self.matcher.find(method, &key_params) {
            Ok(index) => index,
            Err(miss) => {
                let code = if miss.method_recorded {
                    REPLAY_MISS
                } else {
                    METHOD_NOT_FOUND
                };
                return vec![error_response(id, code, &miss.message(), Some(miss.data()))];
            }
        };
        let exchange = &self.exchanges[index];
        let mut out = Vec::new();
        if let Some(token) = era::progress_token(params.as_ref()) {
            for progress in &exchange.progress {
                let mut progress = progress.clone();
                progress["params"]["progressToken"] = token.clone();
                out.push(progress);
            }
        }
        // A recorded request that never got an answer (it was cancelled while recording) gets
        // none now either: answering would break the spec's "no messages after a cancel".
        let Some(recorded) = &exchange.response else {
            return out;
        };
        let mut response = recorded.clone();
        response["id"] = id.clone();
        if modern {
            if let Some(result) = response.get_mut("result") {
                era::modernize_result(method, result, self.server_info.as_ref());
            }
        }
        out.push(response);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cassette::Direction::{Client, Server};
    use crate::jsonrpc::UNSUPPORTED_PROTOCOL_VERSION;

    fn legacy_cassette() -> Cassette {
        let mut c = Cassette::new(vec!["server".into()]);
        let messages = [
            (
                Client,
                json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}),
            ),
            (
                Server,
                json!({"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"everything","version":"2.0.0"}},"jsonrpc":"2.0","id":0}),
            ),
            (
                Client,
                json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
            ),
            (
                Client,
                json!({"jsonrpc":"2.0","id":1,"method":"tools/list"}),
            ),
            (
                Server,
                json!({"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"get-sum","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true,"futureHint":7}}]}}),
            ),
            (
                Client,
                json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get-sum","arguments":{"a":2,"b":3},"_meta":{"progressToken":"p1"}}}),
            ),
            (
                Server,
                json!({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p1","progress":1,"total":1}}),
            ),
            (
                Server,
                json!({"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"5"}],"structuredContent":{"sum":5}}}),
            ),
        ];
        for (i, (from, message)) in messages.into_iter().enumerate() {
            c.push(from, i as u64, message);
        }
        c.fill_latencies();
        c
    }

    fn ask(server: &mut ReplayServer, line: Value) -> Vec<Value> {
        server.handle_line(line.to_string().as_bytes())
    }

    fn modern_meta() -> Value {
        json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
               "io.modelcontextprotocol/clientCapabilities": {}})
    }

    #[test]
    fn legacy_handshake_ping_and_call_with_a_new_id() {
        // Goal: initialize echoes the recorded result, ping works, a call matches ignoring id
        // and progress token, and progress is replayed under the live token.
        let mut s = ReplayServer::new(&legacy_cassette(), Redactor::default());
        let init = ask(
            &mut s,
            json!({"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{}}}),
        );
        assert_eq!(init[0]["result"]["protocolVersion"], "2024-11-05");
        assert_eq!(init[0]["result"]["serverInfo"]["name"], "everything");
        assert!(ask(
            &mut s,
            json!({"jsonrpc":"2.0","method":"notifications/initialized"})
        )
        .is_empty());
        assert_eq!(
            ask(&mut s, json!({"jsonrpc":"2.0","id":5,"method":"ping"}))[0]["result"],
            json!({})
        );
        let out = ask(
            &mut s,
            json!({"jsonrpc":"2.0","id":77,"method":"tools/call","params":{"name":"get-sum","arguments":{"b":3,"a":2},"_meta":{"progressToken":"live"}}}),
        );
        assert_eq!(out.len(), 2);
        assert_eq!(out[0]["params"]["progressToken"], "live");
        assert_eq!(
            (
                out[1]["id"].clone(),
                out[1]["result"]["structuredContent"]["sum"].clone()
            ),
            (json!(77), json!(5))
        );
        assert!(out[1]["result"].get("resultType").is_none());
    }

    #[test]
    fn modern_discover_and_list_are_synthesized_from_a_legacy_recording() {
        // Goal: a 2026-07-28 client gets discover, resultType and cache hints, and unknown
        // future annotation keys come back untouched.
        let mut s = ReplayServer::new(&legacy_cassette(), Redactor::default());
        let discover = ask(
            &mut s,
            json!({"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":modern_meta()}}),
        );
        let result = &discover[0]["result"];
        assert_eq!(result["supportedVersions"], json!(["2026-07-28"]));
        assert_eq!(
            (result["ttlMs"].clone(), result["cacheScope"].clone()),
            (json!(0), json!("private"))
        );
        assert_eq!(result["capabilities"]["tools"]["listChanged"], true);
        let list = ask(
            &mut s,
            json!({"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":modern_meta()}}),
        );
        let result = &list[0]["result"];
        assert_eq!(result["resultType"], "complete");
        assert_eq!(result["tools"][0]["annotations"]["futureHint"], 7);
        assert_eq!(
            result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
            "everything"
        );
        let ping = ask(
            &mut s,
            json!({"jsonrpc":"2.0","id":3,"method":"ping","params":{"_meta":modern_meta()}}),
        );
        assert_eq!(ping[0]["error"]["code"], METHOD_NOT_FOUND);
    }

    #[test]
    fn modern_envelope_errors() {
        // Goal: unknown versions get -32022 with the supported list; a missing envelope on
        // discover is -32602.
        let mut s = ReplayServer::new(&legacy_cassette(), Redactor::default());
        let old = json!({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"1900-01-01","io.modelcontextprotocol/clientCapabilities":{}}}});
        let out = ask(&mut s, old);
        assert_eq!(out[0]["error"]["code"], UNSUPPORTED_PROTOCOL_VERSION);
        assert_eq!(out[0]["error"]["data"]["supported"], json!(["2026-07-28"]));
        let bare = ask(
            &mut s,
            json!({"jsonrpc":"2.0","id":2,"method":"server/discover"}),
        );
        assert_eq!(bare[0]["error"]["code"], INVALID_PARAMS);
    }

    #[test]
    fn misses_and_malformed_lines_are_errors_and_serving_continues() {
        // Goal: a near miss names the closest request; garbage, missing params and unknown
        // methods are JSON-RPC errors; the server still answers afterwards.
        let mut s = ReplayServer::new(&legacy_cassette(), Redactor::default());
        let miss = ask(
            &mut s,
            json!({"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"get-sum","arguments":{"a":2,"b":4}}}),
        );
        assert_eq!(miss[0]["error"]["code"], REPLAY_MISS);
        assert_eq!(
            miss[0]["error"]["data"]["firstDifference"]["pointer"],
            "/params/arguments/b"
        );
        assert_eq!(s.handle_line(b"{not json")[0]["error"]["code"], -32700);
        let no_params = ask(
            &mut s,
            json!({"jsonrpc":"2.0","id":10,"method":"tools/call"}),
        );
        assert_eq!(no_params[0]["error"]["code"], INVALID_PARAMS);
        let unknown = ask(&mut s, json!({"jsonrpc":"2.0","id":11,"method":"no/such"}));
        assert_eq!(unknown[0]["error"]["code"], METHOD_NOT_FOUND);
        assert_eq!(
            ReplayServer::line_too_long(LINE_BYTES_MAX + 1)["error"]["code"],
            INVALID_REQUEST
        );
        let list = ask(
            &mut s,
            json!({"jsonrpc":"2.0","id":12,"method":"tools/list","params":{}}),
        );
        assert_eq!(list[0]["result"]["tools"][0]["name"], "get-sum");
    }
}
