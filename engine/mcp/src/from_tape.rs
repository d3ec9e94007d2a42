//! Cassettes from a tape: the MCP traffic of any run (a cassette's replay, a world's answers,
//! an agent program's calls through `simtape serve`), as one cassette per `[[mcp]]` server
//! that answers the same requests the same way (`simtape fixtures from-tape`).
//!
//! Each `mcp:<server>` actor writes a `request` record (the
//! [`McpRequest`](crate::actor::McpRequest)) and, when the answer is decided, a `reply` record
//! ([`McpReply`](crate::actor::McpReply): the result or JSON-RPC error whole, and
//! the latency in milliseconds). Calls of one server may overlap (concurrent tool calls), so
//! a reply is paired with the open request of the same task: a task waits for its call. Each
//! answered call becomes a client request and the server's response, `latency_ms` apart, so
//! the cassette's replay takes the same virtual time. Identical requests answer in recorded
//! order in a replay, so a call retried after an error gets the error, then the result.
//!
//! Calls with nothing to replay are left out and counted: a call the recording could not
//! answer (unmatched, unanswered), and the server-request round trips of sampling and
//! elicitation (`CallToolAnswering`, `Answer`), whose server messages a reply record does not
//! hold.

use std::collections::BTreeMap;
use std::io::Read;

use serde_json::{json, Map, Value};
use simtape::tape::{each_call, CallShape, FromTapeError, TapeCall, TapeReader};

use crate::cassette::{Cassette, Party};

/// The prefix of an MCP actor's name; the rest is the `[[mcp]]` server's name.
const ACTOR_PREFIX: &str = "mcp:";
/// Nanoseconds in one cassette millisecond.
const NS_PER_MS: u64 = 1_000_000;

/// The cassette of one server, made from a tape.
#[derive(Debug, Clone, PartialEq)]
pub struct TapeCassette {
    /// The `[[mcp]]` server's name.
    pub server: String,
    /// The cassette.
    pub cassette: Cassette,
    /// The calls written: one exchange each.
    pub exchanges: usize,
    /// The calls left out (unmatched, unanswered).
    pub skipped: usize,
    /// Calls whose server spoke during them (notifications, requests to the client), by the
    /// `requestState` of their last step: the call's method, params and start, until its
    /// result arrives. The rebuilt cassette answers such a call with its result alone.
    dialogues: BTreeMap<String, (String, Option<Value>, u64)>,
}

/// Reads the MCP calls of the tape `reader` reads into one cassette per server (actors named
/// `mcp:<server>`), in the tape's actor order; `origin` names the tape in each cassette's
/// `server` line.
pub fn cassettes_from_tape<R: Read>(
    mut reader: TapeReader<R>,
    origin: &str,
) -> Result<Vec<TapeCassette>, FromTapeError> {
    let mut servers: BTreeMap<u16, TapeCassette> = BTreeMap::new();
    for (id, name) in reader.header().actors.iter().enumerate() {
        let Some(server) = name.strip_prefix(ACTOR_PREFIX) else {
            continue;
        };
        let id = u16::try_from(id).expect("a tape has at most 65,535 actors");
        let line = vec![format!("simtape fixtures from-tape {origin} ({server})")];
        let cassette = TapeCassette {
            server: server.to_string(),
            cassette: Cassette::new(line),
            exchanges: 0,
            skipped: 0,
            dialogues: BTreeMap::new(),
        };
        servers.insert(id, cassette);
    }
    each_call(
        &mut reader,
        |name| name.starts_with(ACTOR_PREFIX),
        |call| {
            let server = servers
                .get_mut(&call.actor)
                .expect("every mcp: actor has a cassette");
            server.add(&call)
        },
    )?;
    Ok(servers
        .into_values()
        .map(|mut server| {
            server.cassette.fill_latencies();
            server
        })
        .collect())
}

/// Returns the method and params of a request record's body that starts a call (an
/// [`McpRequest`] as the tape holds it: a variant name, or `{variant: [fields]}`).
///
/// [`McpRequest`]: crate::actor::McpRequest
fn call_of(body: &Value) -> Result<(String, Option<Value>), CallShape> {
    let unknown = |found: &dyn std::fmt::Display| {
        CallShape::invalid("the MCP request", format!("unknown: {found}"))
    };
    if let Some(unit) = body.as_str() {
        return match unit {
            "ListTools" | "ListToolsAnswering" => Ok(("tools/list".into(), None)),
            "Describe" => Ok(("initialize".into(), None)),
            other => Err(unknown(&format_args!("{other:?}"))),
        };
    }
    if let Some(fields) = body
        .get("CallTool")
        .or_else(|| body.get("CallToolAnswering"))
    {
        let name = fields.get(0).and_then(Value::as_str);
        let name = name.ok_or_else(|| CallShape::missing("the CallTool request's tool name"))?;
        let mut params = Map::new();
        params.insert("name".into(), json!(name));
        match fields.get(1) {
            None | Some(Value::Null) => {}
            Some(arguments) => drop(params.insert("arguments".into(), arguments.clone())),
        }
        return Ok(("tools/call".into(), Some(Value::Object(params))));
    }
    Err(unknown(body))
}

