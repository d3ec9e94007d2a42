//! MCP's Streamable HTTP transport for a server outside any simulation: what
//! `simtape mcp replay|world|record --http ADDR` serve at `/mcp`.
//!
//! The server is an [`McpServer`]: it takes one client message at a time and says what to
//! send (a replay server, a world), or sends it later through [`Push`] (a recording proxy,
//! whose child server answers when it does). The transport around it:
//!
//! * `POST /mcp` carries one message or a batch. An `initialize` request opens a session
//!   (`Mcp-Session-Id: simtape-N`, N counting sessions, never random); later requests name it,
//!   and an unknown one is `404`. A request without a session that is not `initialize` is
//!   served too, in a session of its own: the 2026-07-28 revision has no sessions.
//! * A POST of notifications and responses only is `202 Accepted`. A POST with requests is
//!   answered as a server-sent event stream when the client accepts one, which stays open
//!   until every request in it is answered: what the server sends on its own meanwhile
//!   (progress, log lines, a `sampling/createMessage` it waits on) goes on the newest such
//!   stream of the session. A client that accepts only JSON gets the responses as one JSON body.
//! * `GET /mcp` opens the session's stream for messages that belong to no open request (the
//!   `list_changed` after `notifications/initialized`); they wait for it when none is open.
//!   `DELETE /mcp` ends the session.
//! * Every request is checked against DNS rebinding first
//!   ([`simtape_mcp::http::rebinding_refusal`]): `403`.
//!
//! Which stream a message goes on is decided by its content alone (a response goes where its
//! request came from), so the same code serves a server that answers at once and one whose
//! answers come later.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::rc::Rc;

use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, Limited, StreamBody};
use hyper::body::{Bytes, Frame, Incoming};
use serde_json::{json, Value};
use simtape_mcp::http::{accepts, body_parse_error, rebinding_refusal, sse_event, SESSION_HEADER};
use simtape_mcp::jsonrpc::{is_request, is_response, method_of};
use smol::channel::{unbounded, Receiver, Sender};
use smol::stream::StreamExt;

use crate::limits::REQUEST_BYTES_MAX;

/// The path the transport serves.
pub const MCP_PATH: &str = "/mcp";

/// A server the transport drives: one message in (as a JSON line), the messages to send out.
/// Sessions are numbered from 1 in the order they open.
pub trait McpServer {
    /// Session `session` opened: returns what the server sends before the client says
    /// anything. A server whose messages come later (a recorded child process) sends them
    /// through `push`, at any time, from any thread.
    fn open(&mut self, session: u64, push: Push) -> Vec<Value>;
    /// Takes one client message of `session` and returns what to send now, in order.
    fn answer(&mut self, session: u64, line: &[u8]) -> Vec<Value>;
    /// Session `session` ended (`DELETE`).
    fn close(&mut self, session: u64);
}

/// The way a server sends a session's messages later (see [`McpServer::open`]).
#[derive(Debug, Clone)]
pub struct Push {
    session: u64,
    sender: Sender<(u64, Value)>,
}

impl Push {
    /// Sends `message` as the server's, routed like an immediate answer. Blocks only while
    /// the transport is busy; a message for a session that ended is dropped.
    pub fn send(&self, message: Value) {
        let _ = self.sender.send_blocking((self.session, message));
    }
}

type Body = UnsyncBoxBody<Bytes, Infallible>;

/// A POST whose requests are not all answered yet.
struct OpenPost {
    /// The ids of its requests still unanswered.
    pending: Vec<Value>,
    /// Where its messages go.
    sink: Sender<Value>,
    /// Whether the client reads a stream (else only responses go to it, as one JSON body).
    events: bool,
}

/// One session's streams.
#[derive(Default)]
struct Session {
    /// Opened for one POST without a session (2026-07-28): it ends when that POST is answered.
    ephemeral: bool,
    /// Open POSTs, oldest first.
    posts: Vec<OpenPost>,
    /// The GET stream, when the client opened one.
    get: Option<Sender<Value>>,
    /// Messages for the GET stream before it opened.
    queued: Vec<Value>,
}

