//! Stream faults (`[[faults.llm]]` with `stream = "cut"` or `"stall"`) as the official Python
//! SDKs meet them under `serve`: a cut stream is an error the SDK raises while the agent reads
//! it, a stalled stream runs into the SDK's read timeout, a plain (not streamed) call under a
//! stream rule gets the whole answer, and each session's tape is byte-identical across two
//! runs and replays without the agent.
//!
//! The SDKs come from SIMTAPE_SERVE_PYTHON (see `sdk_agents.rs`); without it these tests print
//! a skip notice, and fail when CI is true.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use simtape_agent::EvalScenario;
use simtape_serve::{AgentCommand, BodyNormalizer, ServeOptions, SETTLE_DEFAULT};

/// The fixture's one answer.
const ANSWER: &str = "Streams can break; this one may.";

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

/// What one session left: its tape, verdict and model calls, and what the agent saw.
struct Served {
    tape: Vec<u8>,
    verdict: String,
    model_calls: u64,
    requests: usize,
    seen: Value,
}

fn serve_once(python: &str, scenario: &str, sdk: &str, dir: &Path, name: &str) -> Served {
    let eval = EvalScenario::load(&data(scenario)).expect("the test scenario loads");
    let mut builder = eval.builder(0);
    let tape = dir.join(format!("{name}.tape"));
    builder.tape(&tape);
    let (seen, log) = (
        dir.join(format!("{name}.json")),
        dir.join(format!("{name}.jsonl")),
    );
    let args = [data("stream_faults.py").display().to_string(), sdk.into()];
    let options = ServeOptions {
        addr: "127.0.0.1:0".parse().unwrap(),
        settle: SETTLE_DEFAULT,
        command: Some(AgentCommand {
            program: python.to_string(),
            args: [&args[..], &[seen.display().to_string()]].concat(),
            env: Vec::new(),
            cwd: None,
            timeout: Some(Duration::from_secs(120)),
        }),
        normalizer: BodyNormalizer::agent_defaults(),
        session_log: Some(log.clone()),
        sandbox: None,
    };
    let (_stop, stop) = smol::channel::bounded(1);
    let session = simtape_serve::serve(&mut builder, options, stop, |_| {}).expect("serves");
    assert!(!session.timed_out, "{sdk} finished in time");
    let report = session.report.expect("the run completes");
    let seen = std::fs::read_to_string(&seen)
        .unwrap_or_else(|e| panic!("{sdk} wrote nothing ({e}): {}", report.output.verdict()));
    Served {
        tape: std::fs::read(&tape).unwrap(),
        verdict: report.output.verdict(),
        model_calls: report.output.model_calls,
        requests: std::fs::read_to_string(log).unwrap().lines().count(),
        seen: serde_json::from_str(&seen).unwrap(),
    }
}

/// Serves `scenario` to the `sdk` agent twice and replays the first tape; checks what every
/// stream rule's session shares (the broken stream raised one of `raised`), and returns the
/// first run's result for the rest.
fn check(scenario: &str, sdk: &str, raised: &[&str]) -> Option<Served> {
    let python = common::python()?;
    let dir = std::env::temp_dir().join(format!(
        "simtape-stream-{sdk}-{scenario}-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let first = serve_once(&python, scenario, sdk, &dir, "a");
    assert_eq!(first.verdict, "ok", "{sdk}: {}", first.seen);
    assert_eq!(
        first.seen["plain"], ANSWER,
        "{sdk}: a plain call under a stream rule arrives whole"
    );
    let streams = first.seen["streams"].as_array().unwrap();
    assert_eq!(
        streams.len(),
        2,
        "{sdk}: the broken stream, then one whole: {}",
        first.seen
    );
    let error = streams[0]["error"].as_str().unwrap_or("nothing");
    assert!(
        raised.contains(&error),
        "{sdk} raised {error}: {}",
        first.seen
    );
    let partial = streams[0]["text"].as_str().unwrap();
    assert!(
        ANSWER.starts_with(partial) && partial.len() < ANSWER.len(),
        "{sdk}: the broken stream gave part of the answer: {partial:?}"
    );
    assert_eq!(streams[1]["error"], Value::Null, "{sdk}: {}", first.seen);
    assert_eq!(streams[1]["text"], ANSWER);
    assert_eq!(
        first.model_calls, 3,
        "{sdk}: each call answered by the model"
    );
    assert!(
        contains(&first.tape, b"stream_fault"),
        "{sdk}: the tape records the broken stream"
    );

    let second = serve_once(&python, scenario, sdk, &dir, "b");
    assert!(
        first.tape == second.tape,
        "{sdk}: two runs of one seed give the same tape bytes"
    );
    let eval = EvalScenario::load(&data(scenario)).unwrap();
    common::assert_replays(&eval, &dir.join("a.tape"), &dir.join("replay.tape"));
    std::fs::remove_dir_all(&dir).unwrap();
    Some(first)
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle)
}

/// Checks a cut session of `sdk`: the SDK raised one of `raised` while the agent read the
/// stream, and did not send the request again.
fn check_cut(sdk: &str, raised: &[&str]) {
    if let Some(cut) = check("stream_cut.toml", sdk, raised) {
        assert_eq!(
            cut.requests, 3,
            "{sdk}: the SDK does not resend a stream that broke"
        );
    }
}

/// Checks a stalled session of `sdk`: the SDK's read timeout fired as one of `raised`.
fn check_stall(sdk: &str, raised: &[&str]) {
    check("stream_stall.toml", sdk, raised);
}

#[test]
fn openai_chat_raises_on_a_cut_stream() {
    // Goal: a Chat Completions stream cut after its first event (no `[DONE]`, the connection
    // closed mid-body) is an error the openai SDK raises while the agent iterates.
    check_cut("openai", &["RemoteProtocolError", "APIConnectionError"]);
}

#[test]
fn openai_responses_raises_on_a_cut_stream() {
    // Goal: a Responses stream cut before `response.completed` is an error the openai SDK
    // raises while the agent iterates.
    check_cut("responses", &["RemoteProtocolError", "APIConnectionError"]);
}

#[test]
fn anthropic_raises_on_a_cut_stream() {
    // Goal: a Messages stream cut before `message_stop` is an error the anthropic SDK raises
    // while the agent reads the text stream.
    check_cut("anthropic", &["RemoteProtocolError", "APIConnectionError"]);
}

#[test]
fn gemini_raises_on_a_cut_stream() {
    // Goal: a Gemini stream cut before its chunk with the finish reason is an error the
    // google-genai SDK raises while the agent iterates.
    check_cut("gemini", &["RemoteProtocolError"]);
}

#[test]
fn gemini_times_out_on_a_stalled_stream() {
    // Goal: a Gemini stream that stalls runs into the google-genai SDK's read timeout.
    check_stall("gemini", &["ReadTimeout"]);
}

#[test]
fn openai_chat_times_out_on_a_stalled_stream() {
    // Goal: a Chat Completions stream that stalls runs into the openai SDK's read timeout.
    check_stall("openai", &["ReadTimeout", "APITimeoutError"]);
}

#[test]
fn openai_responses_times_out_on_a_stalled_stream() {
    // Goal: a Responses stream that stalls runs into the openai SDK's read timeout.
    check_stall("responses", &["ReadTimeout", "APITimeoutError"]);
}

#[test]
fn anthropic_times_out_on_a_stalled_stream() {
    // Goal: a Messages stream that stalls runs into the anthropic SDK's read timeout.
    check_stall("anthropic", &["ReadTimeout", "APITimeoutError"]);
}
