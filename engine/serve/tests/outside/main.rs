//! The gateway's outside-world side of the core's seams, against real peers: record mode's
//! HTTP client and real program runs. One binary, one module per area.

mod llm_record;
mod process;

/// Guards against a test file that exists but is not declared above.
#[test]
fn no_forgotten_test_files() {
    // Goal: every .rs file in this directory is a declared module.
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/outside");
    simtape::testing::assert_test_files_declared(&dir);
}