impl Session {
    /// Sends one message from the server where it belongs (see the module docs); returns
    /// true when it was the last answer an open POST waited for.
    fn route(&mut self, message: Value) -> bool {
        if is_response(&message) {
            let id = message.get("id");
            let post = self
                .posts
                .iter()
                .position(|p| p.pending.iter().any(|pending| Some(pending) == id));
            if let Some(index) = post {
                let post = &mut self.posts[index];
                post.pending.retain(|pending| Some(pending) != id);
                let _ = post.sink.try_send(message);
                if post.pending.is_empty() {
                    // Dropping the sender ends the stream (or completes the JSON body).
                    self.posts.remove(index);
                    return true;
                }
                return false;
            }
        }
        if let Some(post) = self.posts.iter().rev().find(|p| p.events) {
            let _ = post.sink.try_send(message);
            return false;
        }
        match &self.get {
            Some(get) if get.try_send(message.clone()).is_ok() => {}
            _ => {
                self.get = None;
                self.queued.push(message);
            }
        }
        false
    }
}

/// The state every connection shares.
struct Shared {
    server: RefCell<Box<dyn McpServer>>,
    /// Open sessions by number (their ids are `simtape-N`).
    sessions: RefCell<BTreeMap<u64, Session>>,
    opened: RefCell<u64>,
    pushed: Sender<(u64, Value)>,
}

impl Shared {
    /// Hands `message` to the server and routes what it says within `session`.
    fn deliver(&self, session: u64, message: &Value) {
        let line = message.to_string();
        let out = self.server.borrow_mut().answer(session, line.as_bytes());
        for message in out {
            self.route(session, message);
        }
    }

    fn route(&self, session: u64, message: Value) {
        let done = match self.sessions.borrow_mut().get_mut(&session) {
            Some(open) => open.route(message) && open.ephemeral && open.posts.is_empty(),
            None => false,
        };
        if done {
            self.close_session(session);
        }
    }

    fn open_session(&self, ephemeral: bool) -> u64 {
        let number = {
            let mut opened = self.opened.borrow_mut();
            *opened += 1;
            *opened
        };
        let session = Session {
            ephemeral,
            ..Session::default()
        };
        self.sessions.borrow_mut().insert(number, session);
        let push = Push {
            session: number,
            sender: self.pushed.clone(),
        };
        let opening = self.server.borrow_mut().open(number, push);
        for message in opening {
            self.route(number, message);
        }
        number
    }

    /// Returns the number of the session an `Mcp-Session-Id` names, if it is open.
    fn session_of(&self, id: &str) -> Option<u64> {
        let number = id.strip_prefix("simtape-")?.parse().ok()?;
        self.sessions
            .borrow()
            .contains_key(&number)
            .then_some(number)
    }

    fn close_session(&self, number: u64) {
        self.sessions.borrow_mut().remove(&number);
        self.server.borrow_mut().close(number);
    }
}

/// Serves `server` over Streamable HTTP on `listener` until `stop` yields; returns then.
/// Runs on the calling thread.
pub fn serve(
    listener: std::net::TcpListener,
    server: Box<dyn McpServer>,
    stop: Receiver<()>,
) -> std::io::Result<()> {
    let listener = smol::net::TcpListener::try_from(listener)?;
    let (pushed, pushes) = unbounded();
    let shared = Rc::new(Shared {
        server: RefCell::new(server),
        sessions: RefCell::new(BTreeMap::new()),
        opened: RefCell::new(0),
        pushed,
    });
    let executor = Rc::new(smol::LocalExecutor::new());
    let routing = shared.clone();
    executor
        .spawn(async move {
            while let Ok((session, message)) = pushes.recv().await {
                routing.route(session, message);
            }
        })
        .detach();
    let accepting = {
        let executor = executor.clone();
        async move {
            while let Ok((stream, _)) = listener.accept().await {
                executor.spawn(connection(stream, shared.clone())).detach();
            }
        }
    };
    smol::block_on(executor.run(smol::future::or(accepting, async {
        let _ = stop.recv().await;
    })));
    Ok(())
}

