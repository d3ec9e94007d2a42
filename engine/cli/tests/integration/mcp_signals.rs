//! Nothing recorded is lost however a client ends `simtape mcp record`, `world` or `replay`:
//! stdin EOF, SIGTERM, SIGINT, SIGHUP (each keeps every answered message and exits 0), and
//! SIGKILL (the journal beside the output is recovered). The raw-stdio tests need no peer.
//! The real-client tests drive the servers with Claude Code (npm `@anthropic-ai/claude-code`,
//! `SIMTAPE_AGENT_PEERS_DIR`, scripted by a loopback Anthropic Messages endpoint in this file)
//! and the official Python SDK client (`SIMTAPE_MCP_PYTHON`), as `.ci/run` installs them;
//! without them a local run prints a skip notice, and under CI=true it fails.

use crate::clients::{claude, python, python_driver};
use crate::common::{load_json, repo, scratch, simtape};

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

fn dir(name: &str) -> PathBuf {
    scratch("mcp_signals", name)
}

fn ticket_tracker() -> PathBuf {
    repo().join("scenarios/worlds/ticket-tracker.json")
}

/// `simtape mcp world` over the ticket tracker, writing `report` (and `state`, when given).
fn world_args(report: &Path, state: Option<&Path>) -> Vec<String> {
    let mut args = vec![
        env!("CARGO_BIN_EXE_simtape").to_string(),
        "mcp".into(),
        "world".into(),
        "--spec".into(),
        ticket_tracker().display().to_string(),
        "--report".into(),
        report.display().to_string(),
    ];
    if let Some(state) = state {
        args.extend(["--state-out".into(), state.display().to_string()]);
    }
    args
}

/// `simtape mcp record --cassette C -- SERVER…`.
fn record_args(cassette: &Path, server: &[String]) -> Vec<String> {
    let mut args = vec![
        env!("CARGO_BIN_EXE_simtape").to_string(),
        "mcp".into(),
        "record".into(),
        "--cassette".into(),
        cassette.display().to_string(),
        "--".into(),
    ];
    args.extend(server.iter().cloned());
    args
}

/// A raw JSON-RPC client over a server's stdio that keeps stdin open until told otherwise.
struct RawSession {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl RawSession {
    fn start(argv: &[String]) -> RawSession {
        let mut child = Command::new(&argv[0])
            .args(&argv[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        RawSession {
            stdin: child.stdin.take(),
            stdout: BufReader::new(child.stdout.take().unwrap()),
            child,
        }
    }

    fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    /// Sends a request and reads lines until its answer.
    fn ask(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            assert!(
                self.stdout.read_line(&mut line).unwrap() > 0,
                "EOF before the answer"
            );
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id {
                return message;
            }
        }
    }

    /// The handshake, a tool list and one `list_tickets` call: 4 client and 3 server messages.
    fn session(&mut self) {
        let init = json!({"protocolVersion": "2025-11-25", "capabilities": {},
                          "clientInfo": {"name": "signals", "version": "1"}});
        self.ask(1, "initialize", init);
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        self.ask(2, "tools/list", json!({}));
        let called = self.ask(
            3,
            "tools/call",
            json!({"name": "list_tickets", "arguments": {}}),
        );
        assert_eq!(called["result"]["isError"], false, "{called}");
    }

    /// Sends `signal` (a `kill` name: TERM, INT, HUP, KILL) with stdin still open, and waits.
    fn kill(mut self, signal: &str) -> (ExitStatus, String) {
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.child.id().to_string())
            .status()
            .unwrap();
        assert!(status.success());
        let status = self.child.wait().unwrap();
        drop(self.stdin.take());
        let mut stderr = String::new();
        if signal != "KILL" {
            self.child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut stderr)
                .unwrap();
        }
        (status, stderr)
    }
}

fn calls(report: &Value) -> Vec<(String, String)> {
    report["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["tool"].as_str().unwrap().into(),
                c["outcome"].as_str().unwrap().into(),
            )
        })
        .collect()
}

fn one_ok_list_call() -> Vec<(String, String)> {
    vec![("list_tickets".into(), "ok".into())]
}

/// The messages of a cassette as (from, method or "answer").
fn cassette_flow(cassette: &Value) -> Vec<(String, String)> {
    cassette["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let what = m["message"]["method"].as_str().unwrap_or("answer");
            (m["from"].as_str().unwrap().into(), what.into())
        })
        .collect()
}

