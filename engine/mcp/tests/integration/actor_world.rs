//! The world-backed MCP actor inside real simtape runs: a pipeline calls a seeded world spec,
//! its faults follow the simulation seed, its answers take modelled virtual time, and the final
//! state and its score are read from the run report.

use std::collections::BTreeSet;
use std::future::Future;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use simtape::RunReport;
use simtape_mcp::actor::{is_tool_error, McpActor, McpCallError, McpHandle, McpRequest};
use simtape_mcp::world::World;

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// Milliseconds of virtual time as nanoseconds.
const MS: u64 = 1_000_000;

fn world_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios/worlds")
        .join(name)
}

/// A small world for the latency and fault tests: `bump` adds 1 to `/n`; `slow` has its own
/// latency model; `flaky` always fails; `hang` times out on its first call.
const SMALL_WORLD: &str = r#"{
  "name": "small", "initial_state": {"n": 0}, "latency": {"base_ms": 5},
  "tools": [
    {"name": "bump", "inputSchema": {"type": "object"}, "effects": [{"op": "add", "path": "/n", "value": 1}]},
    {"name": "slow", "inputSchema": {"type": "object"}, "latency": {"base_ms": 100, "jitter_ms": 20}},
    {"name": "flaky", "inputSchema": {"type": "object"}},
    {"name": "hang", "inputSchema": {"type": "object"}}
  ],
  "faults": [
    {"tool": "flaky", "rate": "1/1", "fault": {"kind": "rpc_error", "code": 503, "message": "Service Unavailable", "data": {"retryAfterMs": 2000}}},
    {"tool": "hang", "on_call": 1, "fault": {"kind": "timeout", "after_ms": 1500}}
  ],
  "goal": {"assertions": [{"path": "/n", "equals": 1}]}
}"#;

fn small_world() -> Result<McpActor, Box<dyn std::error::Error>> {
    Ok(McpActor::from_world(World::parse(
        SMALL_WORLD,
        Path::new("small.json"),
    )?))
}

/// A finished run with the world actor's final state taken out of it.
struct WorldRun<T> {
    report: RunReport<T>,
    actor: McpActor,
}

impl<T> WorldRun<T> {
    fn tape(&self) -> Result<&[u8], Box<dyn std::error::Error>> {
        let tape = self.report.summary.tape.as_ref().ok_or("no tape")?;
        Ok(tape.memory.as_deref().ok_or("no in-memory tape")?)
    }

    fn state(&self) -> Result<&Value, Box<dyn std::error::Error>> {
        Ok(self.actor.world_state().ok_or("not a world actor")?)
    }
}

/// Runs `pipeline` with `actor` registered as `mcp:world`, on an in-memory tape.
fn run_world<F, Fut, T>(
    seed: u64,
    actor: McpActor,
    pipeline: F,
) -> Result<WorldRun<T>, Box<dyn std::error::Error>>
where
    F: FnOnce(McpHandle) -> Fut + 'static,
    Fut: Future<Output = T> + 'static,
    T: 'static,
{
    let mut b = simtape::Sim::builder();
    let mcp = b.seed(seed).actor("mcp:world", actor);
    let report = b
        .tape_in_memory()
        .build()?
        .run(move |_host| async move { pipeline(McpHandle::new(mcp)).await })?;
    let actor = report
        .actors
        .get(mcp)
        .ok_or("no final world actor")?
        .clone();
    Ok(WorldRun { report, actor })
}

#[test]
fn lists_the_spec_tools_exactly() -> TestResult {
    // Goal: tools/list serves the spec's tools in order, schemas and annotations as written.
    let path = world_path("ticket-tracker.json");
    let spec: Value = serde_json::from_str(&std::fs::read_to_string(&path)?)?;
    let run = run_world(1, McpActor::load_world(&path)?, |mcp| async move {
        mcp.list_tools().await
    })?;
    let listed = run.report.output.clone()?;
    let listed = listed["tools"].as_array().ok_or("tools is not an array")?;
    let written = spec["tools"].as_array().ok_or("spec tools")?;
    assert_eq!(listed.len(), written.len());
    for (served, tool) in listed.iter().zip(written) {
        for key in [
            "name",
            "description",
            "inputSchema",
            "outputSchema",
            "annotations",
        ] {
            assert_eq!(served.get(key), tool.get(key), "{key} of {}", tool["name"]);
        }
        assert!(served.get("effects").is_none(), "effects stay private");
    }
    assert_eq!(
        run.report.summary.end_ns, MS,
        "the default latency model is 1 ms flat"
    );
    Ok(())
}