async fn connection(stream: smol::net::TcpStream, shared: Rc<Shared>) {
    let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
        let shared = shared.clone();
        async move { Ok::<_, Infallible>(exchange(request, &shared).await) }
    });
    let _ = hyper::server::conn::http1::Builder::new()
        .keep_alive(true)
        .serve_connection(smol_hyper::rt::FuturesIo::new(stream), service)
        .await;
}

fn header<'a>(request: &'a hyper::http::request::Parts, name: &str) -> Option<&'a str> {
    request.headers.get(name).and_then(|v| v.to_str().ok())
}

async fn exchange(request: hyper::Request<Incoming>, shared: &Shared) -> hyper::Response<Body> {
    let (parts, body) = request.into_parts();
    let refusal = rebinding_refusal(header(&parts, "host"), header(&parts, "origin"));
    if let Some(reason) = refusal {
        return json_error(403, &reason);
    }
    if parts.uri.path().trim_end_matches('/') != MCP_PATH {
        return json_error(404, &format!("this server serves MCP at {MCP_PATH} only"));
    }
    let session = header(&parts, SESSION_HEADER).map(str::to_string);
    match parts.method.as_str() {
        "POST" => {
            let body = match Limited::new(body, REQUEST_BYTES_MAX).collect().await {
                Ok(collected) => collected.to_bytes(),
                Err(_) => return json_error(413, "the request body is too large or broke off"),
            };
            post(&parts, &body, session, shared).await
        }
        "GET" => get(&parts, session, shared),
        "DELETE" => match session.as_deref().and_then(|id| shared.session_of(id)) {
            Some(number) => {
                shared.close_session(number);
                response(200, "application/json", full(String::new()))
            }
            None => json_error(404, "no such session"),
        },
        _ => {
            let mut answer = json_error(405, "MCP is POST, GET and DELETE");
            answer.headers_mut().insert(
                "allow",
                "POST, GET, DELETE".parse().expect("a valid header"),
            );
            answer
        }
    }
}

async fn post(
    parts: &hyper::http::request::Parts,
    body: &[u8],
    session: Option<String>,
    shared: &Shared,
) -> hyper::Response<Body> {
    let messages = match serde_json::from_slice::<Value>(body) {
        Ok(Value::Array(batch)) => batch,
        Ok(message) => vec![message],
        Err(e) => {
            let error = body_parse_error(&e).to_string();
            return response(400, "application/json", full(error));
        }
    };
    let initialize = messages
        .iter()
        .any(|m| is_request(m) && method_of(m) == Some("initialize"));
    let (session, created) = match session {
        _ if initialize => (shared.open_session(false), true),
        Some(id) => match shared.session_of(&id) {
            Some(number) => (number, false),
            None => return json_error(404, "no such session (it ended, or never began)"),
        },
        None => (shared.open_session(true), false),
    };
    let requests: Vec<Value> = messages
        .iter()
        .filter(|m| is_request(m))
        .map(|m| m["id"].clone())
        .collect();
    if requests.is_empty() {
        for message in &messages {
            shared.deliver(session, message);
        }
        if shared
            .sessions
            .borrow()
            .get(&session)
            .is_some_and(|s| s.ephemeral)
        {
            shared.close_session(session);
        }
        return response(202, "application/json", full(String::new()));
    }
    let wanted = accepts(header(parts, "accept"));
    let (sink, stream) = unbounded();
    if let Some(open) = shared.sessions.borrow_mut().get_mut(&session) {
        open.posts.push(OpenPost {
            pending: requests,
            sink,
            events: wanted.events,
        });
    }
    for message in &messages {
        shared.deliver(session, message);
    }
    let mut answer = if wanted.events {
        event_stream(stream)
    } else {
        let responses: Vec<Value> = stream.collect().await;
        let body = match (messages.len(), responses.as_slice()) {
            (1, [single]) => single.to_string(),
            _ => Value::Array(responses).to_string(),
        };
        response(200, "application/json", full(body))
    };
    if created {
        let value = format!("simtape-{session}")
            .parse()
            .expect("session ids are ASCII");
        answer.headers_mut().insert(SESSION_HEADER, value);
    }
    answer
}

