//! The simulation side of `simtape serve`: the `gateway` pipeline reads each HTTP request
//! from its inbox, answers it through the run's actors, and leaves the response in its
//! outbox. It runs inside the simulation, under the core's rules: no clock, no thread, no
//! socket; everything it sees came through the inbox and is on the tape.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use simtape::cap::fault_rules::{StreamFault, StreamMode};
use simtape::cap::llm::{ChatRequest, LlmError, Provider};
use simtape::inbox::{Inbox, Outbox};
use simtape::Host;
use simtape_agent::{AgentExit, GateRun};

use crate::adapter::{EventKind, SessionEvent};
use crate::wire::Wire;
use crate::workdir::FileChange;

/// An HTTP request as the gateway sees it (and as the tape records it): what identifies the
/// endpoint and the body. Headers stay outside: they carry per-process noise (session ids,
/// SDK versions, retry counters) that must not reach the tape.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HttpRequest {
    /// The request's number in delivery order (1 for the first).
    pub id: u64,
    /// `GET`, `POST`, …
    pub method: String,
    /// The path without the query (`/v1/messages`).
    pub path: String,
    /// The body, as text.
    pub body: String,
}

/// What enters the gateway's inbox: a request, what the agent printed, and how it ended
/// (so a replay knows all of it without running the agent).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum GatewayInput {
    /// An HTTP request from the agent.
    Request(HttpRequest),
    /// What the agent printed since the last delivery, read by its adapter (normalized like
    /// requests); the gateway stamps each with the instant of delivery.
    Session(Vec<EventKind>),
    /// The agent process ended.
    AgentExited(AgentExit),
    /// The in-process agent (a test function the pytest plugin runs, `serve --in-process`)
    /// ended, as it reported: judged like a process's exit, and it must have called the model.
    InProcessExited(AgentExit),
    /// After the agent ended: what it changed in its working directory, and the paths too
    /// large to compare.
    Workdir {
        /// The changes, in path order.
        changes: Vec<FileChange>,
        /// Files over the comparison's size limit.
        skipped: Vec<String>,
    },
    /// After the agent ended: each `gate` verifier's run in its working directory.
    Gates(Vec<GateRun>),
    /// Before the agent's exit: what it did outside its project in its sandbox (names it
    /// looked up, connections it tried, files it wrote elsewhere). Each connection is judged
    /// by the `[network]` policy inside the run.
    Sandbox(SandboxSeen),
    /// The program's sandbox failed after the run began (the step, and why): no process
    /// ran, and the run is an ERROR.
    SandboxFailed(String),
}

/// What a sandboxed program did outside its project, as sets in sorted order (the same
/// program gives the same sets whatever its threads' timing).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxSeen {
    /// Every name it looked up (simtape's DNS answered each).
    pub lookups: Vec<crate::sandbox::Lookup>,
    /// Every connection it attempted past simtape's own endpoints.
    pub connects: Vec<crate::sandbox::Connect>,
    /// Attempts past the limit, counted only.
    pub dropped: u64,
    /// Files it created, changed or removed outside the project (in its sandbox only).
    pub writes_outside: Vec<crate::sandbox::view::OutsideWrite>,
}

/// The gateway's answer to the request with the same `id`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpResponse {
    /// The request it answers.
    pub id: u64,
    /// The HTTP status.
    pub status: u16,
    /// Extra headers (`retry-after`), beside the content type.
    pub headers: Vec<(String, String)>,
    /// `application/json` or `text/event-stream`.
    pub content_type: &'static str,
    /// The body: all of it, or (a stream fault) the events sent before the stream breaks.
    pub body: String,
    /// How the body ends on the wire.
    pub ending: BodyEnd,
}

/// How a response body ends on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyEnd {
    /// The body is whole.
    Complete,
    /// A stream fault `cut`: the connection closes after the body, before the stream's end.
    Cut,
    /// A stream fault `stall`: nothing follows the body and the connection stays open until
    /// the agent gives up or the session ends.
    Stall,
}

