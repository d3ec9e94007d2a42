//! The node helper (`node/simtape-node-test`): its tests, a Vercel AI SDK agent over ten
//! seeds and agents on the official `openai` and `@anthropic-ai/sdk` packages over three
//! each under `node --test`, run against this binary, twice, with the same tapes; and the
//! Vercel AI SDK agent under vitest. Its
//! packages come from its lockfile (`npm ci --prefix node/simtape-node-test`, as `.ci/run`
//! does).

use crate::clients::missing;
use crate::common::{files, repo, scratch};

#[test]
fn a_vercel_ai_sdk_agent_passes_ten_seeds_under_node_test_with_the_same_tapes_twice() {
    let package = repo().join("node/simtape-node-test");
    if !package.join("node_modules/ai").is_dir() {
        missing(
            "the node helper's packages are missing: run `npm ci --prefix node/simtape-node-test`"
                .to_string(),
        );
        return;
    }
    let mut tapes = Vec::new();
    for round in ["first", "second"] {
        let dir = scratch("node_helper", round);
        let output = std::process::Command::new("node")
            .current_dir(&package)
            .args(["--test", "test/"])
            .env("SIMTAPE_BIN", env!("CARGO_BIN_EXE_simtape"))
            .env("SIMTAPE_NODE_TAPES", &dir)
            .env_remove("SIMTAPE_SEED")
            .output()
            .unwrap();
        let shown = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "node --test failed:\n{shown}");
        assert!(shown.contains("# pass 18\n"), "{shown}");
        tapes.push(files(&dir));
    }
    assert_eq!(tapes[0].len(), 17, "a tape per seed and the silent run's");
    assert!(
        tapes[0] == tapes[1],
        "two runs of the ten seeds wrote the same tapes"
    );
}

#[test]
fn the_vercel_ai_sdk_agent_passes_five_seeds_under_vitest() {
    // Goal: `simtapeTest` registers one vitest test per seed with vitest's own `test`, and
    // each seed's agent passes and leaves its tape.
    let package = repo().join("node/simtape-node-test");
    if !package.join("node_modules/vitest").is_dir() {
        missing(
            "vitest is missing from the node helper: run `npm ci --prefix node/simtape-node-test`"
                .to_string(),
        );
        return;
    }
    let dir = scratch("node_helper", "vitest");
    let output = std::process::Command::new(package.join("node_modules/.bin/vitest"))
        .current_dir(&package)
        .args(["run", "vitest/"])
        .env("SIMTAPE_BIN", env!("CARGO_BIN_EXE_simtape"))
        .env("SIMTAPE_NODE_TAPES", &dir)
        .env("NO_COLOR", "1")
        .env_remove("SIMTAPE_SEED")
        .output()
        .unwrap();
    let shown = crate::common::text(&output);
    assert!(output.status.success(), "vitest failed:\n{shown}");
    assert!(shown.contains("6 passed"), "{shown}");
    assert_eq!(files(&dir).len(), 5, "a tape per seed");
}
