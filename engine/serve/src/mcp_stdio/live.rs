//! A client session against a live server, for `simtape mcp verify -- SERVER…`: re-send the
//! recorded client messages in order (with their recorded ids, so cancellations still name the
//! right request), wait for each answer, and log the session as a candidate cassette. The
//! server's requests to the client (sampling, elicitation, roots, ping) get the answers the
//! client recorded for the same request, so the server goes on as it did when recorded.

use std::io::{BufReader, Write};
use std::process::{Child, ChildStdin};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::mcp_stdio::record::{spawn, stop};
use simtape_mcp::cassette::{Cassette, Party};
use simtape_mcp::era::{self, LATEST_HANDSHAKE_VERSION};
use simtape_mcp::error::McpError;
use simtape_mcp::jsonrpc::{error_response, is_request, is_response, method_of, METHOD_NOT_FOUND};
use simtape_mcp::limits::{
    LINE_BYTES_MAX, LIVE_RESPONSE_TIMEOUT_AFTER_MISS_MS, LIVE_RESPONSE_TIMEOUT_MS,
};
use simtape_mcp::lines::{read_line_bounded, LineRead};
use simtape_mcp::redact::Redactor;
use simtape_mcp::script::Step;

/// Replays the client side of `recorded` against a live server and returns what happened as a
/// candidate cassette (redacted with `redactor`, like a recording). A recording of several
/// sessions (`record --http`) is replayed session by session, each against a server started
/// anew as when it was recorded, and the candidate tags each message with its session.
pub fn rerun(
    recorded: &Cassette,
    command: &[String],
    redactor: &Redactor,
) -> Result<Cassette, McpError> {
    let sessions: std::collections::BTreeSet<Option<u64>> =
        recorded.messages.iter().map(|e| e.session).collect();
    if sessions.iter().all(Option::is_none) {
        return rerun_one(recorded, command, redactor);
    }
    let mut candidate = Cassette::new(command.iter().map(|a| redactor.redact_text(a)).collect());
    for session in sessions {
        let mut one = recorded.clone();
        one.messages.retain(|e| e.session == session);
        for entry in rerun_one(&one, command, redactor)?.messages {
            candidate.push(entry.from, entry.at_ms, entry.message);
            if let Some(last) = candidate.messages.last_mut() {
                last.session = session;
            }
        }
    }
    candidate.fill_latencies();
    Ok(candidate)
}

/// Replays one session's client side against a server of its own (see [`rerun`]).
fn rerun_one(
    recorded: &Cassette,
    command: &[String],
    redactor: &Redactor,
) -> Result<Cassette, McpError> {
    let mut session = Session::start(command, recorded_answers(recorded))?;
    let has_handshake = recorded
        .client_messages()
        .any(|m| matches!(method_of(m), Some("initialize" | "server/discover")));
    if !has_handshake {
        session.handshake()?;
    }
    let answered: Vec<bool> = recorded
        .exchanges()
        .iter()
        .filter(|e| e.from == Party::Client)
        .map(|e| e.response.is_some())
        .collect();
    let mut request_index = 0;
    let mut any_missing = false;
    for message in recorded.client_messages() {
        session.send(message, true)?;
        if is_request(message) {
            if answered[request_index] {
                let timeout_ms = if any_missing {
                    LIVE_RESPONSE_TIMEOUT_AFTER_MISS_MS
                } else {
                    LIVE_RESPONSE_TIMEOUT_MS
                };
                let answer = session.wait_for(&message["id"], Duration::from_millis(timeout_ms))?;
                any_missing |= answer.is_none();
            }
            request_index += 1;
        }
    }
    session.finish(command, redactor)
}

/// A server request as recorded (method and params without `_meta`), the client's recorded
/// answer, and whether the live session has used it.
type RecordedAnswer = (Value, Value, bool);

fn recorded_answers(recorded: &Cassette) -> Vec<RecordedAnswer> {
    let side = simtape_mcp::script::server_side(recorded);
    side.segments
        .values()
        .flat_map(|segment| segment.steps().cloned().collect::<Vec<_>>())
        .chain(side.opening.into_values().flatten())
        .filter_map(|step| match step {
            Step::Ask {
                request,
                answer: Some(answer),
            } => Some((asked_key(&request), answer, false)),
            _ => None,
        })
        .collect()
}

fn asked_key(request: &Value) -> Value {
    json!({"method": request.get("method"), "params": era::matching_params(request.get("params"))})
}