/// What the gateway pipeline returns when its inbox closes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GatewayOutcome {
    /// Requests answered.
    pub requests: u64,
    /// Model calls answered by the model (not refused, not faulted).
    pub model_calls: u64,
    /// Model calls answered with a provider error (a fault or a fixture's error entry) or a
    /// stream that breaks: what the agent's own retries had to get past.
    pub model_faults: u64,
    /// The first request no fixture entry matched: its digest. Such a run is an ERROR.
    pub unmatched: Option<String>,
    /// How the agent process ended, when there was one.
    pub agent_exit: Option<AgentExit>,
    /// Whether the agent ran in a process simtape did not start and reported its own end
    /// (`serve --in-process`): such an agent passes only when it called the model.
    pub in_process: bool,
    /// What the agent printed, as events stamped with virtual time.
    pub events: Vec<SessionEvent>,
    /// What the agent changed in its working directory.
    pub workdir: Vec<FileChange>,
    /// The `gate` verifiers' runs.
    pub gates: Vec<GateRun>,
    /// Tool requests that reached an MCP server's actor (`tools/list`, `tools/call`).
    pub mcp_calls: u64,
    /// MCP sessions opened (`initialize` answered), by server name.
    pub mcp_sessions: std::collections::BTreeMap<String, u64>,
    /// The first MCP request a cassette-backed server had no recording for: the server and
    /// why. Such a run is an ERROR, as for a model request.
    pub mcp_unmatched: Option<String>,
    /// A `[harness]` session's: whether it asked for a model turn past its budget (and was
    /// stopped there).
    pub turns_spent: bool,
    /// The first connection of a sandboxed agent the `[network]` policy refused: such a run
    /// is BLOCKED.
    pub denied: Option<simtape::cap::net::NetError>,
    /// What a sandboxed agent did outside its project.
    pub sandbox: Option<SandboxSeen>,
    /// The agent's sandbox failed after the run began (the step, and why).
    pub sandbox_failed: Option<String>,
    /// What the model traffic says of the agent's turns: each answer the model gave, and
    /// the tool results later requests sent back. An agent that prints no tool calls of
    /// its own (a generic program) is counted from it.
    pub traffic: Traffic,
    /// An in-process agent's verifiers as serve judged them (the `judge` module), in file
    /// order.
    pub verifiers: Vec<simtape_agent::Judged>,
}

/// The agent's turns as the model traffic shows them, whatever the agent prints.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Traffic {
    /// Each model answer the agent got whole, in the order they were given: its text and
    /// the tool calls it asked for.
    pub answers: Vec<simtape::cap::llm::ChatResponse>,
    /// Each tool result a request sent back, by the id of the call it answers (the first
    /// request that carried it: later ones repeat the conversation).
    pub results: std::collections::BTreeMap<String, String>,
    /// Every tool a request offered the model, by name.
    pub offered: std::collections::BTreeSet<String>,
}

impl Traffic {
    /// Notes the tool results of a request's conversation.
    fn request(&mut self, request: &simtape::cap::llm::ChatRequest) {
        let results = request.messages.iter().filter_map(|message| {
            let id = message.tool_call_id.as_ref()?;
            (message.role == simtape::cap::llm::Role::Tool).then_some((id, &message.content))
        });
        for (id, content) in results {
            self.results
                .entry(id.clone())
                .or_insert_with(|| content.clone());
        }
        let offered = request.tools.iter().map(|tool| tool.name.clone());
        self.offered.extend(offered);
    }

    /// The turns the traffic shows: one per answer the agent got, with the tool calls it
    /// asked for, each filled with the result a later request sent back (a call no request
    /// answered has an empty result).
    pub(crate) fn turns(&self) -> Vec<simtape_agent::TranscriptTurn> {
        let turns = self.answers.iter().zip(1u32..);
        turns
            .map(|(answer, turn)| simtape_agent::TranscriptTurn {
                turn,
                text: answer.text.clone(),
                tool_calls: answer
                    .tool_calls
                    .iter()
                    .map(|call| simtape_agent::TranscriptCall {
                        id: call.id.clone(),
                        name: call.name.clone(),
                        arguments: call.arguments.clone(),
                        ok: true,
                        result: self.results.get(&call.id).cloned().unwrap_or_default(),
                    })
                    .collect(),
            })
            .collect()
    }
}

