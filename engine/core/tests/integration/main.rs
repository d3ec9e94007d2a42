//! The engine's one integration-test binary: one module per area.

mod api;
mod cap_fs;
mod cap_llm;
mod cap_llm_record;
mod cap_net;
mod cap_process;
mod executor;
mod faults;
mod oracle;
mod scenario;
mod scenario_eval;
mod tape;

/// Guards against a test file that exists but is not declared above.
#[test]
fn no_forgotten_test_files() {
    // Goal: every .rs file in this directory is a declared module.
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/integration");
    simtape::testing::assert_test_files_declared(&dir);
}
