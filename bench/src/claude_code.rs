//! Claude Code's runs per minute under simtape against the same binary talking to a bare
//! static mock: what simtape adds to a real agent's run.
//!
//! Both sides run `bench/data/serve/claude-code-fix-test.toml` (the shipped scenario without
//! its seeded faults: a drawn 529 makes Claude Code sleep its own back-off in wall time):
//!
//! - **simtape**: `simtape_serve::command::run_command`, as `simtape run` runs it: a scratch
//!   copy of the repository, serve's endpoints with the default settle window, the fixture
//!   and latency model in virtual time, the tape (in memory), the agent's stream-json parsed,
//!   the fs diff, the gate and the other verifiers; the run must PASS.
//! - **bare**: the same scratch copy and the same program, arguments and environment
//!   (`adapter::launch`), pointed at a loopback hyper server in this module that answers the
//!   four turns (Read, Edit, Bash, answer) with fixed server-sent event streams chosen by the
//!   request's last message, as the fixture's conditions choose them; then the same gate
//!   program. The run must answer all four turns and the gate must pass.
//!
//! Each side runs `runs` runs on a pool of 1 and of 2 threads (workers take the next run from
//! one counter, as `simtape sweep --jobs` does).

use std::cell::Cell;
use std::convert::Infallible;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use serde::Serialize;
use serde_json::{json, Value};
use simtape::cap::llm::{ChatRequest, ChatResponse, Provider, ToolCall, Usage};
use simtape_agent::{CommandAgentSpec, EvalScenario, Verdict};
use simtape_serve::adapter::{self, Places};
use simtape_serve::command::{run_command, CommandOptions};
use simtape_serve::sandbox::SandboxMode;
use simtape_serve::wire::{ServedRequest, Wire};
use simtape_serve::workdir::Workdir;

use crate::runner::timed;

/// The most simtape may slow Claude Code's runs against the bare mock, in percent.
pub const OVERHEAD_PCT_MAX: f64 = 10.0;
/// The model turns of one run: Read, Edit, Bash, the answer.
const TURNS: u64 = 4;

/// Returns the no-fault copy of the Claude Code scenario.
pub fn scenario_path() -> PathBuf {
    crate::serve::data_dir().join("claude-code-fix-test.toml")
}

/// Loads it.
pub fn load() -> Result<EvalScenario, String> {
    EvalScenario::load(&scenario_path()).map_err(|error| error.to_string())
}

/// Returns the Claude Code binary among the agent peers (SIMTAPE_AGENT_PEERS_DIR, else
/// `engine/cli/tests/peers/agents/node_modules`), or why it is missing.
pub fn claude_bin() -> Result<PathBuf, String> {
    let dir = std::env::var_os("SIMTAPE_AGENT_PEERS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../engine/cli/tests/peers/agents/node_modules")
        });
    crate::serve::installed(
        dir.join("@anthropic-ai/claude-code-linux-x64/claude"),
        "Claude Code",
        "npm ci --prefix engine/cli/tests/peers/agents, or set SIMTAPE_AGENT_PEERS_DIR",
    )
}

/// The most simtape's sandbox may add to a Claude Code run, in percent.
pub const SANDBOX_PCT_MAX: f64 = 5.0;

/// Which side of the comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Side {
    /// Under `simtape run`'s machinery, in its sandbox (the default).
    Simtape,
    /// Under `simtape run`'s machinery on the host (`--no-sandbox`).
    SimtapeHost,
    /// Against the bare static mock.
    Bare,
}

impl Side {
    fn name(self) -> &'static str {
        match self {
            Side::Simtape => "simtape run",
            Side::SimtapeHost => "simtape run --no-sandbox",
            Side::Bare => "bare mock",
        }
    }
}

/// One simtape run of the scenario (seed 0, tape in memory), sandboxed or on the host; it
/// must PASS.
pub fn simtape_run(eval: &EvalScenario, claude: &Path, sandbox: SandboxMode) -> Result<(), String> {
    let mut builder = eval.builder(0);
    builder.tape_in_memory();
    let options = CommandOptions {
        program: Some(claude.to_path_buf()),
        sandbox: Some(sandbox),
        ..CommandOptions::default()
    };
    let session = run_command(eval, &mut builder, &options).map_err(|e| e.to_string())?;
    if session.report.verdict != Verdict::Pass {
        return Err(format!("simtape run: {}", session.report.verdict));
    }
    Ok(())
}

