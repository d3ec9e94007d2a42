//! The outside of `simtape serve`: the loopback HTTP server, the agent process, and the
//! driver that turns wall-clock arrivals into the simulation's inputs.
//!
//! Everything here runs on one thread under a smol `LocalExecutor`: connection tasks hand
//! each request to the driver through a channel; the driver owns the open run. The rule that
//! keeps the tape independent of OS scheduling: the driver waits until the agent has been
//! quiet for the settle window, sorts the requests that arrived meanwhile by content
//! (method, path, body), delivers them in that order at the run's current virtual instant,
//! runs the simulation until it awaits input again (every model latency passes in virtual
//! time, at once), and only then releases the answers. An agent that sends its next request
//! only after an answer (every agent's main loop) therefore always produces the same inputs
//! in the same order; parallel requests inside one settle window are ordered by content.

use std::collections::BTreeMap;
use std::time::Duration;

use hyper::body::Incoming;
use simtape::inbox::{Inbox, Outbox};
use simtape::run::{Progress, Run};
use smol::channel::{Receiver, Sender};

use crate::mcp_http::McpTransport;
use simtape_agent::AgentExit;

use crate::adapter::EventKind;
use crate::body::ResponseBody;
use crate::gateway::{BodyEnd, GatewayInput, HttpRequest, HttpResponse};

use crate::intake::{read_body, BodyBudget, SmolTimer};
use crate::limits::HEADER_READ_TIMEOUT;

/// Times the driver yields after a settle window, so the agent's output reader runs first.
const OUTPUT_CATCH_UP_YIELDS: usize = 4;

/// A request waiting for the driver, with the way back to its connection.
pub(crate) struct Pending {
    pub(crate) method: String,
    pub(crate) path: String,
    pub(crate) body: String,
    pub(crate) reply: Sender<HttpResponse>,
}

/// Accepts connections until the listener fails; each connection's requests go to `tx`.
pub(crate) async fn accept(
    executor: std::rc::Rc<smol::LocalExecutor<'static>>,
    listener: smol::net::TcpListener,
    tx: Sender<Pending>,
    mcp: std::rc::Rc<McpTransport>,
) {
    // One budget for every body the session's connections hold at once.
    let budget = BodyBudget::default();
    while let Ok((stream, _)) = listener.accept().await {
        let tx = tx.clone();
        executor
            .spawn(connection(stream, tx, mcp.clone(), budget.clone()))
            .detach();
    }
}

async fn connection(
    stream: smol::net::TcpStream,
    tx: Sender<Pending>,
    mcp: std::rc::Rc<McpTransport>,
    budget: BodyBudget,
) {
    let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
        let (tx, mcp, budget) = (tx.clone(), mcp.clone(), budget.clone());
        async move { Ok::<_, std::convert::Infallible>(exchange(request, &tx, &mcp, &budget).await) }
    });
    // A connection that breaks mid-request only loses that request: the agent sees the error.
    // One that sends no headers within the timeout (half-open, or idle between requests) is
    // closed; that happens outside the run and is on no tape.
    let _ = hyper::server::conn::http1::Builder::new()
        .keep_alive(true)
        .timer(SmolTimer)
        .header_read_timeout(HEADER_READ_TIMEOUT)
        .serve_connection(smol_hyper::rt::FuturesIo::new(stream), service)
        .await;
}

