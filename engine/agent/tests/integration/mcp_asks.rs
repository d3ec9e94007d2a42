//! A replayed MCP server that speaks during a tool call: its notifications are steps of the
//! call on the tape, its requests are answered by the agent (sampling with a model call,
//! roots, ping, elicitation from `[[mcp]] elicitation`) and checked against the recording.

use std::path::PathBuf;

use serde_json::{json, Value};
use simtape::tape::{payload_to_json, RecordKind, TapeReader};
use simtape_agent::{EvalReport, EvalScenario, EvalSpec, McpServerSpec, McpSource};
use simtape_agent::{ToolSource, Verdict};

use crate::common::{agent, data, requests, run, scenario, tape, verify, Request};

/// The cassette the mcp-sampling scenario replays: recorded from server-everything.
fn everything() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios/data/mcp-sampling/everything.json")
}

fn eval(server: &str, cassette: PathBuf, fixture: &str, elicitation: Vec<Value>) -> EvalScenario {
    let mut spec = agent(vec![ToolSource::Mcp(server.into())]);
    // The recorded client answered the sampling with this model's name.
    spec.model = "sim-model".into();
    let parts = EvalSpec {
        agent: Some(spec),
        mcp: vec![McpServerSpec {
            name: server.into(),
            source: McpSource::Cassette(cassette),
            elicitation,
        }],
        verify: vec![verify(
            "answered",
            1,
            simtape_agent::Check::Answer(simtape_agent::TextMatch::default()),
        )],
        ..EvalSpec::default()
    };
    EvalScenario::from_parts(scenario(fixture, ""), parts).unwrap()
}

/// Returns the reply records of `actor`, as (time, body).
fn replies(report: &EvalReport, actor: &str) -> Vec<(u64, Value)> {
    let mut reader = TapeReader::new(tape(report)).unwrap().keep_blobs(true);
    let mut found = Vec::new();
    while let Some(record) = reader.next_record().unwrap() {
        if record.kind != RecordKind::Reply || reader.actor_name(record.actor) != actor {
            continue;
        }
        let json = payload_to_json(&reader.resolve(&record).unwrap()).unwrap();
        found.push((record.t_ns, json[1].clone()));
    }
    found
}

/// Returns the request's body variant name (`CallToolAnswering`, `Answer`, …).
fn variant(request: &Request) -> &str {
    match &request.body {
        Value::Object(map) => map.keys().next().map_or("", String::as_str),
        Value::String(name) => name,
        _ => "",
    }
}

#[test]
fn sampling_is_a_model_call_and_the_result_comes_after_the_answer() {
    // Goal: during trigger-sampling-request the agent answers the recorded sampling with a
    // model call in scope mcp:everything, served by the fixture; the answer (roots too) is
    // checked against the recording, and the call's result reaches the model only after it.
    let report = run(
        &eval("everything", everything(), "sampling.jsonl", vec![]),
        0,
    );
    assert_eq!(report.verdict, Verdict::Pass, "{}", report.verdict);
    let calls: Vec<Request> = requests(&report)
        .into_iter()
        .filter(|r| r.actor == "mcp:everything" || r.actor == "llm")
        .collect();
    let shape: Vec<String> = calls
        .iter()
        .map(|r| format!("{} {}", r.actor, variant(r)).trim_end().to_string())
        .collect();
    assert_eq!(
        shape,
        [
            "mcp:everything ListToolsAnswering",
            "mcp:everything Continue", // three notifications/tools/list_changed
            "mcp:everything Continue",
            "mcp:everything Continue",
            "llm",
            "mcp:everything CallToolAnswering", // get-roots-list
            "mcp:everything Answer",            // roots/list
            "mcp:everything Continue",          // the log line
            "llm",
            "mcp:everything CallToolAnswering", // trigger-sampling-request
            "llm",                              // the sampling's model call
            "mcp:everything Answer",            // sampling/createMessage
            "llm",
        ]
    );
    // A step goes on under the method of the request it belongs to.
    let operations: Vec<&str> = calls.iter().map(|r| r.operation.as_str()).collect();
    assert_eq!(operations[..4], ["tools/list"; 4]);
    assert_eq!(operations[5..8], ["tools/call"; 3]);
    let roots = json!({"roots": [{"uri": "file:///", "name": "fs"}]});
    assert_eq!(calls[6].body["Answer"][1], roots);
    assert_eq!(calls[10].body[1], "mcp:everything", "the sampling's scope");
    let sampled = &calls[11].body["Answer"][1];
    assert_eq!(sampled["model"], "sim-model");
    assert_eq!(sampled["stopReason"], "endTurn");
    assert!(
        calls[11].t_ns > calls[10].t_ns,
        "the answer waits for the model"
    );
    let transcript = report.transcript.as_ref().unwrap();
    let result = &transcript.turns[1].tool_calls[0].result;
    assert!(result.contains("the same words again"), "{result}");
    let (result_at, _) = *replies(&report, "mcp:everything").last().unwrap();
    assert_eq!(
        result_at,
        calls[11].t_ns + 1_000_000,
        "1 ms after the answer, as recorded"
    );
}