impl GatewayOutcome {
    /// Returns the tape's verdict line: an unmatched model or MCP request is an error, an
    /// agent that failed is a failure, anything else passes.
    pub fn verdict(&self) -> String {
        if let Some(digest) = &self.unmatched {
            return format!("error: unmatched model request sha256:{digest}");
        }
        if let Some(miss) = &self.mcp_unmatched {
            return format!("error: unmatched MCP request to {miss}");
        }
        if let Some(reason) = &self.sandbox_failed {
            return format!("error: the agent's sandbox failed: {reason}");
        }
        if let Some(denied) = &self.denied {
            return format!("blocked: the agent's connection was refused: {denied}");
        }
        // A test whose client never reached the endpoints would otherwise pass untested.
        let silent = self.in_process && self.model_calls + self.model_faults == 0;
        let failed = self.verifiers.iter().find_map(|judged| match judged {
            simtape_agent::Judged::Result(result) if !result.held => Some(result),
            _ => None,
        });
        match (self.agent_exit, silent) {
            (Some(AgentExit::Exited(0)) | None, false) => match failed {
                Some(result) => format!("fail: {}: {}", result.name, result.saw),
                None => "ok".to_string(),
            },
            (Some(AgentExit::Exited(0)) | None, true) => format!("fail: {NO_MODEL_CALLS}"),
            (Some(exit), false) => format!("fail: the agent {}", exit.describe()),
            (Some(exit), true) => format!("fail: the agent {}; {NO_MODEL_CALLS}", exit.describe()),
        }
    }
}

/// Why an in-process agent that never reached the model fails.
const NO_MODEL_CALLS: &str = "no model calls: the agent never called the model (point its client at OPENAI_BASE_URL, ANTHROPIC_BASE_URL or GOOGLE_GEMINI_BASE_URL)";

/// The gateway pipeline: answers every request until the driver closes the inbox.
pub async fn gateway(
    host: Host,
    inputs: Inbox<GatewayInput>,
    responses: Outbox<HttpResponse>,
) -> GatewayOutcome {
    gateway_judging(host, inputs, responses, std::rc::Rc::from([])).await
}

/// The gateway pipeline that, when the agent was in-process, then judges `verify` (the
/// scenario's verifiers) against what it saw.
pub async fn gateway_judging(
    host: Host,
    inputs: Inbox<GatewayInput>,
    responses: Outbox<HttpResponse>,
    verify: std::rc::Rc<[simtape_agent::VerifySpec]>,
) -> GatewayOutcome {
    let mut outcome = serve(&host, inputs, responses, None).await;
    if outcome.in_process {
        outcome.verifiers = crate::judge::in_process(&host, &verify, &outcome);
    }
    host.outcome(
        "gateway",
        &json!({"requests": outcome.requests, "model_calls": outcome.model_calls}),
    );
    outcome
}

/// The gateway for one session of a `[harness]` run: answers requests within `budget` until
/// the driver says what the session changed in its working directory (its last input).
pub(crate) async fn session(
    host: &Host,
    inputs: Inbox<GatewayInput>,
    responses: Outbox<HttpResponse>,
    budget: TurnBudget,
) -> GatewayOutcome {
    serve(host, inputs, responses, Some(std::rc::Rc::new(budget))).await
}

/// The model turns a session may take. The request for one more is not answered: the
/// session ends there, as a session killed at that turn (a seeded crash) or out of context
/// (its turn budget), and the driver is told to stop the agent.
#[derive(Debug)]
pub(crate) struct TurnBudget {
    /// The session, for the stop order.
    pub(crate) session: u32,
    /// The turns it may take.
    pub(crate) max_turns: u32,
    /// Where the stop order goes.
    pub(crate) orders: Outbox<crate::order::SessionOrder>,
    /// Turns begun: model requests let through, less those answered with a provider error
    /// (a retry is the same turn).
    begun: std::cell::Cell<u32>,
    /// Whether the stop was ordered.
    spent: std::cell::Cell<bool>,
}

impl TurnBudget {
    /// A budget of `max_turns` for `session`.
    pub(crate) fn new(
        session: u32,
        max_turns: u32,
        orders: Outbox<crate::order::SessionOrder>,
    ) -> TurnBudget {
        TurnBudget {
            session,
            max_turns,
            orders,
            begun: std::cell::Cell::new(0),
            spent: std::cell::Cell::new(false),
        }
    }

    /// Takes a turn; `false` (and the stop ordered, once) when none is left.
    fn take(&self) -> bool {
        if self.begun.get() < self.max_turns && !self.spent.get() {
            self.begun.set(self.begun.get() + 1);
            return true;
        }
        if !self.spent.replace(true) {
            let session = self.session;
            self.orders
                .send(crate::order::SessionOrder::Stop { session });
        }
        false
    }

