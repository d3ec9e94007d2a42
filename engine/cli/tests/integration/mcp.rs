//! `simtape mcp record|replay|verify` end to end, against REAL peers: the npm reference
//! servers (`@modelcontextprotocol/server-everything`, `…/server-memory`) and the official
//! Python SDK client (`mcp` from PyPI). `.ci/run` installs them and exports
//! `SIMTAPE_MCP_PEERS_NODE_DIR` (the `node_modules` directory) and `SIMTAPE_MCP_PYTHON` (the
//! venv's python). Without them a local run prints a skip notice; under CI=true it fails.

use crate::common;

use crate::clients::{missing, python_driver};
use common::{repo, simtape};

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Output, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::Duration;

use serde_json::{json, Value};

/// Where the real peers live.
pub(crate) struct Peers {
    pub(crate) node_modules: PathBuf,
    pub(crate) python: PathBuf,
}

impl Peers {
    pub(crate) fn everything(&self) -> Vec<String> {
        let script = self
            .node_modules
            .join("@modelcontextprotocol/server-everything/dist/index.js");
        vec!["node".into(), script.display().to_string(), "stdio".into()]
    }

    fn memory(&self) -> Vec<String> {
        let script = self
            .node_modules
            .join("@modelcontextprotocol/server-memory/dist/index.js");
        vec!["node".into(), script.display().to_string()]
    }
}

/// Finds the peers, or returns `None` after a skip notice (locally) or panics (under CI).
pub(crate) fn peers() -> Option<Peers> {
    let home = std::env::var("HOME").unwrap_or_default();
    let node_modules = std::env::var_os("SIMTAPE_MCP_PEERS_NODE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("engine/mcp/tests/peers/node_modules"));
    let python = std::env::var_os("SIMTAPE_MCP_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(&home).join(".cache/simtape-mcp-venv/bin/python"));
    let node_ok = Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    let servers_ok = node_modules
        .join("@modelcontextprotocol/server-everything")
        .is_dir()
        && node_modules
            .join("@modelcontextprotocol/server-memory")
            .is_dir();
    let python_ok = Command::new(&python)
        .args(["-c", "import mcp"])
        .output()
        .is_ok_and(|o| o.status.success());
    if node_ok && servers_ok && python_ok {
        return Some(Peers {
            node_modules,
            python,
        });
    }
    let what = format!(
        "MCP peers missing (node: {node_ok}, npm servers in {}: {servers_ok}, python `mcp` at {}: {python_ok}). \
         Install them: `npm ci --prefix engine/mcp/tests/peers` and \
         `python3 -m venv V && V/bin/pip install -r engine/mcp/tests/peers/requirements.txt`, then set \
         SIMTAPE_MCP_PEERS_NODE_DIR=engine/mcp/tests/peers/node_modules and SIMTAPE_MCP_PYTHON=V/bin/python",
        node_modules.display(),
        python.display()
    );
    missing(what);
    None
}

/// A JSON-RPC client over a child's stdio, one message per line.
struct Client {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Value>,
    next_id: i64,
    /// Every non-response message seen while waiting (progress, list_changed, …).
    notifications: Vec<Value>,
}

impl Client {
    fn start(mut command: Command) -> Client {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (sender, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let value: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"));
                if sender.send(value).is_err() {
                    break;
                }
            }
        });
        Client {
            stdin: child.stdin.take(),
            child,
            lines,
            next_id: 100,
            notifications: Vec::new(),
        }
    }

    fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    fn notify(&mut self, method: &str) {
        self.send(&json!({"jsonrpc": "2.0", "method": method}));
    }

    /// Sends a request with a fresh id and returns its response.
    fn request(&mut self, method: &str, params: Option<Value>) -> Value {
        self.next_id += 1;
        let id = json!(self.next_id);
        let mut message = json!({"jsonrpc": "2.0", "id": id, "method": method});
        if let Some(params) = params {
            message["params"] = params;
        }
        self.send(&message);
        self.wait_for(&id)
    }

    fn wait_for(&mut self, id: &Value) -> Value {
        loop {
            let message = self
                .lines
                .recv_timeout(Duration::from_secs(60))
                .expect("an answer within 60 s");
            if message.get("id") == Some(id) && message.get("method").is_none() {
                return message;
            }
            self.notifications.push(message);
        }
    }

    /// Closes stdin and returns the process output (stdout already consumed).
    fn close(mut self) -> Output {
        drop(self.stdin.take());
        self.child.wait_with_output().unwrap()
    }
}

