//! The integration tests of simtape-mcp: one binary, one module per area.

mod actor;
mod actor_world;

/// Guards against a test file that exists but is not declared above.
#[test]
fn no_forgotten_test_files() {
    // Goal: every .rs file in this directory is a declared module.
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/integration");
    simtape::testing::assert_test_files_declared(&dir);
}
