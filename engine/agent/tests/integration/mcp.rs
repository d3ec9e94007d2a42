//! MCP servers inside a run: world tools offered as `<server>__<tool>`, faults from the
//! scenario's fault plan, retries, world goals.

use simtape::rng::Ratio;
use simtape::scenario::Trigger;
use simtape_agent::{
    Check, EvalScenario, EvalSpec, McpFault, McpServerSpec, McpSource, ToolSource, Verdict,
    VerifySpec,
};
use simtape_mcp::world::faults::FaultKind;

use crate::common::{agent, data, requests, run, scenario, verify};

fn kv_server() -> McpServerSpec {
    McpServerSpec {
        name: "kv".into(),
        source: McpSource::World(data().join("kv-world.json")),
        elicitation: Vec::new(),
    }
}

fn rate_limited(trigger: Trigger, retry_after_ms: Option<u64>) -> McpFault {
    McpFault {
        server: "kv".into(),
        tool: "put".into(),
        trigger,
        kind: FaultKind::RpcError {
            code: 429,
            message: "rate limited".into(),
            data: retry_after_ms.map(|ms| serde_json::json!({ "retryAfterMs": ms })),
        },
    }
}

fn kv_eval(faults: Vec<McpFault>, retry_budget: u32, checks: Vec<VerifySpec>) -> EvalScenario {
    let mut spec = agent(vec![ToolSource::Mcp("kv".into())]);
    spec.retry_budget = retry_budget;
    let mut parts = EvalSpec {
        agent: Some(spec),
        mcp: vec![kv_server()],
        verify: checks,
        ..EvalSpec::default()
    };
    parts.mcp_faults = faults;
    EvalScenario::from_parts(scenario("kv.jsonl", ""), parts).unwrap()
}

fn goal() -> Vec<VerifySpec> {
    vec![verify(
        "world kv",
        3,
        Check::WorldGoal {
            server: "kv".into(),
            allow_collateral: false,
        },
    )]
}

#[test]
fn a_world_tool_rate_limited_once_is_retried_and_the_goal_passes() {
    // Goal: the 429 fault of the fault plan reaches the agent as a JSON-RPC error, is retried
    // after its retryAfterMs, and the second call changes the world.
    let scenario = kv_eval(
        vec![rate_limited(Trigger::OnCall(1), Some(2_000))],
        3,
        goal(),
    );
    let report = run(&scenario, 5);
    assert_eq!(report.verdict, Verdict::Pass, "{:?}", report.verifiers);
    assert_eq!(report.verifiers[0].saw, "goal met, no collateral damage");
    let transcript = report.transcript.as_ref().unwrap();
    assert_eq!(transcript.retries, 1);
    let call = &transcript.turns[0].tool_calls[0];
    assert_eq!((call.name.as_str(), call.ok), ("kv__put", true));
    assert_eq!(call.result, "{\"key\":\"k1\"}");
    let puts: Vec<u64> = requests(&report)
        .into_iter()
        .filter(|r| r.actor == "mcp:kv" && r.operation == "tools/call")
        .map(|r| r.t_ns)
        .collect();
    // tools/list at 0 (5 ms), the model at 5 ms (100 ms), the failing put at 105 ms (5 ms),
    // then 2 s of back-off.
    assert_eq!(puts, [105_000_000, 2_110_000_000]);
}

#[test]
fn a_spent_budget_hands_the_mcp_error_to_the_model() {
    // Goal: with no retries left the JSON-RPC error becomes the tool's error result, and the
    // world goal, not met, fails the run with what it saw.
    let always = rate_limited(Trigger::Rate(Ratio::ONE), None);
    let scenario = kv_eval(vec![always], 1, goal());
    let report = run(&scenario, 5);
    let transcript = report.transcript.as_ref().unwrap();
    assert_eq!(transcript.retries, 1);
    let call = &transcript.turns[0].tool_calls[0];
    assert!(!call.ok);
    assert_eq!(
        call.result,
        "error: the server answered JSON-RPC error 429: rate limited (retry budget spent)"
    );
    assert_eq!(
        transcript.answer.as_deref(),
        Some("The store kept failing.")
    );
    assert_eq!(
        report.verdict,
        Verdict::Fail {
            verifier: "world kv".into(),
            saw: "goal not met: /items/k1: expected \"v1\", found nothing".into()
        }
    );
}