fn get(
    parts: &hyper::http::request::Parts,
    session: Option<String>,
    shared: &Shared,
) -> hyper::Response<Body> {
    if !accepts(header(parts, "accept")).events {
        return json_error(
            406,
            "GET opens an event stream: Accept must allow text/event-stream",
        );
    }
    let Some(id) = session else {
        return json_error(400, "GET needs the Mcp-Session-Id of a session");
    };
    let Some(number) = shared.session_of(&id) else {
        return json_error(404, "no such session (it ended, or never began)");
    };
    let mut sessions = shared.sessions.borrow_mut();
    let open = sessions.get_mut(&number).expect("session_of found it open");
    let (sink, stream) = unbounded();
    for message in open.queued.drain(..) {
        let _ = sink.try_send(message);
    }
    open.get = Some(sink);
    event_stream(stream)
}

/// A `200` event stream of the messages `stream` yields, ending when its senders are gone.
fn event_stream(stream: Receiver<Value>) -> hyper::Response<Body> {
    let events = stream.map(|message| Ok(Frame::data(Bytes::from(sse_event(&message)))));
    let mut answer = response(
        200,
        "text/event-stream",
        StreamBody::new(events).boxed_unsync(),
    );
    answer
        .headers_mut()
        .insert("cache-control", "no-cache".parse().expect("a valid header"));
    answer
}

fn full(text: String) -> Body {
    Full::new(Bytes::from(text)).boxed_unsync()
}

fn response(status: u16, content_type: &str, body: Body) -> hyper::Response<Body> {
    hyper::Response::builder()
        .status(status)
        .header("content-type", content_type)
        .body(body)
        .expect("status and headers come from this module's fixed vocabulary")
}

fn json_error(status: u16, message: &str) -> hyper::Response<Body> {
    let body = json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32600, "message": message}});
    response(status, "application/json", full(body.to_string()))
}

/// Binds `addr` for [`serve`] and returns the listener and the address it got (a port of 0
/// picks a free one). Only loopback addresses are accepted: the transport has no
/// authentication.
pub fn bind(addr: SocketAddr) -> std::io::Result<(std::net::TcpListener, SocketAddr)> {
    if !addr.ip().is_loopback() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{addr} is not a loopback address; MCP over HTTP is served on loopback only"),
        ));
    }
    let listener = std::net::TcpListener::bind(addr)?;
    listener.set_nonblocking(true)?;
    let bound = listener.local_addr()?;
    Ok((listener, bound))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn post(pending: Vec<Value>, events: bool) -> (OpenPost, Receiver<Value>) {
        let (sink, stream) = unbounded();
        let post = OpenPost {
            pending,
            sink,
            events,
        };
        (post, stream)
    }

    #[test]
    fn messages_go_where_they_belong() {
        // Goal: a response goes to the POST that asked (and closes it when it was the last
        // one); anything else goes to the newest open event stream, else the GET stream, else
        // waits for it; a JSON-only POST gets responses only.
        let mut session = Session::default();
        let (older, older_stream) = post(vec![json!(1)], true);
        let (newer, newer_stream) = post(vec![json!(2), json!(3)], true);
        let (plain, plain_stream) = post(vec![json!(4)], false);
        session.posts = vec![older, newer, plain];
        assert!(!session.route(json!({"jsonrpc": "2.0", "method": "notifications/message"})));
        assert_eq!(
            newer_stream.try_recv().unwrap()["method"],
            "notifications/message"
        );
        assert!(session.route(json!({"jsonrpc": "2.0", "id": 1, "result": {}})));
        assert_eq!(older_stream.try_recv().unwrap()["id"], 1);
        assert!(older_stream.is_closed(), "its last request was answered");
        session.route(json!({"jsonrpc": "2.0", "id": 4, "result": {}}));
        assert_eq!(plain_stream.try_recv().unwrap()["id"], 4);
        assert_eq!(session.posts.len(), 1);
        session.posts.clear();
        let unowned = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"});
        session.route(unowned.clone());
        assert_eq!(session.queued, vec![unowned.clone()]);
        let (get, get_stream) = unbounded();
        session.get = Some(get);
        session.route(unowned);
        assert!(get_stream.try_recv().is_ok());
    }
}
