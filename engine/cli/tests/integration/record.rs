//! Recording from scenario files: a `[process]` program in `record` mode runs for real and is
//! written to a process tape; the same scenario in `replay` mode then runs from that file
//! with the same records. Commands that run a scenario many times or compare it refuse it.

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