#[test]
fn faults_on_a_cassette_server_or_an_unknown_server_are_refused() {
    // Goal: a fault plan that cannot apply is a scenario problem placed at its field.
    let cassette = McpServerSpec {
        name: "kv".into(),
        source: McpSource::Cassette(data().join("missing-cassette.json")),
        elicitation: Vec::new(),
    };
    let mut parts = EvalSpec {
        mcp: vec![cassette],
        ..EvalSpec::default()
    };
    parts.mcp_faults = vec![rate_limited(Trigger::OnCall(1), None)];
    let problem = EvalScenario::from_parts(scenario("kv.jsonl", ""), parts.clone()).unwrap_err();
    assert_eq!(problem.field, "faults.mcp[0].server");
    assert!(
        problem.message.starts_with("faults need a world server"),
        "{problem}"
    );
    parts.mcp.clear();
    let problem = EvalScenario::from_parts(scenario("kv.jsonl", ""), parts).unwrap_err();
    assert_eq!(
        problem.message,
        "expected the name of an [[mcp]] server, found \"kv\""
    );
}

#[test]
fn a_bad_world_spec_is_placed_at_its_mcp_field() {
    // Goal: problems of referenced files name the [[mcp]] field that points at them.
    let broken = McpServerSpec {
        name: "kv".into(),
        source: McpSource::World(data().join("no-such-world.json")),
        elicitation: Vec::new(),
    };
    let parts = EvalSpec {
        mcp: vec![broken],
        ..EvalSpec::default()
    };
    let problem = EvalScenario::from_parts(scenario("kv.jsonl", ""), parts).unwrap_err();
    assert_eq!(problem.field, "mcp[0].world");
    assert!(problem.message.contains("no-such-world.json"), "{problem}");
}

#[test]
fn a_timeout_is_retried_after_the_time_it_took() {
    // Goal: a timeout fault takes its whole wait in virtual time, then is retried with the
    // plain back-off (100 ms: no hint).
    let timeout = McpFault {
        server: "kv".into(),
        tool: "put".into(),
        trigger: Trigger::OnCall(1),
        kind: FaultKind::Timeout { after_ms: 1_000 },
    };
    let scenario = kv_eval(vec![timeout], 3, goal());
    let report = run(&scenario, 0);
    assert_eq!(report.verdict, Verdict::Pass, "{:?}", report.verifiers);
    let puts: Vec<u64> = requests(&report)
        .into_iter()
        .filter(|r| r.actor == "mcp:kv" && r.operation == "tools/call")
        .map(|r| r.t_ns)
        .collect();
    assert_eq!(puts, [105_000_000, 1_205_000_000]);
}

#[test]
fn a_cassette_server_answers_what_it_recorded_and_an_unrecorded_call_is_an_error() {
    // Goal: a replayed server's tools are offered and answered from the recording; a call
    // the recording never saw stops the run instead of reaching the model.
    let mut spec = agent(vec![ToolSource::Mcp("sums".into())]);
    spec.max_turns = 5;
    let parts = EvalSpec {
        agent: Some(spec),
        mcp: vec![McpServerSpec {
            name: "sums".into(),
            source: McpSource::Cassette(data().join("sums.cassette.json")),
            elicitation: Vec::new(),
        }],
        verify: goal_free(),
        ..EvalSpec::default()
    };
    let scenario = EvalScenario::from_parts(scenario("sums.jsonl", ""), parts).unwrap();
    let report = run(&scenario, 0);
    let transcript = report.transcript.as_ref().unwrap();
    assert_eq!(
        transcript.turns[0].tool_calls[0].result,
        "The sum of 2 and 3 is 5."
    );
    let failure = report
        .failure
        .as_ref()
        .expect("the unrecorded call stops the run");
    assert_eq!(failure.kind(), "mcp_replay");
    assert!(
        report
            .verdict
            .to_string()
            .starts_with("error: tool call s2 (sums__add): "),
        "{}",
        report.verdict
    );
}

fn goal_free() -> Vec<VerifySpec> {
    vec![verify(
        "answered",
        1,
        Check::Answer(simtape_agent::TextMatch::default()),
    )]
}

#[test]
fn a_summary_run_has_the_same_tape_and_verdict_without_the_artifacts() {
    // Goal: `run_summary` (what a sweep calls) leaves out the fs diff and the worlds and
    // nothing else: the same verdict, fingerprint and tape bytes as `run`.
    let eval = EvalScenario::load(&data().join("kv.toml")).unwrap();
    let run = |summary: bool| {
        let mut builder = eval.builder(5);
        builder.tape_in_memory();
        match summary {
            true => eval.run_summary(&mut builder),
            false => eval.run(&mut builder),
        }
    };
    let (full, summary) = (run(false), run(true));
    assert_eq!(full.verdict, Verdict::Pass, "{:?}", full.failure);
    assert_eq!(summary.verdict, full.verdict);
    assert_eq!(
        summary.run.summary.fingerprint,
        full.run.summary.fingerprint
    );
    assert_eq!(summary.run.summary.tape, full.run.summary.tape);
    assert_eq!(full.worlds.len(), 1);
    assert!(full.worlds[0].report.scored.passed);
    assert!(full.run.fs_diff.is_some());
    assert!(summary.worlds.is_empty());
    assert!(summary.run.fs_diff.is_none());
}
