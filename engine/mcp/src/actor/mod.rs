//! The MCP actor: a cassette-backed or world-backed MCP server inside a simtape simulation.
//!
//! A pipeline written in Rust reaches an MCP server the way it reaches any capability: through
//! an actor ([`simtape::actor::Actor`]). The run registers each server under its own name,
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use simtape_mcp::actor::{McpActor, McpHandle};
//! let mut builder = simtape::Sim::builder();
//! let tickets = McpHandle::new(builder.actor("mcp:tickets", McpActor::load("tickets.json")?));
//! # Ok(()) }
//! ```
//!
//! and the pipeline calls [`McpHandle::list_tools`] and [`McpHandle::call_tool`]. The actor
//! answers from the cassette with the matching rules of `simtape mcp replay` ([`crate::matching`],
//! [`crate::era::matching_params`]), and each answer takes the virtual time the recorded
//! response took, so a replayed run's clock moves as the recording's did.
//!
//! * [`McpRequest`] and [`McpReply`] are what the tape shows: the request record carries the
//!   method, the tool name and the arguments; the reply record carries the recorded exchange
//!   and the result or error (large results go to the tape's content store).
//! * [`McpCallError`] separates a recorded JSON-RPC error from a call the cassette cannot
//!   answer. A tool error result (`isError: true`) is not an error here, as for MCP clients.
//! * [`McpHandle`] is the typed handle pipeline code holds; with
//!   [`McpHandle::call_tool_with`] an [`McpClient`] takes what a recorded server sent on its
//!   own during a call (notifications, requests to the client) and answers, in recorded order
//!   (see `dialogue.rs`).
//!
//! # A world-backed server
//!
//! [`McpActor::from_world`] (or [`McpActor::load_world`]) serves a world spec
//! ([`crate::world`]) instead of a recording, through the same [`crate::world::WorldServer`]
//! code as `simtape mcp world`: `tools/list` lists the spec's tools as written, and
//! `tools/call` runs faults, argument validation, effects and the result. Three things are
//! specific to a simulation (see `world.rs`):
//!
//! * **Seed.** Before its first answer the actor draws one `u64` from its own random stream
//!   ([`ActorContext::rng`], forked from the simulation seed by the actor's name) and seeds the
//!   world's fault streams with it; the spec's `seed` is not used. The same simulation seed
//!   gives the same faults, and another seed other faults.
//! * **Latency.** Each answer takes `base_ms + jitter` of virtual time, `jitter` drawn from
//!   `0..=jitter_ms` on the same stream: the tool's `latency`, else the spec's, else 1 ms flat.
//!   A `timeout` fault instead takes its `after_ms`, as a client that waited would.
//! * **Artifacts.** The final state and its score are [`McpActor::world_state`] and
//!   [`McpActor::world_report`], on the actor in `RunReport::actors`.

mod dialogue;
mod error;
mod handle;
mod world;

pub use error::McpCallError;
pub use handle::{is_tool_error, McpClient, McpHandle};

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;
use serde_json::{json, Map, Value};
use simtape::actor::{Actor, ActorContext, Answer};

use crate::cassette::{Cassette, Exchange};
use crate::era;
use crate::error::McpError;
use crate::matching::Matcher;
use crate::redact::Redactor;
use crate::world::score::Scored;
use crate::world::server::WorldReport;
use crate::world::{SpecError, World};
use dialogue::{Dialogue, Next, Resumed};
use world::WorldBackend;

/// Virtual nanoseconds in one recorded millisecond.
const NS_PER_MS: u64 = 1_000_000;

