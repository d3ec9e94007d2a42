//! The scenario's MCP servers under `serve`, at `/mcp/NAME`: the Streamable HTTP transport
//! as a standard-library client sees it (sessions, eras, event streams, refusals), and the
//! python-mcp example agent (the official `openai` and `mcp` packages, from
//! `engine/serve/tests/peers/requirements.txt`, named by SIMTAPE_SERVE_PYTHON; a skip notice
//! without it, a failure when CI is true). Every MCP call is on the tape and replays.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};
use simtape_agent::EvalScenario;
use simtape_serve::gateway::GatewayOutcome;
use simtape_serve::{AgentCommand, BodyNormalizer, ServeOptions, SETTLE_DEFAULT};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn example() -> PathBuf {
    repo().join("examples/agents/python-mcp/scenario.toml")
}

/// Serves `scenario` to `program args…` with `env`, taping to `tape`; returns the run's
/// report after checking the agent finished in time.
fn serve(
    scenario: &Path,
    program: &str,
    args: Vec<String>,
    env: Vec<(String, String)>,
    tape: &Path,
) -> simtape::RunReport<GatewayOutcome> {
    let eval = EvalScenario::load(scenario).expect("the scenario loads");
    let mut builder = eval.builder(0);
    builder.tape(tape);
    let command = AgentCommand {
        program: program.into(),
        args,
        env,
        cwd: None,
        timeout: Some(Duration::from_secs(120)),
    };
    let options = ServeOptions {
        addr: "127.0.0.1:0".parse().unwrap(),
        settle: SETTLE_DEFAULT,
        command: Some(command),
        normalizer: BodyNormalizer::agent_defaults(),
        session_log: None,
        sandbox: None,
    };
    let (_stop, stop) = smol::channel::bounded(1);
    let session = simtape_serve::serve(&mut builder, options, stop, |_| {}).expect("serves");
    assert!(!session.timed_out, "{program} finished in time");
    session.report.expect("the run completes")
}

/// Replays `tape` of `scenario` without any agent and checks it gives the same bytes and
/// `verdict`.
fn check_replay(scenario: &Path, tape: &Path, dir: &Path, verdict: &str) {
    let eval = EvalScenario::load(scenario).unwrap();
    let mut builder = eval.builder(0);
    let again = dir.join("replay.tape");
    builder.tape(&again);
    let replayed = simtape_serve::replay(&mut builder, tape, &[])
        .unwrap()
        .unwrap();
    assert_eq!(replayed.output.verdict(), verdict);
    assert!(
        std::fs::read(again).unwrap() == std::fs::read(tape).unwrap(),
        "the replay gives the same tape bytes"
    );
}

