//! MCP over Streamable HTTP: the scenario's `[[mcp]]` servers at `/mcp/NAME`.
//!
//! Each server is the run's `McpActor` named `mcp:NAME` (a world spec or a cassette). A
//! `POST /mcp/NAME` carries one JSON-RPC message (or a batch) and enters the simulation
//! through the gateway's inbox like a model request, so it is an `input` record on the tape
//! and replays. Inside, `answer` speaks the protocol's session layer itself and hands the
//! server's own work to the actor:
//!
//! * `initialize` (handshake era, the version negotiated as `simtape mcp world` does) and
//!   `server/discover` (2026-07-28) answer with the server's own description, which the actor
//!   gives (`McpRequest::Describe`: a world's name, version and instructions, a cassette's
//!   recorded `initialize`); a successful `initialize` opens a session whose
//!   `Mcp-Session-Id` is `NAME-N`, N counting that server's sessions, never random.
//! * `ping` (handshake era), notifications and client responses (`202 Accepted`).
//! * `tools/list` and `tools/call` go to the actor too: each is a request and a reply record of
//!   `mcp:NAME`, answered in virtual time; a request carrying the 2026-07-28 envelope gets the
//!   result that era requires. A cassette with no recording for a call answers error
//!   -31000 (as `simtape mcp replay` does) and the run ends in ERROR naming the miss.
//!
//! Outside the simulation, `McpTransport` answers what carries no call: `GET` (the server
//! sends nothing unasked, so no stream: `405`) and `DELETE` (a session ends: `200`). Both
//! arrive when the client's transport decides, not when the agent works, so keeping them
//! off the tape keeps it independent of wall-clock timing. It also turns a JSON answer into
//! an event stream for a client whose `Accept` names only `text/event-stream`, and writes the
//! agent's MCP config file ([`McpConfig`]).

use std::cell::RefCell;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use simtape::Host;
use simtape_mcp::actor::{McpActor, McpCallError, McpHandle, McpRequest};
use simtape_mcp::era::{self, LATEST_HANDSHAKE_VERSION};
use simtape_mcp::jsonrpc::{
    classify, error_response, result_response, JsonRpcMessage, INTERNAL_ERROR, INVALID_PARAMS,
    INVALID_REQUEST, METHOD_NOT_FOUND, REPLAY_MISS,
};
use simtape_mcp::world::server::WorldReport;

use crate::gateway::{GatewayOutcome, HttpRequest, HttpResponse};

pub use crate::mcp_path::{server_of, MCP_PATH_PREFIX};
/// The variable that names the agent's MCP config file.
pub const CONFIG_VARIABLE: &str = "SIMTAPE_MCP_CONFIG";
/// The response header that names a session.
pub use simtape_mcp::http::SESSION_HEADER;

/// Returns the URL of server `name`'s endpoint on `addr`.
pub fn server_url(addr: SocketAddr, name: &str) -> String {
    format!("http://{addr}{MCP_PATH_PREFIX}{name}")
}

/// Returns the `[[mcp]]` server name of an actor name (`mcp:tickets` → `tickets`).
pub(crate) fn server_name(actor: &str) -> Option<&str> {
    actor.strip_prefix("mcp:")
}

/// Returns the names of the run's MCP servers, in registration (file) order.
pub fn servers(capabilities: &simtape::Capabilities) -> Vec<String> {
    capabilities
        .all::<McpActor>()
        .filter_map(|(actor, _)| server_name(actor).map(str::to_string))
        .collect()
}

/// Returns each world-backed MCP server's final report (state scored against the world's
/// goal, every call), by server name in file order: the `world_goal` check of a served run.
pub fn worlds<T>(report: &simtape::RunReport<T>) -> Vec<(String, WorldReport)> {
    report
        .capabilities
        .all::<McpActor>()
        .filter_map(|(actor, actor_ref)| {
            let name = server_name(actor)?.to_string();
            Some((name, report.actors.get(actor_ref)?.world_report()?))
        })
        .collect()
}

/// The answer for a server the scenario does not have: a 404 whose JSON-RPC error names
/// the servers it has.
fn unknown_server(name: &str, servers: &[String]) -> HttpResponse {
    let known = if servers.is_empty() {
        "the scenario has no [[mcp]] server".to_string()
    } else {
        format!("it serves {}", servers.join(", "))
    };
    let message = format!("simtape serve has no MCP server {name:?} at /mcp/{name} ({known})");
    let body = error_response(
        &Value::Null,
        METHOD_NOT_FOUND,
        &message,
        Some(json!({ "servers": servers })),
    );
    json_answer(0, 404, body.to_string())
}

fn json_answer(id: u64, status: u16, body: String) -> HttpResponse {
    HttpResponse {
        id,
        status,
        headers: Vec::new(),
        content_type: "application/json",
        body,
        ending: crate::BodyEnd::Complete,
    }
}