/// One run of the same program against the bare mock, then the gate; all four turns must be
/// answered and the gate must pass.
pub fn bare_run(eval: &EvalScenario, claude: &Path) -> Result<(), String> {
    let spec: &CommandAgentSpec = eval
        .eval()
        .command
        .as_ref()
        .ok_or("the scenario's agent is not a command")?;
    let base = eval.scenario().fs_root();
    let workdir = Workdir::create(base.as_deref(), "bench-bare").map_err(|e| e.to_string())?;
    let (work, home) = (workdir.work(), workdir.home());
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let (stop_tx, stop) = smol::channel::bounded::<()>(1);
    let cwd = work.display().to_string();
    let server = std::thread::spawn(move || mock(listener, cwd, stop));
    let base_url = format!("http://{addr}");
    let launch = adapter::launch(
        spec,
        None,
        &Places {
            base_url: &base_url,
            home: &home,
            mcp: None,
            sandboxed: false,
        },
    );
    // The scenario's timeout bounds a bare run too: an agent that hangs is killed (on drop).
    let agent = smol::process::Command::new(claude)
        .args(&launch.args)
        .env("ANTHROPIC_BASE_URL", &base_url)
        .env("ANTHROPIC_API_KEY", simtape_serve::DUMMY_API_KEY)
        .envs(launch.env.iter().map(|(k, v)| (k, v)))
        .current_dir(&work)
        .stdin(smol::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    let timeout = Duration::from_millis(spec.timeout_ms);
    let output = smol::block_on(smol::future::or(async { Some(agent.await) }, async {
        smol::Timer::after(timeout).await;
        None
    }));
    let _ = stop_tx.send_blocking(());
    let answered = server
        .join()
        .map_err(|_| "the mock's thread panicked".to_string())??;
    let output = output
        .ok_or_else(|| format!("bare run: Claude Code ran over {timeout:?}"))?
        .map_err(|e| format!("cannot start {}: {e}", claude.display()))?;
    if !output.status.success() || answered != TURNS {
        return Err(format!(
            "bare run: Claude Code {} after {answered} of {TURNS} turns: {}{}",
            output.status,
            String::from_utf8_lossy(&output.stderr),
            String::from_utf8_lossy(&output.stdout)
        ));
    }
    let gate = Command::new("python3")
        .args(["-m", "unittest", "-q", "test_calc"])
        .current_dir(&work)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run the gate: {e}"))?;
    if !gate.status.success() {
        return Err(format!(
            "bare run: the test still fails: {}",
            String::from_utf8_lossy(&gate.stderr)
        ));
    }
    Ok(())
}

/// Serves the mock on `listener` until `stop`; returns how many model turns it answered.
fn mock(
    listener: std::net::TcpListener,
    cwd: String,
    stop: smol::channel::Receiver<()>,
) -> Result<u64, String> {
    let listener = smol::net::TcpListener::try_from(listener).map_err(|e| e.to_string())?;
    let executor = Rc::new(smol::LocalExecutor::new());
    let answered = Rc::new(Cell::new(0_u64));
    let accept = {
        let (executor, answered) = (Rc::clone(&executor), Rc::clone(&answered));
        async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (cwd, answered) = (cwd.clone(), Rc::clone(&answered));
                let service = hyper::service::service_fn(
                    move |request: hyper::Request<Incoming>| {
                        let (cwd, answered) = (cwd.clone(), Rc::clone(&answered));
                        async move { Ok::<_, Infallible>(mock_answer(request, &cwd, &answered).await) }
                    },
                );
                executor
                    .spawn(async move {
                        let _ = hyper::server::conn::http1::Builder::new()
                            .keep_alive(true)
                            .serve_connection(smol_hyper::rt::FuturesIo::new(stream), service)
                            .await;
                    })
                    .detach();
            }
        }
    };
    smol::block_on(executor.run(smol::future::or(accept, async {
        let _ = stop.recv().await;
    })));
    Ok(answered.get())
}