#[test]
fn a_successful_run_changes_the_state_and_meets_the_goal() -> TestResult {
    // Goal: calls apply their effects; the spec's on_call fault answers the first close with
    // JSON-RPC 429; after a retry the final report meets the goal with no collateral damage.
    let actor = McpActor::load_world(world_path("ticket-tracker.json"))?;
    let run = run_world(5, actor, |mcp| async move {
        mcp.call_tool("assign_ticket", json!({"id": "T-1", "assignee": "ann"}))
            .await?;
        mcp.call_tool(
            "comment_ticket",
            json!({"id": "T-1", "text": "Fixed the null session."}),
        )
        .await?;
        let close = json!({"id": "T-1", "resolution": "fixed"});
        let limited = mcp.call_tool("close_ticket", close.clone()).await;
        let closed = mcp.call_tool("close_ticket", close).await?;
        Ok::<_, McpCallError>((limited, closed))
    })?;
    let (limited, closed) = run.report.output.clone()?;
    let Err(McpCallError::Rpc {
        request_seq,
        code,
        data,
        ..
    }) = limited
    else {
        panic!("the first close is rate limited: {limited:?}");
    };
    assert_eq!((request_seq, code), (3, 429));
    assert_eq!(data.ok_or("no error data")?["retryAfterMs"], 1000);
    assert_eq!(
        closed["structuredContent"],
        json!({"id": "T-1", "status": "closed"})
    );
    let ticket = &run.state()?["tickets"]["T-1"];
    assert_eq!(ticket["assignee"], "ann");
    assert_eq!(ticket["status"], "closed");
    let report = run.actor.world_report().ok_or("no world report")?;
    assert!(report.scored.passed, "{report:?}");
    assert!(report.scored.collateral_damage.is_empty());
    let outcomes: Vec<&str> = report.calls.iter().map(|c| c.outcome.as_str()).collect();
    assert_eq!(outcomes, ["ok", "ok", "rpc_error", "ok"]);
    Ok(())
}

#[test]
fn a_schema_violation_is_a_tool_error_result() -> TestResult {
    // Goal: arguments that break the inputSchema give an isError result and change nothing.
    let actor = McpActor::load_world(world_path("ticket-tracker.json"))?;
    let run = run_world(1, actor, |mcp| async move {
        mcp.call_tool("assign_ticket", json!({"id": "T-1", "assignee": "zed"}))
            .await
    })?;
    let result = run.report.output.clone()?;
    assert!(is_tool_error(&result), "{result}");
    let text = result["content"][0]["text"].as_str().ok_or("no text")?;
    assert!(
        text.contains("Invalid arguments for tool assign_ticket"),
        "{text}"
    );
    let initial = World::load(&world_path("ticket-tracker.json"))?
        .spec
        .initial_state;
    assert_eq!(run.state()?, &initial);
    let report = run.actor.world_report().ok_or("no world report")?;
    assert_eq!(report.calls[0].outcome, "invalid_arguments");
    Ok(())
}

#[test]
fn a_certain_fault_is_a_json_rpc_error_and_a_timeout_takes_its_wait() -> TestResult {
    // Goal: a rate 1/1 rule answers JSON-RPC errors; a timeout fault answers -32001
    // after its `after_ms` of virtual time; an unknown tool is -32602.
    let run = run_world(9, small_world()?, |mcp| async move {
        let first = mcp.call_tool("flaky", json!({})).await;
        let second = mcp.call_tool("flaky", json!({})).await;
        let hung = mcp.call(McpRequest::CallTool {
            name: "hang".into(),
            arguments: json!({}),
        });
        let hung = hung.await;
        let unknown = mcp.call_tool("nope", json!({})).await;
        (first, second, hung, unknown)
    })?;
    let (first, second, hung, unknown) = run.report.output.clone();
    for answer in [first, second] {
        let Err(McpCallError::Rpc { code, data, .. }) = answer else {
            panic!("flaky always fails: {answer:?}");
        };
        assert_eq!(code, 503);
        assert_eq!(data, Some(json!({"retryAfterMs": 2000})));
    }
    assert_eq!(hung.latency_ms, 1500);
    let Err(McpCallError::Rpc { code, .. }) = hung.result else {
        panic!("hang times out: {:?}", hung.result);
    };
    assert_eq!(code, simtape_mcp::world::server::TIMEOUT_CODE);
    let Err(McpCallError::Rpc { code, message, .. }) = unknown else {
        panic!("an unknown tool is a JSON-RPC error: {unknown:?}");
    };
    assert_eq!((code, message.as_str()), (-32602, "Unknown tool: nope"));
    assert_eq!(run.report.summary.end_ns, (5 + 5 + 1500 + 5) * MS);
    assert_eq!(run.state()?, &json!({"n": 0}), "faults change nothing");
    Ok(())
}