/// The `requestState` a dialogue's continuation (`Continue`, `Answer`) names, as the tape
/// holds it (`{variant: [request_state, …]}`).
fn continued_state(body: &Value) -> Option<&str> {
    ["Continue", "Answer"]
        .iter()
        .find_map(|variant| body.get(*variant))
        .and_then(|fields| fields.get(0).or(Some(fields)))
        .and_then(|state| {
            state
                .as_str()
                .or_else(|| state.get("request_state")?.as_str())
        })
}

/// The `requestState` of a result that is a step of a dialogue (the server spoke during the
/// call), not the call's result.
fn step_state(result: &Value) -> Option<&str> {
    let kind = result.get("resultType")?.as_str()?;
    (kind == "notification" || kind == "input_required")
        .then(|| result.get("requestState")?.as_str())
        .flatten()
}

impl TapeCassette {
    /// Writes the exchange of one call (its reply `[request_seq, latency_ms, result]`), or
    /// counts it as left out.
    fn add(&mut self, call: &TapeCall) -> Result<(), CallShape> {
        let latency_ms = call
            .reply
            .get(1)
            .and_then(Value::as_u64)
            .ok_or_else(|| CallShape::missing("latency"))?;
        let result = call
            .reply
            .get(2)
            .ok_or_else(|| CallShape::missing("result"))?;
        let response = match (
            result.get("Ok"),
            result.get("Err").and_then(|e| e.get("Rpc")),
        ) {
            (Some(value), _) => json!({"result": value}),
            (None, Some(rpc)) => {
                // `Rpc` as the tape holds it: [request_seq, code, message, data].
                let mut error = Map::new();
                let code = rpc.get(1).cloned();
                error.insert(
                    "code".into(),
                    code.ok_or_else(|| CallShape::missing("error code"))?,
                );
                error.insert("message".into(), rpc.get(2).cloned().unwrap_or(json!("")));
                if let Some(data) = rpc.get(3).filter(|data| !data.is_null()) {
                    error.insert("data".into(), data.clone());
                }
                json!({"error": error})
            }
            (None, None) => {
                self.skipped += 1;
                return Ok(());
            }
        };
        // A dialogue's steps carry the call along to its result, which is written with the
        // request that started it.
        let (method, params, at_ns) = match continued_state(&call.request) {
            Some(state) => match self.dialogues.remove(state) {
                Some(started) => started,
                None => {
                    self.skipped += 1;
                    return Ok(());
                }
            },
            None => {
                let (method, params) = call_of(&call.request)?;
                (method, params, call.request_t_ns)
            }
        };
        if let Some(state) = response.get("result").and_then(step_state) {
            self.dialogues
                .insert(state.to_string(), (method, params, at_ns));
            return Ok(());
        }
        let latency_ms = latency_ms + (call.request_t_ns - at_ns) / NS_PER_MS;
        self.exchanges += 1;
        let id = self.exchanges;
        let mut request = json!({"jsonrpc": "2.0", "id": id, "method": method});
        if let Some(params) = params {
            request["params"] = params;
        }
        let mut response = response;
        response["jsonrpc"] = json!("2.0");
        response["id"] = json!(id);
        let at_ms = at_ns / NS_PER_MS;
        self.cassette.push(Party::Client, at_ms, request);
        self.cassette
            .push(Party::Server, at_ms + latency_ms, response);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_as_the_tape_holds_them_become_json_rpc_calls() {
        // Goal: each request variant that starts a call maps to its method and params (no
        // `arguments` for null ones); a dialogue's continuations name the step they go on
        // from, and a step is told from a result by its `resultType`.
        let call = call_of(&json!({"CallTool": ["get-sum", {"a": 2}]})).unwrap();
        let expected = (
            "tools/call".to_string(),
            Some(json!({"name": "get-sum", "arguments": {"a": 2}})),
        );
        assert_eq!(call, expected);
        let answering = call_of(&json!({"CallToolAnswering": ["get-sum", {"a": 2}]})).unwrap();
        assert_eq!(answering, expected);
        let bare = call_of(&json!({"CallTool": ["ping", null]})).unwrap();
        assert_eq!(bare.1, Some(json!({"name": "ping"})));
        for list in ["ListTools", "ListToolsAnswering"] {
            assert_eq!(call_of(&json!(list)).unwrap(), ("tools/list".into(), None));
        }
        assert!(call_of(&json!("Nope")).is_err());
        assert_eq!(
            continued_state(&json!({"Answer": ["s/1", {}]})),
            Some("s/1")
        );
        assert_eq!(continued_state(&json!({"Continue": ["s/2"]})), Some("s/2"));
        assert_eq!(continued_state(&json!({"CallTool": ["x", null]})), None);
        let step = json!({"resultType": "notification", "requestState": "s/3"});
        assert_eq!(step_state(&step), Some("s/3"));
        assert_eq!(step_state(&json!({"content": []})), None);
    }
}
