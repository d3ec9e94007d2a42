//! Helpers: scenarios over `tests/data`, eval parts built in Rust, runs with a tape in memory,
//! and the `agent` records of a tape.

use std::path::{Path, PathBuf};

use serde_json::Value;
use simtape::scenario::Scenario;
use simtape::tape::{payload_to_json, RecordKind, TapeReader};
use simtape_agent::{AgentSpec, Check, ToolSource, VerifySpec};
use simtape_agent::{EvalReport, EvalScenario, EvalSpec};

/// Returns the test data directory.
pub(crate) fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

/// Returns a scenario over the overlay `work/` answering from `llm/<fixture>`, plus `extra`
/// TOML (tasks, `[process]`); without tasks of its own it gets one that idles for 1 ms.
pub(crate) fn scenario(fixture: &str, extra: &str) -> Scenario {
    let idle = if extra.contains("[[task]]") {
        ""
    } else {
        "\n[[task]]\nname = \"idle\"\nsteps = [{ sleep = \"1ms\" }]\n"
    };
    let source = format!(
        "[scenario]\nname = \"agent-test\"\n\n[fs]\nroot = \"work\"\n\n[llm]\nfixture = \"llm/{fixture}\"\n{extra}{idle}"
    );
    Scenario::parse(&source, &data().join("agent-test.toml")).unwrap()
}

/// Returns an agent offering `tools`, with generous limits.
pub(crate) fn agent(tools: Vec<ToolSource>) -> AgentSpec {
    AgentSpec {
        model: "test-model".to_string(),
        system: "You are a careful engineer.".to_string(),
        task: "Do the task.".to_string(),
        max_turns: 10,
        tool_concurrency: 4,
        retry_budget: 3,
        backoff_base_ms: 100,
        backoff_max_ms: 10_000,
        tools,
    }
}

/// Returns a verifier at line `line`.
pub(crate) fn verify(name: &str, line: u64, check: Check) -> VerifySpec {
    VerifySpec {
        name: name.to_string(),
        line,
        check,
    }
}

/// Returns an eval scenario from parts; panics on a problem.
pub(crate) fn eval(
    scenario: Scenario,
    agent: Option<AgentSpec>,
    verify: Vec<VerifySpec>,
) -> EvalScenario {
    let parts = EvalSpec {
        agent,
        verify,
        ..EvalSpec::default()
    };
    EvalScenario::from_parts(scenario, parts).unwrap()
}

/// Runs at `seed` with the tape in memory.
pub(crate) fn run(eval: &EvalScenario, seed: u64) -> EvalReport {
    let mut builder = eval.builder(seed);
    builder.tape_in_memory();
    eval.run(&mut builder)
}

/// Returns the tape bytes of a report.
pub(crate) fn tape(report: &EvalReport) -> &[u8] {
    report
        .run
        .summary
        .tape
        .as_ref()
        .and_then(|tape| tape.memory.as_deref())
        .expect("a tape in memory")
}

/// One request record of a tape: time, actor name, operation, body.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Request {
    pub(crate) t_ns: u64,
    pub(crate) actor: String,
    pub(crate) operation: String,
    pub(crate) body: Value,
}

/// Returns every request record of the tape, in order.
pub(crate) fn requests(report: &EvalReport) -> Vec<Request> {
    let mut reader = TapeReader::new(tape(report)).unwrap().keep_blobs(true);
    let mut found = Vec::new();
    while let Some(record) = reader.next_record().unwrap() {
        if record.kind != RecordKind::Request {
            continue;
        }
        let payload = reader.resolve(&record).unwrap();
        let json = payload_to_json(&payload).unwrap();
        found.push(Request {
            t_ns: record.t_ns,
            actor: reader.actor_name(record.actor).to_string(),
            operation: json[0].as_str().unwrap().to_string(),
            body: json[1].clone(),
        });
    }
    found
}

/// Returns the `agent` actor's records as `operation` names.
pub(crate) fn agent_operations(report: &EvalReport) -> Vec<String> {
    requests(report)
        .into_iter()
        .filter(|request| request.actor == "agent")
        .map(|request| request.operation)
        .collect()
}

/// Returns the footer verdict of the report's tape.
pub(crate) fn footer_verdict(report: &EvalReport) -> String {
    let mut reader = TapeReader::new(tape(report)).unwrap().keep_blobs(true);
    while reader.next_record().unwrap().is_some() {}
    reader.footer().unwrap().verdict.clone()
}