async fn mock_answer(
    request: hyper::Request<Incoming>,
    cwd: &str,
    answered: &Cell<u64>,
) -> hyper::Response<Full<Bytes>> {
    let path = request.uri().path().to_string();
    let body = match request.into_body().collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => return reply(400, "application/json", "{}".into()),
    };
    let parsed: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let turn = match path.as_str() {
        "/v1/messages" => turn(&parsed),
        _ => None,
    };
    let Some((text, tool)) = turn else {
        let error = json!({"type": "error", "error": {"type": "not_found_error", "message": path}});
        return reply(404, "application/json", error.to_string());
    };
    answered.set(answered.get() + 1);
    let tool = tool.map(|(name, input)| {
        let input = input.to_string().replace("<cwd>", cwd);
        (name, input)
    });
    reply(200, "text/event-stream", sse(text, tool, answered.get()))
}

/// The scripted answer to a request (the fixture's four entries, chosen by the same
/// conditions): its text and its tool call, if any.
fn turn(request: &Value) -> Option<(&'static str, Option<(&'static str, Value)>)> {
    // Claude Code also sends system text as `system` messages between the turns; the
    // fixture's conditions read the conversation without them, and so does this.
    let last = request["messages"]
        .as_array()?
        .iter()
        .rev()
        .find(|message| message["role"] != "system")?;
    let blocks = last["content"].as_array().cloned().unwrap_or_default();
    let block_text = |block: &Value| -> String {
        match &block["content"] {
            Value::String(text) => text.clone(),
            Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
            _ => block["text"].as_str().unwrap_or_default().to_string(),
        }
    };
    let result: Option<String> = blocks
        .iter()
        .find(|b| b["type"] == "tool_result")
        .map(block_text);
    let text: String = blocks.iter().map(block_text).collect::<Vec<_>>().join("\n")
        + last["content"].as_str().unwrap_or_default();
    match result {
        Some(result) if result.contains("return a - b") => Some((
            "add subtracts; it should add.",
            Some((
                "Edit",
                json!({"file_path": "<cwd>/calc.py", "old_string": "return a - b", "new_string": "return a + b"}),
            )),
        )),
        Some(result) if result.contains("has been updated") => Some((
            "Now the tests.",
            Some((
                "Bash",
                json!({"command": "python3 -m unittest -q test_calc 2>&1 | tail -n 1", "description": "Run the unit tests"}),
            )),
        )),
        Some(result) if result.trim() == "OK" => Some((
            "Fixed add in calc.py: it subtracted instead of adding. The test passes.",
            None,
        )),
        None if text.contains("test_calc.py fails") => Some((
            "Let me look at the code under test.",
            Some(("Read", json!({"file_path": "<cwd>/calc.py"}))),
        )),
        _ => None,
    }
}

/// The answer as simtape's serve renders it (its Anthropic wire format, the stream every
/// Claude Code request asks for), so both sides send the same bytes but for ids and usage.
fn sse(text: &str, tool: Option<(&str, String)>, turn: u64) -> String {
    let tool_calls: Vec<ToolCall> = tool
        .into_iter()
        .map(|(name, input)| ToolCall {
            id: format!("toolu_bench_{turn}"),
            name: name.to_string(),
            arguments: serde_json::from_str(&input).unwrap_or(Value::Null),
        })
        .collect();
    let answer = ChatResponse {
        model: "claude-sonnet-4-5".into(),
        text: text.into(),
        stop_reason: if tool_calls.is_empty() {
            "end_turn"
        } else {
            "tool_use"
        }
        .into(),
        tool_calls,
        usage: Usage {
            input_tokens: 100,
            output_tokens: 20,
        },
        thinking: None,
    };
    let served = ServedRequest {
        request: ChatRequest::new("claude-sonnet-4-5", Vec::new()),
        stream: true,
        include_usage: false,
        namespaced: Default::default(),
    };
    Provider::AnthropicMessages
        .answer_body(&served, &answer, &format!("msg_bench_{turn}"), 0)
        .body
}

fn reply(status: u16, content_type: &str, body: String) -> hyper::Response<Full<Bytes>> {
    let mut response = hyper::Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = hyper::StatusCode::from_u16(status).unwrap_or_default();
    if let Ok(value) = hyper::header::HeaderValue::from_str(content_type) {
        response
            .headers_mut()
            .insert(hyper::header::CONTENT_TYPE, value);
    }
    response
}