/// A request a pipeline sends to an MCP server.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum McpRequest {
    /// `tools/list`, without a cursor.
    ListTools,
    /// `tools/call` of the tool `name`. Null `arguments` are sent as no `arguments` member,
    /// which is how MCP clients call a tool that takes none.
    CallTool {
        /// The tool's name.
        name: String,
        /// The tool's arguments, a JSON object (or null for none).
        arguments: Value,
    },
    /// `tools/call` of the tool `name` by a pipeline that takes the server's own messages
    /// during the call (see [`McpHandle::call_tool_with`]). When the recording holds
    /// notifications or requests to the client during the call, the reply is the first of
    /// them, a step of the call's dialogue (`resultType` `notification` or `input_required`,
    /// with a `requestState`); the pipeline goes on with [`McpRequest::Continue`] or
    /// [`McpRequest::Answer`]. Otherwise as `CallTool`. A world sends nothing on its own, so
    /// this is `CallTool` there.
    CallToolAnswering {
        /// The tool's name.
        name: String,
        /// The tool's arguments, a JSON object (or null for none).
        arguments: Value,
    },
    /// The pipeline's answer to the server request an `input_required` step named: the
    /// step's `requestState` and the pipeline's `result` for the request. It is checked
    /// against the answer recorded ([`McpCallError::AnswerMismatch`] when it differs); the
    /// reply is the next step or the call's recorded result.
    Answer {
        /// The `requestState` of the step answered.
        request_state: String,
        /// The answer (a sampling, elicitation, roots or ping result).
        result: Value,
    },
    /// `initialize`: the server's description, its `initialize` result at its newest
    /// handshake-era version (`protocolVersion`, `capabilities`, `serverInfo`, and
    /// `instructions` when it has them), for a gateway that serves the server to outside
    /// clients. It takes no virtual time and draws nothing from the actor's stream.
    Describe,
    /// The pipeline took the notification a `notification` step carried: the reply is the
    /// next step or the call's recorded result.
    Continue {
        /// The `requestState` of the step taken.
        request_state: String,
    },
    /// `tools/list` by a pipeline that takes the server's own messages during it (see
    /// [`McpHandle::list_tools_with`]): the steps as for [`McpRequest::CallToolAnswering`]
    /// (a server's `list_changed` notifications, say), then the recorded list.
    ListToolsAnswering,
}

impl McpRequest {
    /// Returns the JSON-RPC method of the request.
    pub fn method(&self) -> &'static str {
        match self {
            McpRequest::ListTools | McpRequest::ListToolsAnswering => "tools/list",
            McpRequest::CallTool { .. }
            | McpRequest::CallToolAnswering { .. }
            | McpRequest::Answer { .. }
            | McpRequest::Continue { .. } => "tools/call",
            McpRequest::Describe => "initialize",
        }
    }

    /// Returns the JSON-RPC params of the request, as a client would send them.
    pub fn params(&self) -> Option<Value> {
        match self {
            McpRequest::ListTools | McpRequest::ListToolsAnswering | McpRequest::Describe => None,
            McpRequest::Answer {
                request_state,
                result,
            } => Some(json!({"requestState": request_state, "inputResponse": result})),
            McpRequest::Continue { request_state } => {
                Some(json!({ "requestState": request_state }))
            }
            McpRequest::CallTool { name, arguments }
            | McpRequest::CallToolAnswering { name, arguments } => {
                let mut params = Map::new();
                params.insert("name".into(), json!(name));
                if !arguments.is_null() {
                    params.insert("arguments".into(), arguments.clone());
                }
                Some(Value::Object(params))
            }
        }
    }
}

/// The reply record of one call: what the tape shows about it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct McpReply {
    /// The `seq` of the recorded request that answered, if one matched; for a world, the
    /// request's 1-based number at this actor.
    pub request_seq: Option<u64>,
    /// The latency of the answer, in milliseconds: recorded (0 when nothing matched), or for a
    /// world drawn from its latency model.
    pub latency_ms: u64,
    /// The recorded `result`, or why there is none.
    pub result: Result<Value, McpCallError>,
}

/// A cassette-backed MCP server as a simtape actor; register it with `Builder::actor`.
///
/// Identical requests are answered in recorded order, and the last recording answers every
/// repeat after that, exactly as `simtape mcp replay` does. The state after a run (which
/// recorded requests answered, in order) is in `RunReport::actors`.
///
/// ```
/// use serde_json::json;
/// use simtape_mcp::{actor::{McpActor, McpHandle}, Cassette, Party};
/// let mut cassette = Cassette::new(vec!["demo".into()]);
/// cassette.push(Party::Client, 0, json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}));
/// cassette.push(Party::Server, 7, json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": []}}));
/// cassette.fill_latencies();
/// let mut builder = simtape::Sim::builder();
/// let mcp = McpHandle::new(builder.actor("mcp:demo", McpActor::from_cassette(cassette)));
/// let report = builder.build().unwrap().run(move |_host| async move {
///     mcp.list_tools().await
/// }).unwrap();
/// assert_eq!(report.output.unwrap(), json!({"tools": []}));
/// assert_eq!(report.summary.end_ns, 7_000_000);
/// ```
#[derive(Debug, Clone)]
pub struct McpActor {
    backend: Backend,
}