async fn exchange(
    request: hyper::Request<Incoming>,
    tx: &Sender<Pending>,
    mcp: &McpTransport,
    budget: &BodyBudget,
) -> hyper::Response<ResponseBody> {
    let (parts, body) = request.into_parts();
    let header = |name| parts.headers.get(name).and_then(|v| v.to_str().ok());
    let (host, origin) = (header(hyper::header::HOST), header(hyper::header::ORIGIN));
    if let Some(response) =
        mcp.answer_outside(parts.method.as_str(), parts.uri.path(), host, origin)
    {
        return http_response(response);
    }
    let declared = header(hyper::header::CONTENT_LENGTH).and_then(|v| v.parse().ok());
    // `_held` keeps the body's bytes counted until this request is answered.
    let (body, _held) = match read_body(body, declared, budget).await {
        Ok(read) => read,
        Err(refused) => {
            let (status, message, headers) = refused.answer();
            return plain_with(status, &message, headers);
        }
    };
    let (reply, answer) = smol::channel::bounded(1);
    let pending = Pending {
        method: parts.method.as_str().to_string(),
        path: parts.uri.path().to_string(),
        body,
        reply,
    };
    if tx.send(pending).await.is_err() {
        return plain(503, "simtape serve is shutting down");
    }
    let accept = parts.headers.get(hyper::header::ACCEPT);
    let accept = accept.and_then(|value| value.to_str().ok());
    match answer.recv().await {
        Ok(response) => http_response(McpTransport::for_client(parts.uri.path(), accept, response)),
        Err(_) => plain(503, "the simulation ended before answering this request"),
    }
}

fn plain(status: u16, message: &str) -> hyper::Response<ResponseBody> {
    plain_with(status, message, Vec::new())
}

fn plain_with(
    status: u16,
    message: &str,
    headers: Vec<(String, String)>,
) -> hyper::Response<ResponseBody> {
    let body = serde_json::json!({"error": {"type": "simtape_serve", "message": message}});
    http_response(HttpResponse {
        id: 0,
        status,
        headers,
        content_type: "application/json",
        body: body.to_string(),
        ending: BodyEnd::Complete,
    })
}

fn http_response(response: HttpResponse) -> hyper::Response<ResponseBody> {
    let mut builder = hyper::Response::builder()
        .status(response.status)
        .header("content-type", response.content_type);
    for (name, value) in &response.headers {
        builder = builder.header(name.as_str(), value.as_str());
    }
    builder
        .body(ResponseBody::new(response.body, response.ending))
        .expect("status and headers come from the gateway's fixed vocabulary")
}

/// What ends a serve session besides the run itself.
pub(crate) enum SessionStop {
    /// The agent process exited.
    AgentExited(AgentExit),
    /// The user asked to stop (Ctrl-C without an agent command), or the agent ran over its
    /// timeout.
    Stopped,
    /// A `[harness]` session asked for a model turn past its budget: the run ordered it
    /// stopped.
    TurnsSpent,
}

/// The driver loop: batches requests by the settle rule, feeds the run, answers. It does
/// not own the run: each call is handed it, whatever its output type.
pub(crate) struct Driver {
    pub(crate) inputs: Inbox<GatewayInput>,
    pub(crate) responses: Outbox<HttpResponse>,
    pub(crate) settle: Duration,
    pub(crate) normalizer: crate::normalize::BodyNormalizer,
    /// The raw requests, one JSON line each, before normalization.
    pub(crate) session_log: Option<std::io::BufWriter<std::fs::File>>,
    pub(crate) next_id: u64,
    pub(crate) waiting: BTreeMap<u64, Sender<HttpResponse>>,
    /// What the agent's adapter read from its output, not yet delivered.
    pub(crate) events: Option<Receiver<EventKind>>,
    /// The agent's clock, when it reads virtual time (`[agent] clock = "virtual"`).
    pub(crate) clock: Option<crate::clock::ClockFile>,
    /// A `[harness]` run's session orders: a stop order ends the session being driven.
    pub(crate) orders: Option<Outbox<crate::order::SessionOrder>>,
    /// Whether the agent's output is delivered only when it exits (an agent whose output
    /// lands on either side of its next request as its own scheduling falls).
    pub(crate) events_at_exit: bool,
    /// Tells whether the agent is busy: a settle window then lasts until it is not (up to
    /// [`crate::limits::SETTLE_BUSY_MAX`] more), so a request it was slow to reach on a
    /// loaded machine lands in the batch it lands in on an idle one.
    pub(crate) busy: Option<crate::sandbox::BusyProbe>,
}

