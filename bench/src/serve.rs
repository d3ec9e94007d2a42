//! `simtape serve`'s round trip: one Claude-Code-shaped Anthropic Messages request of about
//! 50 KB, sent again and again over one keep-alive loopback connection, answered as JSON and
//! as a server-sent event stream, side by side with aimock (`@copilotkit/aimock`, a static
//! mock provider) answering the same request.
//!
//! A round trip is the client's wall time from sending the request to the last byte of the
//! answer. simtape's serve waits for the agent to be quiet for its settle window before
//! virtual time moves (docs/serve.md), so the window is a floor under every round trip: the
//! bench runs one session with the window at 0 (what the gateway itself costs) and one at
//! the default 20 ms (what an agent sees by default). Every answer is checked (status 200 and
//! the fixture's text), so a broken answer cannot pass for a fast one.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde::Serialize;
use serde_json::{json, Value};
use simtape_agent::EvalScenario;
use simtape_serve::{BodyNormalizer, ServeOptions};

use crate::runner::timed;

/// The text every answer carries (`bench/data/serve/roundtrip.jsonl` and `aimock.json`).
pub const ANSWER_TEXT: &str = "The bench round trip is answered.";
/// The goal for simtape's median JSON round trip with the settle window at 0, in ms.
pub const P50_MS_MAX: f64 = 1.0;
/// Round trips sent (and thrown away) before the measured ones, per mode.
const WARMUP: usize = 20;
/// Attempts to reach a freshly started aimock before giving up (100 ms apart).
const PEER_START_ATTEMPTS_MAX: u32 = 100;

/// Returns the directory of the serve bench's data.
pub fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data/serve")
}

/// Returns whether a missing peer must fail the bench's tests (`CI` is true).
pub fn under_ci() -> bool {
    matches!(std::env::var("CI").as_deref(), Ok("true") | Ok("1"))
}

/// Builds the request: the shape Claude Code sends per turn (docs/agents.md), about 50 KB: two
/// system blocks, 12 tools with JSON schemas, and a conversation with a tool call and its
/// result, ending in a user text that names the bench (aimock's fixture matches on it).
pub fn request(stream: bool) -> Value {
    let filler = |topic: &str, bytes: usize| -> String {
        let sentence = format!("When working on {topic}, read the code before changing it and keep each change small and tested. ");
        sentence.repeat(bytes / sentence.len() + 1)[..bytes].to_string()
    };
    let names = [
        "Task",
        "Bash",
        "Glob",
        "Grep",
        "LS",
        "Read",
        "Edit",
        "MultiEdit",
        "Write",
        "NotebookEdit",
        "WebFetch",
        "TodoWrite",
    ];
    let tools: Vec<Value> = names
        .iter()
        .map(|name| {
            json!({
                "name": name,
                "description": filler(name, 2_400),
                "input_schema": {
                    "type": "object",
                    "properties": {
                        "file_path": {"type": "string", "description": "The absolute path of the file"},
                        "command": {"type": "string", "description": "The command to run"},
                        "limit": {"type": "number", "description": "How many lines to read"},
                    },
                    "required": ["file_path"],
                    "additionalProperties": false,
                    "$schema": "http://json-schema.org/draft-07/schema#",
                },
            })
        })
        .collect();
    json!({
        "model": "claude-sonnet-4-5-20250929",
        "max_tokens": 32_000,
        "stream": stream,
        "metadata": {"user_id": "user_bench_account__session_00000000-0000-0000-0000-000000000000"},
        "system": [
            {"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude.",
             "cache_control": {"type": "ephemeral"}},
            {"type": "text", "text": filler("software engineering tasks", 12_000),
             "cache_control": {"type": "ephemeral"}},
        ],
        "tools": tools,
        "messages": [
            {"role": "user", "content": [
                {"type": "text", "text": format!(
                    "<system-reminder>Working directory: /tmp/bench\nIs directory a git repo: Yes\ngitStatus: M calc.py\n{}</system-reminder>",
                    filler("this repository", 4_000))},
                {"type": "text", "text": "The unit test in test_calc.py fails. Fix the code so that it passes."},
            ]},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Let me look at the code under test."},
                {"type": "tool_use", "id": "toolu_01", "name": "Read", "input": {"file_path": "/tmp/bench/calc.py"}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_01", "content": filler("calc.py", 3_000)},
            ]},
            {"role": "assistant", "content": [
                {"type": "text", "text": "add subtracts; it should add."},
            ]},
            {"role": "user", "content": [
                {"type": "text", "text": "Go on with the bench round trip."},
            ]},
        ],
    })
}

/// Who answers the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Server {
    /// `simtape serve` with the settle window at this many ms.
    Simtape {
        /// The settle window, ms.
        settle_ms: u64,
    },
    /// aimock, a static mock provider.
    Aimock,
}

impl Server {
    /// A name for the report.
    pub fn name(self) -> String {
        match self {
            Server::Simtape { settle_ms } => format!("simtape (settle {settle_ms} ms)"),
            Server::Aimock => "aimock".to_string(),
        }
    }
}