fn initialize_params() -> Value {
    json!({"protocolVersion": "2025-11-25", "capabilities": {},
           "clientInfo": {"name": "simtape-tests", "version": "1"}})
}

fn call(name: &str, arguments: Value) -> Option<Value> {
    Some(json!({"name": name, "arguments": arguments}))
}

/// Records a session: runs `script` as the client of `simtape mcp record` around `server`.
fn record(
    cassette: &Path,
    server: &[String],
    env: &[(&str, &Path)],
    script: impl FnOnce(&mut Client),
) {
    let mut command = simtape();
    command
        .args(["mcp", "record", "--cassette"])
        .arg(cassette)
        .arg("--")
        .args(server);
    for (name, value) in env {
        command.env(name, value);
    }
    let mut client = Client::start(command);
    client.request("initialize", Some(initialize_params()));
    client.notify("notifications/initialized");
    script(&mut client);
    let output = client.close();
    assert!(
        output.status.success(),
        "record failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Runs `simtape mcp verify` of `cassette` against live server-everything.
pub(crate) fn verify_against_everything(peers: &Peers, cassette: &Path) -> (i32, Value) {
    let live: Vec<String> = std::iter::once("--".to_string())
        .chain(peers.everything())
        .collect();
    let live: Vec<&str> = live.iter().map(String::as_str).collect();
    verify(cassette, &live, &[])
}

/// Runs `simtape mcp verify` and returns (exit code, JSON report).
pub(crate) fn verify(cassette: &Path, against: &[&str], env: &[(&str, &Path)]) -> (i32, Value) {
    let mut command = simtape();
    command
        .args(["mcp", "verify", "--json", "--cassette"])
        .arg(cassette)
        .args(against);
    for (name, value) in env {
        command.env(name, value);
    }
    let output = command.output().unwrap();
    let report = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "verify printed no JSON ({e}): {}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    (output.status.code().unwrap(), report)
}

pub(crate) fn kinds(report: &Value) -> Vec<String> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["kind"].as_str().unwrap().to_string())
        .collect()
}

/// Runs the Python SDK driver against `simtape mcp replay` and returns its JSON report.
fn python_client(peers: &Peers, mode: &str, cassette: &Path, calls: Value) -> Value {
    let replay = [env!("CARGO_BIN_EXE_simtape"), "mcp", "replay", "--cassette"]
        .map(String::from)
        .into_iter()
        .chain([cassette.display().to_string()])
        .collect::<Vec<_>>();
    python_driver(&peers.python, mode, &calls, &replay)
}

/// Returns the response message of the recorded request whose method (and tool) match.
fn recorded_response<'a>(cassette: &'a Value, method: &str, tool: Option<&str>) -> &'a Value {
    let messages = cassette["messages"].as_array().unwrap();
    let request = messages
        .iter()
        .find(|m| {
            m["message"]["method"] == method
                && m["message"].get("id").is_some()
                && tool.is_none_or(|t| m["message"]["params"]["name"] == t)
        })
        .unwrap_or_else(|| panic!("no recorded {method} {tool:?}"));
    let id = &request["message"]["id"];
    &messages
        .iter()
        .find(|m| {
            m["from"] == "server"
                && m["message"]["id"] == *id
                && m["message"].get("method").is_none()
        })
        .unwrap()["message"]
}

fn everything_script(client: &mut Client) {
    client.request("tools/list", None);
    client.request("tools/call", call("get-sum", json!({"a": 2, "b": 3})));
    client.request(
        "tools/call",
        call("get-structured-content", json!({"location": "New York"})),
    );
    client.request("tools/call", call("echo", json!({"message": "hi"})));
    client.request("tools/call", call("no_such_tool", json!({})));
    client.request("tools/call", call("echo", json!({"wrong": 1})));
    client.request("no/such/method", Some(json!({})));
    let progress = json!({"name": "trigger-long-running-operation",
        "arguments": {"duration": 1, "steps": 2}, "_meta": {"progressToken": "tok-1"}});
    client.request("tools/call", Some(progress));
}

