//! docs/quickstart.md, run: its agent is examples/quickstart/agent.py, and every block it
//! marks `<!-- quickstart: run -->` runs in order, in the agent's directory, with aimock on
//! loopback standing in for the provider, and ends with the exit code the mark names.

use std::path::Path;

use crate::common::{check_doc_block, repo, text};

/// The doc's runnable blocks, in order: (the shell text, the exit code it ends with).
fn runnable_blocks(doc: &str) -> Vec<(String, i32)> {
    let mut blocks = Vec::new();
    let mut rest = doc;
    while let Some(at) = rest.find("<!-- quickstart: run") {
        let mark_end = at + rest[at..].find("-->").unwrap();
        let code = if rest[at..mark_end].contains("exit 1") {
            1
        } else {
            0
        };
        let open = mark_end + rest[mark_end..].find("```sh\n").unwrap() + "```sh\n".len();
        let close = open + rest[open..].find("```").unwrap();
        blocks.push((rest[open..close].to_string(), code));
        rest = &rest[close..];
    }
    blocks
}

#[test]
fn the_quickstart_runs_from_record_to_a_failing_seed() {
    // Goal: a user following docs/quickstart.md gets what it says: the agent it shows is the
    // example's, `record` prints the next commands docs/cli.md shows, the recording passes
    // when replayed with the provider stopped, the sweep with a 429 rule fails the seeds the
    // doc lists (exit 1), the seed it reruns fails with the SDK's RateLimitError, and that
    // seed's tape replays.
    let agent = std::fs::read_to_string(repo().join("examples/quickstart/agent.py")).unwrap();
    check_doc_block(
        "docs/quickstart.md",
        "<!-- quickstart: agent.py -->",
        &agent,
    );
    let Some(python) = crate::record::sdk_python() else {
        return;
    };
    let Some((provider, port)) = crate::agents::aimock() else {
        return;
    };
    let mut provider = Some(provider);
    let project = crate::record::agent_project("quickstart");
    let doc = std::fs::read_to_string(repo().join("docs/quickstart.md")).unwrap();
    let blocks = runnable_blocks(&doc);
    assert_eq!(blocks.len(), 6, "{blocks:?}");
    let simtape = Path::new(env!("CARGO_BIN_EXE_simtape"));
    let path = format!(
        "{}:{}:{}",
        Path::new(&python).parent().unwrap().display(),
        simtape.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    for (index, (block, code)) in blocks.iter().enumerate() {
        let output = std::process::Command::new("sh")
            .args(["-c", block])
            .current_dir(&project)
            .env("PATH", &path)
            .env("OPENAI_API_KEY", "test-key")
            .env("OPENAI_BASE_URL", format!("http://127.0.0.1:{port}/v1"))
            .output()
            .unwrap();
        let shown = text(&output);
        assert_eq!(output.status.code(), Some(*code), "{block}\n{shown}");
        if index == 0 {
            // The provider is needed for the recording alone: every later step runs without.
            provider.take();
            let stdout = String::from_utf8_lossy(&output.stdout);
            let next = &stdout[stdout.find("\nrecorded ").expect("the summary") + 1..];
            check_doc_block("docs/cli.md", "then the next commands:", next);
        }
        if block.starts_with("simtape sweep") {
            let stdout = String::from_utf8_lossy(&output.stdout);
            assert!(stdout.contains("20 run(s), 16 passed"), "{shown}");
            let failures = &stdout[stdout.find("  failures by reason:").expect("failures")..];
            check_doc_block(
                "docs/quickstart.md",
                "<!-- quickstart: sweep output -->",
                failures,
            );
        }
        if block.starts_with("simtape run rec/scenario.toml --seed 3") {
            assert!(shown.contains("RateLimitError"), "{shown}");
        }
    }
}
