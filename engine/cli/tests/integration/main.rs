//! The `simtape` binary end to end: one integration-test binary, one module per area.

/// Where the peers (npm servers, Python clients, agent CLIs) are, or why they are skipped.
#[path = "../peers/clients.rs"]
mod clients;
mod common;

mod agent_clis;
mod agents;
#[cfg(unix)]
mod bad_inputs;
mod cli;
#[cfg(unix)]
mod crash;
mod decisions;
mod diff;
mod evidence;
mod explore;
mod failures;
mod fork;
mod frameworks;
mod generic_programs;
mod harness;
mod harness_agents;
mod mcp;
mod mcp_asks;
mod mcp_conformance;
mod mcp_http;
mod mcp_signals;
mod mcp_world;
mod node_helper;
mod properties;
mod pytest_plugin;
mod quickstart;
mod record;
#[cfg(target_os = "linux")]
mod sandbox;
mod serve_mcp;
#[cfg(target_os = "linux")]
mod serve_memory;
mod shrink;
#[cfg(unix)]
mod slurm;
mod sweep;
mod tapes;
mod view;
mod wasi;

/// Guards against a test file that exists but is not declared above.
#[test]
fn no_forgotten_test_files() {
    // Goal: every .rs file in this directory is a declared module.
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/integration");
    simtape::testing::assert_test_files_declared(&dir);
}