/// Runs `runs` runs of `side` on `jobs` threads; returns the host time of the whole pool.
pub fn pool(
    eval: &EvalScenario,
    claude: &Path,
    side: Side,
    runs: u64,
    jobs: usize,
) -> Result<Duration, String> {
    let next = AtomicU64::new(0);
    let (times, results) = timed(|| {
        std::thread::scope(|scope| {
            let workers: Vec<_> = (0..jobs)
                .map(|_| {
                    scope.spawn(|| -> Result<(), String> {
                        while next.fetch_add(1, Ordering::Relaxed) < runs {
                            match side {
                                Side::Simtape => simtape_run(eval, claude, SandboxMode::On)?,
                                Side::SimtapeHost => simtape_run(eval, claude, SandboxMode::Off)?,
                                Side::Bare => bare_run(eval, claude)?,
                            }
                        }
                        Ok(())
                    })
                })
                .collect();
            workers
                .into_iter()
                .map(|worker| {
                    worker
                        .join()
                        .unwrap_or_else(|_| Err("a worker panicked".into()))
                })
                .collect::<Vec<_>>()
        })
    });
    results.into_iter().collect::<Result<Vec<()>, String>>()?;
    Ok(times.host)
}

/// One side at one pool size.
#[derive(Debug, Clone, Serialize)]
pub struct Rate {
    /// Which side.
    pub side: Side,
    /// Threads.
    pub jobs: usize,
    /// Runs per pool.
    pub runs: u64,
    /// Host time of each round's pool, s.
    pub seconds: Vec<f64>,
}

impl Rate {
    /// Runs per minute at the median round.
    pub fn runs_per_min(&self) -> f64 {
        let mut sorted = self.seconds.clone();
        sorted.sort_by(f64::total_cmp);
        let median = sorted
            .get(sorted.len() / 2)
            .copied()
            .unwrap_or(f64::INFINITY);
        self.runs as f64 * 60.0 / median
    }
}

/// Every rate of one bench run.
#[derive(Debug, Clone, Serialize)]
pub struct Rates {
    /// simtape and bare at 1 and 2 jobs.
    pub rows: Vec<Rate>,
}

impl Rates {
    fn rate(&self, side: Side, jobs: usize) -> Option<f64> {
        self.rows
            .iter()
            .find(|r| r.side == side && r.jobs == jobs)
            .map(Rate::runs_per_min)
    }

    /// simtape's time overhead (sandboxed, as it runs by default) over the bare mock at
    /// `jobs`, in percent.
    pub fn overhead_pct(&self, jobs: usize) -> Option<f64> {
        Some((self.rate(Side::Bare, jobs)? / self.rate(Side::Simtape, jobs)? - 1.0) * 100.0)
    }

    /// What the sandbox adds to a run at `jobs`: sandboxed against `--no-sandbox`, in
    /// percent.
    pub fn sandbox_pct(&self, jobs: usize) -> Option<f64> {
        let host = self.rate(Side::SimtapeHost, jobs)?;
        Some((host / self.rate(Side::Simtape, jobs)? - 1.0) * 100.0)
    }
}

/// Measures `rounds` rounds of `runs` runs for each side on 1 and 2 threads; within a round
/// the sides alternate which goes first, so load that drifts hits both alike.
pub fn measure(claude: &Path, runs: u64, rounds: usize) -> Result<Rates, String> {
    let eval = load()?;
    // Warm up: the binary in the page cache, the first scratch directories.
    simtape_run(&eval, claude, SandboxMode::On)?;
    simtape_run(&eval, claude, SandboxMode::Off)?;
    bare_run(&eval, claude)?;
    const SIDES: [Side; 3] = [Side::Simtape, Side::SimtapeHost, Side::Bare];
    let mut rows: Vec<Rate> = [1, 2]
        .into_iter()
        .flat_map(|jobs| {
            SIDES.map(|side| Rate {
                side,
                jobs,
                runs,
                seconds: Vec::new(),
            })
        })
        .collect();
    for round in 0..rounds {
        for row in 0..rows.len() {
            // Rows come in threes per pool size; each round starts the three at another
            // side, so load that drifts hits all alike.
            let (group, within) = (row / SIDES.len(), row % SIDES.len());
            let index = group * SIDES.len() + (within + round) % SIDES.len();
            let (side, jobs) = (rows[index].side, rows[index].jobs);
            let took = pool(&eval, claude, side, runs, jobs)?;
            rows[index].seconds.push(took.as_secs_f64());
        }
    }
    Ok(Rates { rows })
}