fn expected_flow() -> Vec<(String, String)> {
    [
        ("client", "initialize"),
        ("server", "answer"),
        ("client", "notifications/initialized"),
        ("client", "tools/list"),
        ("server", "answer"),
        ("client", "tools/call"),
        ("server", "answer"),
    ]
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .to_vec()
}

fn journal(output: &Path) -> PathBuf {
    PathBuf::from(format!("{}.journal.jsonl", output.display()))
}

#[test]
fn world_writes_state_and_report_on_term_int_and_hup() {
    // Goal: a signal with stdin still open ends the world like EOF: state and report hold the
    // answered call, the journal is gone, and the exit code is 0.
    for signal in ["TERM", "INT", "HUP"] {
        let dir = dir(&format!("world-{signal}"));
        let (report, state) = (dir.join("report.json"), dir.join("state.json"));
        let mut world = RawSession::start(&world_args(&report, Some(&state)));
        world.session();
        let (status, stderr) = world.kill(signal);
        assert_eq!(status.code(), Some(0), "{signal}: {stderr}");
        assert!(stderr.contains(&format!("SIG{signal}")), "{stderr}");
        assert_eq!(calls(&load_json(&report)), one_ok_list_call(), "{signal}");
        assert_eq!(load_json(&state)["tickets"]["T-1"]["status"], "open");
        assert!(
            !journal(&report).exists(),
            "{signal}: the journal is removed"
        );
    }
}

#[test]
fn record_writes_the_cassette_on_term_int_and_hup_and_passes_the_signal_on() {
    // Goal: a signalled recorder keeps every answered message, and its server gets the same
    // signal: the world child names it and writes its own report too.
    for signal in ["TERM", "INT", "HUP"] {
        let dir = dir(&format!("record-{signal}"));
        let (cassette, report) = (dir.join("c.json"), dir.join("report.json"));
        let mut recorder = RawSession::start(&record_args(&cassette, &world_args(&report, None)));
        recorder.session();
        let (status, stderr) = recorder.kill(signal);
        assert_eq!(status.code(), Some(0), "{signal}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "simtape mcp record: SIG{signal}; wrote 7 message(s)"
            )),
            "{stderr}"
        );
        assert_eq!(cassette_flow(&load_json(&cassette)), expected_flow());
        assert_eq!(calls(&load_json(&report)), one_ok_list_call());
        assert!(!journal(&cassette).exists());
    }
}

#[test]
fn record_passes_a_signal_to_a_server_that_ignores_stdin_eof() {
    // Goal: the server gets the signal itself, not only a closed stdin: this one waits on
    // after EOF and leaves only on SIGTERM, well within the 5 s grace.
    let dir = dir("record-forward");
    let cassette = dir.join("c.json");
    let server = [
        "sh".to_string(),
        "-c".into(),
        // `ready` goes out once the trap is set, so the test signals a server that handles it.
        r#"trap 'echo server-got-TERM >&2; exit 0' TERM
           echo '{"jsonrpc":"2.0","method":"ready"}'
           cat >/dev/null; sleep 30 & wait"#
            .into(),
    ];
    let mut recorder = RawSession::start(&record_args(&cassette, &server));
    let mut ready = String::new();
    recorder.stdout.read_line(&mut ready).unwrap();
    assert!(ready.contains("ready"), "{ready}");
    let started = Instant::now();
    let (status, stderr) = recorder.kill("TERM");
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("server-got-TERM"), "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(4), "no grace wait");
    assert_eq!(
        cassette_flow(&load_json(&cassette)),
        [("server".into(), "ready".into())]
    );
}

#[test]
fn replay_exits_zero_on_a_signal() {
    // Goal: replay owes no file; a signal ends it cleanly.
    let dir = dir("replay");
    let cassette = dir.join("c.json");
    let mut recorder = RawSession::start(&record_args(
        &cassette,
        &world_args(&dir.join("r.json"), None),
    ));
    recorder.session();
    recorder.kill("TERM");
    let argv: Vec<String> = [env!("CARGO_BIN_EXE_simtape"), "mcp", "replay", "--cassette"]
        .iter()
        .map(|s| s.to_string())
        .chain([cassette.display().to_string()])
        .collect();
    let mut replay = RawSession::start(&argv);
    replay.session();
    let (status, stderr) = replay.kill("TERM");
    assert_eq!(status.code(), Some(0), "{stderr}");
}

