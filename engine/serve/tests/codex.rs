//! Codex CLI (npm `@openai/codex`), unchanged, under `simtape serve`: through the OpenAI
//! Responses endpoint (always streamed), it retries a 429 on its own, runs the scripted
//! exec_command that writes a file in its own scratch directory, answers, and two runs of
//! one seed give the same tape bytes, which replay without it.
//!
//! The binary comes from `engine/cli/tests/peers/agents` (`npm ci` there; `.ci/run` does it
//! and exports SIMTAPE_AGENT_PEERS_DIR); `examples/agents/codex/codex.sh` points it at serve.
//! Without it this test prints a skip notice, and fails when CI is true.

mod common;

use std::path::{Path, PathBuf};

use common::{repo, Agent, Session};

fn codex() -> Option<PathBuf> {
    common::agent_peer(
        "@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex",
        "@openai/codex",
    )
}

/// Runs Codex through the example's `codex.sh`, with CODEX_HOME beside HOME in the scratch
/// directory (so it is normalized with it).
fn serve_once(codex: &Path, scratch: &Path, tape: &Path) -> Session {
    let agent = Agent {
        program: repo()
            .join("examples/agents/codex/codex.sh")
            .display()
            .to_string(),
        args: vec!["Create hello.txt saying hello.".into()],
        env: vec![
            ("CODEX".into(), codex.display().to_string()),
            (
                "CODEX_HOME".into(),
                scratch.join("home").display().to_string(),
            ),
        ],
    };
    common::serve_in_scratch(&common::example("codex"), agent, scratch, tape)
}

#[test]
fn codex_runs_unchanged_and_gives_identical_tapes() {
    // Goal: the real Codex binary, pointed at simtape serve's Responses endpoint, retries the
    // injected 429 and exits 0 after running the scripted exec_command in its own scratch
    // directory; two runs of seed 0 (in two directories, with two CODEX_HOMEs) write
    // byte-identical tapes, and the tape replays without Codex.
    let Some(codex) = codex() else { return };
    let root = std::env::temp_dir().join(format!("simtape-codex-{}", std::process::id()));
    let first = serve_once(&codex, &root.join("one"), &root.join("one.tape"));
    assert_eq!(first.verdict, "ok");
    let requests = first.log.lines().count();
    assert_eq!(
        requests, 3,
        "the 429, Codex's own retry, and the turn after the tool"
    );
    assert_eq!(first.model_calls, 2, "the tool call, then the answer");
    assert_eq!(
        first.written("hello.txt").as_deref(),
        Some("hello from simtape\n")
    );
    let second = serve_once(&codex, &root.join("two"), &root.join("two.tape"));
    assert_eq!(second.verdict, "ok");
    assert!(
        first.tape == second.tape,
        "two runs of one seed give the same tape bytes"
    );
    assert!(
        first
            .log
            .contains(&root.join("one/work").display().to_string()),
        "the session log keeps the raw requests"
    );

    let mut builder = common::example("codex").builder(0);
    builder.tape(root.join("replay.tape"));
    let replayed = simtape_serve::replay(&mut builder, &root.join("one.tape"), &[])
        .unwrap()
        .unwrap();
    assert_eq!(replayed.output.verdict(), "ok");
    assert!(
        std::fs::read(root.join("replay.tape")).unwrap() == first.tape,
        "the tape replays to the same bytes"
    );
    std::fs::remove_dir_all(&root).unwrap();
}