impl Driver {
    /// Makes a driver for the gateway's inbox and outbox.
    pub(crate) fn new(
        inputs: Inbox<GatewayInput>,
        responses: Outbox<HttpResponse>,
        settle: Duration,
        normalizer: crate::normalize::BodyNormalizer,
    ) -> Driver {
        Driver {
            inputs,
            responses,
            settle,
            normalizer,
            session_log: None,
            next_id: 1,
            waiting: BTreeMap::new(),
            events: None,
            clock: None,
            orders: None,
            events_at_exit: false,
            busy: None,
        }
    }

    /// Runs until `ending` resolves or the run ends; returns how the session ended.
    pub(crate) async fn drive<T: 'static>(
        &mut self,
        run: &mut Run<T>,
        rx: &Receiver<Pending>,
        ending: impl std::future::Future<Output = SessionStop>,
    ) -> Option<SessionStop> {
        run.run_until_idle();
        let mut ending = std::pin::pin!(ending);
        loop {
            let next = smol::future::or(async { rx.recv().await.ok().map(Next::Request) }, async {
                Some(Next::End((&mut ending).await))
            })
            .await;
            let first = match next {
                Some(Next::Request(pending)) => pending,
                Some(Next::End(end)) => return Some(end),
                None => return None,
            };
            let batch = self.settle_batch(first, rx).await;
            // The agent printed what goes with these requests before it sent them; the pipe
            // became readable in the same poll that ended the settle window. Let the
            // output's reader run before the events are taken.
            for _ in 0..OUTPUT_CATCH_UP_YIELDS {
                smol::future::yield_now().await;
            }
            if self.deliver(run, batch) != Progress::AwaitingInput {
                return None;
            }
            if self.stop_ordered(run) {
                return Some(SessionStop::TurnsSpent);
            }
        }
    }

    /// Whether the run ordered the running session stopped (its other orders come only
    /// between sessions).
    fn stop_ordered<T: 'static>(&mut self, run: &mut Run<T>) -> bool {
        let Some(orders) = self.orders else {
            return false;
        };
        let taken = run.take(orders);
        taken
            .iter()
            .any(|order| matches!(order, crate::order::SessionOrder::Stop { .. }))
    }

    /// Collects every request that arrives until the agent has been quiet for the window
    /// and, when its busyness can be seen, is not busy.
    async fn settle_batch(&self, first: Pending, rx: &Receiver<Pending>) -> Vec<Pending> {
        let mut batch = vec![first];
        let mut window = self.settle;
        let mut busy_since: Option<std::time::Instant> = None;
        loop {
            let more = smol::future::or(async { rx.recv().await.ok() }, async {
                smol::Timer::after(window).await;
                None
            })
            .await;
            match more {
                Some(pending) => {
                    batch.push(pending);
                    window = self.settle;
                    busy_since = None;
                }
                None => {
                    let Some(probe) = &self.busy else {
                        return batch;
                    };
                    let since = *busy_since.get_or_insert_with(std::time::Instant::now);
                    if !probe.busy() || since.elapsed() >= crate::limits::SETTLE_BUSY_MAX {
                        return batch;
                    }
                    window = crate::limits::SETTLE_BUSY_POLL;
                }
            }
        }
    }

    /// Delivers what the agent printed so far (it printed it before the requests of this
    /// batch: the settle window let the reader catch up), as one input.
    pub(crate) fn deliver_events<T: 'static>(&mut self, run: &mut Run<T>) {
        let Some(events) = &self.events else {
            return;
        };
        let mut kinds = Vec::new();
        while let Ok(kind) = events.try_recv() {
            kinds.push(self.normalize_event(kind));
        }
        if !kinds.is_empty() {
            let _ = run.deliver(self.inputs, GatewayInput::Session(kinds));
        }
    }

    /// Normalizes an event as requests are: its JSON through the same rules.
    fn normalize_event(&self, kind: EventKind) -> EventKind {
        let text = serde_json::to_string(&kind).expect("events serialize");
        serde_json::from_str(&self.normalizer.apply(&text)).unwrap_or(kind)
    }

    /// Delivers `batch` in content order, runs the simulation until it awaits input again,
    /// and answers every request it answered.
    fn deliver<T: 'static>(&mut self, run: &mut Run<T>, batch: Vec<Pending>) -> Progress {
        // The agent's output goes in with its requests to the model (and at its exit), not
        // with its MCP requests: an agent may print a turn's text on either side of the
        // tool's MCP request, as its own scheduling falls, and the output must not land in
        // a different delivery because of that. By its next model request it has printed it.
        let model_request = batch
            .iter()
            .any(|pending| crate::mcp_path::server_of(&pending.path).is_none());
        if model_request && !self.events_at_exit {
            self.deliver_events(run);
        }
        let mut batch: Vec<(String, Pending)> = batch
            .into_iter()
            .map(|pending| (self.normalizer.apply(&pending.body), pending))
            .collect();
        batch.sort_by(|(a_body, a), (b_body, b)| {
            (&a.method, &a.path, a_body).cmp(&(&b.method, &b.path, b_body))
        });
        for (body, pending) in batch {
            let id = self.next_id;
            self.next_id += 1;
            self.log(id, &pending);
            // The raw body is logged: only the normalized one goes on (a 30 MB body is not
            // held twice while the run takes it in).
            let Pending {
                method,
                path,
                reply,
                body: raw,
            } = pending;
            drop(raw);
            let request = HttpRequest {
                id,
                method,
                path,
                body,
            };
            match run.deliver(self.inputs, GatewayInput::Request(request)) {
                Ok(()) => {
                    self.waiting.insert(id, reply);
                }
                Err(error) => {
                    let _ = reply.try_send(refusal(&error.to_string()));
                }
            }
        }
        let progress = run.run_until_idle();
        // The agent's clock moves to the instant its answers leave at.
        if let Some(clock) = &self.clock {
            clock.set(run.now_ns());
        }
        self.answer(run);
        progress
    }

    /// Appends the raw request to the session log (a write error drops the log, not the run).
    fn log(&mut self, id: u64, pending: &Pending) {
        use std::io::Write;
        let Some(log) = self.session_log.as_mut() else {
            return;
        };
        let line = serde_json::json!({
            "id": id, "method": pending.method, "path": pending.path, "body": pending.body,
        });
        if writeln!(log, "{line}").and_then(|()| log.flush()).is_err() {
            self.session_log = None;
        }
    }

    /// Hands every response the run produced to its waiting connection.
    pub(crate) fn answer<T: 'static>(&mut self, run: &mut Run<T>) {
        for mut response in run.take(self.responses) {
            response.body = self.normalizer.restore(&response.body);
            if let Some(reply) = self.waiting.remove(&response.id) {
                let _ = reply.try_send(response);
            }
        }
    }

    /// Delivers one more input (after the agent ended: its exit, its changes, the gates).
    pub(crate) fn deliver_input<T: 'static>(&mut self, run: &mut Run<T>, input: GatewayInput) {
        let _ = run.deliver(self.inputs, input);
    }

    /// Closes the inbox, lets the run finish what it can, and answers what is left.
    pub(crate) fn close<T: 'static>(&mut self, run: &mut Run<T>) {
        self.deliver_events(run);
        let _ = run.close(self.inputs);
        run.run_until_idle();
        self.answer(run);
        for (_, reply) in std::mem::take(&mut self.waiting) {
            let _ = reply.try_send(refusal(
                "the simulation ended before answering this request",
            ));
        }
    }
}

enum Next {
    Request(Pending),
    End(SessionStop),
}

fn refusal(message: &str) -> HttpResponse {
    HttpResponse {
        id: 0,
        status: 503,
        headers: Vec::new(),
        content_type: "application/json",
        body: serde_json::json!({"error": {"type": "simtape_serve", "message": message}})
            .to_string(),
        ending: BodyEnd::Complete,
    }
}
