//! Real agents on the official Python SDKs (PyPI `openai` on Chat Completions and on
//! Responses, `anthropic` on Messages, `google-genai` on the Gemini API) under `serve`: each
//! passes, two runs of a seed give the same tape bytes, and the tape replays without them.
//!
//! The SDKs come from `engine/serve/tests/peers/requirements.txt`; `.ci/run` installs them
//! into a venv and names its python in SIMTAPE_SERVE_PYTHON. Without it these tests print a
//! skip notice, and fail when CI is true.

mod common;

use std::path::Path;
use std::time::Duration;

use common::{python, repo};

use simtape_agent::EvalScenario;
use simtape_serve::{AgentCommand, ServeOptions, SETTLE_DEFAULT};

struct Served {
    tape: Vec<u8>,
    verdict: String,
    model_calls: u64,
    end_ns: u64,
}

fn serve_once(python: &str, agent: &str, tape: &Path) -> Served {
    let scenario = repo().join("examples/agents/python-sdk/scenario.toml");
    serve_scenario(python, &scenario, agent, tape)
}

fn serve_scenario(python: &str, scenario: &Path, agent: &str, tape: &Path) -> Served {
    let eval = EvalScenario::load(scenario).expect("the example scenario loads");
    let mut builder = eval.builder(0);
    builder.tape(tape);
    let options = ServeOptions {
        addr: "127.0.0.1:0".parse().unwrap(),
        settle: SETTLE_DEFAULT,
        command: Some(AgentCommand {
            program: python.to_string(),
            args: vec![repo()
                .join("examples/agents/python-sdk")
                .join(agent)
                .display()
                .to_string()],
            env: Vec::new(),
            cwd: None,
            timeout: Some(Duration::from_secs(120)),
        }),
        normalizer: simtape_serve::BodyNormalizer::agent_defaults(),
        session_log: None,
        sandbox: None,
    };
    let (_stop, stop) = smol::channel::bounded(1);
    let session = simtape_serve::serve(&mut builder, options, stop, |_| {}).expect("serves");
    assert!(!session.timed_out, "{agent} finished in time");
    let report = session.report.expect("the run completes");
    Served {
        tape: std::fs::read(tape).unwrap(),
        verdict: report.output.verdict(),
        model_calls: report.output.model_calls,
        end_ns: report.summary.end_ns,
    }
}

