//! Claude Code (npm `@anthropic-ai/claude-code`), unchanged, under `simtape serve`: it writes
//! a file through a Write tool call whose path names its working directory as `<cwd>`, it
//! retries a 529 on its own, and two runs of one seed give the same tape bytes.
//!
//! The binary comes from `engine/cli/tests/peers/agents` (`npm ci` there; `.ci/run` does it
//! and exports SIMTAPE_AGENT_PEERS_DIR). Without it this test prints a skip notice, and fails
//! when CI is true.

use std::path::{Path, PathBuf};
use std::time::Duration;

use simtape_agent::EvalScenario;
use simtape_serve::{AgentCommand, Normalizer, ServeOptions, SETTLE_DEFAULT};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn claude() -> Option<PathBuf> {
    let dir = std::env::var_os("SIMTAPE_AGENT_PEERS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("engine/cli/tests/peers/agents/node_modules"));
    let binary = dir.join("@anthropic-ai/claude-code-linux-x64/claude");
    if binary.is_file() {
        return Some(binary);
    }
    if matches!(std::env::var("CI").as_deref(), Ok("true") | Ok("1")) {
        panic!(
            "{} is missing: run npm ci --prefix engine/cli/tests/peers/agents",
            binary.display()
        );
    }
    eprintln!("skip: Claude Code is not installed (npm ci --prefix engine/cli/tests/peers/agents)");
    None
}

struct Session {
    tape: Vec<u8>,
    verdict: String,
    written: Option<String>,
    log: String,
}

fn serve_once(claude: &Path, scratch: &Path, tape: &Path) -> Session {
    let (home, work) = (scratch.join("home"), scratch.join("work"));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&work).unwrap();
    let eval = EvalScenario::load(&repo().join("examples/agents/claude-code/scenario.toml"))
        .expect("the example scenario loads");
    let mut builder = eval.builder(0);
    builder.tape(tape);
    let log = scratch.join("session.jsonl");
    let options = ServeOptions {
        addr: "127.0.0.1:0".parse().unwrap(),
        settle: SETTLE_DEFAULT,
        command: Some(AgentCommand {
            program: claude.display().to_string(),
            args: [
                "-p",
                "Create hello.txt saying hello.",
                "--output-format",
                "stream-json",
                "--verbose",
                "--permission-mode",
                "acceptEdits",
                "--allowedTools",
                "Write",
            ]
            .map(String::from)
            .to_vec(),
            env: vec![
                ("HOME".into(), home.display().to_string()),
                (
                    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC".into(),
                    "1".into(),
                ),
            ],
            cwd: Some(work.clone()),
            timeout: Some(Duration::from_secs(180)),
        }),
        normalizer: Normalizer::agent_defaults(),
        session_log: Some(log.clone()),
    };
    let (_stop, stop) = smol::channel::bounded(1);
    let session = simtape_serve::serve(&mut builder, options, stop, |_| {}).expect("serves");
    assert!(!session.timed_out, "Claude Code finished in time");
    let report = session.report.expect("the run completes");
    Session {
        tape: std::fs::read(tape).unwrap(),
        verdict: report.output.verdict(),
        written: std::fs::read_to_string(work.join("hello.txt")).ok(),
        log: std::fs::read_to_string(log).unwrap(),
    }
}

#[test]
fn claude_code_runs_unchanged_retries_a_529_and_gives_identical_tapes() {
    // Goal: the real Claude Code binary, pointed at simtape serve, retries the injected 529,
    // runs the scripted Write in its own scratch directory, two runs of seed 0 (in two
    // different directories) write byte-identical tapes, and the tape replays without it.
    let Some(claude) = claude() else { return };
    let root = std::env::temp_dir().join(format!("simtape-claude-code-{}", std::process::id()));
    let first = serve_once(&claude, &root.join("one"), &root.join("one.tape"));
    assert_eq!(first.verdict, "ok");
    assert_eq!(first.written.as_deref(), Some("hello from simtape\n"));
    let requests = first.log.lines().count();
    assert!(
        requests >= 3,
        "the 529, its retry, and the turn after the tool: {requests}"
    );
    let second = serve_once(&claude, &root.join("two"), &root.join("two.tape"));
    assert_eq!(second.verdict, "ok");
    assert!(
        first.tape == second.tape,
        "two runs of one seed give the same tape bytes"
    );
    assert!(
        !first.log.contains("<cwd>"),
        "the session log keeps the raw requests"
    );
    std::fs::remove_dir_all(&root).unwrap();
}
