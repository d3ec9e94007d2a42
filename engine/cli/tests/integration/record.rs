//! Turning real runs into replayable inputs: a `[process]` program in `record` mode runs for
//! real and is written to a process tape, which the same scenario in `replay` mode then runs
//! from with the same records (commands that run a scenario many times or compare it refuse
//! a recording one); `fixtures from-tape` makes an LLM fixture of any run's model calls.

use std::path::Path;

use crate::common::{expect, run_ok, scratch, simtape};

/// A scenario that runs `echo` and `printf` in `mode`, replaying from `tape` when given.
fn scenario(dir: &Path, file: &str, mode: &str, tape: Option<&str>) -> std::path::PathBuf {
    let tape = tape.map_or_else(String::new, |t| format!("tape = {t:?}\n"));
    let source = format!(
        r#"[scenario]
name = "rec"

[process]
{tape}programs = {{ echo = "{mode}", printf = "{mode}" }}

[[task]]
name = "script"
steps = [
  {{ run = "echo", args = ["hi"], log = "echoed" }},
  {{ sleep = "5ms" }},
  {{ run = "printf", args = ["%s-%s", "a", "b"], log = "printed" }},
  {{ outcome = "ran", value = true }},
]

[[verify]]
kind = "outcome"
name = "ran"
value = true
"#
    );
    let path = dir.join(file);
    std::fs::write(&path, source).unwrap();
    path
}

/// Runs the recording scenario into `a.tape`, its process tape into `frozen/`.
fn record(dir: &Path, scenario: &Path) {
    expect(
        simtape().current_dir(dir).arg("run").arg(scenario).args([
            "--tape",
            "a.tape",
            "--record-dir",
            "frozen",
        ]),
        0,
        "recorded: frozen/rec.process.jsonl",
    );
}

#[test]
fn a_recorded_program_replays_from_the_process_tape_it_wrote() {
    // Goal: `record` writes DIR/<name>.process.jsonl with each real run; switched to
    // `replay` with that tape, the run has the same records (the oracle finds them equal).
    let dir = scratch("record", "roundtrip");
    let recording = scenario(&dir, "rec.toml", "record", None);
    record(&dir, &recording);
    let tape = std::fs::read_to_string(dir.join("frozen/rec.process.jsonl")).unwrap();
    assert_eq!(tape.lines().count(), 3, "the header and two runs: {tape}");
    assert!(tape.contains("\"stdout\":\"a-b\""), "{tape}");
    let replaying = scenario(&dir, "rep.toml", "replay", Some("frozen/rec.process.jsonl"));
    run_ok(
        simtape()
            .current_dir(&dir)
            .arg("run")
            .arg(&replaying)
            .args(["--tape", "b.tape"]),
    );
    expect(
        simtape()
            .current_dir(&dir)
            .args(["diff", "a.tape", "b.tape"]),
        0,
        "tapes equal (exact)",
    );
}

#[test]
fn commands_that_repeat_or_compare_a_run_refuse_a_recording_scenario() {
    // Goal: sweep, ci and replay exit 2 naming what records; --record-dir without a
    // recording program is a usage error.
    let dir = scratch("record", "refused");
    let recording = scenario(&dir, "rec.toml", "record", None);
    record(&dir, &recording);
    let project = dir.join("project");
    std::fs::create_dir_all(project.join("scenarios")).unwrap();
    std::fs::copy(&recording, project.join("scenarios/rec.toml")).unwrap();
    for args in [
        vec!["sweep", "rec.toml", "--seeds", "0..2"],
        vec!["ci", "project"],
        vec!["replay", "a.tape"],
    ] {
        expect(
            simtape().current_dir(&dir).args(&args),
            2,
            "puts a program in record mode",
        );
    }
    let replaying = scenario(&dir, "rep.toml", "replay", Some("frozen/rec.process.jsonl"));
    expect(
        simtape()
            .current_dir(&dir)
            .arg("run")
            .arg(&replaying)
            .args(["--record-dir", "x"]),
        2,
        "puts no program in record mode",
    );
}

/// Returns the lines of a run's output that say what its agent did and answered.
fn agent_lines(output: &std::process::Output) -> Vec<String> {
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter(|l| {
            l.starts_with("result: PASS") || l.starts_with("agent:") || l.starts_with("answer:")
        })
        .map(|l| l.split(" at t=").next().unwrap_or(l).to_string())
        .collect()
}

#[test]
fn a_fixture_from_a_tape_answers_the_same_conversation() {
    // Goal: `fixtures from-tape` writes one entry per model call of the run; the scenario
    // with that fixture in place of its own makes the same calls and gets the same answers.
    let dir = scratch("record", "from-tape");
    let project = dir.join("project");
    std::fs::create_dir_all(&project).unwrap();
    let repo_scenarios = crate::common::repo().join("scenarios");
    for file in ["refactor-agent.toml", "data/refactor-agent/llm.jsonl"] {
        let target = project.join(file);
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::copy(repo_scenarios.join(file), target).unwrap();
    }
    let worktree = repo_scenarios.join("data/refactor/worktree");
    let copied = project.join("data/refactor/worktree");
    for file in ["src/helpers.rs", "src/lib.rs", "NOTES.txt", "README.md"] {
        std::fs::create_dir_all(copied.join(file).parent().unwrap()).unwrap();
        std::fs::copy(worktree.join(file), copied.join(file)).unwrap();
    }
    let scenario = project.join("refactor-agent.toml");
    let run = |tape: &str| {
        run_ok(
            simtape()
                .current_dir(&dir)
                .arg("run")
                .arg(&scenario)
                .args(["--seed", "1", "--tape", tape]),
        )
    };
    let first = agent_lines(&run("a.tape"));
    assert_eq!(first.len(), 3, "{first:?}");
    expect(
        simtape()
            .current_dir(&dir)
            .args(["fixtures", "from-tape", "a.tape", "fixtures"]),
        0,
        "(5 entr(ies); 0 call(s)",
    );
    std::fs::copy(
        dir.join("fixtures/llm.jsonl"),
        project.join("data/refactor-agent/llm.jsonl"),
    )
    .unwrap();
    assert_eq!(agent_lines(&run("b.tape")), first);
}
