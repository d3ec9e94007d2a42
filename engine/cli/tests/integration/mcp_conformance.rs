//! The official MCP conformance suite (npm `@modelcontextprotocol/conformance`, on the Node
//! ≥ 22 it needs from the npm package `node`) run against server-everything three ways: live
//! (its own Streamable HTTP transport), through `simtape mcp record --http` (server-everything
//! on stdio, one process per session), and through `simtape mcp replay --http` of what that
//! recorded. `.ci/run` installs the suite (`npm ci` in engine/mcp/tests/conformance) and
//! exports `SIMTAPE_MCP_CONFORMANCE_DIR` (its `node_modules`); without it a local run prints a
//! skip notice and CI fails. The other peers are those of `mcp.rs`.

use std::collections::BTreeMap;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::clients::missing;
use crate::common::{repo, scratch};
use crate::mcp::peers;
use crate::mcp_asks::simtape_mcp;
use crate::mcp_http::HttpServer;

/// The scenario whose result depends on the HTTP transport, not on the server behind it:
/// simtape's transport must pass it whatever the live server's own does.
const REBINDING: &str = "dns-rebinding-protection";

/// Per scenario, each check's id and status, in the suite's order.
type Results = BTreeMap<String, Vec<(String, String)>>;

fn conformance_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("SIMTAPE_MCP_CONFORMANCE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("engine/mcp/tests/conformance/node_modules"));
    if dir.join(".bin/conformance").exists() && dir.join(".bin/node").exists() {
        return Some(dir);
    }
    missing(format!(
        "the MCP conformance suite is missing at {} (install it: `npm ci --prefix \
         engine/mcp/tests/conformance`, then set SIMTAPE_MCP_CONFORMANCE_DIR to its node_modules)",
        dir.display()
    ));
    None
}

/// Runs the suite's server scenarios (or one) against `url`; returns the results per scenario.
fn run_suite(suite: &Path, url: &str, out: &Path, scenario: Option<&str>) -> Results {
    let bin = suite.join(".bin");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut command = Command::new(bin.join("conformance"));
    command
        .env("PATH", path)
        .args(["server", "--url", url, "-o"])
        .arg(out);
    if let Some(scenario) = scenario {
        command.args(["--scenario", scenario]);
    }
    // The suite exits non-zero when any check fails; the results are in `out`.
    let output = command.output().unwrap();
    let mut results = Results::new();
    for entry in std::fs::read_dir(out).unwrap() {
        let dir = entry.unwrap().path();
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        // `server-NAME-2026-11-25T08-57-27-024Z`: the timestamp is 25 characters.
        let scenario = name["server-".len()..name.len() - 25].to_string();
        let checks: serde_json::Value = crate::common::load_json(&dir.join("checks.json"));
        let checks = checks.as_array().unwrap().iter().map(|check| {
            let id = check["id"].as_str().unwrap_or("").to_string();
            (id, check["status"].as_str().unwrap_or("").to_string())
        });
        results.insert(scenario, checks.collect());
    }
    assert!(
        !results.is_empty(),
        "the suite wrote no results: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    results
}

/// server-everything on its own Streamable HTTP transport, on a free loopback port.
fn live_everything(node_modules: &Path) -> (Child, String) {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let script = node_modules.join("@modelcontextprotocol/server-everything/dist/index.js");
    let child = Command::new("node")
        .arg(script)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(addr).is_err() {
        assert!(
            Instant::now() < deadline,
            "server-everything did not listen"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    (child, format!("http://{addr}/mcp"))
}

fn passed(checks: &[(String, String)]) -> bool {
    checks.iter().all(|(_, status)| status == "SUCCESS")
}

#[test]
fn the_conformance_suite_sees_replay_as_it_saw_the_live_server() {
    // Goal: scenario by scenario, check by check, the suite's results through `mcp record`
    // and through `mcp replay` of that recording equal those of the live server; the
    // DNS-rebinding scenario, a property of the transport, passes through record, replay and
    // `mcp world`. The list is printed.
    let Some(peers) = peers() else { return };
    let Some(suite) = conformance_dir() else {
        return;
    };
    let dir = scratch("mcp-tests", "conformance");
    let (mut live_server, url) = live_everything(&peers.node_modules);
    let live = run_suite(&suite, &url, &dir.join("live"), None);
    let _ = live_server.kill();
    let _ = live_server.wait();

    let cassette = dir.join("suite.json");
    let record = HttpServer::start(&simtape_mcp(
        &["record", "--cassette"],
        &cassette,
        &peers.everything(),
    ));
    let recorded = run_suite(&suite, &record.url, &dir.join("record"), None);
    assert_eq!(record.stop().0.code(), Some(0));
    let replay = HttpServer::start(&simtape_mcp(&["replay", "--cassette"], &cassette, &[]));
    let replayed = run_suite(&suite, &replay.url, &dir.join("replay"), None);
    assert_eq!(replay.stop().0.code(), Some(0));

    let spec = repo().join("scenarios/worlds/ticket-tracker.json");
    let world_args = [
        env!("CARGO_BIN_EXE_simtape"),
        "mcp",
        "world",
        "--spec",
        spec.to_str().unwrap(),
    ];
    let world = HttpServer::start(&world_args.map(String::from));
    let world_results = run_suite(&suite, &world.url, &dir.join("world"), Some(REBINDING));
    assert_eq!(world.stop().0.code(), Some(0));

    let status = |results: &Results, scenario: &str| {
        let checks = results.get(scenario).map(Vec::as_slice).unwrap_or_default();
        let ok = checks.iter().filter(|(_, s)| s == "SUCCESS").count();
        format!("{ok}/{}", checks.len())
    };
    println!(
        "{:<32} {:>6} {:>6} {:>6}",
        "scenario (checks passed)", "live", "record", "replay"
    );
    for scenario in live.keys() {
        println!(
            "{scenario:<32} {:>6} {:>6} {:>6}",
            status(&live, scenario),
            status(&recorded, scenario),
            status(&replayed, scenario)
        );
    }
    assert_eq!(
        recorded.keys().collect::<Vec<_>>(),
        live.keys().collect::<Vec<_>>()
    );
    assert_eq!(
        replayed.keys().collect::<Vec<_>>(),
        live.keys().collect::<Vec<_>>()
    );
    for (scenario, checks) in &live {
        if scenario == REBINDING {
            assert!(
                passed(&recorded[scenario]),
                "record: {:?}",
                recorded[scenario]
            );
            assert!(
                passed(&replayed[scenario]),
                "replay: {:?}",
                replayed[scenario]
            );
            continue;
        }
        assert_eq!(
            &recorded[scenario], checks,
            "{scenario}: record differs from live"
        );
        assert_eq!(
            &replayed[scenario], checks,
            "{scenario}: replay differs from live"
        );
    }
    assert!(
        passed(&world_results[REBINDING]),
        "world: {world_results:?}"
    );
}