    /// Gives a turn back: its request got a provider error, and the retry is the same turn.
    fn give_back(&self) {
        self.begun.set(self.begun.get().saturating_sub(1));
    }

    /// Whether the session asked for a turn past its budget.
    pub(crate) fn spent(&self) -> bool {
        self.spent.get()
    }
}

/// Answers requests until the inbox closes or, in a session (`budget`), until the session's
/// working-directory changes arrive.
async fn serve(
    host: &Host,
    inputs: Inbox<GatewayInput>,
    responses: Outbox<HttpResponse>,
    budget: Option<std::rc::Rc<TurnBudget>>,
) -> GatewayOutcome {
    let outcome = std::rc::Rc::new(std::cell::RefCell::new(GatewayOutcome::default()));
    let mut tasks = Vec::new();
    while let Some(input) = inputs.recv().await {
        let request = match input {
            GatewayInput::Request(request) => request,
            GatewayInput::Session(kinds) => {
                let timestamp_ms = host.now_ns() / 1_000_000;
                let events = kinds
                    .into_iter()
                    .map(|kind| SessionEvent { timestamp_ms, kind });
                outcome.borrow_mut().events.extend(events);
                continue;
            }
            GatewayInput::AgentExited(exit) => {
                outcome.borrow_mut().agent_exit = Some(exit);
                continue;
            }
            GatewayInput::InProcessExited(exit) => {
                let mut outcome = outcome.borrow_mut();
                outcome.agent_exit = Some(exit);
                outcome.in_process = true;
                continue;
            }
            GatewayInput::Workdir { changes, skipped } => {
                let mut outcome = outcome.borrow_mut();
                let timestamp_ms = host.now_ns() / 1_000_000;
                for path in skipped {
                    let message = format!(
                        "{path}: over {} bytes, not compared",
                        crate::limits::FILE_BYTES_MAX
                    );
                    let kind = EventKind::Error { message };
                    outcome.events.push(SessionEvent { timestamp_ms, kind });
                }
                outcome.workdir = changes;
                if budget.is_some() {
                    break;
                }
                continue;
            }
            GatewayInput::Gates(gates) => {
                outcome.borrow_mut().gates = gates;
                continue;
            }
            GatewayInput::Sandbox(seen) => {
                let denied = judge_connects(host, &seen).await;
                let mut outcome = outcome.borrow_mut();
                if outcome.denied.is_none() {
                    outcome.denied = denied;
                }
                outcome.sandbox = Some(seen);
                continue;
            }
            GatewayInput::SandboxFailed(reason) => {
                outcome.borrow_mut().sandbox_failed = Some(reason);
                continue;
            }
        };
        let (host_for_task, outcome) = (host.clone(), outcome.clone());
        let budget = budget.clone();
        let name = format!("request-{}", request.id);
        tasks.push(host.spawn(&name, async move {
            let (budget, mut request) = (budget.as_deref(), request);
            if let Some(response) = answer(&host_for_task, &mut request, &outcome, budget).await {
                responses.send(response);
            }
        }));
    }
    for task in tasks {
        // A task ends only by answering; an abort would be the engine's own doing.
        let _ = task.await;
    }
    let mut outcome = outcome.borrow().clone();
    outcome.turns_spent = budget.is_some_and(|budget| budget.spent());
    outcome
}

/// Puts each connection a sandboxed program attempted through the run's network actor (a
/// `connect` request and the policy's reply on the tape, as for the built-in agent's); returns
/// the first the policy refused. A run without a network actor denies all, as its default.
async fn judge_connects(host: &Host, seen: &SandboxSeen) -> Option<simtape::cap::net::NetError> {
    let mut first = None;
    for connect in &seen.connects {
        let decision = match host.capabilities().net() {
            Some(net) => {
                let net = simtape::cap::net::NetHandle::new(net);
                net.connect(&connect.host, connect.port).await.map(|_| ())
            }
            None => simtape::cap::net::Network::deny()
                .check(&connect.host, connect.port)
                .map(|_| ()),
        };
        if let Err(denied) = decision {
            first.get_or_insert(denied);
        }
    }
    first
}

