//! `simtape mcp replay|world --http`: MCP over Streamable HTTP on loopback, driven by the
//! official Python client (sessions, event streams carrying the server's own requests, both
//! eras), and the checks against DNS rebinding, by raw HTTP. Peers as in `mcp.rs`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, ChildStderr, Command, ExitStatus, Stdio};

use serde_json::{json, Value};

use crate::clients::{python, python_driver};
use crate::common::{load_json, repo, scratch};
use crate::mcp::{peers, verify_against_everything};
use crate::mcp_asks::{callbacks, simtape_mcp};

/// A `simtape mcp SUBCOMMAND --http 127.0.0.1:0 …` process and the URL it printed.
pub(crate) struct HttpServer {
    child: Child,
    stderr: BufReader<ChildStderr>,
    pub(crate) url: String,
}

impl HttpServer {
    /// Starts `args` (`simtape mcp SUBCOMMAND …`) with `--http 127.0.0.1:0` after the
    /// subcommand, and waits for the URL it serves.
    pub(crate) fn start(args: &[String]) -> HttpServer {
        let mut child = Command::new(&args[0])
            .args(&args[1..3])
            .args(["--http", "127.0.0.1:0"])
            .args(&args[3..])
            .stdin(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let url = loop {
            let mut line = String::new();
            assert!(stderr.read_line(&mut line).unwrap() > 0, "no URL printed");
            if let Some((_, url)) = line.trim().split_once("serving MCP at ") {
                break url.to_string();
            }
        };
        HttpServer { child, stderr, url }
    }

    /// One raw HTTP/1.1 request; returns the status code and the body.
    fn raw(&self, method: &str, headers: &[(&str, &str)], body: &str) -> (u16, String) {
        let authority = self
            .url
            .trim_start_matches("http://")
            .trim_end_matches("/mcp");
        let mut stream = TcpStream::connect(authority).unwrap();
        let mut request = format!("{method} /mcp HTTP/1.1\r\n");
        for (name, value) in headers {
            request.push_str(&format!("{name}: {value}\r\n"));
        }
        request.push_str(&format!(
            "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        ));
        stream.write_all(request.as_bytes()).unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        let status = answer[9..12].parse().unwrap();
        let body = answer.split_once("\r\n\r\n").map(|(_, b)| b.to_string());
        (status, body.unwrap_or_default())
    }

    /// Ends the server with SIGTERM and returns its exit status and the rest of its stderr.
    pub(crate) fn stop(mut self) -> (ExitStatus, String) {
        let killed = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        let status = self.child.wait().unwrap();
        let mut rest = String::new();
        self.stderr.read_to_string(&mut rest).unwrap();
        (status, rest)
    }
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;

#[test]
fn record_and_replay_over_http_ask_the_client_and_refuse_rebinding() {
    // Goal: a session recorded over Streamable HTTP (server-everything on stdio behind it)
    // replays over HTTP with the Python client's sampling and elicitation callbacks called as
    // live, in both eras, and verifies clean against the live server session by session; a
    // foreign Host or Origin is 403, an unknown session 404; SIGTERM ends the server with 0.
    let Some(peers) = peers() else { return };
    let dir = scratch("mcp-tests", "http-replay");
    let cassette = dir.join("asks.json");
    let live = callbacks(&peers, "legacy", &peers.everything(), &[]);
    let record = HttpServer::start(&simtape_mcp(
        &["record", "--cassette"],
        &cassette,
        &peers.everything(),
    ));
    let recorded = callbacks(&peers, "legacy", std::slice::from_ref(&record.url), &[]);
    assert_eq!(recorded["callbacks"], live["callbacks"]);
    assert_eq!(record.stop().0.code(), Some(0));
    let sessions = load_json(&cassette)["messages"][0]["session"].clone();
    assert_eq!(sessions, json!(1));
    let (code, report) = verify_against_everything(&peers, &cassette);
    assert_eq!((code, &report["drift"]), (0, &json!(false)), "{report:#}");
    let server = HttpServer::start(&simtape_mcp(&["replay", "--cassette"], &cassette, &[]));
    for mode in ["legacy", "2026-07-28"] {
        let seen = callbacks(&peers, mode, std::slice::from_ref(&server.url), &[]);
        assert_eq!(seen["callbacks"], live["callbacks"], "{mode}");
        assert_eq!(seen["calls"], live["calls"], "{mode}");
    }
    let loopback = ("Host", "127.0.0.1");
    let (status, body) = server.raw("POST", &[loopback], INITIALIZE);
    assert_eq!(status, 200, "{body}");
    assert!(
        body.contains("\"protocolVersion\":\"2025-11-25\""),
        "{body}"
    );
    let (status, body) = server.raw("POST", &[("Host", "evil.example")], INITIALIZE);
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("evil.example"), "{body}");
    let evil_origin = ("Origin", "http://evil.example");
    assert_eq!(
        server.raw("POST", &[loopback, evil_origin], INITIALIZE).0,
        403
    );
    let unknown = ("Mcp-Session-Id", "nope");
    let ping = r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#;
    assert_eq!(server.raw("POST", &[loopback, unknown], ping).0, 404);
    let (status, _) = server.stop();
    assert_eq!(status.code(), Some(0));
}

#[test]
fn world_over_http_serves_the_python_client_and_writes_its_report() {
    // Goal: `mcp world --http` answers the Python client's calls over Streamable HTTP in both
    // eras, one world for all sessions, and writes the report of every call at SIGTERM.
    let Some(python) = python() else { return };
    let dir = scratch("mcp-tests", "http-world");
    let report = dir.join("report.json");
    let spec = repo().join("scenarios/worlds/ticket-tracker.json");
    let args: Vec<String> = [
        env!("CARGO_BIN_EXE_simtape"),
        "mcp",
        "world",
        "--spec",
        spec.to_str().unwrap(),
        "--report",
        report.to_str().unwrap(),
    ]
    .map(String::from)
    .to_vec();
    let server = HttpServer::start(&args);
    let calls = json!([["get_ticket", {"id": "T-1"}]]);
    for (mode, version) in [("legacy", "2025-11-25"), ("2026-07-28", "2026-07-28")] {
        let seen = python_driver(&python, mode, &calls, std::slice::from_ref(&server.url));
        assert_eq!(seen["protocol_version"], version, "{seen}");
        assert_eq!(seen["calls"][0]["is_error"], false, "{seen}");
    }
    let (status, stderr) = server.stop();
    assert_eq!(status.code(), Some(0), "{stderr}");
    let written: Value = load_json(&report);
    assert_eq!(written["calls"].as_array().unwrap().len(), 2, "{written}");
}

#[test]
fn record_over_http_answers_an_error_when_the_server_cannot_start() {
    // Goal: a session whose server command does not exist gets a JSON-RPC error for its
    // request instead of a POST that never ends, and the cassette still holds what the client
    // sent, tagged with its session (no peers needed).
    let dir = scratch("mcp-tests", "http-record-nothing");
    let cassette = dir.join("nothing.json");
    let missing = vec![dir.join("no-such-server").display().to_string()];
    let server = HttpServer::start(&simtape_mcp(&["record", "--cassette"], &cassette, &missing));
    let (status, body) = server.raw("POST", &[("Host", "localhost")], INITIALIZE);
    assert_eq!(status, 200, "{body}");
    assert!(
        body.contains("-32603") && body.contains("no server"),
        "{body}"
    );
    let (status, stderr) = server.stop();
    assert_eq!(status.code(), Some(0), "{stderr}");
    let recorded = load_json(&cassette);
    let first = &recorded["messages"][0];
    assert_eq!(
        (&first["from"], &first["session"]),
        (&json!("client"), &json!(1))
    );
    assert_eq!(first["message"]["method"], "initialize");
}
