//! The integration tests of simtape-agent: one binary, one module per area.

mod common;

mod agent_loop;
mod concurrency;
mod errors;
mod files;
mod mcp;
mod retries;
mod tables;
mod verifiers;

#[test]
fn no_test_file_is_forgotten() {
    // Goal: every file in this directory is a module of this binary.
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/integration");
    let source = std::fs::read_to_string(dir.join("main.rs")).unwrap();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        let Some(module) = name.strip_suffix(".rs") else {
            continue;
        };
        if module != "main" {
            assert!(
                source.contains(&format!("mod {module};")),
                "{name} is not a module of main.rs"
            );
        }
    }
}
