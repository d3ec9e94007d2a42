//! Bad input gets the provider's answer and loses nothing: an unknown endpoint, a body that
//! is not JSON or not the endpoint's shape, a request no fixture matches; a port in use and a
//! missing agent are errors before anything runs. The agent is a standard-library Python
//! script, so this needs no peer beyond `python3`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use simtape_agent::EvalScenario;
use simtape_serve::{AgentCommand, BodyNormalizer, ServeError, ServeOptions, SETTLE_DEFAULT};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

fn options(
    addr: &str,
    program: &str,
    args: Vec<String>,
    env: Vec<(String, String)>,
) -> ServeOptions {
    ServeOptions {
        addr: addr.parse().unwrap(),
        settle: SETTLE_DEFAULT,
        command: Some(AgentCommand {
            program: program.into(),
            args,
            env,
            cwd: None,
            timeout: Some(Duration::from_secs(60)),
        }),
        normalizer: BodyNormalizer::agent_defaults(),
        session_log: None,
        sandbox: None,
    }
}

/// Serves the endpoints scenario (seed 0) to the standard-library `script` from tests/data;
/// returns what it wrote (per request, its status and body) and the gateway's outcome.
fn probe(script: &str) -> (Value, simtape_serve::GatewayOutcome) {
    let dir = std::env::temp_dir().join(format!(
        "simtape-serve-endpoints-{script}-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("probe.json");
    let eval = EvalScenario::load(&data("endpoints.toml")).unwrap();
    let mut builder = eval.builder(0);
    builder.tape_in_memory();
    let probe = options(
        "127.0.0.1:0",
        "python3",
        vec![data(script).display().to_string()],
        vec![("PROBE_OUT".into(), out.display().to_string())],
    );
    let (_stop, stop) = smol::channel::bounded(1);
    let session = simtape_serve::serve(&mut builder, probe, stop, |_| {}).unwrap();
    let report = session.report.unwrap();
    let results = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    (results, report.output)
}

#[test]
fn bad_requests_get_the_providers_error_shapes_and_an_unmatched_one_ends_in_error() {
    // Goal: 404 for an unknown endpoint, 400 naming the problem for bad JSON and a wrong
    // shape, 200 for the models and a matched call, 400 with the digest for an unmatched
    // call, and the run's verdict names that digest.
    let (results, output) = probe("probe.py");
    let status = |name: &str| results[name][0].as_u64().unwrap();
    let body = |name: &str| results[name][1].as_str().unwrap().to_string();
    assert_eq!(status("unknown"), 404);
    assert!(body("unknown").contains("has no endpoint POST /v1/nope"));
    assert_eq!(status("not_json"), 400);
    assert!(body("not_json").contains(r#""type":"invalid_request_error""#));
    assert_eq!(status("wrong_shape"), 400);
    assert!(
        body("wrong_shape").contains("messages"),
        "{}",
        body("wrong_shape")
    );
    assert_eq!(status("models"), 200);
    assert_eq!(status("hello"), 200);
    assert!(
        body("hello").contains(r#""content":"Hi.""#),
        "{}",
        body("hello")
    );
    assert_eq!(status("unmatched"), 400);
    let unmatched = body("unmatched");
    let digest = unmatched.split("sha256:").nth(1).unwrap()[..64].to_string();
    assert_eq!(output.requests, 6);
    assert_eq!(output.model_calls, 1);
    assert_eq!(
        output.verdict(),
        format!("error: unmatched model request sha256:{digest}")
    );
}

#[test]
fn gemini_paths_answer_in_googles_shapes_and_an_unmatched_call_ends_in_error() {
    // Goal: under Google's paths an unknown method or path is Google's 404 JSON
    // (`NOT_FOUND`), bad bodies are 400 `INVALID_ARGUMENT` naming the problem, the model list,
    // a model, a token count and a matched call are 200 in Google's shapes, and an unmatched
    // call is Google's error shape with the digest and a hint, the run ERROR.
    let (results, output) = probe("gemini_probe.py");
    let status = |name: &str| results[name][0].as_u64().unwrap();
    let body =
        |name: &str| -> Value { serde_json::from_str(results[name][1].as_str().unwrap()).unwrap() };
    for (name, code, google) in [
        ("unknown_method", 404, "NOT_FOUND"),
        ("unknown_path", 404, "NOT_FOUND"),
        ("not_json", 400, "INVALID_ARGUMENT"),
        ("wrong_shape", 400, "INVALID_ARGUMENT"),
        ("unmatched", 400, "INVALID_ARGUMENT"),
    ] {
        assert_eq!(status(name), code, "{name}");
        let error = &body(name)["error"];
        assert_eq!(error["code"], code, "{name}: {error}");
        assert_eq!(error["status"], google, "{name}: {error}");
    }
    assert!(body("unknown_method")["error"]["message"]
        .as_str()
        .unwrap()
        .contains(":embedContent"));
    assert!(body("wrong_shape")["error"]["message"]
        .as_str()
        .unwrap()
        .contains("an array at contents"));
    assert_eq!(body("models")["models"][0]["name"], "models/simtape");
    assert_eq!(body("model")["name"], "models/gemini-2.5-flash");
    assert!(body("count")["totalTokens"].as_u64().unwrap() > 0);
    let hello = body("hello");
    assert_eq!(status("hello"), 200);
    assert_eq!(hello["candidates"][0]["content"]["parts"][0]["text"], "Hi.");
    assert_eq!(hello["candidates"][0]["finishReason"], "STOP");
    assert_eq!(
        hello["modelVersion"], "gemini-2.5-flash",
        "the model of the path"
    );
    let unmatched = body("unmatched")["error"]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        unmatched.contains("docs/llm-fixtures.md"),
        "a hint: {unmatched}"
    );
    let digest = unmatched.split("sha256:").nth(1).unwrap()[..64].to_string();
    assert_eq!(output.model_calls, 1);
    assert_eq!(
        output.verdict(),
        format!("error: unmatched model request sha256:{digest}")
    );
}

#[test]
fn a_port_in_use_and_a_missing_agent_are_named_errors() {
    // Goal: both fail before the run starts, naming the address or the program.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let eval = EvalScenario::load(&data("endpoints.toml")).unwrap();
    let (_stop, stop) = smol::channel::bounded(1);
    let busy = simtape_serve::serve(
        &mut eval.builder(0),
        options(&addr, "true", Vec::new(), Vec::new()),
        stop.clone(),
        |_| {},
    );
    assert!(matches!(busy, Err(ServeError::Bind { .. })), "{busy:?}");
    let missing = simtape_serve::serve(
        &mut eval.builder(0),
        options("127.0.0.1:0", "/no/such/agent", Vec::new(), Vec::new()),
        stop,
        |_| {},
    );
    let Err(error @ ServeError::Spawn { .. }) = missing else {
        panic!("expected a spawn error, got {missing:?}");
    };
    assert!(error.to_string().contains("/no/such/agent"), "{error}");
}
