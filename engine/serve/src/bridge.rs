//! `simtape mcp bridge URL`: a stdio MCP server that forwards every message to an MCP
//! endpoint of a running `simtape serve` (`http://…/mcp/NAME`), for agents that only spawn
//! stdio servers. Their MCP config names the bridge as the server's command; the simulation
//! still answers every call, on its one tape.
//!
//! Each line read on stdin is POSTed as it is (Streamable HTTP: the session id the server
//! gave on `initialize` goes with every later request); each JSON-RPC message of the answer,
//! JSON or a server-sent event stream, is written back as one line. A request the server
//! cannot be asked (it is gone, it answered without a JSON-RPC body) gets a JSON-RPC error
//! naming the URL, so the client is never left waiting.
//!
//! Stdin is read on its own thread ([`crate::mcp_stdio::stdio::ServeInbox`]) and the POSTs run on
//! another, so a signal ends the bridge at once, even mid-request; at stdin EOF the requests
//! already read are answered first, then the session is closed (`DELETE`).

use std::io::Write;
use std::sync::mpsc;
use std::time::Duration;

use crate::mcp_stdio::serve::write_messages;
use crate::mcp_stdio::stdio::{Ending, Event, ServeInbox};
use serde_json::Value;
use simtape_mcp::jsonrpc::{error_response, parse_line, JsonRpcMessage};
use simtape_mcp::limits::LINE_BYTES_MAX;
use simtape_mcp::lines::LineRead;
use simtape_mcp::ReplayServer;

use crate::mcp_http::SESSION_HEADER;

/// The JSON-RPC code of a request the bridge could not get answered (a server error in the
/// implementation-defined range).
pub const BRIDGE_ERROR: i64 = -32000;
/// How long one request may take, in wall-clock time, before the bridge gives up on it.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(600);

/// A URL the bridge cannot forward to.
#[derive(Debug, thiserror::Error)]
#[error("simtape mcp bridge: {url:?} is not an http:// URL of an MCP endpoint (simtape serve prints them, e.g. http://127.0.0.1:PORT/mcp/NAME)")]
pub struct BadUrl {
    /// The URL given.
    pub url: String,
}

/// The HTTP side of a bridge: where it posts and the session it holds.
#[derive(Debug)]
pub struct Bridge {
    agent: ureq::Agent,
    url: String,
    session: Option<String>,
}

impl Bridge {
    /// Returns a bridge to `url`, which must be an `http://` URL.
    pub fn new(url: &str) -> Result<Bridge, BadUrl> {
        let bad = || BadUrl { url: url.into() };
        let uri: ureq::http::Uri = url.parse().map_err(|_| bad())?;
        if uri.scheme_str() != Some("http") || uri.host().is_none() {
            return Err(bad());
        }
        let agent = ureq::Agent::config_builder()
            // Error statuses carry JSON-RPC errors to pass on, not transport failures.
            .http_status_as_error(false)
            .max_redirects(0)
            // The endpoint is on loopback: a proxy from the environment would not reach it.
            .proxy(None)
            .timeout_global(Some(REQUEST_TIMEOUT))
            .build()
            .into();
        Ok(Bridge {
            agent,
            url: url.into(),
            session: None,
        })
    }

    /// Forwards one line and returns the messages to write back.
    pub fn exchange(&mut self, line: &[u8]) -> Vec<Value> {
        if line.iter().all(u8::is_ascii_whitespace) {
            return Vec::new();
        }
        match self.post(line) {
            Ok(messages) => messages,
            Err(reason) => failed(line, &format!("POST {}: {reason}", self.url)),
        }
    }