#[test]
fn virtual_latency_follows_the_model() -> TestResult {
    // Goal: each answer takes base_ms plus jitter in 0..=jitter_ms (the tool's model, else the
    // world's); the run ends at the sum; the jitter repeats per seed and varies across seeds.
    let latencies = |seed| -> Result<(Vec<u64>, u64), Box<dyn std::error::Error>> {
        let run = run_world(seed, small_world()?, |mcp| async move {
            let mut latencies = Vec::new();
            latencies.push(mcp.call(McpRequest::ListTools).await.latency_ms);
            for tool in ["bump", "slow", "slow", "slow", "bump"] {
                let request = McpRequest::CallTool {
                    name: tool.into(),
                    arguments: json!({}),
                };
                latencies.push(mcp.call(request).await.latency_ms);
            }
            latencies
        })?;
        Ok((run.report.output.clone(), run.report.summary.end_ns))
    };
    let (first, end_ns) = latencies(1)?;
    assert_eq!([first[0], first[1], first[5]], [5, 5, 5]);
    assert!(
        first[2..5].iter().all(|l| (100..=120).contains(l)),
        "{first:?}"
    );
    assert_eq!(end_ns, first.iter().sum::<u64>() * MS);
    assert_eq!(latencies(1)?.0, first);
    let jitters: BTreeSet<Vec<u64>> = (0..8)
        .map(|seed| latencies(seed).map(|(l, _)| l))
        .collect::<Result<_, _>>()?;
    assert!(jitters.len() > 1, "the jitter never varied across seeds");
    Ok(())
}

/// The pipeline of the seeded-fault tests: a flaky bank ledger, called often enough that its
/// rate faults fire for some seeds and not others.
async fn pay_in_installments(mcp: McpHandle) -> Vec<String> {
    let mut outcomes = Vec::new();
    for _ in 0..4 {
        let arguments =
            json!({"from": "acc-alice", "to": "acc-bob", "amount_cents": 100, "memo": "inv 42"});
        let transfer = mcp.call_tool("transfer", arguments).await;
        outcomes.push(outcome(&transfer));
        let balance = mcp
            .call_tool("get_balance", json!({"account": "acc-alice"}))
            .await;
        outcomes.push(outcome(&balance));
    }
    outcomes
}

fn outcome(answer: &Result<Value, McpCallError>) -> String {
    match answer {
        Ok(result) if is_tool_error(result) => "tool_error".into(),
        Ok(_) => "ok".into(),
        Err(McpCallError::Rpc { code, .. }) => format!("rpc {code}"),
        Err(error) => format!("{error}"),
    }
}

#[test]
fn seeded_faults_repeat_per_seed_and_differ_across_seeds() -> TestResult {
    // Goal: the faults follow the simulation seed: one seed gives a byte-identical
    // tape and the same final state twice; seeds 0..8 give different outcomes.
    let path = world_path("bank-ledger.json");
    let run = |seed| run_world(seed, McpActor::load_world(&path)?, pay_in_installments);
    let first = run(3)?;
    let second = run(3)?;
    assert!(!first.tape()?.is_empty());
    assert!(first.tape()? == second.tape()?, "the two tapes differ");
    assert_eq!(first.state()?, second.state()?);
    let report = first.actor.world_report().ok_or("no world report")?;
    assert_eq!(report, second.actor.world_report().ok_or("no report")?);
    // The faults draw from the actor's stream, forked from the simulation seed: the report
    // names the spec's seed, which decides nothing here.
    assert_eq!(report.seed, 1);
    let mut outcomes = BTreeSet::new();
    let mut states = BTreeSet::new();
    for seed in 0..8 {
        let run = run(seed)?;
        outcomes.insert(run.report.output.clone());
        states.insert(run.state()?.to_string());
    }
    assert!(outcomes.len() > 1, "every seed gave the same faults");
    assert!(states.len() > 1, "every seed gave the same final state");
    Ok(())
}

