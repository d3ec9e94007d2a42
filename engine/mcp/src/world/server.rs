//! The world server: a pure, dual-era MCP server over a [`World`]. One input line in, the
//! messages to write out; the state lives in memory; [`WorldServer::state`] and
//! [`WorldServer::report`] read it when the session ends.
//!
//! Era handling follows [`crate::replay`]: `initialize` and `ping` in the handshake era;
//! `server/discover` and envelope-carrying requests in the 2026-07-28 era, with `resultType`
//! and cache hints added. Requests are answered one by one before the next line is read, so a
//! cancellation can only name an answered request and needs no handling.
//!
//! A `tools/call` goes: unknown tool → JSON-RPC `-32602`; then the fault plan (a fault may
//! answer instead); then argument validation against `inputSchema` (a violation is a tool
//! error result, as real servers do); then the effects on a copy of the state (an error is a
//! tool error and changes nothing); then the structured result, checked against
//! `outputSchema` (a mismatch is a bug in the spec: JSON-RPC `-32603`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::effects::apply;
use super::faults::{Before, FaultKind, ToolFault};
use super::score::{score, Scored};
use super::spec::{tool_listing, World};
use super::template::{render, Bindings};
use simtape::cap::fault_rules::FaultRules;
use simtape::rng::RngStream;

use crate::era::{self, LATEST_HANDSHAKE_VERSION, META_SERVER_INFO, MODERN_VERSIONS};
use crate::jsonrpc::{
    error_response, parse_line, result_response, JsonRpcMessage, INVALID_PARAMS, METHOD_NOT_FOUND,
};

/// The error code of a simulated timeout: the one the MCP SDKs use for a request timeout.
pub const TIMEOUT_CODE: i64 = -32001;
/// The error code when a result breaks the tool's `outputSchema` (a spec bug).
pub const INTERNAL_ERROR: i64 = -32603;
/// The value of the report's `format` field.
pub const REPORT_FORMAT: &str = "simtape-mcp-world-report/1";

/// One `tools/call` as the report lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallRecord {
    /// The 1-based call number in the session.
    pub call: u64,
    /// The tool called.
    pub tool: String,
    /// `ok`, `tool_error`, `invalid_arguments`, `rpc_error`, or the outcome an injected fault
    /// gave the call (its kind's name, see `faults.rs`).
    pub outcome: String,
    /// The injected fault's kind, when one fired.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<String>,
}

/// What `simtape mcp world` writes to `--report` when the session ends (EOF or a signal).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorldReport {
    /// [`REPORT_FORMAT`].
    pub format: String,
    /// The world's name.
    pub world: String,
    /// The seed of the fault stream of a world served on its own (the spec's `seed`, or
    /// `--seed`). Inside a simulation the faults draw from the MCP actor's stream, and this is
    /// the spec's seed.
    pub seed: u64,
    /// The goal and collateral-damage verdict.
    #[serde(flatten)]
    pub scored: Scored,
    /// Every `tools/call`, in order.
    pub calls: Vec<CallRecord>,
}

/// A dual-era MCP server over a simulated world.
#[derive(Debug, Clone)]
pub struct WorldServer {
    world: World,
    seed: u64,
    state: Value,
    faults: FaultRules<ToolFault>,
    /// The stream rate faults draw from when the world is served on its own; inside a
    /// simulation they draw from the MCP actor's stream instead ([`WorldServer::call_tool_drawing`]).
    rng: RngStream,
    calls: Vec<CallRecord>,
    tool_calls: BTreeMap<String, u64>,
}

impl WorldServer {
    /// Starts a world in its initial state; served on its own, its rate faults draw from a
    /// stream forked from `seed` (name [`FAULT_STREAM`]).
    pub fn new(world: World, seed: u64) -> WorldServer {
        let faults = FaultRules::new(world.spec.faults.clone());
        WorldServer {
            state: world.spec.initial_state.clone(),
            world,
            seed,
            faults,
            rng: RngStream::fork(seed, FAULT_STREAM),
            calls: Vec::new(),
            tool_calls: BTreeMap::new(),
        }
    }

    /// Returns the current state.
    pub fn state(&self) -> &Value {
        &self.state
    }

    /// Returns the world being served.
    pub fn world(&self) -> &World {
        &self.world
    }

