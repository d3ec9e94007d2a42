//! The pytest plugin (`python/simtape-pytest`) and the `serve --in-process` mode it drives:
//! the plugin's own tests (python/simtape-pytest/tests) run under pytest against this
//! binary, in the venv `.ci/run` makes (`SIMTAPE_PYTEST_PYTHON`); the mode itself is checked
//! without Python.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::Stdio;

use crate::clients::missing;
use crate::common::{repo, scratch, simtape};

/// The venv python with the plugin and its test requirements, or `None` after [`missing`].
fn pytest_python() -> Option<PathBuf> {
    let python = std::env::var_os("SIMTAPE_PYTEST_PYTHON").map(PathBuf::from);
    let ready = python.as_ref().is_some_and(|python| {
        std::process::Command::new(python)
            .args(["-c", "import simtape_pytest, xdist, agents"])
            .output()
            .is_ok_and(|o| o.status.success())
    });
    if ready {
        return python;
    }
    missing(
        "the pytest plugin's venv is missing (SIMTAPE_PYTEST_PYTHON with simtape_pytest, \
         pytest-xdist and openai-agents). Make it: `python3 -m venv V && V/bin/pip install \
         -r python/simtape-pytest/tests/requirements.txt ./python/simtape-pytest`, then set \
         SIMTAPE_PYTEST_PYTHON=V/bin/python"
            .to_string(),
    );
    None
}

#[test]
fn the_plugin_tests_pass_under_pytest_against_this_binary() {
    let Some(python) = pytest_python() else {
        return;
    };
    let base = scratch("pytest_plugin", "plugin_tests");
    let output = std::process::Command::new(python)
        .current_dir(repo())
        .args([
            "-m",
            "pytest",
            "python/simtape-pytest/tests",
            "-p",
            "no:cacheprovider",
        ])
        .arg(format!("--basetemp={}", base.display()))
        .env("SIMTAPE_BIN", env!("CARGO_BIN_EXE_simtape"))
        .env_remove("SIMTAPE_SEED")
        .output()
        .unwrap();
    let shown = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "pytest failed:\n{shown}");
    assert!(shown.contains(" passed"), "{shown}");
}

#[test]
fn an_in_process_agent_that_never_called_the_model_fails_saying_so() {
    let dir = scratch("pytest_plugin", "no_model_calls");
    let tape = dir.join("silent.tape");
    let mut child = simtape()
        .arg("serve")
        .arg(repo().join("python/examples/agents-sdk/scenario.toml"))
        .args(["--seed", "0", "--in-process", "--tape"])
        .arg(&tape)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut seen = String::new();
    while !seen.contains("serve: waiting for the agent") {
        let mut line = String::new();
        assert!(
            stdout.read_line(&mut line).unwrap() > 0,
            "serve ended early: {seen}"
        );
        seen.push_str(&line);
    }
    assert!(
        seen.contains("  export OPENAI_BASE_URL=http://127.0.0.1:"),
        "{seen}"
    );
    child.stdin.take().unwrap().write_all(b"exit 0\n").unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(1), "{rest}");
    assert!(
        rest.contains("verdict: fail: no model calls: the agent never called the model"),
        "{rest}"
    );
    // Its end is on the tape: a replay without the agent gives the same bytes, verdict
    // included.
    let replay = simtape()
        .arg("replay")
        .arg(&tape)
        .arg("--scenario")
        .arg(repo().join("python/examples/agents-sdk/scenario.toml"))
        .output()
        .unwrap();
    let replayed = String::from_utf8_lossy(&replay.stdout);
    assert!(replay.status.success(), "{replayed}");
    assert!(replayed.contains("replay: byte-identical"), "{replayed}");
}
