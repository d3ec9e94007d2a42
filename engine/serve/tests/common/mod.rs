//! What the tests of real agent CLIs share: the repository root, finding an installed agent
//! binary among the npm peers, and one serve session of an agent in a scratch directory.

// Each test binary uses a part of what is here.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use simtape_agent::EvalScenario;
use simtape_serve::{AgentCommand, BodyNormalizer, ServeOptions, SETTLE_DEFAULT};

/// Returns the repository's root.
pub(crate) fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Returns the agent binary at `binary` under the npm peers' `node_modules`
/// (SIMTAPE_AGENT_PEERS_DIR, else `engine/cli/tests/peers/agents/node_modules`), or `None`
/// after a skip notice when it is not installed; under CI it is a failure naming `package`.
pub(crate) fn agent_peer(binary: &str, package: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("SIMTAPE_AGENT_PEERS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("engine/cli/tests/peers/agents/node_modules"));
    let binary = dir.join(binary);
    if binary.is_file() {
        return Some(binary);
    }
    if in_ci() {
        panic!(
            "{} is missing: the npm package {package} is not installed (npm ci --prefix engine/cli/tests/peers/agents)",
            binary.display()
        );
    }
    eprintln!("skip: {package} is not installed (npm ci --prefix engine/cli/tests/peers/agents)");
    None
}

/// Returns the python that has the model SDKs (SIMTAPE_SERVE_PYTHON), or `None` after a skip
/// notice when there is none; under CI it is a failure naming the step that installs them.
pub(crate) fn python() -> Option<String> {
    match std::env::var("SIMTAPE_SERVE_PYTHON") {
        Ok(python) if !python.is_empty() => Some(python),
        _ if in_ci() => panic!(
            "SIMTAPE_SERVE_PYTHON is not set: .ci/run installs engine/serve/tests/peers/requirements.txt into a venv and exports it"
        ),
        _ => {
            eprintln!("skip: SIMTAPE_SERVE_PYTHON is not set (pip install -r engine/serve/tests/peers/requirements.txt)");
            None
        }
    }
}

/// Returns whether the tests run under CI, where a missing peer is a failure.
pub(crate) fn in_ci() -> bool {
    matches!(std::env::var("CI").as_deref(), Ok("true") | Ok("1"))
}

/// Asserts that `tape`, replayed through `scenario` (seed 0) into `replay_tape` without any
/// agent, ends `ok` and gives the same bytes.
pub(crate) fn assert_replays(scenario: &EvalScenario, tape: &Path, replay_tape: &Path) {
    let mut builder = scenario.builder(0);
    builder.tape(replay_tape);
    let replayed = simtape_serve::replay(&mut builder, tape, &[])
        .unwrap()
        .unwrap();
    assert_eq!(replayed.output.verdict(), "ok");
    assert!(
        std::fs::read(replay_tape).unwrap() == std::fs::read(tape).unwrap(),
        "{} replays to the same bytes",
        tape.display()
    );
}

/// Returns the example scenario `examples/agents/<name>/scenario.toml`, loaded.
pub(crate) fn example(name: &str) -> EvalScenario {
    EvalScenario::load(&repo().join(format!("examples/agents/{name}/scenario.toml")))
        .expect("the example scenario loads")
}

/// An agent process to serve: its program, arguments and extra environment.
pub(crate) struct Agent {
    pub(crate) program: String,
    pub(crate) args: Vec<String>,
    pub(crate) env: Vec<(String, String)>,
}

/// What one session left behind.
pub(crate) struct Session {
    pub(crate) tape: Vec<u8>,
    pub(crate) verdict: String,
    pub(crate) model_calls: u64,
    /// The agent's working directory (`<scratch>/work`).
    pub(crate) work: PathBuf,
    /// The raw requests, one JSON line each.
    pub(crate) log: String,
}

impl Session {
    /// Returns the text of the file `name` the agent left in its working directory.
    pub(crate) fn written(&self, name: &str) -> Option<String> {
        std::fs::read_to_string(self.work.join(name)).ok()
    }
}

/// Serves seed 0 of `scenario` to `agent`, which runs in `<scratch>/work` with HOME at
/// `<scratch>/home`, writing the tape to `tape`.
pub(crate) fn serve_in_scratch(
    scenario: &EvalScenario,
    agent: Agent,
    scratch: &Path,
    tape: &Path,
) -> Session {
    let (home, work) = (scratch.join("home"), scratch.join("work"));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&work).unwrap();
    let mut builder = scenario.builder(0);
    builder.tape(tape);
    let log = scratch.join("session.jsonl");
    let mut env = vec![("HOME".to_string(), home.display().to_string())];
    env.extend(agent.env);
    let options = ServeOptions {
        addr: "127.0.0.1:0".parse().unwrap(),
        settle: SETTLE_DEFAULT,
        command: Some(AgentCommand {
            program: agent.program,
            args: agent.args,
            env,
            cwd: Some(work.clone()),
            timeout: Some(Duration::from_secs(180)),
        }),
        normalizer: BodyNormalizer::agent_defaults(),
        session_log: Some(log.clone()),
        sandbox: None,
    };
    let (_stop, stop) = smol::channel::bounded(1);
    let session = simtape_serve::serve(&mut builder, options, stop, |_| {}).expect("serves");
    assert!(!session.timed_out, "the agent finished in time");
    let report = session.report.expect("the run completes");
    Session {
        tape: std::fs::read(tape).unwrap(),
        verdict: report.output.verdict(),
        model_calls: report.output.model_calls,
        work,
        log: std::fs::read_to_string(log).unwrap(),
    }
}
