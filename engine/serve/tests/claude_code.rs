//! Claude Code (npm `@anthropic-ai/claude-code`), unchanged, under `simtape serve`: it writes
//! a file through a Write tool call whose path names its working directory as `<cwd>`, it
//! retries a 529 on its own, and two runs of one seed give the same tape bytes.
//!
//! The binary comes from `engine/cli/tests/peers/agents` (`npm ci` there; `.ci/run` does it
//! and exports SIMTAPE_AGENT_PEERS_DIR). Without it this test prints a skip notice, and fails
//! when CI is true.

mod common;

use std::path::Path;

use common::{Agent, Session};

fn claude() -> Option<std::path::PathBuf> {
    common::agent_peer(
        "@anthropic-ai/claude-code-linux-x64/claude",
        "@anthropic-ai/claude-code",
    )
}

fn serve_once(claude: &Path, scratch: &Path, tape: &Path) -> Session {
    serve_scenario(&common::example("claude-code"), claude, scratch, tape)
}

fn serve_scenario(
    scenario: &simtape_agent::EvalScenario,
    claude: &Path,
    scratch: &Path,
    tape: &Path,
) -> Session {
    let agent = Agent {
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
        env: vec![(
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC".into(),
            "1".into(),
        )],
    };
    common::serve_in_scratch(scenario, agent, scratch, tape)
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
    assert_eq!(
        first.written("hello.txt").as_deref(),
        Some("hello from simtape\n")
    );
    let requests = first.log.lines().count();
    assert!(
        requests >= 3,
        "the 529, its retry, and the turn after the tool: {requests}"
    );
    assert_eq!(
        first.model_calls, 2,
        "the Write and the answer reached the model; the 529 did not"
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

#[test]
fn claude_code_retries_a_cut_stream() {
    // Goal: Claude Code's first model call streams back cut mid-body (a `stream = "cut"`
    // rule: no message_stop, the connection closed); Claude Code retries it on its own, the
    // retry is answered whole, it writes the file, and two runs give the same tape bytes,
    // which replay without it.
    let Some(claude) = claude() else { return };
    let scenario = simtape_agent::EvalScenario::load(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/claude-code-cut/scenario.toml"),
    )
    .unwrap();
    let root = std::env::temp_dir().join(format!("simtape-claude-cut-{}", std::process::id()));
    let first = serve_scenario(
        &scenario,
        &claude,
        &root.join("one"),
        &root.join("one.tape"),
    );
    assert_eq!(first.verdict, "ok");
    assert_eq!(
        first.written("hello.txt").as_deref(),
        Some("hello from simtape\n")
    );
    assert_eq!(
        (first.log.lines().count(), first.model_calls),
        (3, 3),
        "the cut Write turn, its retry, and the turn after the tool"
    );
    let second = serve_scenario(
        &scenario,
        &claude,
        &root.join("two"),
        &root.join("two.tape"),
    );
    assert!(
        first.tape == second.tape,
        "two runs of one seed give the same tape bytes"
    );
    common::assert_replays(&scenario, &root.join("one.tape"), &root.join("replay.tape"));
    std::fs::remove_dir_all(&root).unwrap();
}
