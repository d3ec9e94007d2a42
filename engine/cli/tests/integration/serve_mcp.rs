//! `simtape serve` with the scenario's MCP server, reached by real clients: the official
//! Python SDK client (PyPI `mcp`, `SIMTAPE_MCP_PYTHON`) over Streamable HTTP in both protocol
//! eras and through `simtape mcp bridge`, and Claude Code (`SIMTAPE_AGENT_PEERS_DIR`) through
//! the MCP config file serve hands it. A missing peer is a skip notice locally and a failure
//! under CI.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::clients::{claude, python};
use crate::common::{repo, scratch, simtape};

/// The python-mcp example: the ticket-tracker world as `[[mcp]] tickets`.
fn example() -> PathBuf {
    repo().join("examples/agents/python-mcp/scenario.toml")
}

/// Runs `simtape serve SCENARIO --tape TAPE -- AGENT…` in `cwd` with `env`; returns its
/// stdout and the tape's bytes, after checking it passed.
fn serve(
    scenario: &Path,
    tape: &Path,
    cwd: &Path,
    env: &[(&str, String)],
    agent: &[String],
) -> (String, Vec<u8>) {
    let output = simtape()
        .arg("serve")
        .arg(scenario)
        .arg("--tape")
        .arg(tape)
        .arg("--")
        .args(agent)
        .current_dir(cwd)
        .envs(env.iter().map(|(name, value)| (name, value)))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "serve failed: {stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("verdict: ok"), "{stdout}");
    (stdout, std::fs::read(tape).unwrap())
}

/// The Python SDK driver's command line: `mode`, a read and a write of T-1 and an unknown
/// tool, against `server` (`{mcp_url:tickets}` is the URL from serve's MCP config).
fn driver(python: &Path, mode: &str, server: &[String]) -> Vec<String> {
    let calls = json!([["get_ticket", {"id": "T-1"}],
                       ["assign_ticket", {"id": "T-1", "assignee": "ann"}], ["nope", {}]]);
    let driver = repo().join("engine/mcp/tests/peers/driver.py");
    let mut argv = vec![python.display().to_string(), driver.display().to_string()];
    argv.extend([mode.to_string(), calls.to_string(), "--".into()]);
    argv.extend(server.iter().cloned());
    argv
}

/// The driver's report, the one JSON line it printed among serve's own lines.
fn report(stdout: &str) -> Value {
    let line = stdout
        .lines()
        .find(|l| l.starts_with("{\"mode\""))
        .expect(stdout);
    serde_json::from_str(line).unwrap()
}

fn check_report(report: &Value, version: &str) {
    assert_eq!(report["protocol_version"], version, "{report}");
    assert_eq!(
        report["server_name"], "ticket-tracker",
        "the world names itself"
    );
    assert_eq!(report["tools"].as_array().unwrap().len(), 6);
    let calls = &report["calls"];
    assert_eq!(
        calls[0]["structured"]["ticket"]["status"], "open",
        "{report}"
    );
    assert_eq!(
        calls[1]["structured"],
        json!({"id": "T-1", "assignee": "ann"})
    );
    assert_eq!(calls[2]["error"]["code"], -32602, "an unknown tool");
}

fn http() -> Vec<String> {
    vec!["{mcp_url:tickets}".into()]
}

fn bridge() -> Vec<String> {
    let simtape = env!("CARGO_BIN_EXE_simtape").to_string();
    vec![
        simtape,
        "mcp".into(),
        "bridge".into(),
        "{mcp_url:tickets}".into(),
    ]
}

#[test]
fn the_python_client_lists_and_calls_world_tools_over_http_in_both_eras() {
    // Goal: the official client negotiates each era with the served world, lists its tools
    // and calls them (a JSON-RPC error for an unknown tool); two runs give the same tape.
    let Some(python) = python() else { return };
    let dir = scratch("serve-mcp", "http");
    for (mode, version) in [("legacy", "2025-11-25"), ("auto", "2026-07-28")] {
        let agent = driver(&python, mode, &http());
        let (stdout, first) = serve(
            &example(),
            &dir.join(format!("{mode}-1.tape")),
            &dir,
            &[],
            &agent,
        );
        check_report(&report(&stdout), version);
        assert!(stdout.contains("4 MCP call(s)"), "{stdout}");
        let (_, second) = serve(
            &example(),
            &dir.join(format!("{mode}-2.tape")),
            &dir,
            &[],
            &agent,
        );
        assert!(
            first == second,
            "{mode}: two runs of one seed give the same tape bytes"
        );
    }
}

