//! The Rust API: the builder's capability settings, artifacts, and the shipped example.

#[path = "../../../examples/agent_pipeline.rs"]
#[allow(dead_code, unreachable_pub)]
mod example;

#[test]
fn the_example_pipeline_is_byte_identical_per_seed() {
    // Goal: the example (model → two concurrent edits → model) gives the same tape twice.
    let first = example::run_pipeline(3).unwrap();
    let again = example::run_pipeline(3).unwrap();
    assert_eq!(first.answer, "Both files are updated.");
    assert_eq!(first.tape, again.tape);
    let paths: Vec<&str> = first
        .diff
        .modified
        .iter()
        .map(|m| m.path.as_str())
        .collect();
    assert_eq!(paths, vec!["README.md", "greeting.txt"]);
    assert!(first.diff.added.is_empty() && first.diff.deleted.is_empty());
}

#[test]
fn another_seed_picks_the_other_alternative_and_changes_the_tape() {
    // Goal: across seeds both weighted answers appear, and their tapes and diffs differ.
    let runs: Vec<_> = (0..12)
        .map(|seed| example::run_pipeline(seed).unwrap())
        .collect();
    let greeting = |run: &example::PipelineRun| {
        let file = run
            .diff
            .modified
            .iter()
            .find(|m| m.path == "greeting.txt")
            .unwrap();
        String::from_utf8(file.after.clone()).unwrap()
    };
    let hello = runs
        .iter()
        .find(|r| greeting(r).starts_with("Hello"))
        .expect("one alternative");
    let hi = runs
        .iter()
        .find(|r| greeting(r).starts_with("Hi"))
        .expect("the other alternative");
    assert_ne!(hello.tape, hi.tape);
    assert_ne!(hello.diff.unified(), hi.diff.unified());
}

#[test]
fn the_real_worktree_is_never_modified() {
    // Goal: after runs that edit files, the example's real worktree still holds the originals.
    example::run_pipeline(1).unwrap();
    let greeting = std::fs::read_to_string(example::data_dir().join("worktree/greeting.txt"));
    assert_eq!(greeting.unwrap(), "Hello, world.\n");
}

#[test]
fn capabilities_are_optional_and_independent() {
    // Goal: a run without capabilities has none, and its report has no fs diff.
    let report = simtape::Sim::builder()
        .build()
        .unwrap()
        .run(|host| async move { host.capabilities().fs().is_none() })
        .unwrap();
    assert!(report.output);
    assert!(report.fs_diff().is_none());
    assert!(report.llm().is_none());
}
