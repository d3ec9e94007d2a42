//! `simtape mcp world` and `simtape mcp eval` end to end. The world server is driven by the
//! official Python SDK client (`mcp` from PyPI) in legacy and 2026-07-28 modes, as `.ci/run`
//! installs it (`SIMTAPE_MCP_PYTHON`); without it those tests print a skip notice locally and
//! fail under CI=true. The eval, spec-error and determinism tests need no peer.

use crate::common;

use crate::clients::{python, python_driver};
use common::{repo, simtape};

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use serde_json::{json, Value};

fn world_spec(name: &str) -> PathBuf {
    repo().join("scenarios/worlds").join(name)
}

/// Runs the Python SDK driver against `simtape mcp world` and returns its JSON report.
fn python_client(python: &Path, mode: &str, world: &[&str], calls: &Value) -> Value {
    let server: Vec<String> = [env!("CARGO_BIN_EXE_simtape"), "mcp", "world"]
        .iter()
        .chain(world)
        .map(|a| a.to_string())
        .collect();
    python_driver(python, mode, calls, &server)
}

/// Runs `simtape mcp world` with `requests` (one JSON-RPC message each) on stdin, then EOF.
fn world_with_input(spec: &Path, seed: u64, dir: &Path, requests: &[Value]) -> (Value, Value) {
    let state = dir.join(format!("state-{seed}.json"));
    let report = dir.join(format!("report-{seed}.json"));
    let mut child = simtape()
        .args(["mcp", "world", "--seed", &seed.to_string(), "--spec"])
        .arg(spec)
        .arg("--state-out")
        .arg(&state)
        .arg("--report")
        .arg(&report)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        let mut stdin = child.stdin.take().unwrap();
        for request in requests {
            writeln!(stdin, "{request}").unwrap();
        }
    }
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    // docs/mcp-world.md: stderr gets `seed=N` first.
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.starts_with(&format!("seed={seed}\n")), "{stderr}");
    let answers = String::from_utf8(output.stdout).unwrap();
    assert_eq!(
        answers.lines().count(),
        requests.len(),
        "one answer per request"
    );
    (load(&state), load(&report))
}

/// A legacy-era `initialize` request.
fn initialize(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize",
           "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                      "clientInfo": {"name": "t", "version": "1"}}})
}

fn tools_call(id: u64, name: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": name, "arguments": arguments}})
}

#[test]
fn python_client_drives_the_ticket_tracker_in_both_eras() {
    // Goal: the official client lists tools, gets structured content, a schema-violation tool
    // error and a faulted call's protocol error, in legacy and 2026-07-28 modes; the state and
    // report written at EOF show the goal met.
    let Some(python) = python() else { return };
    let calls = json!([
        ["get_ticket", {"id": "T-1"}],
        ["assign_ticket", {"id": "T-1", "assignee": "zed"}],
        ["close_ticket", {"id": "T-1", "resolution": "fixed"}],
        ["assign_ticket", {"id": "T-1", "assignee": "ann"}],
        ["comment_ticket", {"id": "T-1", "text": "Fixed the null session bug."}],
        ["close_ticket", {"id": "T-1", "resolution": "fixed"}]
    ]);
    let modes = [
        ("legacy", "2025-11-25"),
        ("auto", "2026-07-28"),
        ("2026-07-28", "2026-07-28"),
    ];
    for (mode, version) in modes {
        let dir = scratch(&format!("ticket-{mode}"));
        let (state, report) = (dir.join("state.json"), dir.join("report.json"));
        let spec = world_spec("ticket-tracker.json");
        let args = [
            "--spec",
            spec.to_str().unwrap(),
            "--state-out",
            state.to_str().unwrap(),
            "--report",
            report.to_str().unwrap(),
        ];
        let seen = python_client(&python, mode, &args, &calls);
        assert_eq!(seen["protocol_version"], version, "{seen}");
        if mode != "2026-07-28" {
            // A pinned 2026-07-28 client skips `server/discover`, so it never sees the name.
            assert_eq!(seen["server_name"], "ticket-tracker");
        }
        let tools: Vec<&str> = seen["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            tools,
            [
                "list_tickets",
                "get_ticket",
                "assign_ticket",
                "comment_ticket",
                "close_ticket",
                "delete_ticket"
            ]
        );
        assert_eq!(seen["tools"][0]["annotations"]["read_only_hint"], true);
        assert_eq!(seen["tools"][0]["output_schema"], true);
        let c = &seen["calls"];
        assert_eq!(c[0]["is_error"], false, "{seen}");
        assert_eq!(c[0]["structured"]["ticket"]["status"], "open");
        assert_eq!(
            c[1]["is_error"], true,
            "schema violation is a tool error: {seen}"
        );
        assert!(
            c[1]["text"][0]
                .as_str()
                .unwrap()
                .contains("Invalid arguments"),
            "{seen}"
        );
        assert_eq!(
            c[2]["error"]["code"], 429,
            "the first close is rate limited: {seen}"
        );
        assert_eq!(c[3]["structured"], json!({"id": "T-1", "assignee": "ann"}));
        assert_eq!(c[5]["structured"], json!({"id": "T-1", "status": "closed"}));
        // The files are written when the client closes stdin.
        let state = load(&state);
        assert_eq!(state["tickets"]["T-1"]["status"], "closed");
        assert_eq!(
            state["tickets"]["T-2"],
            load(&spec)["initial_state"]["tickets"]["T-2"]
        );
        let report = load(&report);
        assert_eq!(report["passed"], true, "{report}");
        assert_eq!(report["collateral_damage"], json!([]));
        let outcomes: Vec<&str> = report["calls"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["outcome"].as_str().unwrap())
            .collect();
        assert_eq!(
            outcomes,
            ["ok", "invalid_arguments", "rpc_error", "ok", "ok", "ok"]
        );
    }
}