/// Answers a request to `/mcp/NAME` inside the simulation (see the module docs).
pub(crate) async fn answer(
    host: &Host,
    request: &HttpRequest,
    name: &str,
    outcome: &RefCell<GatewayOutcome>,
) -> HttpResponse {
    let actor = host
        .capabilities()
        .get::<McpActor>(&simtape_agent::mcp_actor_name(name));
    let Some(actor) = actor.filter(|_| !name.is_empty()) else {
        let mut response = unknown_server(name, &servers(host.capabilities()));
        response.id = request.id;
        return response;
    };
    if request.method != "POST" {
        // The driver answers GET and DELETE outside; anything else is not the transport's.
        return json_answer(request.id, 405, String::new());
    }
    let server = Server {
        name,
        handle: McpHandle::new(actor),
    };
    let body = match serde_json::from_str::<Value>(&request.body) {
        Ok(body) => body,
        Err(e) => {
            let error = simtape_mcp::http::body_parse_error(&e);
            return json_answer(request.id, 400, error.to_string());
        }
    };
    let mut session = None;
    let answers = match body {
        Value::Array(batch) => {
            let mut answers = Vec::new();
            for message in &batch {
                answers.extend(server.message(message, outcome, &mut session).await);
            }
            (!answers.is_empty()).then_some(Value::Array(answers))
        }
        message => server.message(&message, outcome, &mut session).await,
    };
    let Some(answers) = answers else {
        // Notifications and client responses only: accepted, nothing to say.
        return json_answer(request.id, 202, String::new());
    };
    let mut response = json_answer(request.id, 200, answers.to_string());
    if let Some(session) = session {
        response.headers.push((SESSION_HEADER.into(), session));
    }
    response
}

/// One `[[mcp]]` server as the endpoint sees it.
struct Server<'a> {
    name: &'a str,
    handle: McpHandle,
}

impl Server<'_> {
    /// Answers one JSON-RPC message; `None` for a notification or a response. A successful
    /// `initialize` opens a session and leaves its id in `session`.
    async fn message(
        &self,
        message: &Value,
        outcome: &RefCell<GatewayOutcome>,
        session: &mut Option<String>,
    ) -> Option<Value> {
        let (id, method, params) = match classify(message) {
            Ok(JsonRpcMessage::Request { id, method, params }) => (id, method, params),
            Ok(JsonRpcMessage::Notification { .. } | JsonRpcMessage::Response { .. }) => {
                return None
            }
            Err(failure) => return Some(failure.to_response()),
        };
        let answer = self.request(&method, params.as_ref(), outcome).await;
        Some(match answer {
            Ok(result) => {
                if method == "initialize" {
                    *session = Some(self.open_session(outcome));
                }
                result_response(&id, result)
            }
            Err((code, message, data)) => error_response(&id, code, &message, data),
        })
    }

    /// Counts a new session of this server and returns its id, `NAME-N`, in the characters
    /// a session id may use.
    fn open_session(&self, outcome: &RefCell<GatewayOutcome>) -> String {
        let mut outcome = outcome.borrow_mut();
        let count = outcome
            .mcp_sessions
            .entry(self.name.to_string())
            .or_insert(0);
        *count += 1;
        let name: String = self
            .name
            .chars()
            .map(|c| if c.is_ascii_graphic() { c } else { '-' })
            .collect();
        format!("{name}-{count}")
    }

    async fn request(
        &self,
        method: &str,
        params: Option<&Value>,
        outcome: &RefCell<GatewayOutcome>,
    ) -> Result<Value, era::EnvelopeError> {
        let modern = era::requested_modern_version(params).is_some();
        if params.is_none() && matches!(method, "initialize" | "tools/call") {
            let message = format!("Invalid params: {method} requires params");
            return Err((INVALID_PARAMS, message, None));
        }
        if modern || method == "server/discover" {
            era::check_modern_envelope(params)?;
        }
        let mut result = match method {
            "initialize" => {
                let requested = params
                    .and_then(|p| p.get("protocolVersion"))
                    .and_then(Value::as_str);
                let mut result = self.call(McpRequest::Describe, outcome).await?;
                let newest = result["protocolVersion"]
                    .as_str()
                    .unwrap_or(LATEST_HANDSHAKE_VERSION);
                result["protocolVersion"] =
                    json!(era::negotiate_handshake_version(requested, newest));
                return Ok(result);
            }
            "ping" if !modern => return Ok(json!({})),
            "server/discover" => {
                let description = self.call(McpRequest::Describe, outcome).await?;
                return Ok(era::discover_from_initialize(&description));
            }
            "tools/list" => self.call(McpRequest::ListTools, outcome).await?,
            "tools/call" => {
                let params = params.expect("checked above");
                let Some(name) = params.get("name").and_then(Value::as_str) else {
                    let message = "Invalid params: tools/call needs a string `name`".to_string();
                    return Err((INVALID_PARAMS, message, None));
                };
                let arguments = params.get("arguments").cloned().unwrap_or(Value::Null);
                let request = McpRequest::CallTool {
                    name: name.to_string(),
                    arguments,
                };
                self.call(request, outcome).await?
            }
            _ => {
                let message = format!("Method not found: {method}");
                return Err((METHOD_NOT_FOUND, message, None));
            }
        };
        if modern {
            // The server info came with discover; repeating it would cost a call per request.
            era::modernize_result(method, &mut result, None);
        }
        Ok(result)
    }

    /// Asks the actor; its errors become the JSON-RPC errors a live server would send.
    async fn call(
        &self,
        request: McpRequest,
        outcome: &RefCell<GatewayOutcome>,
    ) -> Result<Value, era::EnvelopeError> {
        if request != McpRequest::Describe {
            outcome.borrow_mut().mcp_calls += 1;
        }
        self.handle
            .call(request)
            .await
            .result
            .map_err(|error| match error {
                McpCallError::Rpc {
                    code,
                    message,
                    data,
                    ..
                } => (code, message, data),
                McpCallError::Unmatched { message, .. } => {
                    let miss = format!("{}: {message}", self.name);
                    outcome.borrow_mut().mcp_unmatched.get_or_insert(miss);
                    (REPLAY_MISS, message, None)
                }
                other => (INTERNAL_ERROR, other.to_string(), None),
            })
    }
}

