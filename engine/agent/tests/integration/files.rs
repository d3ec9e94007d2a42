//! Scenario files with `[agent]`, `[[mcp]]`, `[faults]` and `[[verify]]`, loaded from disk.

use simtape_agent::{EndReason, EvalScenario, Verdict};

use crate::common::{agent_operations, data, footer_verdict, tape};

fn load(name: &str) -> EvalScenario {
    EvalScenario::load(&data().join(name)).unwrap()
}

fn run(scenario: &EvalScenario, seed: u64) -> simtape_agent::EvalReport {
    let mut builder = scenario.builder(seed);
    builder.tape_in_memory();
    scenario.run(&mut builder)
}

#[test]
fn a_refactoring_scenario_file_passes_at_its_seeds() {
    // Goal: the file's own eval parts drive the run; each pinned seed passes, replays
    // byte for byte, and its tape names the scenario.
    let scenario = load("refactor.toml");
    assert_eq!(scenario.eval().verify.len(), 3);
    for &seed in scenario.scenario().seeds() {
        let report = run(&scenario, seed);
        assert_eq!(
            report.verdict,
            Verdict::Pass,
            "seed {seed}: {:?}",
            report.verifiers
        );
        assert_eq!(report.verifiers[0].name, "fs src/lib.rs");
        assert_eq!(report.verifiers[0].line, 20);
        assert_eq!(footer_verdict(&report), "pass");
        assert_eq!(tape(&report), tape(&run(&scenario, seed)));
    }
}

#[test]
fn a_world_fault_from_the_scenario_file_is_retried() {
    // Goal: `[[faults.mcp]]` becomes the world's fault rule; the agent retries after the
    // hint and the world goal holds.
    let scenario = load("kv.toml");
    let report = run(&scenario, 3);
    assert_eq!(report.verdict, Verdict::Pass, "{:?}", report.verifiers);
    let transcript = report.transcript.as_ref().unwrap();
    assert_eq!(transcript.retries, 1);
    assert_eq!(transcript.end, Some(EndReason::FinalAnswer));
    assert!(agent_operations(&report).contains(&"retry".to_string()));
    assert!(
        report.run.summary.end_ns > 2_000_000_000,
        "the retry waited 2 s: {}",
        report.run.summary.end_ns
    );
}

#[test]
fn check_all_places_a_bad_world_spec_at_its_mcp_field() {
    // Goal: `simtape check` sees problems of referenced files at the line that names them.
    let problems = EvalScenario::check_all(&data().join("broken.toml")).unwrap_err();
    assert_eq!(problems.len(), 1, "{problems:?}");
    let problem = &problems[0];
    assert_eq!(problem.field, "mcp[0].world");
    assert_eq!((problem.line, problem.column), (14, 9));
    assert!(
        problem
            .to_string()
            .contains("broken.toml:14:9: field `mcp[0].world`: "),
        "{problem}"
    );
    let first = EvalScenario::load(&data().join("broken.toml")).unwrap_err();
    assert_eq!(&first, problem);
}