/// The endpoints, by method and path.
enum Endpoint {
    /// A model call in a provider's wire format.
    Model(Provider, PathCall),
    /// A token count, in the shape of the provider whose path it is.
    CountTokens(Provider),
    /// The model list, in a shape every SDK reads.
    Models,
    /// One model by name (`GET /v1beta/models/NAME`, `GET /v1/models/NAME`).
    ModelInfo(String),
}

/// What a model call's URL says: Gemini names the model and whether to stream in its path
/// (`models/M:streamGenerateContent`); the other formats say both in the body.
#[derive(Default)]
struct PathCall {
    model: Option<String>,
    stream: bool,
}

fn endpoint(method: &str, path: &str) -> Option<Endpoint> {
    let path = path.trim_end_matches('/');
    let model = |provider| Some(Endpoint::Model(provider, PathCall::default()));
    match (method, path) {
        ("POST", "/v1/messages") => model(Provider::AnthropicMessages),
        ("POST", "/v1/chat/completions") => model(Provider::OpenAiChat),
        ("POST", "/v1/responses") => model(Provider::OpenAiResponses),
        ("POST", "/v1/messages/count_tokens") => {
            Some(Endpoint::CountTokens(Provider::AnthropicMessages))
        }
        _ => models_endpoint(method, path),
    }
}

/// Routes `/v1/models`, and Google's `/v1beta/models` and `/v1alpha/models` (its SDKs take
/// any of the three API versions): the list and a model (`GET`), or a model's method (`POST
/// models/M:METHOD`, Gemini's).
fn models_endpoint(method: &str, path: &str) -> Option<Endpoint> {
    let rest = ["/v1/models", "/v1beta/models", "/v1alpha/models"]
        .iter()
        .find_map(|prefix| path.strip_prefix(prefix))?;
    if rest.is_empty() {
        return (method == "GET").then_some(Endpoint::Models);
    }
    let name = rest.strip_prefix('/').filter(|name| !name.contains('/'))?;
    let Some((model, verb)) = name.split_once(':') else {
        return (method == "GET").then(|| Endpoint::ModelInfo(name.to_owned()));
    };
    let call = |stream| {
        let path_call = PathCall {
            model: Some(model.to_owned()),
            stream,
        };
        Some(Endpoint::Model(Provider::GeminiGenerateContent, path_call))
    };
    match (method, verb) {
        ("POST", "generateContent") => call(false),
        ("POST", "streamGenerateContent") => call(true),
        ("POST", "countTokens") => Some(Endpoint::CountTokens(Provider::GeminiGenerateContent)),
        _ => None,
    }
}

/// The provider whose error shape a path's caller expects: Google's under its API versions
/// and for any `models/M:METHOD`.
fn error_shape(path: &str) -> Provider {
    if path.starts_with("/v1/messages") {
        Provider::AnthropicMessages
    } else if path.starts_with("/v1beta/") || path.starts_with("/v1alpha/") || path.contains(':') {
        Provider::GeminiGenerateContent
    } else {
        Provider::OpenAiChat
    }
}

/// Answers one request; `None` leaves it unanswered (a session's turn past its budget).
async fn answer(
    host: &Host,
    request: &mut HttpRequest,
    outcome: &std::cell::RefCell<GatewayOutcome>,
    budget: Option<&TurnBudget>,
) -> Option<HttpResponse> {
    outcome.borrow_mut().requests += 1;
    if let Some(server) = crate::mcp_path::server_of(&request.path) {
        return Some(crate::mcp_http::answer(host, request, server, outcome).await);
    }
    let endpoint = endpoint(&request.method, &request.path);
    let turn = match (&endpoint, budget) {
        (Some(Endpoint::Model(..)), Some(budget)) if !budget.take() => return None,
        (Some(Endpoint::Model(..)), Some(budget)) => Some(budget),
        _ => None,
    };
    let response = answer_model(host, request, outcome, endpoint).await;
    if let Some(budget) = turn.filter(|_| response.status >= 400) {
        budget.give_back();
    }
    Some(response)
}