fn check_agent(agent: &str) {
    let Some(python) = python() else { return };
    let dir = std::env::temp_dir().join(format!("simtape-serve-{agent}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let first = serve_once(&python, agent, &dir.join("a.tape"));
    assert_eq!(first.verdict, "ok", "{agent} passes");
    assert_eq!(first.model_calls, 2, "a tool call, then the answer");
    assert!(
        first.end_ns >= 1_600_000_000,
        "two calls of 0.8 s and more, in virtual time"
    );
    let second = serve_once(&python, agent, &dir.join("b.tape"));
    assert!(
        first.tape == second.tape,
        "{agent}: two runs of one seed give the same tape bytes"
    );

    // Without the agent: the tape's inputs alone give the same bytes again.
    let eval =
        EvalScenario::load(&repo().join("examples/agents/python-sdk/scenario.toml")).unwrap();
    common::assert_replays(&eval, &dir.join("a.tape"), &dir.join("replay.tape"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_openai_sdk_agent_runs_unchanged_and_deterministically() {
    // Goal: the official openai SDK (a plain call, then a streamed one with usage) parses
    // simtape's Chat Completions answers as a provider's; the tape is byte-stable and replays.
    check_agent("openai_agent.py");
}

#[test]
fn an_openai_responses_sdk_agent_runs_unchanged_and_deterministically() {
    // Goal: the official openai SDK's `responses.create` (a streamed call whose `response.*`
    // events carry text and a function call, then a plain call with the call's output) parses
    // simtape's Responses answers as a provider's; the tape is byte-stable and replays.
    check_agent("responses_agent.py");
}

#[test]
fn an_anthropic_sdk_agent_runs_unchanged_and_deterministically() {
    // Goal: the official anthropic SDK (a plain call, then messages.stream) parses simtape's
    // Messages answers and event stream as a provider's; the tape is byte-stable and replays.
    check_agent("anthropic_agent.py");
}

#[test]
fn a_google_genai_sdk_agent_runs_unchanged_and_deterministically() {
    // Goal: Google's official google-genai SDK (a function-calling loop: a plain
    // generate_content answered with a thought part and a functionCall, then a streamed one
    // with the functionResponse) parses simtape's Gemini answers and event stream as Google's,
    // from the fixture the other three SDK agents use; the tape is byte-stable and replays.
    check_agent("gemini_agent.py");
}

#[test]
fn a_google_genai_sdk_agent_retries_a_seeded_429_with_one_tape_over_ten_runs() {
    // Goal: the google-genai agent's first call meets a seeded 429 in Google's error shape
    // (RESOURCE_EXHAUSTED, a RetryInfo delay); the SDK retries it on its own and the agent
    // passes; the tape shows the LLM actor's 429 reply, then the retried request answered;
    // ten runs of seed 0 write one sha256.
    let Some(python) = python() else { return };
    let scenario =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/gemini-429/scenario.toml");
    let dir = std::env::temp_dir().join(format!("simtape-serve-gemini-429-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut digests = std::collections::BTreeSet::new();
    for run in 0..10 {
        let tape = dir.join(format!("{run}.tape"));
        let served = serve_scenario(&python, &scenario, "gemini_agent.py", &tape);
        assert_eq!(served.verdict, "ok", "run {run} passes");
        assert_eq!(served.model_calls, 2, "the 429 is no answer of the model");
        digests.insert(simtape::tape::sha256_hex(&served.tape));
    }
    assert_eq!(digests.len(), 1, "ten runs, one tape: {digests:?}");

    // On the tape: three model requests reach the gateway, the first answered 429.
    let tape = std::fs::read(dir.join("0.tape")).unwrap();
    let mut reader = simtape::tape::TapeReader::new(&tape[..]).unwrap();
    let mut records = Vec::new();
    while let Some(record) = reader.next_record().unwrap() {
        records.push(
            simtape::tape::payload_to_json(&record.payload)
                .unwrap()
                .to_string(),
        );
    }
    let generate = records
        .iter()
        .filter(|r| r.contains(":generateContent") || r.contains(":streamGenerateContent"))
        .count();
    assert_eq!(
        generate, 3,
        "the 429, its retry, the turn after the function"
    );
    let status_429 = records
        .iter()
        .position(|r| r.contains(r#"{"Http":[429,"#))
        .expect("the 429 is on the tape");
    let answered = records
        .iter()
        .position(|r| r.contains("Let me multiply."))
        .expect("the retry's answer is on the tape");
    assert!(status_429 < answered, "the 429 comes before the answer");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn openai_and_anthropic_sdk_agents_retry_a_seeded_529_with_one_tape_over_ten_runs() {
    // Goal: the openai (Chat Completions) and anthropic SDK agents' first call meets a seeded
    // 529 (overloaded); each SDK retries it on its own and the agent passes, two model answers
    // as without the fault; ten runs of seed 0 write one sha256 per agent, with the 529 on it.
    let Some(python) = python() else { return };
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/sdk-529/scenario.toml");
    for agent in ["openai_agent.py", "anthropic_agent.py"] {
        let dir =
            std::env::temp_dir().join(format!("simtape-serve-529-{agent}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut digests = std::collections::BTreeSet::new();
        for run in 0..10 {
            let tape = dir.join(format!("{run}.tape"));
            let served = serve_scenario(&python, &scenario, agent, &tape);
            assert_eq!(served.verdict, "ok", "{agent}: run {run} passes");
            assert_eq!(
                served.model_calls, 2,
                "{agent}: the 529 is no answer of the model"
            );
            digests.insert(simtape::tape::sha256_hex(&served.tape));
        }
        assert_eq!(digests.len(), 1, "{agent}: ten runs, one tape: {digests:?}");
        let tape = std::fs::read(dir.join("0.tape")).unwrap();
        let mut reader = simtape::tape::TapeReader::new(&tape[..]).unwrap();
        let mut faulted = false;
        while let Some(record) = reader.next_record().unwrap() {
            let json = simtape::tape::payload_to_json(&record.payload).unwrap();
            faulted |= json.to_string().contains(r#"{"Http":[529,"#);
        }
        assert!(faulted, "{agent}: the 529 is on the tape");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn a_changed_fixture_is_named_by_the_diff_at_the_first_request_that_parts() {
    // Goal: two runs of the openai SDK agent whose fixtures differ in the first answer's text
    // part where the model's reply does; the oracle (`simtape diff`) names that record and
    // its actor, then the agent's request that carried the answer back.
    let Some(python) = python() else { return };
    let dir = std::env::temp_dir().join(format!("simtape-serve-diff-{}", std::process::id()));
    let changed = dir.join("changed");
    std::fs::create_dir_all(&changed).unwrap();
    let example = repo().join("examples/agents/python-sdk");
    for file in ["scenario.toml", "llm.jsonl"] {
        std::fs::copy(example.join(file), changed.join(file)).unwrap();
    }
    let fixture = std::fs::read_to_string(changed.join("llm.jsonl")).unwrap();
    let first_text = fixture
        .lines()
        .find_map(|line| {
            let entry: serde_json::Value = serde_json::from_str(line).ok()?;
            entry.pointer("/response/text")?.as_str().map(String::from)
        })
        .expect("the fixture answers with text");
    std::fs::write(
        changed.join("llm.jsonl"),
        fixture.replacen(&first_text, "A different first answer.", 1),
    )
    .unwrap();
    let a = serve_once(&python, "openai_agent.py", &dir.join("a.tape"));
    let b = serve_scenario(
        &python,
        &changed.join("scenario.toml"),
        "openai_agent.py",
        &dir.join("b.tape"),
    );
    assert_eq!((a.verdict.as_str(), b.verdict.as_str()), ("ok", "ok"));
    let report = simtape::oracle::diff_paths(
        &dir.join("a.tape"),
        &dir.join("b.tape"),
        simtape::oracle::Mode::Exact,
    )
    .unwrap();
    let text = report.render_text();
    assert_ne!(report.exit_code(), 0, "{text}");
    // The first answer is where the runs part; the agent's next request (an input of the
    // gateway, carrying that answer back) parts after it.
    assert!(
        text.contains("actor llm, kind reply"),
        "the LLM's reply is where they part: {text}"
    );
    assert!(
        text.contains("gateway 1"),
        "then the agent's request: {text}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
