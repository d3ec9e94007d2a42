//! docs/frameworks.md's Python examples, each run under the pytest plugin against this
//! binary: Pydantic AI (python/examples/pydantic-ai) and LangGraph (python/examples/langgraph),
//! in the venv `.ci/run` makes from python/examples/requirements.txt
//! (`SIMTAPE_FRAMEWORKS_PYTHON`). The OpenAI Agents SDK example runs in the plugin's own
//! tests (pytest_plugin.rs) and the Vercel AI SDK one in node_helper.rs.

use std::path::PathBuf;

use crate::clients::missing;
use crate::common::{repo, scratch, text};

/// The venv python with the plugin and the frameworks, or `None` after [`missing`].
fn frameworks_python() -> Option<PathBuf> {
    let python = std::env::var_os("SIMTAPE_FRAMEWORKS_PYTHON").map(PathBuf::from);
    let ready = python.as_ref().is_some_and(|python| {
        std::process::Command::new(python)
            .args([
                "-c",
                "import simtape_pytest, pydantic_ai, langgraph, langchain_openai",
            ])
            .output()
            .is_ok_and(|o| o.status.success())
    });
    if ready {
        return python;
    }
    missing(
        "the framework examples' venv is missing (SIMTAPE_FRAMEWORKS_PYTHON with simtape_pytest, \
         pydantic-ai and langgraph). Make it: `python3 -m venv V && V/bin/pip install -r \
         python/examples/requirements.txt ./python/simtape-pytest`, then set \
         SIMTAPE_FRAMEWORKS_PYTHON=V/bin/python"
            .to_string(),
    );
    None
}

/// Runs the example `name` under pytest at its ten seeds and asserts what docs/frameworks.md
/// says: seed 3 draws three 429s in a row on one call and fails with its reproduce command,
/// the other nine pass.
fn runs_as_documented(name: &str, test: &str) {
    let Some(python) = frameworks_python() else {
        return;
    };
    let tapes = scratch("frameworks", name);
    let output = std::process::Command::new(python)
        .current_dir(repo().join("python/examples").join(name))
        // One argument: pytest takes a bare path among its arguments into its rootdir.
        .args(["-m", "pytest", "-p", "no:cacheprovider"])
        .arg(format!("--simtape-tapes={}", tapes.display()))
        .env("SIMTAPE_BIN", env!("CARGO_BIN_EXE_simtape"))
        .env_remove("SIMTAPE_SEED")
        .output()
        .unwrap();
    let shown = text(&output);
    assert_eq!(output.status.code(), Some(1), "{shown}");
    assert!(shown.contains("1 failed, 9 passed"), "{shown}");
    assert!(
        shown.contains("simtape: seed 3 of scenario.toml: FAIL: the agent exited with status 1"),
        "{shown}"
    );
    assert!(
        shown.contains(&format!(
            "reproduce: SIMTAPE_SEED=3 python -m pytest 'test_agent.py::{test}'"
        )),
        "{shown}"
    );
    // What the test raised is the exception's own line (the 429 through the framework's
    // error type), not a note a framework adds after it (LangGraph's carries a run id).
    let raised = shown
        .lines()
        .find_map(|line| line.trim().strip_prefix("the test raised: "))
        .unwrap_or_else(|| panic!("no raised line:\n{shown}"));
    assert!(
        raised.contains("Error: status_code: 429") || raised.contains("Error: Error code: 429"),
        "{raised}\n{shown}"
    );
}

#[test]
fn the_pydantic_ai_example_runs_ten_seeds_under_pytest() {
    // Goal: a Pydantic AI agent on the openai client, unchanged, is served by simtape under
    // the plugin; the seeded 429s fail exactly the seed the doc names.
    runs_as_documented("pydantic-ai", "test_the_agent_multiplies");
}

#[test]
fn the_langgraph_example_runs_ten_seeds_under_pytest() {
    // Goal: a LangGraph graph on langchain-openai, unchanged, is served by simtape under the
    // plugin; the seeded 429s fail exactly the seed the doc names.
    runs_as_documented("langgraph", "test_the_graph_multiplies");
}