/// The round trips of one server in one mode.
#[derive(Debug, Clone, Serialize)]
pub struct Latencies {
    /// Who answered.
    pub server: Server,
    /// True for the SSE answer (`"stream": true`).
    pub stream: bool,
    /// The request's size, bytes.
    pub request_bytes: usize,
    /// Each measured round trip, µs, sorted.
    pub round_trips_us: Vec<f64>,
}

impl Latencies {
    /// The `q`-quantile (0..=1) of the round trips, in ms (nearest rank).
    pub fn quantile_ms(&self, q: f64) -> f64 {
        let n = self.round_trips_us.len();
        if n == 0 {
            return f64::NAN;
        }
        let rank = ((q * n as f64).ceil() as usize).clamp(1, n);
        self.round_trips_us[rank - 1] / 1_000.0
    }

    /// The median round trip, ms.
    pub fn p50_ms(&self) -> f64 {
        self.quantile_ms(0.5)
    }

    /// The 99th percentile round trip, ms.
    pub fn p99_ms(&self) -> f64 {
        self.quantile_ms(0.99)
    }
}

/// Sends `requests` JSON and `requests` SSE round trips, interleaved, to `url` over one
/// keep-alive connection; every answer must be a 200 carrying [`ANSWER_TEXT`].
fn round_trips(
    url: &str,
    server: Server,
    requests: usize,
) -> Result<(Latencies, Latencies), String> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .proxy(None)
        .timeout_global(Some(Duration::from_secs(30)))
        .build()
        .into();
    let bodies = [request(false).to_string(), request(true).to_string()];
    let mut samples = [Vec::with_capacity(requests), Vec::with_capacity(requests)];
    for index in 0..WARMUP + requests {
        for (mode, body) in bodies.iter().enumerate() {
            let (times, answer) = timed(|| -> Result<String, String> {
                let mut response = agent
                    .post(url)
                    .header("content-type", "application/json")
                    .header("anthropic-version", "2023-06-01")
                    .header("x-api-key", simtape_serve::DUMMY_API_KEY)
                    .send(body.as_str())
                    .map_err(|e| format!("{}: {e}", server.name()))?;
                let status = response.status().as_u16();
                let text = response
                    .body_mut()
                    .read_to_string()
                    .map_err(|e| format!("{}: {e}", server.name()))?;
                if status != 200 {
                    return Err(format!("{}: status {status}: {text}", server.name()));
                }
                Ok(text)
            });
            let answer = answer?;
            let expected = match mode {
                0 => answer.contains(ANSWER_TEXT) && answer.starts_with('{'),
                _ => answer.contains("event: message_stop"),
            };
            if !expected {
                return Err(format!("{}: unexpected answer: {answer}", server.name()));
            }
            if index >= WARMUP {
                samples[mode].push(times.host.as_secs_f64() * 1e6);
            }
        }
    }
    let [json, sse] = samples.map(|mut s| {
        s.sort_by(f64::total_cmp);
        s
    });
    Ok((
        Latencies {
            server,
            stream: false,
            request_bytes: bodies[0].len(),
            round_trips_us: json,
        },
        Latencies {
            server,
            stream: true,
            request_bytes: bodies[1].len(),
            round_trips_us: sse,
        },
    ))
}

/// Serves `bench/data/serve/roundtrip.toml` in-process (its tape to a file, as `simtape serve
/// --tape` writes it) with the settle window at `settle_ms`, and measures `requests` round
/// trips of each mode.
pub fn measure_simtape(settle_ms: u64, requests: usize) -> Result<(Latencies, Latencies), String> {
    let tape = std::env::temp_dir().join(format!(
        "simtape-bench-serve-{}-{settle_ms}.tape",
        std::process::id()
    ));
    let (stop_tx, stop) = smol::channel::bounded::<()>(1);
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let tape_path = tape.clone();
    let server = std::thread::spawn(move || -> Result<u64, String> {
        let eval =
            EvalScenario::load(&data_dir().join("roundtrip.toml")).map_err(|e| e.to_string())?;
        let mut builder = eval.builder(0);
        builder.tape(&tape_path);
        let options = ServeOptions {
            addr: "127.0.0.1:0".parse().expect("a loopback address"),
            settle: Duration::from_millis(settle_ms),
            command: None,
            normalizer: BodyNormalizer::agent_defaults(),
            session_log: None,
            sandbox: None,
        };
        let session = simtape_serve::serve(&mut builder, options, stop, |endpoints| {
            let _ = addr_tx.send(endpoints.addr);
        })
        .map_err(|e| e.to_string())?;
        let report = session.report.map_err(|e| e.to_string())?;
        Ok(report.output.model_calls)
    });
    let measured = match addr_rx.recv() {
        Ok(addr) => round_trips(
            &format!("http://{addr}/v1/messages"),
            Server::Simtape { settle_ms },
            requests,
        ),
        Err(_) => Err("simtape serve did not start".to_string()),
    };
    let _ = stop_tx.send_blocking(());
    let served = server
        .join()
        .map_err(|_| "the serve thread panicked".to_string())?;
    let _ = std::fs::remove_file(&tape);
    let model_calls = served?;
    let measured = measured?;
    let sent = 2 * (WARMUP + requests) as u64;
    if model_calls != sent {
        return Err(format!(
            "simtape answered {model_calls} model calls of the {sent} sent"
        ));
    }
    Ok(measured)
}