#[test]
fn the_mcp_endpoint_speaks_streamable_http_and_refuses_clearly() {
    // Goal: initialize opens sessions `tickets-1`, `tickets-2`; a notification is 202; GET is
    // 405 and DELETE 200; an events-only client gets an event stream; a batch gets a batch; a
    // modern request gets the 2026-07-28 result and an unknown version -32022; bad JSON is 400
    // and an unknown server 404 naming both; a cassette answers what it recorded and names the
    // field a miss differs in, and the miss makes the run an ERROR. The world changed, and the
    // tape replays.
    let dir = std::env::temp_dir().join(format!("simtape-serve-mcp-probe-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("probe.json");
    let probe = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/mcp_probe.py");
    let env = vec![("PROBE_OUT".into(), out.display().to_string())];
    let tape = dir.join("probe.tape");
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/mcp.toml");
    let report = serve(
        &scenario,
        "python3",
        vec![probe.display().to_string()],
        env,
        &tape,
    );
    let results: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let status = |name: &str| results[name]["status"].as_u64().unwrap();
    let body = |name: &str| -> Value {
        serde_json::from_str(results[name]["body"].as_str().unwrap()).unwrap_or(Value::Null)
    };

    assert_eq!(status("unknown_post"), 404);
    let servers = &body("unknown_post")["error"]["data"]["servers"];
    assert_eq!(servers, &json!(["tickets", "sums"]));
    assert_eq!(status("unknown_get"), 404);
    assert_eq!(status("initialize"), 200);
    assert_eq!(results["initialize"]["session"], "tickets-1");
    let initialized = &body("initialize")["result"];
    assert_eq!(initialized["protocolVersion"], "2025-06-18");
    assert_eq!(
        initialized["serverInfo"]["name"], "ticket-tracker",
        "the world's own"
    );
    assert!(initialized["instructions"]
        .as_str()
        .unwrap()
        .contains("T-1"));
    assert_eq!(results["again"]["session"], "tickets-2");
    assert_eq!(
        (
            status("initialized"),
            results["initialized"]["body"].as_str()
        ),
        (202, Some(""))
    );
    assert_eq!(status("get"), 405);
    assert_eq!(status("delete"), 200);

    let events = &results["events_only"];
    assert_eq!(events["type"], "text/event-stream");
    let data = events["body"]
        .as_str()
        .unwrap()
        .strip_prefix("event: message\ndata: ")
        .unwrap();
    let listed: Value = serde_json::from_str(data.trim_end()).unwrap();
    assert_eq!(listed["result"]["tools"].as_array().unwrap().len(), 6);

    let batch = body("batch");
    assert_eq!(batch[0], json!({"jsonrpc": "2.0", "id": 3, "result": {}}));
    assert_eq!(batch[1]["result"]["structuredContent"]["assignee"], "ann");
    assert_eq!(body("modern_list")["result"]["resultType"], "complete");
    assert_eq!(body("modern_list")["result"]["ttlMs"], 0);
    assert_eq!(body("modern_old")["error"]["code"], -32022);
    assert_eq!(
        (
            status("not_json"),
            body("not_json")["error"]["code"].clone()
        ),
        (400, json!(-32700))
    );

    let recorded = &body("recorded")["result"]["content"][0]["text"];
    assert_eq!(recorded, "The sum of 2 and 3 is 5.");
    let not_recorded = &body("not_recorded")["error"];
    assert_eq!(not_recorded["code"], -31000, "a replay miss");
    assert!(not_recorded["message"]
        .as_str()
        .unwrap()
        .contains("/params/arguments/b"));

    assert_eq!(
        report.output.mcp_calls, 5,
        "two lists, the batch's call, two cassette calls"
    );
    assert_eq!(
        report.output.mcp_sessions,
        [("tickets".to_string(), 2)].into()
    );
    let worlds = simtape_serve::mcp_http::worlds(&report);
    assert_eq!(worlds.len(), 1);
    assert_eq!(worlds[0].1.calls.len(), 1, "assign_ticket");
    assert!(
        !worlds[0].1.scored.goal_met,
        "assigned, not yet commented and closed"
    );
    let verdict = report.output.verdict();
    let expected = "error: unmatched MCP request to sums: no recorded tools/call request matches";
    assert!(verdict.starts_with(expected), "{verdict}");
    check_replay(&scenario, &tape, &dir, &verdict);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The python with `openai` and `mcp`, or `None` (after a skip notice) when there is none.
fn python_with_mcp() -> Option<String> {
    let python = std::env::var("SIMTAPE_SERVE_PYTHON")
        .ok()
        .filter(|p| !p.is_empty());
    let usable = python.as_ref().is_some_and(|python| {
        let imports = std::process::Command::new(python)
            .args(["-c", "import mcp, openai"])
            .output();
        imports.is_ok_and(|o| o.status.success())
    });
    if usable {
        return python;
    }
    let what = "a python with `openai` and `mcp` (pip install -r engine/serve/tests/peers/requirements.txt, then set SIMTAPE_SERVE_PYTHON)";
    if matches!(std::env::var("CI").as_deref(), Ok("true") | Ok("1")) {
        panic!("missing {what}");
    }
    eprintln!("skip: missing {what}");
    None
}

#[test]
fn the_python_mcp_example_meets_the_world_goal_deterministically() {
    // Goal: the example agent (openai SDK for the model, the official MCP client over
    // Streamable HTTP for tools) works the ticket through the world's 429 and passes; the
    // world's goal is met; two runs give the same tape bytes, and the tape replays.
    let Some(python) = python_with_mcp() else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("simtape-serve-python-mcp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let agent = vec![repo()
        .join("examples/agents/python-mcp/agent.py")
        .display()
        .to_string()];
    let mut tapes = Vec::new();
    for (run, mode) in [("a", "auto"), ("b", "auto"), ("legacy", "legacy")] {
        let env = vec![("MCP_MODE".to_string(), mode.to_string())];
        let tape = dir.join(format!("{run}.tape"));
        let report = serve(&example(), &python, agent.clone(), env, &tape);
        assert_eq!(report.output.verdict(), "ok", "{mode}");
        assert_eq!(
            report.output.model_calls, 4,
            "assign+comment, close, close again, answer"
        );
        assert_eq!(report.output.mcp_calls, 5, "the tool list and four calls");
        let worlds = simtape_serve::mcp_http::worlds(&report);
        let (server, world) = &worlds[0];
        assert_eq!(server, "tickets");
        assert!(
            world.scored.passed,
            "{mode}: {:?}",
            world.scored.failed_paths()
        );
        let outcomes: Vec<&str> = world.calls.iter().map(|c| c.outcome.as_str()).collect();
        assert_eq!(
            outcomes,
            ["ok", "ok", "rpc_error", "ok"],
            "the close was rate-limited once"
        );
        tapes.push(std::fs::read(dir.join(format!("{run}.tape"))).unwrap());
    }
    assert!(
        tapes[0] == tapes[1],
        "two runs of one seed give the same tape bytes"
    );
    assert!(
        tapes[0] != tapes[2],
        "the eras differ on the tape (initialize vs discover)"
    );
    check_replay(&example(), &dir.join("a.tape"), &dir, "ok");
    std::fs::remove_dir_all(&dir).unwrap();
}