async fn answer_model(
    host: &Host,
    request: &mut HttpRequest,
    outcome: &std::cell::RefCell<GatewayOutcome>,
    endpoint: Option<Endpoint>,
) -> HttpResponse {
    let (request_id, shape) = (request.id, error_shape(&request.path));
    let error = |status: u16, message: &str| {
        json_response(request_id, status, &shape.error_body(status, message))
    };
    let Some(endpoint) = endpoint else {
        let message = format!(
            "simtape serve has no endpoint {} {} (it serves POST /v1/messages, POST /v1/chat/completions, POST /v1/responses, POST /v1/messages/count_tokens, GET /v1/models, POST /v1beta/models/MODEL:generateContent, :streamGenerateContent, :countTokens, GET /v1beta/models, POST /mcp/NAME)",
            request.method, request.path
        );
        return error(404, &message);
    };
    let body = match endpoint {
        Endpoint::Models => return json_response(request.id, 200, &models(host)),
        Endpoint::ModelInfo(name) => return json_response(request.id, 200, &model(host, &name)),
        _ => match take_json_body(request) {
            Ok(body) => body,
            Err(e) => return error(400, &format!("the request body is not JSON: {e}")),
        },
    };
    let (provider, path_call) = match endpoint {
        Endpoint::Model(provider, path_call) => (provider, path_call),
        Endpoint::CountTokens(provider) => return count_tokens(request.id, &body, provider),
        Endpoint::Models | Endpoint::ModelInfo(_) => unreachable!("answered above"),
    };
    let mut served = match provider.parse_request(&{ body }) {
        Ok(served) => served,
        Err(shape) => {
            let message = format!("expected {}, found {}", shape.expected, shape.found);
            return error(400, &message);
        }
    };
    if let Some(model) = path_call.model {
        served.request.model = model;
        served.stream = path_call.stream;
    }
    outcome.borrow_mut().traffic.request(&served.request);
    let reply = host
        .llm()
        .complete_with_reply(model_call(&mut served))
        .await;
    match reply.result {
        Ok(answer) => {
            outcome.borrow_mut().model_calls += 1;
            let id = match provider {
                Provider::AnthropicMessages => format!("msg_simtape_{:06}", request.id),
                Provider::OpenAiChat => format!("chatcmpl-simtape-{:06}", request.id),
                Provider::OpenAiResponses => format!("resp_simtape_{:06}", request.id),
                Provider::GeminiGenerateContent => format!("simtape-{:06}", request.id),
            };
            let created_unix_s = (host.start_unix_ns() + host.now_ns() as i64) / 1_000_000_000;
            // A stream fault breaks a stream; an answer that is not streamed arrives whole.
            if let Some(fault) = reply.stream_fault.filter(|_| served.stream) {
                outcome.borrow_mut().model_faults += 1;
                let events = provider.answer_events(&served, &answer, &id, created_unix_s);
                return broken_stream(host, request.id, fault, &events).await;
            }
            let rendered = provider.answer_body(&served, &answer, &id, created_unix_s);
            outcome.borrow_mut().traffic.answers.push(answer);
            HttpResponse {
                id: request.id,
                status: 200,
                headers: Vec::new(),
                content_type: rendered.content_type,
                body: rendered.body,
                ending: BodyEnd::Complete,
            }
        }
        Err(LlmError::Http {
            status,
            message,
            retry_after_ms,
        }) => {
            outcome.borrow_mut().model_faults += 1;
            let mut body = provider.error_body(status, &message);
            let headers = match retry_after_ms {
                Some(ms) => provider.retry_after(&mut body, ms),
                None => Vec::new(),
            };
            HttpResponse {
                headers,
                ..json_response(request.id, status, &body)
            }
        }
        Err(LlmError::Unmatched { digest, .. }) => {
            let mut outcome = outcome.borrow_mut();
            outcome.unmatched.get_or_insert_with(|| digest.clone());
            let message = format!(
                "simtape: no LLM fixture entry matched request sha256:{digest}; add an entry that matches it (docs/llm-fixtures.md) — the run ends in ERROR"
            );
            error(400, &message)
        }
        Err(other) => error(500, &other.to_string()),
    }
}

/// Parses a request's body, taking its text: the text is on the tape (the input record) and
/// not needed again, so a 30 MB body is not held twice while the model answers. (Its parse
/// goes to `parse_request` as `&{ body }`, a temporary dropped once read.)
fn take_json_body(request: &mut HttpRequest) -> serde_json::Result<Value> {
    serde_json::from_str(&std::mem::take(&mut request.body))
}

