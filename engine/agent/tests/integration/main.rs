//! The integration tests of simtape-agent: one binary, one module per area.

mod common;

mod agent_loop;
mod concurrency;
mod errors;
mod files;
mod harness;
mod mcp;
mod mcp_asks;
mod retries;
mod tables;
mod verifiers;

/// Guards against a test file that exists but is not declared above.
#[test]
fn no_test_file_is_forgotten() {
    // Goal: every file in this directory is a module of this binary.
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/integration");
    simtape::testing::assert_test_files_declared(&dir);
}
