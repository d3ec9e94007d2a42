//! The engine's one integration-test binary: one module per area.

mod api;
mod ban_list;
mod cap_fs;
mod cap_llm;
mod cap_net;
mod cap_process;
mod capabilities;
mod cli_layer;
mod codemap;
mod executor;
mod faults;
mod long_functions;
mod module_cycles;
mod open_run;
mod oracle;
mod properties;
mod public_surface;
mod scenario;
mod source_tree;
mod tape;
mod testing;
mod type_names;

/// Makes an empty directory `<target tmp>/<area>/<name>` for one test.
fn tempdir(area: &str, name: &str) -> std::path::PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(area)
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Guards against a test file that exists but is not declared above.
#[test]
fn no_forgotten_test_files() {
    // Goal: every .rs file in this directory is a declared module.
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/integration");
    simtape::testing::assert_test_files_declared(&dir);
}