    /// Returns every `tools/call` so far, in order.
    pub fn calls(&self) -> &[CallRecord] {
        &self.calls
    }

    /// Returns the report on the current state.
    pub fn report(&self) -> WorldReport {
        let spec = &self.world.spec;
        WorldReport {
            format: REPORT_FORMAT.into(),
            world: spec.name.clone(),
            seed: self.seed,
            scored: self.score(),
            calls: self.calls.clone(),
        }
    }

    /// Scores the current state against the goal (the report's `scored`, without the calls).
    pub fn score(&self) -> Scored {
        let spec = &self.world.spec;
        score(&spec.goal, &spec.initial_state, &self.state)
    }

    /// Handles one input line and returns the messages to send back.
    pub fn handle_line(&mut self, line: &[u8]) -> Vec<Value> {
        match parse_line(line) {
            Ok(None) => Vec::new(),
            Ok(Some((_, JsonRpcMessage::Request { id, method, params }))) => {
                vec![self.handle_request(&id, &method, params.as_ref())]
            }
            Ok(Some(_)) => Vec::new(),
            Err(failure) => vec![failure.to_response()],
        }
    }

    fn server_info(&self) -> Value {
        json!({"name": self.world.spec.name, "version": self.world.spec.version})
    }

    fn handle_request(&mut self, id: &Value, method: &str, params: Option<&Value>) -> Value {
        let modern = era::requested_modern_version(params).is_some();
        if params.is_none() && (method == "initialize" || method == "tools/call") {
            let message = format!("Invalid params: {method} requires params");
            return error_response(id, INVALID_PARAMS, &message, None);
        }
        if modern || method == "server/discover" {
            if let Err((code, message, data)) = era::check_modern_envelope(params) {
                return error_response(id, code, &message, data);
            }
        }
        let result = match method {
            "initialize" => Ok(self.initialize_result(params)),
            "ping" if !modern => Ok(json!({})),
            "server/discover" => Ok(self.discover_result()),
            "tools/list" => Ok(self.tools_list()),
            "tools/call" => self.call_tool(params.unwrap_or(&Value::Null)),
            _ => Err((
                METHOD_NOT_FOUND,
                format!("Method not found: {method}"),
                None,
            )),
        };
        match result {
            Ok(mut result) => {
                if modern {
                    era::modernize_result(method, &mut result, Some(&self.server_info()));
                }
                result_response(id, result)
            }
            Err((code, message, data)) => error_response(id, code, &message, data),
        }
    }

    fn capabilities() -> Value {
        json!({"tools": {"listChanged": false}})
    }

    fn initialize_result(&self, params: Option<&Value>) -> Value {
        let requested = params
            .and_then(|p| p.get("protocolVersion"))
            .and_then(Value::as_str);
        let mut result = json!({
            "protocolVersion": era::negotiate_handshake_version(requested, LATEST_HANDSHAKE_VERSION),
            "capabilities": Self::capabilities(),
            "serverInfo": self.server_info(),
        });
        if let Some(instructions) = &self.world.spec.instructions {
            result["instructions"] = json!(instructions);
        }
        result
    }

    fn discover_result(&self) -> Value {
        let mut result = json!({
            "resultType": "complete",
            "supportedVersions": MODERN_VERSIONS,
            "capabilities": Self::capabilities(),
            "ttlMs": 0,
            "cacheScope": "private",
            "_meta": { META_SERVER_INFO: self.server_info() },
        });
        if let Some(instructions) = &self.world.spec.instructions {
            result["instructions"] = json!(instructions);
        }
        result
    }

    /// Returns the `tools/list` result: every tool in spec order, schemas and annotations as
    /// written.
    pub fn tools_list(&self) -> Value {
        let tools: Vec<Value> = self
            .world
            .tools
            .iter()
            .map(|t| tool_listing(&t.spec))
            .collect();
        json!({ "tools": tools })
    }

    /// Runs one `tools/call` with its `params` (`{"name", "arguments"}`): faults, argument
    /// validation, effects, result. `Err` is the JSON-RPC error `(code, message, data)`; a tool
    /// error is an `Ok` result with `isError: true`.
    pub fn call_tool(&mut self, params: &Value) -> Result<Value, era::EnvelopeError> {
        self.call_tool_from(params, None)
    }