struct Session {
    answers: Vec<RecordedAnswer>,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Value>,
    start: Instant,
    log: Vec<(Party, u64, Value)>,
}

impl Session {
    fn start(command: &[String], answers: Vec<RecordedAnswer>) -> Result<Session, McpError> {
        let mut child = spawn(command)?;
        let stdout = child.stdout.take().expect("stdout is piped");
        let stdin = child.stdin.take();
        let (sender, lines) = mpsc::channel();
        // A plain thread, not a scoped one: it ends by itself when the server closes stdout.
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            while let Ok(Some(read)) = read_line_bounded(&mut reader, LINE_BYTES_MAX) {
                let LineRead::Line(line) = read else { continue };
                let Ok(message) = serde_json::from_slice::<Value>(&line) else {
                    continue;
                };
                if sender.send(message).is_err() {
                    break;
                }
            }
        });
        Ok(Session {
            answers,
            child,
            stdin,
            lines,
            start: Instant::now(),
            log: Vec::new(),
        })
    }

    fn now_ms(&self) -> u64 {
        self.start.elapsed().as_millis() as u64
    }

    fn send(&mut self, message: &Value, log: bool) -> Result<(), McpError> {
        if log {
            self.log
                .push((Party::Client, self.now_ms(), message.clone()));
        }
        let Some(stdin) = self.stdin.as_mut() else {
            return Ok(());
        };
        let mut line = serde_json::to_vec(message).expect("a Value always serializes");
        line.push(b'\n');
        if stdin.write_all(&line).and_then(|()| stdin.flush()).is_err() {
            // The server is gone; the drift report will show every missing answer.
            self.stdin = None;
        }
        Ok(())
    }

    /// Reads server messages until the response to `id` arrives or the timeout passes,
    /// answering server-initiated requests as the client did when recorded (the same
    /// request's answers in recorded order, the last one for every repeat), or with Method
    /// not found when nothing recorded matches.
    fn wait_for(&mut self, id: &Value, timeout: Duration) -> Result<Option<Value>, McpError> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let message = match self.lines.recv_timeout(left) {
                Ok(message) => message,
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => return Ok(None),
            };
            self.log
                .push((Party::Server, self.now_ms(), message.clone()));
            if is_response(&message) && message.get("id") == Some(id) {
                return Ok(Some(message));
            }
            if is_request(&message) {
                let answer = self.recorded_answer(&message);
                self.send(&answer, true)?;
            }
        }
    }

    fn recorded_answer(&mut self, request: &Value) -> Value {
        let key = asked_key(request);
        let same: Vec<usize> = (0..self.answers.len())
            .filter(|&i| self.answers[i].0 == key)
            .collect();
        let chosen = same
            .iter()
            .copied()
            .find(|&i| !self.answers[i].2)
            .or(same.last().copied());
        let Some(chosen) = chosen else {
            return error_response(&request["id"], METHOD_NOT_FOUND, "Method not found", None);
        };
        self.answers[chosen].2 = true;
        let mut answer = self.answers[chosen].1.clone();
        answer["id"] = request["id"].clone();
        answer
    }

    /// Sends a handshake-era handshake that is not logged, for cassettes that lack one.
    fn handshake(&mut self) -> Result<(), McpError> {
        let id = json!("simtape-verify-handshake");
        let initialize = json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
            "protocolVersion": LATEST_HANDSHAKE_VERSION, "capabilities": {},
            "clientInfo": {"name": "simtape-verify", "version": env!("CARGO_PKG_VERSION")}}});
        self.send(&initialize, false)?;
        let logged = self.log.len();
        let answer = self.wait_for(&id, Duration::from_millis(LIVE_RESPONSE_TIMEOUT_MS))?;
        self.log.truncate(logged);
        if answer.is_none() {
            return Err(McpError::Live("no answer to initialize".into()));
        }
        self.send(
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            false,
        )
    }

    fn finish(mut self, command: &[String], redactor: &Redactor) -> Result<Cassette, McpError> {
        drop(self.stdin.take());
        stop(&mut self.child)?;
        // The reader thread ends at the server's EOF; collect what it still holds.
        while let Ok(message) = self.lines.recv_timeout(Duration::from_millis(200)) {
            self.log.push((Party::Server, self.now_ms(), message));
        }
        let mut cassette = Cassette::new(command.iter().map(|a| redactor.redact_text(a)).collect());
        for (from, at_ms, mut message) in self.log {
            redactor.redact_value(&mut message);
            cassette.push(from, at_ms, message);
        }
        cassette.fill_latencies();
        Ok(cassette)
    }
}