/// Measures as [`measure`] when Claude Code is installed and `runs` is not 0; `Ok(None)`
/// (with a notice) when the part is skipped.
pub fn measure_if_installed(runs: u64, rounds: usize) -> Result<Option<Rates>, String> {
    if runs == 0 {
        return Ok(None);
    }
    match claude_bin() {
        Err(why) => {
            eprintln!("skipping Claude Code: {why}");
            Ok(None)
        }
        Ok(claude) => measure(&claude, runs, rounds).map(Some),
    }
}

/// Renders the rates as a Markdown table.
pub fn table(rates: &Rates) -> String {
    let mut out = String::from(
        "| side | jobs | runs | runs/min (median) | simtape overhead | sandbox's cost |\n|---|---|---|---|---|---|\n",
    );
    let percent = |value: Option<f64>| value.map_or("–".to_string(), |p| format!("{p:+.1} %"));
    for row in &rates.rows {
        let (overhead, sandbox) = match row.side {
            Side::Simtape => (
                percent(rates.overhead_pct(row.jobs)),
                percent(rates.sandbox_pct(row.jobs)),
            ),
            Side::SimtapeHost | Side::Bare => ("–".to_string(), "–".to_string()),
        };
        out.push_str(&format!(
            "| {} | {} | {} | {:.1} | {} | {} |\n",
            row.side.name(),
            row.jobs,
            row.runs,
            row.runs_per_min(),
            overhead,
            sandbox,
        ));
    }
    out
}

/// The bars: simtape's overhead over the bare mock under [`OVERHEAD_PCT_MAX`], and the
/// sandbox's cost under [`SANDBOX_PCT_MAX`], at 1 and 2 jobs.
pub fn bars(rates: &Rates) -> Vec<crate::report::Bar> {
    let mut bars = Vec::new();
    for jobs in [1, 2] {
        let overhead = rates.overhead_pct(jobs);
        bars.push(crate::report::Bar {
            label: format!("Claude Code, {jobs} job(s): simtape's overhead < {OVERHEAD_PCT_MAX} %"),
            measured: overhead,
            measured_cpu: None,
            pass: overhead.is_some_and(|p| p < OVERHEAD_PCT_MAX),
        });
        let sandbox = rates.sandbox_pct(jobs);
        bars.push(crate::report::Bar {
            label: format!("Claude Code, {jobs} job(s): the sandbox's cost < {SANDBOX_PCT_MAX} %"),
            measured: sandbox,
            measured_cpu: None,
            pass: sandbox.is_some_and(|p| p < SANDBOX_PCT_MAX),
        });
    }
    bars
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(content: Value) -> Value {
        json!({"role": "user", "content": content})
    }

    #[test]
    fn the_mock_picks_the_fixtures_turn_by_the_last_conversation_message() {
        // Goal: the four turns in order, a trailing system message skipped (Claude Code sends
        // its environment that way), and anything else refused.
        let system = json!({"role": "system", "content": "# Environment"});
        let first = json!({"messages": [user(json!([{"type": "text", "text": "The unit test in test_calc.py fails."}])), system]});
        let result = |text: &str| json!({"messages": [user(json!([{"type": "tool_result", "tool_use_id": "t", "content": [{"type": "text", "text": text}]}]))]});
        let name = |request: &Value| turn(request).map(|(_, tool)| tool.map(|(name, _)| name));
        assert_eq!(name(&first), Some(Some("Read")));
        assert_eq!(name(&result("    return a - b\n")), Some(Some("Edit")));
        assert_eq!(
            name(&result("The file has been updated.")),
            Some(Some("Bash"))
        );
        assert_eq!(name(&result("OK\n")), Some(None));
        assert_eq!(name(&result("FAILED (failures=1)")), None);
        assert_eq!(name(&json!({"messages": [user(json!("hello"))]})), None);
    }
}