    /// Runs one `tools/call` as [`WorldServer::call_tool`] does, its rate faults drawing from
    /// `rng` (the MCP actor's own stream, inside a simulation).
    pub fn call_tool_drawing(
        &mut self,
        params: &Value,
        rng: &mut RngStream,
    ) -> Result<Value, era::EnvelopeError> {
        self.call_tool_from(params, Some(rng))
    }

    fn call_tool_from(
        &mut self,
        params: &Value,
        rng: Option<&mut RngStream>,
    ) -> Result<Value, era::EnvelopeError> {
        let Some(name) = params.get("name").and_then(Value::as_str) else {
            return Err((
                INVALID_PARAMS,
                "Invalid params: tools/call needs a string `name`".into(),
                None,
            ));
        };
        let arguments = match params.get("arguments") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(arguments)) => arguments.clone(),
            Some(_) => {
                return Err((
                    INVALID_PARAMS,
                    "Invalid params: `arguments` must be an object".into(),
                    None,
                ))
            }
        };
        if self.world.tool(name).is_none() {
            return Err((INVALID_PARAMS, format!("Unknown tool: {name}"), None));
        }
        let call = self.calls.len() as u64 + 1;
        let counter = self.tool_calls.entry(name.to_string()).or_insert(0);
        *counter += 1;
        let tool_call = *counter;
        // The engine counts the same calls as `call` and `tool_call`: one per call that
        // reaches here, per tool and in all.
        let rng = rng.unwrap_or(&mut self.rng);
        let fault = self.faults.fire(name, rng).map(|rule| rule.fault.clone());
        let (outcome, answer) = self.run_call(name, &arguments, call, tool_call, fault.as_ref());
        self.calls.push(CallRecord {
            call,
            tool: name.to_string(),
            outcome: outcome.into(),
            fault: fault.as_ref().map(|f| f.name().to_string()),
        });
        answer
    }

    fn run_call(
        &mut self,
        name: &str,
        arguments: &Map<String, Value>,
        call: u64,
        tool_call: u64,
        fault: Option<&FaultKind>,
    ) -> (&'static str, Result<Value, era::EnvelopeError>) {
        let mut limit = None;
        match fault.map(FaultKind::before) {
            Some(Before::Answer(outcome, answer)) => return (outcome, answer),
            Some(Before::Limit(ops)) => limit = Some(ops),
            Some(Before::Run) | None => {}
        }
        let tool = self
            .world
            .tool(name)
            .expect("the caller checked the tool exists");
        let violations: Vec<String> = {
            let instance = Value::Object(arguments.clone());
            tool.input
                .iter_errors(&instance)
                .map(|e| format!("{} (at `{}`)", e, e.instance_path()))
                .collect()
        };
        if !violations.is_empty() {
            let message = format!(
                "Invalid arguments for tool {name}: {}",
                violations.join("; ")
            );
            return ("invalid_arguments", Ok(tool_error(&message)));
        }
        let effects = &tool.spec.effects;
        let mut next = self.state.clone();
        let applied = apply(
            &mut next,
            effects,
            limit.unwrap_or(usize::MAX),
            arguments,
            call,
            tool_call,
        );
        if let (Some(fault), Some(_)) = (fault, limit) {
            // What landed stays, as on a server that failed mid-write.
            self.state = next;
            let (outcome, answer) = fault.limited(effects.len());
            return (outcome, Ok(answer));
        }
        let reads = match applied {
            Ok(reads) => reads,
            Err(error) => return ("tool_error", Ok(tool_error(&error.to_string()))),
        };
        let bindings = Bindings {
            arguments,
            reads: &reads,
            call,
            tool_call,
        };
        let structured = match &tool.spec.result {
            Some(template) => match render(template, &bindings) {
                Ok(value) => value,
                Err(error) => return ("tool_error", Ok(tool_error(&error.to_string()))),
            },
            None if reads.is_empty() => json!({"ok": true}),
            None => Value::Object(reads.clone()),
        };
        if let Some(output) = &tool.output {
            if let Some(error) = output.iter_errors(&structured).next() {
                let message = format!(
                    "world spec bug: the result of {name} breaks its outputSchema: {error}"
                );
                return ("rpc_error", Err((INTERNAL_ERROR, message, None)));
            }
        }
        self.state = next;
        let text = structured.to_string();
        let result = json!({
            "content": [{"type": "text", "text": text}],
            "structuredContent": structured,
            "isError": false,
        });
        match fault {
            Some(fault) => {
                let (outcome, answer) = fault.after("ok", result);
                (outcome, Ok(answer))
            }
            None => ("ok", Ok(result)),
        }
    }
}