/// What answers an [`McpActor`]'s requests.
#[derive(Debug, Clone)]
enum Backend {
    /// Recorded answers from a cassette (boxed: it carries the indexes of the recording).
    Cassette(Box<CassetteBackend>),
    /// A seeded world spec (boxed: it carries the compiled schemas and the state).
    World(Box<WorldBackend>),
}

/// The cassette backend: recorded exchanges, matched as `simtape mcp replay` matches them.
#[derive(Debug, Clone)]
struct CassetteBackend {
    exchanges: Vec<Exchange>,
    matcher: Matcher,
    redactor: Redactor,
    answered: Vec<u64>,
    /// What the recorded server sent on its own during each call, by exchange index.
    dialogues: BTreeMap<usize, Dialogue>,
    /// The answer to [`McpRequest::Describe`], as `simtape mcp replay` answers `initialize`.
    description: Result<Value, McpCallError>,
}

impl McpActor {
    /// Returns an actor answering from the client-initiated exchanges of `cassette`.
    pub fn from_cassette(cassette: Cassette) -> McpActor {
        let (exchanges, matcher) = crate::matching::client_index(&cassette);
        let mut replay = crate::replay::ReplayServer::new(&cassette, Redactor::default());
        let side = crate::script::server_side(&cassette);
        let dialogues = exchanges
            .iter()
            .enumerate()
            .filter(|(_, exchange)| matches!(exchange.method(), "tools/call" | "tools/list"))
            .filter_map(|(index, exchange)| {
                let request = cassette
                    .messages
                    .iter()
                    .find(|e| e.seq == exchange.request_seq)?;
                let segment = side.segment(exchange.request_seq);
                Some((index, Dialogue::of(&cassette, request, &segment)?))
            })
            .collect();
        let backend = CassetteBackend {
            matcher,
            exchanges,
            redactor: Redactor::default(),
            answered: Vec::new(),
            dialogues,
            description: describe(|line| replay.handle_line(line)),
        };
        McpActor {
            backend: Backend::Cassette(Box::new(backend)),
        }
    }

    /// Reads the cassette at `path` and returns an actor over it; the error names the file.
    pub fn load(path: impl AsRef<Path>) -> Result<McpActor, McpError> {
        Cassette::load(path.as_ref()).map(McpActor::from_cassette)
    }

    /// Returns an actor serving `world` from its initial state, as `simtape mcp world` does;
    /// see [the module docs](crate::actor#a-world-backed-server) for seeds and latency.
    ///
    /// ```
    /// use serde_json::json;
    /// use simtape_mcp::{actor::{McpActor, McpHandle}, world::World};
    /// let text = r#"{"name": "counter", "initial_state": {"n": 0}, "latency": {"base_ms": 4},
    ///   "tools": [{"name": "bump", "inputSchema": {"type": "object"},
    ///              "effects": [{"op": "add", "path": "/n", "value": 1}]}],
    ///   "goal": {"assertions": [{"path": "/n", "equals": 1}]}}"#;
    /// let world = World::parse(text, "counter.json".as_ref()).unwrap();
    /// let mut builder = simtape::Sim::builder();
    /// let mcp = builder.actor("mcp:counter", McpActor::from_world(world));
    /// let report = builder.build().unwrap().run(move |_host| async move {
    ///     McpHandle::new(mcp).call_tool("bump", json!({})).await
    /// }).unwrap();
    /// assert_eq!(report.output.unwrap()["structuredContent"], json!({"ok": true}));
    /// assert_eq!(report.summary.end_ns, 4_000_000);
    /// let counter = report.actors.get(mcp).unwrap();
    /// assert_eq!(counter.world_state(), Some(&json!({"n": 1})));
    /// assert!(counter.world_report().unwrap().scored.passed);
    /// ```
    pub fn from_world(world: World) -> McpActor {
        McpActor {
            backend: Backend::World(Box::new(WorldBackend::new(world))),
        }
    }