#[test]
fn a_sigkilled_record_is_recovered_from_its_journal() {
    // Goal: after SIGKILL no cassette exists but the journal holds every answered message;
    // `--recover` turns it into the cassette, and the next start would have done the same.
    let dir = dir("record-kill");
    let cassette = dir.join("c.json");
    let server = world_args(&dir.join("report.json"), None);
    let mut recorder = RawSession::start(&record_args(&cassette, &server));
    recorder.session();
    let (status, _) = recorder.kill("KILL");
    assert_eq!(status.code(), None, "killed");
    assert!(!cassette.exists());
    let journal_path = journal(&cassette);
    // A write cut short by the kill: detected, reported, skipped.
    std::fs::OpenOptions::new()
        .append(true)
        .open(&journal_path)
        .unwrap()
        .write_all(br#"{"from":"client","at_ms":9,"mess"#)
        .unwrap();
    std::fs::copy(&journal_path, dir.join("copy.jsonl")).unwrap();
    let output = simtape()
        .args(["mcp", "record", "--recover"])
        .arg(&journal_path)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("recovered 7 message(s)"), "{stderr}");
    assert!(stderr.contains("cut short"), "{stderr}");
    assert_eq!(cassette_flow(&load_json(&cassette)), expected_flow());
    assert!(!journal_path.exists());

    // The next start finds a left journal and recovers it beside the cassette first.
    std::fs::rename(dir.join("copy.jsonl"), &journal_path).unwrap();
    let mut recorder = RawSession::start(&record_args(&cassette, &server));
    recorder.session();
    let (status, stderr) = recorder.kill("TERM");
    assert_eq!(status.code(), Some(0), "{stderr}");
    let recovered = dir.join("c.recovered.json");
    assert_eq!(cassette_flow(&load_json(&recovered)), expected_flow());
    assert_eq!(cassette_flow(&load_json(&cassette)), expected_flow());
}

#[test]
fn a_sigkilled_world_is_rebuilt_from_its_journal() {
    // Goal: the world's call journal replays to the report and state it would have written.
    let dir = dir("world-kill");
    let (report, state) = (dir.join("report.json"), dir.join("state.json"));
    let mut world = RawSession::start(&world_args(&report, Some(&state)));
    world.session();
    world.kill("KILL");
    assert!(!report.exists() && !state.exists());
    let output = simtape()
        .args(["mcp", "world", "--recover"])
        .arg(journal(&report))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert_eq!(calls(&load_json(&report)), one_ok_list_call());
    assert_eq!(
        load_json(&state)["tickets"]["T-2"]["title"],
        "Typo in footer"
    );
    assert!(!journal(&report).exists());
}

// ----- real clients ---------------------------------------------------------------------

#[test]
fn python_client_shutdown_leaves_the_cassette_and_the_report() {
    // Goal: the official client's normal shutdown of `record` around `world` leaves both files.
    let Some(python) = python() else { return };
    let dir = dir("python");
    let (cassette, report) = (dir.join("c.json"), dir.join("report.json"));
    let server = record_args(&cassette, &world_args(&report, None));
    let seen = python_driver(&python, "auto", &json!([["list_tickets", {}]]), &server);
    assert_eq!(seen["calls"][0]["is_error"], false, "{seen}");
    assert_eq!(calls(&load_json(&report)), one_ok_list_call());
    let recorded = load_json(&cassette);
    let methods: Vec<String> = cassette_flow(&recorded).into_iter().map(|f| f.1).collect();
    assert!(methods.contains(&"tools/call".to_string()), "{methods:?}");
}

/// A loopback Anthropic Messages endpoint that scripts the model: a turn whose last message
/// carries no tool result calls `tool` with empty arguments; the turn after it ends with text.
/// Every request is answered with a server-sent-event stream, on keep-alive connections.
fn scripted_model(tool: &'static str) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            std::thread::spawn(move || answer_turns(stream, tool));
        }
    });
    port
}

fn answer_turns(stream: TcpStream, tool: &str) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut writer = stream;
    loop {
        let mut length = 0usize;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse().unwrap();
                }
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).unwrap();
        let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let after_tool = request["messages"]
            .as_array()
            .and_then(|m| m.last())
            .and_then(|m| m["content"].as_array())
            .is_some_and(|c| c.iter().any(|b| b["type"] == "tool_result"));
        let stream = sse(&model_events(tool, after_tool));
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n",
            stream.len()
        );
        if writer
            .write_all(head.as_bytes())
            .and_then(|()| writer.write_all(stream.as_bytes()))
            .is_err()
        {
            return;
        }
    }
}