#[test]
fn the_bridge_gives_a_stdio_client_the_same_server_and_the_same_tape() {
    // Goal: through `simtape mcp bridge`, the stdio client sees what the HTTP client sees,
    // and the simulation records the same inputs: the tapes are byte-identical.
    let Some(python) = python() else { return };
    let dir = scratch("serve-mcp", "bridge");
    let mut tapes = Vec::new();
    for (name, server) in [("http", http()), ("bridge", bridge())] {
        let tape = dir.join(format!("{name}.tape"));
        let agent = driver(&python, "legacy", &server);
        let (stdout, bytes) = serve(&example(), &tape, &dir, &[], &agent);
        check_report(&report(&stdout), "2025-11-25");
        tapes.push(bytes);
    }
    let (over_http, bridged) = (&tapes[0], &tapes[1]);
    assert!(over_http == bridged, "the bridge adds nothing to the tape");
}

/// A bridge to a port nobody listens on, its stdin and stdout piped.
fn lone_bridge() -> (Child, BufReader<std::process::ChildStdout>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp/tickets", listener.local_addr().unwrap());
    drop(listener);
    let mut child = simtape()
        .args(["mcp", "bridge", &url])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    (child, stdout)
}

/// Waits for `child` to exit, at most `limit`; returns its exit code.
fn exit_within(child: &mut Child, limit: Duration) -> Option<i32> {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    panic!("the bridge did not exit within {limit:?}");
}

#[test]
fn the_bridge_answers_when_serve_is_gone_and_ends_at_once_on_eof_term_and_int() {
    // Goal: a request the bridge cannot forward gets a JSON-RPC error (the client never
    // hangs); stdin EOF, SIGTERM and SIGINT each end the bridge within a second, exit 0.
    for ending in ["eof", "TERM", "INT"] {
        let (mut child, mut stdout) = lone_bridge();
        let mut stdin = child.stdin.take().unwrap();
        writeln!(stdin, r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list"}}"#).unwrap();
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let answer: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(answer["id"], 1, "{line}");
        assert_eq!(answer["error"]["code"], -32000, "{line}");
        if ending == "eof" {
            drop(stdin);
        } else {
            let status = Command::new("kill")
                .arg(format!("-{ending}"))
                .arg(child.id().to_string())
                .status()
                .unwrap();
            assert!(status.success());
        }
        assert_eq!(
            exit_within(&mut child, Duration::from_secs(1)),
            Some(0),
            "{ending}"
        );
    }
    let bad = simtape()
        .args(["mcp", "bridge", "ftp://x/mcp/t"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("not an http:// URL"));
}

#[test]
fn claude_code_works_a_world_through_the_mcp_config_serve_hands_it() {
    // Goal: Claude Code, given `--mcp-config "$SIMTAPE_MCP_CONFIG"`, calls the world's tools
    // over Streamable HTTP (a 429 from the world included), the world's goal is met, and two
    // runs give the same tape bytes.
    let Some(claude) = claude() else { return };
    let dir = scratch("serve-mcp", "claude");
    let scenario = repo().join("engine/cli/tests/data/serve-mcp/scenario.toml");
    // In the sandbox the environment is an allow-list (simtape's own is not passed): the
    // command sets what keeps Claude Code from calling past the endpoints itself.
    let script = r#"export CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1
exec "$0" "$@" --mcp-config "$SIMTAPE_MCP_CONFIG""#;
    let agent: Vec<String> = [
        "sh",
        "-c",
        script,
        &claude.display().to_string(),
        "-p",
        "Assign ticket T-1 to ann, comment on what was fixed, and close it as fixed.",
        "--output-format",
        "stream-json",
        "--verbose",
        "--permission-mode",
        "acceptEdits",
        "--allowedTools",
        "mcp__tickets__assign_ticket,mcp__tickets__comment_ticket,mcp__tickets__close_ticket",
    ]
    .map(String::from)
    .to_vec();
    let mut tapes = Vec::new();
    for run in ["one", "two"] {
        // HOME inside the working directory: serve normalizes the working directory out of
        // the requests, and only a HOME set in its own agent command (not one inherited).
        let work = dir.join(run).join("work");
        let home = work.join("home");
        std::fs::create_dir_all(&home).unwrap();
        let env = [
            ("HOME", home.display().to_string()),
            ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".to_string()),
        ];
        let (stdout, tape) = serve(
            &scenario,
            &dir.join(format!("{run}.tape")),
            &work,
            &env,
            &agent,
        );
        assert!(stdout.contains("closed as fixed"), "{stdout}");
        assert!(
            stdout.contains("serve: world tickets: goal met; 4 call(s)"),
            "{stdout}"
        );
        tapes.push(tape);
    }
    assert!(
        tapes[0] == tapes[1],
        "two runs of one seed give the same tape bytes"
    );
}