#[test]
fn everything_server_record_replay_verify_and_python_client() {
    // Goal: a cassette recorded from server-everything keeps every field, replays with live
    // ids and progress, verifies clean against the live server, shows drift when edited, and
    // serves the official Python client in legacy, 2026-07-28 and auto modes.
    let Some(peers) = peers() else { return };
    let dir = scratch("everything");
    let cassette = dir.join("everything.json");
    record(&cassette, &peers.everything(), &[], everything_script);

    let recorded = load(&cassette);
    let tools = &recorded_response(&recorded, "tools/list", None)["result"]["tools"];
    assert!(tools.as_array().unwrap().len() >= 10, "{tools}");
    let sum_tool = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "get-sum")
        .unwrap();
    assert!(
        sum_tool["annotations"]["readOnlyHint"].is_boolean(),
        "{sum_tool}"
    );
    let structured = recorded_response(&recorded, "tools/call", Some("get-structured-content"));
    assert!(
        structured["result"]["structuredContent"].is_object(),
        "{structured}"
    );
    let unknown_tool = recorded_response(&recorded, "tools/call", Some("no_such_tool"));
    assert_eq!(unknown_tool["result"]["isError"], true);
    assert_eq!(
        recorded_response(&recorded, "no/such/method", None)["error"]["code"],
        -32601
    );
    let messages = recorded["messages"].as_array().unwrap();
    assert!(messages
        .iter()
        .any(|m| m["message"]["method"] == "notifications/progress"));
    assert!(messages.iter().any(|m| m["latency_ms"].is_u64()));

    // Replay to a raw client: other ids, other progress token, same answers.
    let mut replay = simtape();
    replay.args(["mcp", "replay", "--cassette"]).arg(&cassette);
    let mut client = Client::start(replay);
    let init = client.request("initialize", Some(initialize_params()));
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
    client.notify("notifications/initialized");
    let sum = client.request("tools/call", call("get-sum", json!({"b": 3, "a": 2})));
    assert_eq!(
        sum["result"],
        recorded_response(&recorded, "tools/call", Some("get-sum"))["result"]
    );
    let progress = json!({"name": "trigger-long-running-operation",
        "arguments": {"duration": 1, "steps": 2}, "_meta": {"progressToken": 55}});
    let done = client.request("tools/call", Some(progress));
    assert!(done.get("result").is_some(), "{done}");
    assert!(client
        .notifications
        .iter()
        .any(|n| n["params"]["progressToken"] == 55));
    assert!(client.close().status.success());

    // Verify against the live server: no drift.
    let live: Vec<String> = std::iter::once("--".to_string())
        .chain(peers.everything())
        .collect();
    let live: Vec<&str> = live.iter().map(String::as_str).collect();
    let (code, report) = verify(&cassette, &live, &[]);
    assert_eq!((code, &report["drift"]), (0, &json!(false)), "{report:#}");

    // Edit a copy: drop a tool, flip an annotation, change a result.
    let mut edited = recorded.clone();
    for entry in edited["messages"].as_array_mut().unwrap() {
        // `get_mut`, not indexing: indexing a missing key would insert a null `result`.
        let Some(result) = entry["message"].get_mut("result") else {
            continue;
        };
        if let Some(tools) = result.get_mut("tools").and_then(Value::as_array_mut) {
            tools.retain(|t| t["name"] != "echo");
            let sum = tools.iter_mut().find(|t| t["name"] == "get-sum").unwrap();
            sum["annotations"]["readOnlyHint"] = json!(false);
        }
        if result.pointer("/content/0/text") == Some(&json!("The sum of 2 and 3 is 5.")) {
            result["content"][0]["text"] = json!("The sum of 2 and 3 is 6.");
        }
    }
    let edited_path = dir.join("edited.json");
    std::fs::write(&edited_path, serde_json::to_vec_pretty(&edited).unwrap()).unwrap();
    let (code, report) = verify(
        &cassette,
        &["--candidate", edited_path.to_str().unwrap()],
        &[],
    );
    assert_eq!(code, 1, "{report:#}");
    let found = kinds(&report);
    for kind in ["tool_removed", "annotations_changed", "result_changed"] {
        assert!(found.iter().any(|k| k == kind), "{kind} not in {found:?}");
    }
    let (code, report) = verify(&edited_path, &live, &[]);
    assert_eq!(code, 1, "{report:#}");
    assert!(
        kinds(&report).iter().any(|k| k == "tool_added"),
        "{report:#}"
    );

    // The official Python client, both eras (and auto, which probes server/discover).
    let calls = json!([
        ["get-sum", {"a": 2, "b": 3}],
        ["get-structured-content", {"location": "New York"}],
        ["no_such_tool", {}],
        ["get-sum", {"a": 2, "b": 99}],
    ]);
    for (mode, version) in [
        ("legacy", "2025-11-25"),
        ("2026-07-28", "2026-07-28"),
        ("auto", "2026-07-28"),
    ] {
        let seen = python_client(&peers, mode, &cassette, calls.clone());
        assert_eq!(seen["protocol_version"], version, "{mode}: {seen}");
        assert_eq!(
            seen["tools"].as_array().unwrap().len(),
            tools.as_array().unwrap().len()
        );
        let sum_seen = seen["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == "get-sum")
            .unwrap();
        assert!(
            sum_seen["annotations"]["read_only_hint"].is_boolean(),
            "{mode}: {sum_seen}"
        );
        let calls_seen = &seen["calls"];
        assert_eq!(
            calls_seen[0]["text"][0], "The sum of 2 and 3 is 5.",
            "{mode}: {seen}"
        );
        assert_eq!(
            calls_seen[1]["structured"], structured["result"]["structuredContent"],
            "{mode}"
        );
        assert_eq!(calls_seen[2]["is_error"], true, "{mode}: {seen}");
        assert_eq!(calls_seen[3]["error"]["code"], -31000, "{mode}: {seen}");
        let message = calls_seen[3]["error"]["message"].as_str().unwrap();
        assert!(message.contains("/params/arguments/b"), "{mode}: {message}");
    }
}