    fn post(&mut self, line: &[u8]) -> Result<Vec<Value>, PostError> {
        let mut request = self
            .agent
            .post(&self.url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json");
        if let Some(session) = &self.session {
            request = request.header(SESSION_HEADER, session);
        }
        let mut response = request.send(line)?;
        let header = |name: &str| {
            let value = response.headers().get(name)?;
            Some(value.to_str().ok()?.to_string())
        };
        if let Some(session) = header(SESSION_HEADER) {
            self.session = Some(session);
        }
        let event_stream =
            header("content-type").is_some_and(|kind| kind.starts_with("text/event-stream"));
        let status = response.status().as_u16();
        let body = response
            .body_mut()
            .with_config()
            .limit(LINE_BYTES_MAX as u64)
            .read_to_string()?;
        if body.trim().is_empty() {
            return match status {
                200..=299 => Ok(Vec::new()),
                _ => Err(PostError::Empty { status }),
            };
        }
        let messages = if event_stream {
            event_data(&body)
        } else {
            vec![body]
        };
        let mut out = Vec::new();
        for text in messages {
            match serde_json::from_str::<Value>(&text) {
                Ok(Value::Array(batch)) => out.extend(batch),
                Ok(message) => out.push(message),
                Err(_) => return Err(PostError::NotJsonRpc { status }),
            }
        }
        Ok(out)
    }

    /// Ends the server's session, if one was opened (best effort: the process is ending).
    pub fn close(&mut self) {
        if let Some(session) = self.session.take() {
            let _ = self
                .agent
                .delete(&self.url)
                .header(SESSION_HEADER, &session)
                .call();
        }
    }
}

/// Returns the data of each event of a server-sent event stream (multi-line data joined).
fn event_data(stream: &str) -> Vec<String> {
    let mut events = Vec::new();
    let mut data: Vec<&str> = Vec::new();
    for line in stream.lines().chain(std::iter::once("")) {
        if line.is_empty() {
            if !data.is_empty() {
                events.push(data.join("\n"));
                data.clear();
            }
        } else if let Some(value) = line.strip_prefix("data:") {
            data.push(value.strip_prefix(' ').unwrap_or(value));
        }
    }
    events
}

/// The answer to a line the server could not be asked about: an error for a request (so its
/// caller does not wait forever), nothing for a notification or a response.
fn failed(line: &[u8], reason: &str) -> Vec<Value> {
    match parse_line(line) {
        Ok(Some((_, JsonRpcMessage::Request { id, .. }))) => {
            let message = format!("simtape mcp bridge: {reason}");
            vec![error_response(&id, BRIDGE_ERROR, &message, None)]
        }
        Ok(_) => Vec::new(),
        Err(failure) => vec![failure.to_response()],
    }
}

/// Runs the bridge until the session ends, writing answers to `output`, and says why it
/// ended. A signal (through the inbox's stopper) ends it at once; at stdin EOF the lines
/// already read are answered first.
pub fn run<W: Write + Send + 'static>(
    mut bridge: Bridge,
    inbox: &ServeInbox,
    mut output: W,
) -> Ending {
    let (lines, queue) = mpsc::channel::<LineRead>();
    let stopper = inbox.stopper();
    let worker = std::thread::spawn(move || {
        for line in queue {
            let answers = match line {
                LineRead::Line(line) => bridge.exchange(&line),
                LineRead::TooLong(length) => vec![ReplayServer::line_too_long(length)],
            };
            if write_messages(&mut output, &answers).is_err() {
                stopper.stop(Ending::ClientGone);
                return;
            }
        }
        bridge.close();
    });
    loop {
        match inbox.next() {
            Event::Line(line) => {
                // The worker ends only after a failed write, which also ends the session.
                let _ = lines.send(line);
            }
            Event::End(Ending::Eof) => {
                drop(lines);
                let _ = worker.join();
                return Ending::Eof;
            }
            // A signal, a client gone, a failed read: stop now; the worker dies with us.
            Event::End(ending) => return ending,
        }
    }
}

/// Why a line could not be forwarded: the client gets a JSON-RPC error naming it.
#[derive(Debug, thiserror::Error)]
enum PostError {
    /// The endpoint could not be reached, or its body not read.
    #[error(transparent)]
    Transport(#[from] ureq::Error),
    /// An error status with no body.
    #[error("HTTP {status} without a body")]
    Empty { status: u16 },
    /// A body that is neither a JSON-RPC message nor a batch of them.
    #[error("HTTP {status} with a body that is not JSON-RPC")]
    NotJsonRpc { status: u16 },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_streams_give_one_message_per_event() {
        // Goal: each event's data lines make one message; comments and other fields are not data.
        let stream = ": hi\nevent: message\ndata: {\"a\":\ndata: 1}\n\nid: 2\ndata: {\"b\":2}\n";
        assert_eq!(event_data(stream), ["{\"a\":\n1}", "{\"b\":2}"]);
    }

    #[test]
    fn an_unreachable_server_answers_requests_with_an_error_and_notifications_with_nothing() {
        // Goal: a request whose POST fails gets a JSON-RPC error naming the URL; a
        // notification gets no answer; a URL that is not http:// is refused up front.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        drop(listener);
        let url = format!("http://{addr}/mcp/tickets");
        let mut bridge = Bridge::new(&url).unwrap();
        let answers = bridge.exchange(br#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#);
        assert_eq!(answers.len(), 1);
        assert_eq!(answers[0]["id"], 7);
        assert_eq!(answers[0]["error"]["code"], BRIDGE_ERROR);
        assert!(answers[0]["error"]["message"]
            .as_str()
            .unwrap()
            .contains(&url));
        let notification = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        assert!(bridge.exchange(notification).is_empty());
        assert!(Bridge::new("https://example.com/mcp/x").is_err());
        assert!(Bridge::new("not a url").is_err());
    }
}
