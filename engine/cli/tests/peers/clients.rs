//! Finding and running the real MCP clients the CLI tests drive (included with `#[path]` by
//! the test binaries that use them): the official Python SDK client (`SIMTAPE_MCP_PYTHON`)
//! and Claude Code (`SIMTAPE_AGENT_PEERS_DIR`), as `.ci/run` installs them. A missing client
//! is a skip notice locally and a failure under CI (`CI=true` or `CI=1`).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// Whether this run is CI: only `CI=true` or `CI=1` count.
pub(crate) fn under_ci() -> bool {
    matches!(std::env::var("CI").as_deref(), Ok("true" | "1"))
}

/// Reports a missing peer: panics under CI, prints a skip notice otherwise.
pub(crate) fn missing(what: String) {
    if under_ci() {
        panic!("{what}");
    }
    eprintln!("SKIP: {what}");
}

/// Finds the Python SDK client, or returns `None` after [`missing`].
pub(crate) fn python() -> Option<PathBuf> {
    let home = std::env::var("HOME").unwrap_or_default();
    let python = std::env::var_os("SIMTAPE_MCP_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(&home).join(".cache/simtape-mcp-venv/bin/python"));
    let ok = Command::new(&python)
        .args(["-c", "import mcp"])
        .output()
        .is_ok_and(|o| o.status.success());
    if ok {
        return Some(python);
    }
    missing(format!(
        "MCP Python client missing (`mcp` at {}). Install it: `python3 -m venv V && \
         V/bin/pip install -r engine/mcp/tests/peers/requirements.txt`, then set SIMTAPE_MCP_PYTHON=V/bin/python",
        python.display()
    ));
    None
}

/// Runs the Python SDK driver (engine/mcp/tests/peers/driver.py) in `mode` against the stdio
/// server `server` (a command line), calling `calls`, and returns its JSON report. The client
/// ends the server its own normal way when the session is over.
pub(crate) fn python_driver(python: &Path, mode: &str, calls: &Value, server: &[String]) -> Value {
    python_peer(python, "driver.py", mode, calls, server, &[])
}

/// Runs the Python client script `script` (in engine/mcp/tests/peers, with driver.py's
/// arguments) with extra environment `env`, and returns the JSON report it printed.
pub(crate) fn python_peer(
    python: &Path,
    script: &str,
    mode: &str,
    calls: &Value,
    server: &[String],
    env: &[(&str, &str)],
) -> Value {
    let driver = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../mcp/tests/peers")
        .join(script);
    let output = Command::new(python)
        .arg(driver)
        .args([mode, &calls.to_string(), "--"])
        .args(server)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "python client ({mode}) failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

/// Finds the Claude Code binary, or returns `None` after [`missing`]. The wrapper package's
/// postinstall may not have run, so the platform package's binary is run directly.
pub(crate) fn claude() -> Option<PathBuf> {
    agent_binary("Claude Code", "@anthropic-ai/claude-code-linux-x64/claude")
}

/// Finds the Codex binary (npm `@openai/codex`, whose platform package holds the native
/// binary), or returns `None` after [`missing`].
pub(crate) fn codex() -> Option<PathBuf> {
    agent_binary(
        "Codex",
        "@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex",
    )
}

/// Finds the OpenCode binary (npm `opencode-ai`, whose platform package holds the native
/// binary), or returns `None` after [`missing`].
pub(crate) fn opencode() -> Option<PathBuf> {
    agent_binary("OpenCode", "opencode-linux-x64/bin/opencode")
}

/// Finds Gemini CLI (npm `@google/gemini-cli`, a node script with its `#!/usr/bin/env node`),
/// or returns `None` after [`missing`].
pub(crate) fn gemini_cli() -> Option<PathBuf> {
    agent_binary("Gemini CLI", "@google/gemini-cli/bundle/gemini.js")
}

/// Finds Qwen Code (npm `@qwen-code/qwen-code`, a node script with its `#!/usr/bin/env node`),
/// or returns `None` after [`missing`].
pub(crate) fn qwen_code() -> Option<PathBuf> {
    agent_binary("Qwen Code", "@qwen-code/qwen-code/cli-entry.js")
}

/// Finds GitHub Copilot CLI (npm `@github/copilot`, whose platform package holds the native
/// binary), or returns `None` after [`missing`].
pub(crate) fn copilot() -> Option<PathBuf> {
    agent_binary("GitHub Copilot CLI", "@github/copilot-linux-x64/copilot")
}

/// Finds Cline (npm `cline`; its platform package `@cline/cli-linux-x64` holds the binary, which
/// the peers pin alone), or returns `None` after [`missing`].
pub(crate) fn cline() -> Option<PathBuf> {
    agent_binary("Cline", "@cline/cli-linux-x64/bin/cline")
}

/// Finds mini-swe-agent (PyPI `mini-swe-agent`, in a venv of its own), or returns `None`
/// after [`missing`].
pub(crate) fn mini_swe_agent() -> Option<PathBuf> {
    agent_venv_binary("mini-swe-agent", "mini")
}

/// Finds Aider (PyPI `aider-chat`, in a venv of its own), or returns `None` after
/// [`missing`].
pub(crate) fn aider() -> Option<PathBuf> {
    agent_venv_binary("aider", "aider")
}

/// Finds the binary `bin` of the agent CLI whose requirements are
/// engine/cli/tests/peers/agents/python/NAME.txt, in the venv `.ci/run` installs them into
/// (`$SIMTAPE_AGENT_VENVS_DIR/NAME`).
fn agent_venv_binary(name: &str, bin: &str) -> Option<PathBuf> {
    let venvs = std::env::var_os("SIMTAPE_AGENT_VENVS_DIR").map(PathBuf::from);
    let binary = venvs.map(|dir| dir.join(name).join("bin").join(bin));
    if let Some(binary) = binary.filter(|binary| binary.is_file()) {
        return Some(binary);
    }
    missing(format!(
        "{name} missing. Install it: `python3 -m venv V/{name} && V/{name}/bin/pip install -r \
         engine/cli/tests/peers/agents/python/{name}.txt`, then set SIMTAPE_AGENT_VENVS_DIR=V"
    ));
    None
}

/// Finds an agent CLI's binary at `path` under the agent peers' node_modules.
fn agent_binary(name: &str, path: &str) -> Option<PathBuf> {
    let node_modules = std::env::var_os("SIMTAPE_AGENT_PEERS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/agents/node_modules")
        });
    let binary = node_modules.join(path);
    let ok = Command::new(&binary)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if ok {
        return Some(binary);
    }
    missing(format!(
        "{name} missing ({}). Install it: `npm ci --prefix engine/cli/tests/peers/agents`, \
         then set SIMTAPE_AGENT_PEERS_DIR=engine/cli/tests/peers/agents/node_modules",
        binary.display()
    ));
    None
}