#[test]
fn collateral_damage_is_reported() -> TestResult {
    // Goal: a change the goal does not allow (freezing Carol) shows in the final report as
    // collateral damage, and the run fails even though the payment meets the goal.
    let spec = World::load(&world_path("bank-ledger.json"))?;
    let mut spec_text = serde_json::to_value(&spec.spec)?;
    // Without faults, so the payment lands whatever the seed.
    spec_text["faults"] = json!([]);
    let world = World::parse(&spec_text.to_string(), Path::new("bank-ledger.json"))?;
    let run = run_world(2, McpActor::from_world(world), |mcp| async move {
        let arguments = json!({"from": "acc-alice", "to": "acc-bob", "amount_cents": 2500, "memo": "invoice 42"});
        mcp.call_tool("transfer", arguments).await?;
        mcp.call_tool("freeze_account", json!({"account": "acc-carol"}))
            .await
    })?;
    run.report.output.clone()?;
    let report = run.actor.world_report().ok_or("no world report")?;
    assert!(report.scored.goal_met, "{report:?}");
    assert!(!report.scored.passed);
    let damage: Vec<(&str, Option<&Value>, Option<&Value>)> = report
        .scored
        .collateral_damage
        .iter()
        .map(|c| (c.path.as_str(), c.before.as_ref(), c.after.as_ref()))
        .collect();
    assert_eq!(
        damage,
        [(
            "/accounts/acc-carol/frozen",
            Some(&json!(false)),
            Some(&json!(true))
        )]
    );
    Ok(())
}

#[test]
fn a_cassette_actor_has_no_world() -> TestResult {
    // Goal: the world accessors answer None for a cassette-backed actor.
    let cassette = simtape_mcp::Cassette::new(vec!["demo".into()]);
    let actor = McpActor::from_cassette(cassette);
    assert!(actor.world_state().is_none());
    assert!(actor.world_report().is_none());
    Ok(())
}

#[test]
fn the_runs_fault_plan_adds_to_the_specs_faults() -> TestResult {
    // Goal: fault rules supplied by the run (not the spec) fire inside the simulation, and a
    // plan naming an unknown tool is refused with the plan named as the culprit.
    use simtape_mcp::world::faults::{FaultKind, ToolFault};
    let plan = vec![ToolFault {
        tool: "assign_ticket".into(),
        trigger: simtape::cap::fault_rules::Trigger::OnCall(1),
        fault: FaultKind::ToolError {
            message: "tracker is read-only today".into(),
        },
    }];
    let world = World::load(&world_path("ticket-tracker.json"))?.with_faults(plan)?;
    let run = run_world(5, McpActor::from_world(world), |mcp| async move {
        mcp.call_tool("assign_ticket", json!({"id": "T-1", "assignee": "ann"}))
            .await
    })?;
    let result = run.report.output.clone()?;
    assert_eq!(result["isError"], true, "{result}");
    assert!(
        result.to_string().contains("tracker is read-only today"),
        "{result}"
    );
    let unknown = vec![ToolFault {
        tool: "no_such_tool".into(),
        trigger: simtape::cap::fault_rules::Trigger::OnCall(1),
        fault: FaultKind::ToolError {
            message: "x".into(),
        },
    }];
    let error = World::load(&world_path("ticket-tracker.json"))?
        .with_faults(unknown)
        .unwrap_err();
    assert!(
        error.to_string().contains("the run's fault plan"),
        "{error}"
    );
    Ok(())
}

#[test]
fn describe_names_the_world_and_leaves_every_later_answer_as_it_was() -> TestResult {
    // Goal: a world's description is its initialize answer (name, version, instructions,
    // tools); it takes no virtual time and draws nothing, so the calls after it answer and
    // take exactly what they do without it.
    let calls = |describe: bool| {
        move |mcp: McpHandle| async move {
            let description = match describe {
                true => Some(mcp.call(McpRequest::Describe).await),
                false => None,
            };
            let mut latencies = Vec::new();
            for _ in 0..4 {
                latencies.push(mcp.call(McpRequest::ListTools).await.latency_ms);
                let slow = McpRequest::CallTool {
                    name: "slow".into(),
                    arguments: json!({}),
                };
                latencies.push(mcp.call(slow).await.latency_ms);
            }
            (description, latencies)
        }
    };
    let described = run_world(3, small_world()?, calls(true))?;
    let plain = run_world(3, small_world()?, calls(false))?;
    let (description, latencies) = described.report.output;
    let description = description.ok_or("described")?;
    assert_eq!(description.latency_ms, 0);
    let description = description.result?;
    assert_eq!(description["serverInfo"]["name"], "small");
    assert_eq!(
        description["capabilities"],
        json!({"tools": {"listChanged": false}})
    );
    assert_eq!(latencies, plain.report.output.1);
    assert_eq!(described.report.summary.end_ns, plain.report.summary.end_ns);
    let tickets = McpActor::load_world(world_path("ticket-tracker.json"))?;
    let described = run_world(0, tickets, |mcp| async move {
        mcp.call(McpRequest::Describe).await.result
    })?;
    let instructions = described.report.output?["instructions"].clone();
    assert!(instructions.as_str().ok_or("instructions")?.contains("T-1"));
    Ok(())
}