#[test]
fn memory_server_record_replay_verify_and_python_client() {
    // Goal: a stateful server (server-memory) records, verifies clean against a fresh live
    // server, shows drift when a result is edited, and replays its answers in recorded order
    // to the Python client in both eras.
    let Some(peers) = peers() else { return };
    let dir = scratch("memory");
    let cassette = dir.join("memory.json");
    let memory_file = dir.join("memory.jsonl");
    let entities = json!({"entities": [{"name": "Alice", "entityType": "person", "observations": ["likes tea"]},
                                       {"name": "Bob", "entityType": "person", "observations": []}]});
    let relations = json!({"relations": [{"from": "Alice", "to": "Bob", "relationType": "knows"}]});
    record(
        &cassette,
        &peers.memory(),
        &[("MEMORY_FILE_PATH", &memory_file)],
        |client| {
            client.request("tools/list", None);
            client.request("tools/call", call("read_graph", json!({})));
            client.request("tools/call", call("create_entities", entities.clone()));
            client.request("tools/call", call("create_relations", relations.clone()));
            client.request("tools/call", call("read_graph", json!({})));
            client.request("tools/call", call("search_nodes", json!({"query": "tea"})));
        },
    );
    let recorded = load(&cassette);
    let created = recorded_response(&recorded, "tools/call", Some("create_entities"));
    assert!(
        created["result"]["structuredContent"].is_object(),
        "{created}"
    );

    let fresh = dir.join("fresh.jsonl");
    let live: Vec<String> = std::iter::once("--".to_string())
        .chain(peers.memory())
        .collect();
    let live: Vec<&str> = live.iter().map(String::as_str).collect();
    let (code, report) = verify(&cassette, &live, &[("MEMORY_FILE_PATH", &fresh)]);
    assert_eq!((code, &report["drift"]), (0, &json!(false)), "{report:#}");

    let mut edited = recorded.clone();
    let text = serde_json::to_string(&edited)
        .unwrap()
        .replace("likes tea", "likes coffee");
    edited = serde_json::from_str(&text).unwrap();
    let edited_path = dir.join("edited.json");
    std::fs::write(&edited_path, serde_json::to_vec_pretty(&edited).unwrap()).unwrap();
    let again = dir.join("again.jsonl");
    let (code, report) = verify(&edited_path, &live, &[("MEMORY_FILE_PATH", &again)]);
    assert_eq!(code, 1, "{report:#}");
    assert!(
        kinds(&report)
            .iter()
            .any(|k| k == "result_changed" || k == "request_missing"),
        "{report:#}"
    );

    let calls = json!([
        ["read_graph", {}],
        ["create_entities", entities],
        ["read_graph", {}]
    ]);
    for (mode, version) in [("legacy", "2025-11-25"), ("2026-07-28", "2026-07-28")] {
        let seen = python_client(&peers, mode, &cassette, calls.clone());
        assert_eq!(seen["protocol_version"], version, "{mode}: {seen}");
        let before = &seen["calls"][0]["structured"]["entities"];
        let after = &seen["calls"][2]["structured"]["entities"];
        assert_eq!(before.as_array().map(Vec::len), Some(0), "{mode}: {seen}");
        assert_eq!(after.as_array().map(Vec::len), Some(2), "{mode}: {seen}");
    }
}