fn model_events(tool: &str, after_tool: bool) -> Vec<Value> {
    let start = json!({"type": "message_start", "message": {"id": "msg_scripted", "type": "message",
        "role": "assistant", "model": "scripted", "content": [], "stop_reason": null,
        "usage": {"input_tokens": 1, "output_tokens": 0}}});
    let (block, delta, stop_reason) = if after_tool {
        (
            json!({"type": "text", "text": ""}),
            json!({"type": "text_delta", "text": "Listed."}),
            "end_turn",
        )
    } else {
        (
            json!({"type": "tool_use", "id": "toolu_scripted", "name": tool, "input": {}}),
            json!({"type": "input_json_delta", "partial_json": "{}"}),
            "tool_use",
        )
    };
    vec![
        start,
        json!({"type": "content_block_start", "index": 0, "content_block": block}),
        json!({"type": "content_block_delta", "index": 0, "delta": delta}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": stop_reason},
               "usage": {"output_tokens": 1}}),
        json!({"type": "message_stop"}),
    ]
}

fn sse(events: &[Value]) -> String {
    events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
        .collect()
}

/// Runs one headless Claude Code session with `server` as its MCP server `tickets`, the model
/// scripted to call `list_tickets` once; returns its stream-json output.
fn claude_session(claude: &Path, dir: &Path, server: &[String]) -> String {
    let port = scripted_model("mcp__tickets__list_tickets");
    let config = dir.join("mcp.json");
    let servers = json!({"mcpServers": {"tickets": {"command": server[0], "args": server[1..]}}});
    std::fs::write(&config, servers.to_string()).unwrap();
    let home = dir.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let output = Command::new(claude)
        .args([
            "-p",
            "List the tickets.",
            "--output-format",
            "stream-json",
            "--verbose",
        ])
        .arg("--mcp-config")
        .arg(&config)
        // As root, bypassPermissions is refused; naming the one tool lets it run.
        .args(["--permission-mode", "acceptEdits"])
        .args(["--allowedTools", "mcp__tickets__list_tickets"])
        .current_dir(dir)
        .env("HOME", &home)
        .env("ANTHROPIC_BASE_URL", format!("http://127.0.0.1:{port}"))
        .env("ANTHROPIC_API_KEY", "scripted")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "claude failed: {}\n{stdout}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains(r#""type":"tool_result""#), "{stdout}");
    stdout
}

/// Waits for a file a server writes as Claude Code ends it (the end is asynchronous).
fn wait_for(path: &Path) -> Value {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !path.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    load_json(path)
}

#[test]
fn claude_code_session_leaves_the_world_report() {
    // Goal: Claude Code ends `simtape mcp world` its own way (a signal) and the report holds
    // the call the model made.
    let Some(claude) = claude() else { return };
    let dir = dir("claude-world");
    let report = dir.join("report.json");
    let stdout = claude_session(&claude, &dir, &world_args(&report, None));
    assert!(stdout.contains("Login page returns 500"), "{stdout}");
    assert_eq!(calls(&wait_for(&report)), one_ok_list_call());
}

#[test]
fn claude_code_session_leaves_a_cassette_that_replays() {
    // Goal: `mcp record` under Claude Code writes the cassette of the session, and replaying
    // it answers the Python client's call as the world did.
    let Some(claude) = claude() else { return };
    let Some(python) = python() else { return };
    let dir = dir("claude-record");
    let (cassette, report) = (dir.join("c.json"), dir.join("report.json"));
    claude_session(
        &claude,
        &dir,
        &record_args(&cassette, &world_args(&report, None)),
    );
    let recorded = wait_for(&cassette);
    let call = recorded["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["message"]["method"] == "tools/call")
        .unwrap_or_else(|| panic!("no tools/call in {recorded}"));
    assert_eq!(call["message"]["params"]["name"], "list_tickets");
    assert_eq!(calls(&wait_for(&report)), one_ok_list_call());
    let replay: Vec<String> = [env!("CARGO_BIN_EXE_simtape"), "mcp", "replay", "--cassette"]
        .iter()
        .map(|s| s.to_string())
        .chain([cassette.display().to_string()])
        .collect();
    let seen = python_driver(&python, "auto", &json!([["list_tickets", {}]]), &replay);
    let tickets = &seen["calls"][0]["structured"]["tickets"];
    assert_eq!(tickets["T-1"]["title"], "Login page returns 500", "{seen}");
}