#[test]
fn list_changed_and_the_log_line_are_on_the_tape_where_they_were_recorded() {
    // Goal: the server's own messages come in recorded order and at recorded offsets:
    // tools/list's three identical list_changed notifications (9, 1 and 1 ms in), its list
    // 31 ms after the last; get-roots-list's roots/list 3 ms after the call, the log line
    // 10 ms after the agent's answer, the result 1 ms after that.
    let report = run(
        &eval("everything", everything(), "sampling.jsonl", vec![]),
        0,
    );
    let replies = replies(&report, "mcp:everything");
    let steps: Vec<(u64, String)> = replies[..7]
        .iter()
        .map(|(_, body)| {
            let result = &body[2]["Ok"];
            let what = match result["resultType"].as_str() {
                Some("input_required") => result["inputRequests"]["0"]["method"].clone(),
                Some("notification") if result["notification"]["params"].is_object() => {
                    result["notification"]["params"]["data"].clone()
                }
                Some("notification") => result["notification"]["method"].clone(),
                _ => json!("result"),
            };
            (
                body[1].as_u64().unwrap(),
                what.as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        steps,
        [
            (9, "notifications/tools/list_changed".to_string()),
            (1, "notifications/tools/list_changed".to_string()),
            (1, "notifications/tools/list_changed".to_string()),
            (31, "result".to_string()),
            (3, "roots/list".to_string()),
            (
                10,
                "Roots updated: 1 root(s) received from client".to_string()
            ),
            (1, "result".to_string()),
        ]
    );
}

#[test]
fn another_sampling_answer_is_a_named_replay_miss() {
    // Goal: a model that samples other words than the recorded client answered stops the run
    // as a replay miss naming the request and the first differing field.
    let report = run(
        &eval("everything", everything(), "sampling-other.jsonl", vec![]),
        0,
    );
    let failure = report.failure.as_ref().expect("the mismatch stops the run");
    assert_eq!(failure.kind(), "mcp_replay");
    let verdict = report.verdict.to_string();
    for needle in [
        "sampling/createMessage",
        "/result/content/text",
        "other words",
    ] {
        assert!(verdict.contains(needle), "{verdict}");
    }
}

#[test]
fn the_same_seed_gives_the_same_tape_bytes() {
    // Goal: two runs of one seed write byte-identical tapes, steps and sampling included.
    let scenario = eval("everything", everything(), "sampling.jsonl", vec![]);
    assert_eq!(tape(&run(&scenario, 1)), tape(&run(&scenario, 1)));
}

#[test]
fn elicitation_takes_the_scenarios_answers_in_order_then_declines() {
    // Goal: the first elicitation gets the scenario's accept with content, a recorded ping
    // gets {}, and the second elicitation, with the answers used up, a decline; each matches
    // the recording, so both calls return their recorded results.
    let answers = vec![json!({"action": "accept", "content": {"name": "Ada"}})];
    let cassette = data().join("elicit.cassette.json");
    let report = run(&eval("elicit", cassette, "elicit.jsonl", answers), 0);
    assert_eq!(report.verdict, Verdict::Pass, "{}", report.verdict);
    let answered: Vec<Value> = requests(&report)
        .into_iter()
        .filter(|r| r.actor == "mcp:elicit" && variant(r) == "Answer")
        .map(|r| r.body["Answer"][1].clone())
        .collect();
    assert_eq!(
        answered,
        [
            json!({"action": "accept", "content": {"name": "Ada"}}),
            json!({}),
            json!({"action": "decline"}),
        ]
    );
    let transcript = report.transcript.as_ref().unwrap();
    assert_eq!(
        transcript.turns[1].tool_calls[0].result,
        "Nobody signed up."
    );
}
