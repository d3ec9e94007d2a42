//! Every seed and every regression file of every fuzz target runs through its target: a
//! crash AFL once found (kept under `fuzz/regressions/<target>/`) fails `cargo test` if it
//! comes back, without AFL installed.

use std::path::{Path, PathBuf};

use simtape_fuzz_targets::{repo, target, TARGETS};

fn files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .map(|entry| entry.expect("a readable directory entry").path())
        .filter(|path| path.is_file())
        .collect();
    files.sort();
    files
}

fn names(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .map(|entry| entry.expect("a readable entry").file_name())
        .map(|name| name.to_string_lossy().into_owned())
        .filter(|name| !name.starts_with('.'))
        .collect();
    names.sort();
    names
}

#[test]
fn every_corpus_and_regression_file_runs_through_its_target_without_a_panic() {
    // Goal: a parser that panics on a file the fuzzer kept fails here, naming the file.
    let mut failed = Vec::new();
    let mut ran = 0;
    for (name, run) in TARGETS {
        let corpus = files(&repo().join("fuzz/corpus").join(name));
        assert!(!corpus.is_empty(), "fuzz/corpus/{name} has no seed");
        let regressions = files(&repo().join("fuzz/regressions").join(name));
        for file in corpus.iter().chain(&regressions) {
            let data = std::fs::read(file).expect("a readable corpus file");
            if std::panic::catch_unwind(|| run(&data)).is_err() {
                failed.push(file.display().to_string());
            }
            ran += 1;
        }
    }
    assert!(failed.is_empty(), "panicked on {failed:#?}");
    eprintln!("{ran} corpus and regression files ran");
}

#[test]
fn every_corpus_and_regression_directory_names_a_target() {
    // Goal: a directory with a misspelt name would silently never run.
    for dir in ["fuzz/corpus", "fuzz/regressions"] {
        for name in names(&repo().join(dir)) {
            assert!(target(&name).is_some(), "{dir}/{name} names no fuzz target");
        }
    }
}