    /// Loads, checks and compiles the world spec at `path` and returns an actor serving it;
    /// the error names the file and where in it the problem is.
    pub fn load_world(path: impl AsRef<Path>) -> Result<McpActor, SpecError> {
        World::load(path.as_ref()).map(McpActor::from_world)
    }

    /// Replaces the redactor applied to requests before matching (the default one scrubs
    /// credential fields and key shapes). Pass the one the cassette was recorded with, as
    /// `--redact-env` does for `simtape mcp replay`, so requests carrying secrets still match.
    /// A world-backed actor matches nothing, so this changes nothing for it.
    pub fn with_redactor(mut self, redactor: Redactor) -> McpActor {
        if let Backend::Cassette(cassette) = &mut self.backend {
            cassette.redactor = redactor;
        }
        self
    }

    /// Returns the `seq` of each recorded request that answered a call, in call order (empty
    /// for a world-backed actor).
    pub fn answered(&self) -> &[u64] {
        match &self.backend {
            Backend::Cassette(cassette) => &cassette.answered,
            Backend::World(_) => &[],
        }
    }

    /// Returns whether the server sends messages of its own during some `tools/call` or
    /// `tools/list` (notifications, requests to the client): only then does a request need a
    /// client that takes them ([`McpHandle::call_tool_with`]). Never for a world.
    pub fn speaks_during_requests(&self) -> bool {
        match &self.backend {
            Backend::Cassette(cassette) => !cassette.dialogues.is_empty(),
            Backend::World(_) => false,
        }
    }

    /// Returns the indices of the `rate` rules among the actor's world's fault rules (none
    /// for a cassette): what a swarm run sets, one by one.
    pub fn rate_rules(&self) -> Vec<usize> {
        match &self.backend {
            Backend::Cassette(_) => Vec::new(),
            Backend::World(world) => world.rate_rules(),
        }
    }

    /// Returns the world's current state (after a run: its final state), or `None` for a
    /// cassette-backed actor.
    pub fn world_state(&self) -> Option<&Value> {
        match &self.backend {
            Backend::Cassette(_) => None,
            Backend::World(world) => Some(world.state()),
        }
    }

    /// Returns the world report on the current state (goal, collateral damage, every call and
    /// the fault seed), as `simtape mcp world --report` writes it, or `None` for a
    /// cassette-backed actor.
    pub fn world_report(&self) -> Option<WorldReport> {
        match &self.backend {
            Backend::Cassette(_) => None,
            Backend::World(world) => Some(world.report()),
        }
    }

    /// Returns the current state's score against the world's goal (the report's `scored`),
    /// or `None` for a cassette-backed actor.
    pub fn world_score(&self) -> Option<Scored> {
        match &self.backend {
            Backend::Cassette(_) => None,
            Backend::World(world) => Some(world.score()),
        }
    }
}

/// Returns a server's description: its answer to a handshake-era `initialize` at the newest
/// version, asked through `answer` (a server's `handle_line`).
pub(crate) fn describe(answer: impl FnOnce(&[u8]) -> Vec<Value>) -> Result<Value, McpCallError> {
    let request = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": era::LATEST_HANDSHAKE_VERSION, "capabilities": {},
        "clientInfo": {"name": "simtape", "version": env!("CARGO_PKG_VERSION")}}});
    let answers = answer(request.to_string().as_bytes());
    let response = answers.last().cloned().unwrap_or(Value::Null);
    match response.get("result") {
        Some(result) => Ok(result.clone()),
        None => Err(McpCallError::Malformed {
            request_seq: 0,
            reason: format!("the server's answer to initialize has no result: {response}"),
        }),
    }
}