/// The name of the stream a world served on its own draws its rate faults from, forked from
/// its seed.
pub const FAULT_STREAM: &str = "mcp-world/faults";

pub(super) fn tool_error(message: &str) -> Value {
    json!({"content": [{"type": "text", "text": message}], "isError": true})
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn world(faults: &str) -> WorldServer {
        let text = format!(
            r#"{{"name":"w","initial_state":{{"n":1}},"goal":{{"assertions":[{{"path":"/n","equals":2}}]}},
            "tools":[{{"name":"set","inputSchema":{{"type":"object","properties":{{"v":{{"type":"integer"}}}},"required":["v"]}},
            "outputSchema":{{"type":"object","properties":{{"ok":{{"type":"boolean"}}}},"required":["ok"]}},
            "effects":[{{"op":"set","path":"/n","value":"{{{{v}}}}"}},{{"op":"set","path":"/m","value":true}}]}}],
            "faults":{faults}}}"#
        );
        WorldServer::new(World::parse(&text, Path::new("w.json")).unwrap(), 1)
    }

    fn call(server: &mut WorldServer, args: &str) -> Value {
        let line = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"set","arguments":{args}}}}}"#
        );
        server.handle_line(line.as_bytes()).remove(0)
    }

    #[test]
    fn calls_validate_apply_and_fault() {
        // Goal: bad arguments are a tool error, good ones apply, faults answer in their place.
        let mut server = world(
            r#"[{"on_call":2,"fault":{"kind":"rpc_error","code":429,"message":"slow down","data":{"retryAfterMs":500}}},
                {"on_call":3,"fault":{"kind":"timeout"}},
                {"on_call":4,"fault":{"kind":"partial_write","ops":1}}]"#,
        );
        let invalid = call(&mut server, r#"{"v":"two"}"#);
        assert_eq!(invalid["result"]["isError"], true, "{invalid}");
        assert_eq!(server.state(), &json!({"n": 1}));
        assert_eq!(
            call(&mut server, r#"{"v":2}"#)["error"]["data"]["retryAfterMs"],
            500
        );
        assert_eq!(
            call(&mut server, r#"{"v":2}"#)["error"]["code"],
            TIMEOUT_CODE
        );
        assert_eq!(call(&mut server, r#"{"v":2}"#)["result"]["isError"], true);
        assert_eq!(
            server.state(),
            &json!({"n": 2}),
            "partial write lands op 1 only"
        );
        let ok = call(&mut server, r#"{"v":2}"#);
        assert_eq!(ok["result"]["structuredContent"], json!({"ok": true}));
        let report = server.report();
        assert!(!report.scored.passed, "/m is collateral damage");
        let outcomes: Vec<&str> = report.calls.iter().map(|c| c.outcome.as_str()).collect();
        assert_eq!(
            outcomes,
            [
                "invalid_arguments",
                "rpc_error",
                "timeout",
                "partial_write",
                "ok"
            ]
        );
    }

    #[test]
    fn both_eras_are_served() {
        // Goal: initialize and server/discover both work; modern lists carry cache hints.
        let mut server = world("[]");
        let init = server.handle_line(br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}"#);
        assert_eq!(init[0]["result"]["protocolVersion"], "2025-11-25");
        let meta = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
        let list = format!(
            r#"{{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{{"_meta":{meta}}}}}"#
        );
        let listed = server.handle_line(list.as_bytes()).remove(0);
        assert_eq!(listed["result"]["ttlMs"], 0);
        assert_eq!(listed["result"]["tools"][0]["name"], "set");
        let unknown = server.handle_line(br#"{"jsonrpc":"2.0","id":3,"method":"nope"}"#);
        assert_eq!(unknown[0]["error"]["code"], METHOD_NOT_FOUND);
    }
}
