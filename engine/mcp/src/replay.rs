//! The replay server: a pure, dual-era stdio MCP server over a cassette. One input line in,
//! the messages to write out; no clock, no I/O, so every behaviour is unit-testable.
//!
//! Era handling: `initialize`, `notifications/initialized` and `ping` are answered in the
//! handshake era; `server/discover` and requests carrying the 2026-07-28 `_meta` envelope are
//! answered in the modern era (envelope checked, `-32022` for an unknown version, `resultType`
//! and cache hints added when the recording came from a handshake-era server). Either era is
//! served whatever era the cassette was recorded in: the missing handshake answer is
//! synthesized from the other one.

use std::collections::VecDeque;

use serde_json::{json, Value};

use crate::asks::{
    answer_difference, input_requests, input_required, parse_request_state, Answered, Asks,
    Mismatch, Out,
};
use crate::cassette::{Cassette, Exchange, Party};
use crate::era::{self, LATEST_HANDSHAKE_VERSION, META_SERVER_INFO};
use crate::jsonrpc::{
    error_response, is_notification, parse_line, result_response, JsonRpcMessage, ParseFailure,
    INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, REPLAY_MISS,
};
use crate::limits::LINE_BYTES_MAX;
use crate::matching::Matcher;
use crate::redact::Redactor;
use crate::script::{self, ServerSide, Step};

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
    /// What the server sent on its own, by owning client message.
    side: ServerSide,
    /// The recorded client notifications (their `seq`s) and a matcher over them.
    notifications: Vec<u64>,
    notification_matcher: Matcher,
    /// Server requests sent during replay, waiting for the client's answers.
    asks: Asks,
    /// Replay misses not yet taken by [`ReplayServer::take_misses`].
    misses: Vec<String>,
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
        let (notifications, keys): (Vec<u64>, Vec<(String, Value)>) = cassette
            .messages
            .iter()
            .filter(|e| e.from == Party::Client && is_notification(&e.message))
            .map(|e| {
                let method = e.message["method"].as_str().unwrap_or("").to_string();
                (
                    e.seq,
                    (method, era::matching_params(e.message.get("params"))),
                )
            })
            .unzip();
        ReplayServer {
            matcher,
            exchanges,
            initialize,
            discover,
            server_info,
            redactor,
            side: script::server_side(cassette),
            notifications,
            notification_matcher: Matcher::new(keys),
            asks: Asks::default(),
            misses: Vec::new(),
        }
    }

    /// Returns what the server sent before the client's first message (in the first recorded
    /// session), to send when a session opens.
    pub fn opening(&mut self) -> Vec<Value> {
        let steps = self
            .side
            .opening
            .values()
            .next()
            .cloned()
            .unwrap_or_default();
        let queue = steps.iter().filter_map(|s| Out::of_step(s, None, None));
        self.asks.run(queue.collect(), None)
    }

    /// Returns the replay misses since the last call, one line each: requests nothing
    /// recorded answers and client answers that differ from the recorded ones.
    pub fn take_misses(&mut self) -> Vec<String> {
        std::mem::take(&mut self.misses)
    }

    /// Handles one input line and returns the messages to send back, in order.
    pub fn handle_line(&mut self, line: &[u8]) -> Vec<Value> {
        match parse_line(line) {
            Ok(None) => Vec::new(),
            Ok(Some((value, message))) => self.handle_message(&value, message),
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

    /// Handles one message (`value`, classified as `message`). A request gets its recorded
    /// answer with what the server sent on its own around it; a notification gets what the
    /// server sent after it; a response answers a server request replay sent (checked against
    /// the recorded answer), and what waited for it follows.
    pub fn handle_message(&mut self, value: &Value, message: JsonRpcMessage) -> Vec<Value> {
        match message {
            JsonRpcMessage::Request { id, method, params } => {
                self.handle_request(&id, &method, params)
            }
            JsonRpcMessage::Notification { method, params } => self.notification(&method, params),
            JsonRpcMessage::Response { .. } => self.client_answer(value),
        }
    }

    fn notification(&mut self, method: &str, params: Option<Value>) -> Vec<Value> {
        if method == "notifications/cancelled" {
            if let Some(id) = params.as_ref().and_then(|p| p.get("requestId")) {
                self.asks.cancel(id);
            }
        }
        let mut key_params = era::matching_params(params.as_ref());
        self.redactor.redact_value(&mut key_params);
        let Ok(index) = self.notification_matcher.find(method, &key_params) else {
            return Vec::new();
        };
        let segment = self.side.segment(self.notifications[index]);
        let queue = segment.steps().filter_map(|s| Out::of_step(s, None, None));
        self.asks.run(queue.collect(), None)
    }

    fn client_answer(&mut self, value: &Value) -> Vec<Value> {
        let mut live = value.clone();
        self.redactor.redact_value(&mut live);
        match self.asks.answered(&live) {
            None => Vec::new(),
            Some(Answered::Matched(out)) => out,
            Some(Answered::Mismatch(mismatch)) => self.mismatch(&mismatch),
        }
    }

    /// Notes a mismatched answer and fails the client request it belonged to.
    fn mismatch(&mut self, mismatch: &Mismatch) -> Vec<Value> {
        let message = mismatch.message();
        self.misses.push(message.clone());
        match &mismatch.for_request {
            Some(id) => vec![error_response(
                id,
                REPLAY_MISS,
                &message,
                Some(mismatch.data()),
            )],
            None => Vec::new(),
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
            // A recorded result that is not an object (a broken cassette) is replayed as it
            // is: there is no version in it to negotiate.
            if let Some(fields) = result.as_object_mut() {
                let version = era::negotiate_handshake_version(requested, recorded_version);
                fields.insert("protocolVersion".into(), json!(version));
            }
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
        if modern {
            let state = params.as_ref().and_then(|p| p.get("requestState"));
            if let Some(state) = state.and_then(Value::as_str) {
                return self.modern_retry(id, method, state, params.as_ref());
            }
        }
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
                self.misses.push(miss.message());
                return vec![error_response(id, code, &miss.message(), Some(miss.data()))];
            }
        };
        let live_token = era::progress_token(params.as_ref());
        if modern {
            return self.modern_round(id, method, index, 0, live_token);
        }
        let exchange = &self.exchanges[index];
        let segment = self.side.segment(exchange.request_seq);
        let recorded_token = era::progress_token(exchange.params());
        let step = |s: &Step| Out::of_step(s, recorded_token, live_token);
        let mut queue: VecDeque<Out> = segment.before.iter().filter_map(step).collect();
        // A recorded request that never got an answer (it was cancelled while recording) gets
        // none now either: answering would break the spec's "no messages after a cancel".
        if let Some(recorded) = &exchange.response {
            let mut response = recorded.clone();
            response["id"] = id.clone();
            queue.push_back(Out::Send(response));
        }
        queue.extend(segment.after.iter().filter_map(step));
        self.asks.run(queue, Some(id.clone()))
    }

    /// Answers round `answered` of a 2026-07-28 request (the client has answered that many
    /// of the recorded server requests): the notifications recorded up to the next server
    /// request, then that request as an `input_required` result, or, when none is left, the
    /// recorded response and what followed it. A client of that era gets server requests
    /// only this way, so a recorded `ping` to the client is left out.
    fn modern_round(
        &mut self,
        id: &Value,
        method: &str,
        index: usize,
        answered: usize,
        live_token: Option<&Value>,
    ) -> Vec<Value> {
        let exchange = &self.exchanges[index];
        let segment = self.side.segment(exchange.request_seq);
        let recorded_token = era::progress_token(exchange.params());
        let mut out = Vec::new();
        let mut asked = 0;
        for step in &segment.before {
            match step {
                Step::Notify(_) if asked == answered => {
                    if let Some(Out::Send(message)) = Out::of_step(step, recorded_token, live_token)
                    {
                        out.push(message);
                    }
                }
                Step::Notify(_) => {}
                Step::Ask { request, .. } if request["method"] == "ping" => {}
                Step::Ask { request, .. } => {
                    if asked == answered {
                        out.push(result_response(id, input_required(index, asked, request)));
                        return out;
                    }
                    asked += 1;
                }
            }
        }
        if let Some(recorded) = &exchange.response {
            let mut response = recorded.clone();
            response["id"] = id.clone();
            if let Some(result) = response.get_mut("result") {
                era::modernize_result(method, result, self.server_info.as_ref());
            }
            out.push(response);
        }
        for step in &segment.after {
            if let Some(Out::Send(message)) = Out::of_step(step, recorded_token, live_token) {
                out.push(message);
            }
        }
        out
    }

    /// Continues a 2026-07-28 request the client retried with `inputResponses` and the
    /// `requestState` replay gave it: the answer to the last server request is checked
    /// against the recorded one, then the next round follows.
    fn modern_retry(
        &mut self,
        id: &Value,
        method: &str,
        state: &str,
        params: Option<&Value>,
    ) -> Vec<Value> {
        let parsed = parse_request_state(state).filter(|&(index, _)| index < self.exchanges.len());
        let Some((index, answered)) = parsed else {
            let message =
                format!("Invalid params: requestState {state:?} was not issued by this replay");
            return vec![error_response(id, INVALID_PARAMS, &message, None)];
        };
        let exchange = &self.exchanges[index];
        let segment = self.side.segment(exchange.request_seq);
        let recorded = input_requests(&segment).get(answered - 1).copied();
        let Some((request, Some(answer))) = recorded else {
            let message =
                format!("Invalid params: requestState {state:?} names no recorded server request");
            return vec![error_response(id, INVALID_PARAMS, &message, None)];
        };
        let key = (answered - 1).to_string();
        let live = params
            .and_then(|p| p.pointer(&format!("/inputResponses/{key}")))
            .map(|result| json!({ "result": result }))
            .unwrap_or(Value::Null);
        if let Some(difference) = answer_difference(answer, &live) {
            let mismatch = Mismatch {
                method: request["method"].as_str().unwrap_or("").to_string(),
                for_request: Some(id.clone()),
                difference,
            };
            return self.mismatch(&mismatch);
        }
        let live_token = params.and_then(|p| era::progress_token(Some(p))).cloned();
        self.modern_round(id, method, index, answered, live_token.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cassette::Party::{Client, Server};
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

    fn sampling_cassette() -> Cassette {
        let mut c = Cassette::new(vec!["server".into()]);
        let messages = [
            (
                Client,
                json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"sampling":{}}}}),
            ),
            (
                Server,
                json!({"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}),
            ),
            (
                Client,
                json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
            ),
            (
                Server,
                json!({"jsonrpc":"2.0","method":"notifications/tools/list_changed"}),
            ),
            (
                Client,
                json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sample","arguments":{}}}),
            ),
            (
                Server,
                json!({"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"asking"}}),
            ),
            (
                Server,
                json!({"jsonrpc":"2.0","id":0,"method":"sampling/createMessage","params":{"messages":[],"maxTokens":5}}),
            ),
            (
                Client,
                json!({"jsonrpc":"2.0","id":0,"result":{"model":"m","role":"assistant","content":{"type":"text","text":"hi"}}}),
            ),
            (
                Server,
                json!({"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"got hi"}]}}),
            ),
        ];
        for (i, (from, message)) in messages.into_iter().enumerate() {
            c.push(from, i as u64, message);
        }
        c.fill_latencies();
        c
    }

    fn sampled(text: &str) -> Value {
        json!({"model":"m","role":"assistant","content":{"type":"text","text":text}})
    }

    #[test]
    fn server_messages_and_requests_replay_where_recorded() {
        // Goal: list_changed follows `initialized`; a call sends its log line and the sampling
        // request, holds the result until the client answers as recorded, then sends it.
        let mut s = ReplayServer::new(&sampling_cassette(), Redactor::default());
        assert!(s.opening().is_empty());
        let init = json!({"jsonrpc":"2.0","id":"a","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}});
        assert_eq!(ask(&mut s, init).len(), 1);
        let listed = ask(
            &mut s,
            json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
        );
        assert_eq!(listed[0]["method"], "notifications/tools/list_changed");
        let call = json!({"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"sample","arguments":{}}});
        let out = ask(&mut s, call.clone());
        assert_eq!(out.len(), 2, "{out:?}");
        assert_eq!(out[0]["method"], "notifications/message");
        assert_eq!(out[1]["method"], "sampling/createMessage");
        let answer = json!({"jsonrpc":"2.0","id":out[1]["id"],"result":sampled("hi")});
        let done = ask(&mut s, answer);
        assert_eq!((done.len(), &done[0]["id"]), (1, &json!("c")));
        assert_eq!(done[0]["result"]["content"][0]["text"], "got hi");
        // Another answer than recorded: the call fails with a replay miss naming the field.
        let out = ask(&mut s, call);
        let wrong = json!({"jsonrpc":"2.0","id":out[1]["id"],"result":sampled("bye")});
        let failed = ask(&mut s, wrong);
        assert_eq!(failed[0]["error"]["code"], REPLAY_MISS);
        assert_eq!(
            failed[0]["error"]["data"]["firstDifference"]["pointer"],
            "/result/content/text"
        );
        assert_eq!(s.take_misses().len(), 1);
    }

    #[test]
    fn a_modern_client_gets_server_requests_as_input_required_rounds() {
        // Goal: in the 2026-07-28 era the sampling request comes back as an input_required
        // result; the retry with the recorded answer gets the log line's successor, the
        // result; a retry with another answer is a replay miss.
        let mut s = ReplayServer::new(&sampling_cassette(), Redactor::default());
        let params = json!({"name":"sample","arguments":{},"_meta":modern_meta()});
        let call = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":params});
        let first = ask(&mut s, call);
        assert_eq!(first[0]["method"], "notifications/message");
        let result = &first[1]["result"];
        assert_eq!(result["resultType"], "input_required");
        assert_eq!(
            result["inputRequests"]["0"]["method"],
            "sampling/createMessage"
        );
        let mut retry = params.clone();
        retry["requestState"] = result["requestState"].clone();
        retry["inputResponses"] = json!({"0": sampled("hi")});
        let done = ask(
            &mut s,
            json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":retry.clone()}),
        );
        assert_eq!(done.len(), 1, "{done:?}");
        assert_eq!(done[0]["result"]["resultType"], "complete");
        assert_eq!(done[0]["result"]["content"][0]["text"], "got hi");
        retry["inputResponses"] = json!({"0": sampled("bye")});
        let failed = ask(
            &mut s,
            json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":retry}),
        );
        assert_eq!(failed[0]["error"]["code"], REPLAY_MISS);
    }
}