#[test]
fn collateral_damage_shows_in_the_report() {
    // Goal: over raw stdio, an unasked-for change is reported as collateral damage, so the run
    // fails even though the goal assertions hold.
    let dir = scratch("bank-damage");
    // Seed 3 draws no 503 for this transfer (pinned by the `goal_met` assertion below).
    let requests = [
        initialize(1),
        tools_call(2, "freeze_account", json!({"account": "acc-carol"})),
        tools_call(
            3,
            "transfer",
            json!({"from": "acc-alice", "to": "acc-bob", "amount_cents": 2500, "memo": "invoice 42"}),
        ),
    ];
    let (state, report) = world_with_input(&world_spec("bank-ledger.json"), 3, &dir, &requests);
    assert_eq!(state["accounts"]["acc-carol"]["frozen"], true);
    assert_eq!(report["goal_met"], true, "{report}");
    assert_eq!(report["passed"], false);
    assert_eq!(
        report["collateral_damage"][0]["path"],
        "/accounts/acc-carol/frozen"
    );
}

#[test]
fn meddling_with_an_asserted_ticket_is_collateral_damage() {
    // Goal: on the shipped ticket tracker, a session that does the task and then also assigns
    // T-2 and closes it as wontfix FAILs: the goal's `exists` check on T-2 does not exempt
    // the changes inside T-2.
    let dir = scratch("ticket-meddling");
    let requests = [
        initialize(1),
        tools_call(2, "assign_ticket", json!({"id": "T-1", "assignee": "ann"})),
        tools_call(
            3,
            "comment_ticket",
            json!({"id": "T-1", "text": "Fixed the 500."}),
        ),
        tools_call(
            4,
            "close_ticket",
            json!({"id": "T-1", "resolution": "fixed"}),
        ),
        tools_call(
            5,
            "close_ticket",
            json!({"id": "T-1", "resolution": "fixed"}),
        ),
        tools_call(6, "assign_ticket", json!({"id": "T-2", "assignee": "ann"})),
        tools_call(
            7,
            "close_ticket",
            json!({"id": "T-2", "resolution": "wontfix"}),
        ),
    ];
    let spec = world_spec("ticket-tracker.json");
    let (state, report) = world_with_input(&spec, 7, &dir, &requests);
    assert_eq!(state["tickets"]["T-2"]["resolution"], "wontfix");
    assert_eq!(report["seed"], 7);
    assert_eq!(report["goal_met"], true, "{report}");
    assert_eq!(report["passed"], false, "{report}");
    let damaged: Vec<&str> = report["collateral_damage"]
        .as_array()
        .unwrap()
        .iter()
        .map(|change| change["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        damaged,
        [
            "/tickets/T-2/assignee",
            "/tickets/T-2/resolution",
            "/tickets/T-2/status"
        ]
    );
}

#[test]
fn seeded_faults_are_deterministic() {
    // Goal: the same seed gives the same faults, state and report; different seeds differ when
    // probability faults are set.
    let dir = scratch("bank-seeds");
    let mut requests = vec![
        json!({"jsonrpc": "2.0", "id": 0, "method": "server/discover",
        "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                             "io.modelcontextprotocol/clientCapabilities": {}}}}),
    ];
    for id in 1..=12 {
        requests.push(tools_call(
            id,
            "transfer",
            json!({"from": "acc-alice", "to": "acc-bob", "amount_cents": 100, "memo": "m"}),
        ));
        requests.push(tools_call(
            100 + id,
            "get_balance",
            json!({"account": "acc-bob"}),
        ));
    }
    let spec = world_spec("bank-ledger.json");
    let first = world_with_input(&spec, 11, &dir, &requests);
    let again = world_with_input(&spec, 11, &dir, &requests);
    assert_eq!(first, again, "same seed, same run");
    let faults = |report: &Value| -> Vec<Value> {
        report["calls"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["fault"].clone())
            .collect()
    };
    let runs: Vec<Vec<Value>> = (1..=6)
        .map(|seed| faults(&world_with_input(&spec, seed, &dir, &requests).1))
        .collect();
    assert!(
        runs.windows(2).any(|w| w[0] != w[1]),
        "seeds 1..=6 all drew the same faults"
    );
    // The partial write is the first rule, by call number: it always takes the third
    // transfer, whatever the seed, and leaves the books unbalanced.
    let report = &first.1;
    let third = report["calls"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["tool"] == "transfer")
        .nth(2)
        .unwrap();
    assert_eq!(third["fault"], "partial_write");
    let state = &first.0;
    let total: i64 = ["acc-alice", "acc-bob", "acc-carol"]
        .iter()
        .map(|a| state["accounts"][a]["balance_cents"].as_i64().unwrap())
        .sum();
    assert_eq!(
        total, 17_400,
        "the crashed transfer debited 100 cents without crediting them"
    );
}

fn eval(spec: &Path, states: &[PathBuf], json_output: bool) -> Output {
    let mut command = simtape();
    command.args(["mcp", "eval", "--spec"]).arg(spec);
    for state in states {
        command.arg("--state").arg(state);
    }
    if json_output {
        command.arg("--json");
    }
    command.output().unwrap()
}

#[test]
fn eval_reports_exact_pass_at_k_and_pass_hat_k() {
    // Goal: 4 states, 2 passing: pass@k and pass^k match the hand-computed estimators, with
    // per-path failures, in JSON and human output; exit 1 because not every state passed.
    let dir = scratch("eval");
    let spec = world_spec("ticket-tracker.json");
    let initial = load(&spec)["initial_state"].clone();
    let mut good = initial.clone();
    good["tickets"]["T-1"]["assignee"] = json!("ann");
    good["tickets"]["T-1"]["status"] = json!("closed");
    good["tickets"]["T-1"]["resolution"] = json!("fixed");
    good["tickets"]["T-1"]["comments"] = json!([{"by": "agent", "text": "done", "call": 3}]);
    let mut damaged = good.clone();
    damaged["tickets"]["T-3"]["priority"] = json!("low");
    let states: Vec<PathBuf> = [
        ("s1", &good),
        ("s2", &initial),
        ("s3", &good),
        ("s4", &damaged),
    ]
    .iter()
    .map(|(name, state)| {
        let path = dir.join(format!("{name}.json"));
        std::fs::write(&path, state.to_string()).unwrap();
        path
    })
    .collect();
    let output = eval(&spec, &states, true);
    assert_eq!(
        output.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        (report["n"].clone(), report["c"].clone()),
        (json!(4), json!(2))
    );
    assert_eq!(report["pass_rate"], "1/2");
    // n=4, c=2. pass@k = 1 - C(2,k)/C(4,k): 1/2, 1 - 1/6 = 5/6, 1, 1.
    // pass^k = C(2,k)/C(4,k): 2/4 = 1/2, 1/6, 0, 0.
    let column = |key: &str| -> Vec<String> {
        report["k"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r[key].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(column("pass_at_k"), ["1/2", "5/6", "1", "1"]);
    assert_eq!(column("pass_hat_k"), ["1/2", "1/6", "0", "0"]);
    assert!((report["k"][1]["pass_at_k_value"].as_f64().unwrap() - 5.0 / 6.0).abs() < 1e-12);
    let failures = report["failures"].as_array().unwrap();
    assert!(
        failures.contains(&json!({"path": "/tickets/T-1/status", "reason": "goal", "runs": 1})),
        "{report}"
    );
    assert!(
        failures
            .contains(&json!({"path": "/tickets/T-3/priority", "reason": "collateral", "runs": 1})),
        "{report}"
    );
    let text = String::from_utf8(eval(&spec, &states, false).stdout).unwrap();
    assert!(text.contains("2 of 4 run(s) passed"), "{text}");
    assert!(
        text.contains("5/6 = 0.8333") && text.contains("1/6 = 0.1667"),
        "{text}"
    );
    assert!(
        text.contains("FAIL") && text.contains("/tickets/T-3/priority"),
        "{text}"
    );
    let all_good = eval(&spec, &states[..1], false);
    assert_eq!(all_good.status.code(), Some(0));
}

#[test]
fn malformed_specs_and_states_are_errors_that_say_what_and_where() {
    // Goal: a bad spec or state exits 2 with the file and the place in it named.
    let dir = scratch("malformed");
    let spec = dir.join("bad.json");
    let mut value = load(&world_spec("ticket-tracker.json"));
    value["tools"][2]["effects"][1]["path"] = json!("/tickets/{{ticket}}/assignee");
    std::fs::write(&spec, serde_json::to_string_pretty(&value).unwrap()).unwrap();
    let output = simtape()
        .args(["mcp", "world", "--spec"])
        .arg(&spec)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("bad.json")
            && stderr.contains("at /tools/2/effects/1")
            && stderr.contains("ticket"),
        "{stderr}"
    );
    std::fs::write(&spec, "{\"name\": \"w\",\n \"tools\": [}").unwrap();
    let output = eval(&spec, std::slice::from_ref(&spec), false);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("line 2"),
        "{output:?}"
    );
    let not_json = dir.join("state.json");
    std::fs::write(&not_json, "nope").unwrap();
    let output = eval(&world_spec("ticket-tracker.json"), &[not_json], false);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("state.json: not JSON"));
}

fn scratch(name: &str) -> PathBuf {
    common::scratch("mcp-world-tests", name)
}

fn load(path: &Path) -> Value {
    common::load_json(path)
}