#[test]
fn replay_answers_garbage_and_huge_lines_with_errors_and_keeps_serving() {
    // Goal: malformed JSON, a line over the 16 MiB cap, a missing-params call and an unknown
    // method each get a JSON-RPC error, and the server still answers afterwards (no peers).
    let dir = scratch("robust");
    let cassette = dir.join("tiny.json");
    let tiny = json!({"format": "simtape-mcp-cassette", "version": 1, "server": ["none"], "messages": [
        {"seq": 0, "from": "client", "at_ms": 0, "message": {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}},
        {"seq": 1, "from": "server", "at_ms": 3, "latency_ms": 3,
         "message": {"jsonrpc": "2.0", "id": 1, "result": {"tools": [{"name": "t", "inputSchema": {"type": "object"}}]}}}]});
    std::fs::write(&cassette, tiny.to_string()).unwrap();
    let mut replay = simtape();
    replay.args(["mcp", "replay", "--cassette"]).arg(&cassette);
    let mut client = Client::start(replay);
    client
        .stdin
        .as_mut()
        .unwrap()
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":\n")
        .unwrap();
    let huge = vec![b'x'; 17 * 1024 * 1024];
    client.stdin.as_mut().unwrap().write_all(&huge).unwrap();
    client.stdin.as_mut().unwrap().write_all(b"\n").unwrap();
    let parse_error = client.lines.recv_timeout(Duration::from_secs(30)).unwrap();
    assert_eq!(parse_error["error"]["code"], -32700);
    let too_long = client.lines.recv_timeout(Duration::from_secs(30)).unwrap();
    assert_eq!(too_long["error"]["code"], -32600);
    assert_eq!(client.request("tools/call", None)["error"]["code"], -32602);
    assert_eq!(
        client.request("resources/list", None)["error"]["code"],
        -32601
    );
    let list = client.request("tools/list", None);
    assert_eq!(list["result"]["tools"][0]["name"], "t");
    assert!(client.close().status.success());
}

#[test]
fn verify_usage_errors_exit_2() {
    // Goal: a missing cassette or a missing candidate/server is exit 2, not a crash.
    let dir = scratch("usage");
    let output = simtape()
        .args(["mcp", "verify", "--cassette"])
        .arg(dir.join("nope.json"))
        .args(["--candidate", "x"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    std::fs::write(
        dir.join("c.json"),
        r#"{"format":"simtape-mcp-cassette","version":1,"server":[],"messages":[]}"#,
    )
    .unwrap();
    let output = simtape()
        .args(["mcp", "verify", "--cassette"])
        .arg(dir.join("c.json"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
}

fn scratch(name: &str) -> PathBuf {
    common::scratch("mcp-tests", name)
}

fn load(path: &Path) -> Value {
    common::load_json(path)
}