impl CassetteBackend {
    fn answer(&mut self, request: &McpRequest) -> McpReply {
        if let McpRequest::Describe = request {
            return McpReply {
                request_seq: None,
                latency_ms: 0,
                result: self.description.clone(),
            };
        }
        match request {
            McpRequest::Answer {
                request_state,
                result,
            } => return self.resume(request_state, Resumed::Answer(result)),
            McpRequest::Continue { request_state } => {
                return self.resume(request_state, Resumed::Continue)
            }
            _ => {}
        }
        let method = request.method();
        let mut key_params = era::matching_params(request.params().as_ref());
        self.redactor.redact_value(&mut key_params);
        let index = match self.matcher.find(method, &key_params) {
            Ok(index) => index,
            Err(miss) => {
                return McpReply {
                    request_seq: None,
                    latency_ms: 0,
                    result: Err(McpCallError::unmatched(&miss)),
                }
            }
        };
        let exchange = &self.exchanges[index];
        self.answered.push(exchange.request_seq);
        let dialogue = match request {
            McpRequest::CallToolAnswering { .. } | McpRequest::ListToolsAnswering => {
                self.dialogues.get(&index)
            }
            _ => None,
        };
        if let Some(dialogue) = dialogue {
            let step = dialogue.first(index);
            return McpReply {
                request_seq: Some(exchange.request_seq),
                latency_ms: step.latency_ms,
                result: Ok(step.result),
            };
        }
        McpReply {
            request_seq: Some(exchange.request_seq),
            latency_ms: exchange.latency_ms.unwrap_or(0),
            result: recorded_result(exchange),
        }
    }

    /// Returns the method of the request whose dialogue `state` goes on with (`tools/call`
    /// when it names none).
    fn continued_method(&self, state: &str) -> &'static str {
        let exchange =
            dialogue::parse_state(state).and_then(|(index, _)| self.exchanges.get(index));
        match exchange.map(Exchange::method) {
            Some("tools/list") => "tools/list",
            _ => "tools/call",
        }
    }

    /// Goes on with a call's dialogue after the step `state` names (see [`dialogue`]).
    fn resume(&mut self, state: &str, resumed: Resumed<'_>) -> McpReply {
        let found = dialogue::parse_state(state)
            .and_then(|(index, step)| Some((index, step, self.dialogues.get(&index)?)));
        let Some((index, step, dialogue)) = found else {
            return McpReply {
                request_seq: None,
                latency_ms: 0,
                result: Err(dialogue::malformed(format!("{state:?}"))),
            };
        };
        let exchange = &self.exchanges[index];
        let request_seq = exchange.request_seq;
        let (latency_ms, result) = match dialogue.resume(index, step, resumed, request_seq) {
            Ok(Next::Step(step)) => (step.latency_ms, Ok(step.result)),
            Ok(Next::Result { latency_ms }) => (latency_ms, recorded_result(exchange)),
            Err(error) => (0, Err(error)),
        };
        McpReply {
            request_seq: Some(request_seq),
            latency_ms,
            result,
        }
    }
}

/// Returns the recorded result of an exchange, or the error that stands for it.
fn recorded_result(exchange: &Exchange) -> Result<Value, McpCallError> {
    let request_seq = exchange.request_seq;
    // A request cancelled while recording has no answer; a simulated call cannot wait forever
    // for one, so it fails instead.
    let Some(response) = &exchange.response else {
        return Err(McpCallError::Unanswered { request_seq });
    };
    if let Some(result) = response.get("result") {
        return Ok(result.clone());
    }
    let error = response.get("error").unwrap_or(&Value::Null);
    let Some(code) = error.get("code").and_then(Value::as_i64) else {
        return Err(McpCallError::Malformed {
            request_seq,
            reason: "the recorded error has no integer `code`".into(),
        });
    };
    Err(McpCallError::Rpc {
        request_seq,
        code,
        message: error
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("")
            .into(),
        data: error.get("data").cloned(),
    })
}

impl Actor for McpActor {
    type Request = McpRequest;
    type Response = McpReply;

    fn operation(&self, request: &McpRequest) -> &'static str {
        // A step of a dialogue goes on with the request it belongs to.
        let state = match request {
            McpRequest::Answer { request_state, .. } | McpRequest::Continue { request_state } => {
                request_state
            }
            _ => return request.method(),
        };
        match &self.backend {
            Backend::Cassette(cassette) => cassette.continued_method(state),
            Backend::World(_) => request.method(),
        }
    }

    fn handle(&mut self, request: &McpRequest, cx: &mut ActorContext<'_>) -> Answer<McpReply> {
        let reply = match &mut self.backend {
            // Replay draws nothing from the actor's stream: the recording decides every answer.
            Backend::Cassette(cassette) => cassette.answer(request),
            Backend::World(world) => world.answer(request, cx.rng),
        };
        Answer {
            latency_ns: reply.latency_ms.saturating_mul(NS_PER_MS),
            response: reply,
        }
    }
}
