//! Bad input gets the provider's answer and loses nothing: an unknown endpoint, a body that
//! is not JSON or not the endpoint's shape, a request no fixture matches; a port in use and a
//! missing agent are errors before anything runs. The agent is a standard-library Python
//! script, so this needs no peer beyond `python3`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use simtape_agent::EvalScenario;
use simtape_serve::{AgentCommand, Normalizer, ServeError, ServeOptions, SETTLE_DEFAULT};

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
        normalizer: Normalizer::agent_defaults(),
        session_log: None,
        sandbox: None,
    }
}

#[test]
fn bad_requests_get_the_providers_error_shapes_and_an_unmatched_one_ends_in_error() {
    // Goal: 404 for an unknown endpoint, 400 naming the problem for bad JSON and a wrong
    // shape, 200 for the models and a matched call, 400 with the digest for an unmatched
    // call, and the run's verdict names that digest.
    let dir = std::env::temp_dir().join(format!("simtape-serve-endpoints-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("probe.json");
    let eval = EvalScenario::load(&data("endpoints.toml")).unwrap();
    let mut builder = eval.builder(0);
    builder.tape_in_memory();
    let probe = options(
        "127.0.0.1:0",
        "python3",
        vec![data("probe.py").display().to_string()],
        vec![("PROBE_OUT".into(), out.display().to_string())],
    );
    let (_stop, stop) = smol::channel::bounded(1);
    let session = simtape_serve::serve(&mut builder, probe, stop, |_| {}).unwrap();
    let report = session.report.unwrap();
    let results: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
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
    assert_eq!(report.output.requests, 6);
    assert_eq!(report.output.model_calls, 1);
    assert_eq!(
        report.output.verdict(),
        format!("error: unmatched model request sha256:{digest}")
    );
    std::fs::remove_dir_all(&dir).unwrap();
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