/// A running aimock, killed when dropped.
#[derive(Debug)]
struct Aimock {
    child: Child,
}

impl Drop for Aimock {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Returns aimock's CLI as `npm ci --prefix engine/core/tests/peers` installs it, or why not.
pub fn aimock_bin() -> Result<PathBuf, String> {
    installed(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../engine/core/tests/peers/node_modules/.bin/llmock"),
        "aimock",
        "npm ci --prefix engine/core/tests/peers",
    )
}

/// Returns `bin` when it is an installed file, else a sentence naming `peer` and `install`.
pub(crate) fn installed(bin: PathBuf, peer: &str, install: &str) -> Result<PathBuf, String> {
    match bin.is_file() {
        true => Ok(bin),
        false => Err(format!(
            "{peer} is not installed ({} is missing): {install}",
            bin.display()
        )),
    }
}

/// Starts aimock with `bench/data/serve/aimock.json` on a free loopback port and measures
/// `requests` round trips of each mode.
pub fn measure_aimock(requests: usize) -> Result<(Latencies, Latencies), String> {
    let bin = aimock_bin()?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| e.to_string())?
        .port();
    // Its own logging off: a log line per request would be measured as aimock's cost.
    let child = Command::new(&bin)
        .args(["--host", "127.0.0.1", "--log-level", "silent"])
        .args(["--port", &port.to_string()])
        .arg("--fixtures")
        .arg(data_dir().join("aimock.json"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", bin.display()))?;
    let _peer = Aimock { child };
    let mut up = false;
    for _ in 0..PEER_START_ATTEMPTS_MAX {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            up = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    if !up {
        return Err(format!(
            "aimock did not listen on 127.0.0.1:{port} within 10 s"
        ));
    }
    round_trips(
        &format!("http://127.0.0.1:{port}/v1/messages"),
        Server::Aimock,
        requests,
    )
}

/// Every round-trip measurement of one bench run.
#[derive(Debug, Clone, Serialize)]
pub struct RoundTrips {
    /// simtape (settle 0 and default) and aimock, JSON and SSE each.
    pub rows: Vec<Latencies>,
}

impl RoundTrips {
    /// The row of `server` in one mode.
    pub fn row(&self, server: Server, stream: bool) -> Option<&Latencies> {
        self.rows
            .iter()
            .find(|row| row.server == server && row.stream == stream)
    }

    /// `server`'s median SSE round trip over its median JSON one.
    pub fn sse_overhead(&self, server: Server) -> Option<f64> {
        Some(self.row(server, true)?.p50_ms() / self.row(server, false)?.p50_ms())
    }

    /// `server`'s median round trip over aimock's, in one mode.
    pub fn ratio_to_aimock(&self, server: Server, stream: bool) -> Option<f64> {
        Some(self.row(server, stream)?.p50_ms() / self.row(Server::Aimock, stream)?.p50_ms())
    }
}

/// Measures simtape at settle 0 and the default window, and aimock when `with_aimock`.
pub fn measure(requests: usize, with_aimock: bool) -> Result<RoundTrips, String> {
    let mut rows = Vec::new();
    let default_ms = simtape_serve::SETTLE_DEFAULT.as_millis() as u64;
    for settle_ms in [0, default_ms] {
        let (json, sse) = measure_simtape(settle_ms, requests)?;
        rows.extend([json, sse]);
    }
    if with_aimock {
        let (json, sse) = measure_aimock(requests)?;
        rows.extend([json, sse]);
    }
    Ok(RoundTrips { rows })
}

/// Renders the round trips as a Markdown table.
pub fn table(trips: &RoundTrips) -> String {
    let mut out = String::from(
        "| server | answer | request bytes | round trips | p50 ms | p99 ms | p50 × aimock |\n|---|---|---|---|---|---|---|\n",
    );
    for row in &trips.rows {
        let ratio = trips
            .ratio_to_aimock(row.server, row.stream)
            .map_or("–".to_string(), |r| format!("{r:.2}×"));
        out.push_str(&format!(
            "| {} | {} | {} | {} | {:.3} | {:.3} | {} |\n",
            row.server.name(),
            if row.stream { "SSE" } else { "JSON" },
            row.request_bytes,
            row.round_trips_us.len(),
            row.p50_ms(),
            row.p99_ms(),
            ratio,
        ));
    }
    out
}

/// The bar: simtape's median JSON round trip with the settle window at 0 under
/// [`P50_MS_MAX`].
pub fn bars(trips: &RoundTrips) -> Vec<crate::report::Bar> {
    let p50 = trips
        .row(Server::Simtape { settle_ms: 0 }, false)
        .map(Latencies::p50_ms);
    vec![crate::report::Bar {
        label: format!("serve round trip, 50 KB JSON, settle 0: p50 < {P50_MS_MAX} ms"),
        measured: p50,
        measured_cpu: None,
        pass: p50.is_some_and(|p| p < P50_MS_MAX),
    }]
}