/// Prepares the MCP side of a session on `addr`: writes the agent's config file, names it in
/// `env` (`SIMTAPE_MCP_CONFIG`), and returns the transport the connections use and the file's
/// guard (dropping it removes the file).
pub(crate) fn setup(
    capabilities: &simtape::Capabilities,
    addr: SocketAddr,
    env: &mut Vec<(String, String)>,
) -> Result<(std::rc::Rc<McpTransport>, McpConfig), crate::ServeError> {
    let servers = servers(capabilities);
    let temp = std::env::temp_dir();
    let config = McpConfig::write(&temp, addr, &servers)
        .map_err(|source| crate::ServeError::McpConfig { dir: temp, source })?;
    env.push((CONFIG_VARIABLE.into(), config.path().display().to_string()));
    Ok((std::rc::Rc::new(McpTransport::new(servers)), config))
}

/// The MCP endpoints' transport side, outside the simulation (see the module docs).
#[derive(Debug, Clone, Default)]
pub(crate) struct McpTransport {
    servers: Vec<String>,
}

impl McpTransport {
    /// The transport of a run whose MCP servers are `servers`.
    pub(crate) fn new(servers: Vec<String>) -> McpTransport {
        McpTransport { servers }
    }

    /// Answers a `GET` or `DELETE` of `/mcp/NAME` without the simulation, and refuses any
    /// request to `/mcp/NAME` whose `Host` or `Origin` is not loopback (DNS rebinding, see
    /// [`simtape_mcp::http::rebinding_refusal`]); `None` for every request the simulation
    /// answers.
    pub(crate) fn answer_outside(
        &self,
        method: &str,
        path: &str,
        host: Option<&str>,
        origin: Option<&str>,
    ) -> Option<HttpResponse> {
        let name = server_of(path)?;
        if let Some(reason) = simtape_mcp::http::rebinding_refusal(host, origin) {
            let body = error_response(&Value::Null, INVALID_REQUEST, &reason, None);
            return Some(json_answer(0, 403, body.to_string()));
        }
        if method != "GET" && method != "DELETE" {
            return None;
        }
        if !self.servers.iter().any(|known| known == name) {
            return Some(unknown_server(name, &self.servers));
        }
        let mut response = json_answer(0, 200, String::new());
        if method == "GET" {
            response.status = 405;
            response
                .headers
                .push(("allow".into(), "POST, DELETE".into()));
        }
        Some(response)
    }

    /// Returns `response` in the form the client reads: an MCP answer becomes one
    /// server-sent `message` event when the client's `Accept` names `text/event-stream`
    /// and not JSON.
    pub(crate) fn for_client(
        path: &str,
        accept: Option<&str>,
        mut response: HttpResponse,
    ) -> HttpResponse {
        let wanted = simtape_mcp::http::accepts(accept);
        let sse_only = wanted.events && !wanted.json;
        let is_message = response.status == 200 && !response.body.is_empty();
        if sse_only && is_message && server_of(path).is_some() {
            response.body = simtape_mcp::http::sse_event_text(&response.body);
            response.content_type = "text/event-stream";
        }
        response
    }
}