/// Moves the conversation out of `served` for the model (rendering the answer needs only
/// the rest of the request): a 30 MB message is not copied.
fn model_call(served: &mut crate::wire::ServedRequest) -> ChatRequest {
    let messages = std::mem::take(&mut served.request.messages);
    ChatRequest {
        messages,
        ..served.request.clone()
    }
}

fn json_response(id: u64, status: u16, body: &Value) -> HttpResponse {
    HttpResponse {
        id,
        status,
        headers: Vec::new(),
        content_type: "application/json",
        body: body.to_string(),
        ending: BodyEnd::Complete,
    }
}

/// The first of `events` that `fault` lets through, ending as it says. Where a seeded fault
/// breaks is drawn from a stream of the request's own (never the LLM actor's), and a
/// `stream_fault` event puts what was sent on the tape.
async fn broken_stream(
    host: &Host,
    request_id: u64,
    fault: StreamFault,
    events: &[String],
) -> HttpResponse {
    let mut rng = host.rng(&format!("gateway/stream-fault/{request_id}"));
    let sent = fault.events_sent(events.len() as u64, &mut rng);
    let fields = json!({
        "request": request_id,
        "stream": fault.mode.name(),
        "events": events.len(),
        "sent": sent,
    });
    host.event("stream_fault", fields).await;
    HttpResponse {
        id: request_id,
        status: 200,
        headers: Vec::new(),
        content_type: "text/event-stream",
        body: events[..sent as usize].concat(),
        ending: match fault.mode {
            StreamMode::Cut => BodyEnd::Cut,
            StreamMode::Stall => BodyEnd::Stall,
        },
    }
}

/// The model list: one simulated model, `simtape`, in a shape every SDK reads: `data[].id`
/// (OpenAI's and Anthropic's SDKs) beside `models[].name` (Google's, which asks at
/// `/v1/models` too).
fn models(host: &Host) -> Value {
    json!({
        "object": "list",
        "data": [model(host, "simtape")],
        "has_more": false, "first_id": "simtape", "last_id": "simtape",
        "models": [model(host, "simtape")],
    })
}

/// A model, in the fields of all three providers' model objects. Every name is served (the
/// fixtures answer whatever model an agent asks for), so an agent configured with a real
/// model's name finds it.
fn model(host: &Host, name: &str) -> Value {
    let created = host.start_unix_ns() / 1_000_000_000;
    let created_at = simtape::time::format_instant(host.start_unix_ns());
    json!({
        "id": name, "object": "model", "type": "model", "display_name": name,
        "created": created, "created_at": created_at, "owned_by": "simtape",
        "name": format!("models/{name}"), "version": "simtape", "displayName": name,
        "description": "simtape's simulated model",
        "inputTokenLimit": 1_048_576, "outputTokenLimit": 65_536,
        "supportedGenerationMethods": ["generateContent", "streamGenerateContent", "countTokens"],
    })
}

/// A token count of the request, in the provider's shape: a quarter of its JSON's bytes, as a
/// deterministic estimate.
fn count_tokens(id: u64, body: &Value, provider: Provider) -> HttpResponse {
    let tokens = (body.to_string().len() as u64).div_ceil(4);
    let body = match provider {
        Provider::GeminiGenerateContent => json!({"totalTokens": tokens}),
        _ => json!({"input_tokens": tokens}),
    };
    json_response(id, 200, &body)
}

#[cfg(test)]
mod sandbox_tests {
    use super::*;

    #[test]
    fn a_failed_sandbox_is_an_error_and_a_refused_connection_blocks() {
        let failed = GatewayOutcome {
            sandbox_failed: Some("mount overlay at /project: No space left on device".into()),
            agent_exit: Some(AgentExit::Signaled),
            ..GatewayOutcome::default()
        };
        assert_eq!(
            failed.verdict(),
            "error: the agent's sandbox failed: mount overlay at /project: No space left on device"
        );
        let denied = GatewayOutcome {
            denied: simtape::cap::net::Network::deny()
                .check("example.org", 443)
                .err(),
            agent_exit: Some(AgentExit::Exited(0)),
            ..GatewayOutcome::default()
        };
        assert!(denied
            .verdict()
            .starts_with("blocked: the agent's connection was refused"));
        assert!(
            denied.verdict().contains("example.org:443"),
            "{}",
            denied.verdict()
        );
    }
}