/// The MCP config file handed to the agent (`SIMTAPE_MCP_CONFIG`), in the `--mcp-config`
/// shape Claude Code reads: `{"mcpServers": {NAME: {"type": "http", "url": …}}}`. It lives
/// in a directory of its own, removed when this is dropped.
#[derive(Debug)]
pub struct McpConfig {
    dir: PathBuf,
    path: PathBuf,
}

/// The MCP config naming `servers` at `addr`, in Claude Code's `--mcp-config` shape.
pub(crate) fn config_text(addr: SocketAddr, servers: &[String]) -> String {
    let entries: serde_json::Map<String, Value> = servers
        .iter()
        .map(|name| {
            let entry = json!({"type": "http", "url": server_url(addr, name)});
            (name.clone(), entry)
        })
        .collect();
    let text = serde_json::to_string_pretty(&json!({ "mcpServers": entries }))
        .expect("a JSON value serializes");
    text + "\n"
}

impl McpConfig {
    /// Writes the config for `servers` at `addr` into a new directory under `parent`.
    pub fn write(
        parent: &Path,
        addr: SocketAddr,
        servers: &[String],
    ) -> std::io::Result<McpConfig> {
        let dir = parent.join(format!(
            "simtape-serve-{}-{}",
            std::process::id(),
            addr.port()
        ));
        std::fs::create_dir_all(&dir)?;
        let path = dir.join("mcp.json");
        std::fs::write(&path, config_text(addr, servers))?;
        Ok(McpConfig { dir, path })
    }

    /// Returns the file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for McpConfig {
    fn drop(&mut self) {
        // Best effort: a leftover temp file harms nothing.
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_name_servers_and_get_delete_are_answered_outside() {
        // Goal: `/mcp/NAME` names NAME; GET is 405, DELETE 200, an unknown server 404 naming
        // the known ones; a POST goes to the simulation.
        assert_eq!(server_of("/mcp/tickets/"), Some("tickets"));
        assert_eq!(server_of("/v1/messages"), None);
        let transport = McpTransport::new(vec!["tickets".into()]);
        assert_eq!(
            transport
                .answer_outside("GET", "/mcp/tickets", Some("127.0.0.1:1"), None)
                .unwrap()
                .status,
            405
        );
        assert_eq!(
            transport
                .answer_outside("DELETE", "/mcp/tickets", Some("localhost"), None)
                .unwrap()
                .status,
            200
        );
        let loopback = Some("127.0.0.1:1");
        let unknown = transport
            .answer_outside("GET", "/mcp/nope", loopback, None)
            .unwrap();
        assert_eq!(unknown.status, 404);
        let body: Value = serde_json::from_str(&unknown.body).unwrap();
        assert_eq!(body["error"]["data"]["servers"], json!(["tickets"]));
        assert!(body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("tickets"));
        assert!(transport
            .answer_outside("POST", "/mcp/tickets", loopback, None)
            .is_none());
        let rebound = transport.answer_outside("POST", "/mcp/tickets", Some("evil.example"), None);
        assert_eq!(rebound.unwrap().status, 403);
    }

    #[test]
    fn an_answer_becomes_an_event_only_for_a_client_that_reads_only_events() {
        // Goal: JSON stays JSON when the client accepts it; an SSE-only client gets one
        // `message` event; a 202 stays empty.
        let answer = || json_answer(1, 200, r#"{"jsonrpc":"2.0","id":1,"result":{}}"#.into());
        let both = "application/json, text/event-stream";
        let kept = McpTransport::for_client("/mcp/t", Some(both), answer());
        assert_eq!(kept.content_type, "application/json");
        let sse = McpTransport::for_client("/mcp/t", Some("text/event-stream"), answer());
        assert_eq!(sse.content_type, "text/event-stream");
        assert_eq!(
            sse.body,
            "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n"
        );
        let accepted = json_answer(1, 202, String::new());
        let accepted = McpTransport::for_client("/mcp/t", Some("text/event-stream"), accepted);
        assert_eq!(accepted.body, "");
    }

    #[test]
    fn the_config_names_each_server_by_url_and_goes_away_when_dropped() {
        // Goal: the config file has Claude Code's shape and is removed with its guard.
        let parent =
            std::env::temp_dir().join(format!("simtape-mcp-config-{}", std::process::id()));
        let addr: SocketAddr = "127.0.0.1:4321".parse().unwrap();
        let config = McpConfig::write(&parent, addr, &["tickets".into()]).unwrap();
        let text = std::fs::read_to_string(config.path()).unwrap();
        let value: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            value,
            json!({"mcpServers": {"tickets": {"type": "http", "url": "http://127.0.0.1:4321/mcp/tickets"}}})
        );
        let path = config.path().to_path_buf();
        drop(config);
        assert!(!path.exists());
        let _ = std::fs::remove_dir_all(parent);
    }
}
