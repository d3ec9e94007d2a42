//! Named decisions: `run --decisions-out` lists every random choice a run took, `run
//! --decisions` takes them back as overrides (the same records; the header carries the file),
//! the decided tape replays alone, and a file that does not fit the scenario exits 2 naming
//! its first mismatch.

use std::path::{Path, PathBuf};

use crate::common::{expect, repo, scratch, simtape, text};

const SCENARIO: &str = "scenarios/race-edit.toml";

/// Runs race-edit at seed 3 (a seed whose edits race: the run fails, exit 1) writing `tape`,
/// with `extra` flags.
fn run(tape: &Path, extra: &[&str]) {
    let output = simtape()
        .current_dir(repo())
        .args(["run", SCENARIO, "--seed", "3", "--tape"])
        .arg(tape)
        .args(extra)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
}

/// The decisions a `--decisions-out` file lists, as (name, value).
fn listed(file: &Path) -> Vec<(String, u64)> {
    let json = crate::common::load_json(file);
    let list = json["decisions"].as_array().cloned().unwrap_or_default();
    list.iter()
        .map(|d| {
            (
                d["name"].as_str().unwrap().to_string(),
                d["value"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// Replays `tape` from an unrelated directory, asserting it is byte-identical.
fn replays_alone(dir: &Path, tape: &Path) {
    expect(
        simtape().current_dir(dir).arg("replay").arg(tape),
        0,
        "byte-identical",
    );
}

fn scratch_dir(name: &str) -> PathBuf {
    let dir = scratch("decisions", name);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn the_seeds_own_decisions_give_its_tape_but_the_header() {
    let dir = scratch_dir("own");
    let (plain, logged, decided) = (
        dir.join("plain.tape"),
        dir.join("logged.tape"),
        dir.join("decided.tape"),
    );
    let file = dir.join("decisions.json");
    run(&plain, &[]);
    run(&logged, &["--decisions-out", file.to_str().unwrap()]);
    // Writing the decisions out does not change the tape.
    assert_eq!(
        std::fs::read(&plain).unwrap(),
        std::fs::read(&logged).unwrap()
    );
    let names: Vec<String> = listed(&file).into_iter().map(|(name, _)| name).collect();
    assert!(names.iter().any(|name| name == "fs#0"), "{names:?}");
    run(&decided, &["--decisions", file.to_str().unwrap()]);
    // The header differs (it carries the file), every record is the same.
    assert_ne!(
        std::fs::read(&plain).unwrap(),
        std::fs::read(&decided).unwrap()
    );
    expect(
        simtape().arg("diff").arg(&plain).arg(&decided),
        0,
        "tapes equal (exact)",
    );
    // The decided tape replays alone: its header carries the overrides.
    replays_alone(&dir, &decided);
}

#[test]
fn an_override_changes_the_run() {
    let dir = scratch_dir("override");
    let file = dir.join("decisions.json");
    let plain = dir.join("plain.tape");
    run(&plain, &["--decisions-out", file.to_str().unwrap()]);
    let zeroed: Vec<serde_json::Value> = listed(&file)
        .into_iter()
        .map(|(name, _)| serde_json::json!({"name": name, "value": 0}))
        .collect();
    let zero = dir.join("zero.json");
    std::fs::write(&zero, serde_json::to_string(&zeroed).unwrap()).unwrap();
    let decided = dir.join("zero.tape");
    let output = simtape()
        .current_dir(repo())
        .args(["run", SCENARIO, "--seed", "3", "--tape"])
        .arg(&decided)
        .arg("--decisions")
        .arg(&zero)
        .output()
        .unwrap();
    assert!(decided.exists(), "{}", text(&output));
    let diff = simtape()
        .arg("diff")
        .arg(&plain)
        .arg(&decided)
        .output()
        .unwrap();
    assert_eq!(diff.status.code(), Some(1), "{}", text(&diff));
    replays_alone(&dir, &decided);
    // A failing run's printed reproduce command carries its decisions: run as printed, it
    // gives the same tape, byte for byte.
    let own = dir.join("own.tape");
    let output = simtape()
        .current_dir(repo())
        .args(["run", SCENARIO, "--seed", "3", "--tape"])
        .arg(&own)
        .arg("--decisions")
        .arg(&file)
        .output()
        .unwrap();
    let shown = text(&output);
    assert_eq!(output.status.code(), Some(1), "{shown}");
    let reproduce = shown
        .lines()
        .find_map(|line| line.strip_prefix("reproduce: "))
        .unwrap_or_else(|| panic!("a reproduce line in {shown}"));
    assert!(reproduce.contains("--decisions"), "{reproduce}");
    let words: Vec<&str> = reproduce.split_whitespace().collect();
    assert_eq!(words[0], "simtape", "{reproduce}");
    let first = std::fs::read(&own).unwrap();
    std::fs::remove_file(&own).unwrap();
    let again = simtape()
        .current_dir(repo())
        .args(&words[1..])
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(1), "{}", text(&again));
    assert!(
        std::fs::read(&own).unwrap() == first,
        "the reproduce command gave another tape"
    );
}

#[test]
fn a_file_that_does_not_fit_exits_2_naming_the_field() {
    let dir = scratch_dir("bad");
    let cases: [(&str, &str); 5] = [
        (r#"[{"name": "nosuch#0", "value": 1}]"#, "decisions[0].name"),
        (r#"[{"name": "fs#0", "value": "x"}]"#, "decisions[0].value"),
        (r#"[{"name": "fs", "value": 1}]"#, "is not a decision name"),
        (
            r#"{"scenario": "00ff", "decisions": []}"#,
            "scenario: the decisions were taken on scenario 00ff",
        ),
        (
            r#"[{"name": "fs#0", "value": 1, "extra": 2}]"#,
            "decisions[0].extra",
        ),
    ];
    for (index, (body, needle)) in cases.iter().enumerate() {
        let file = dir.join(format!("bad{index}.json"));
        std::fs::write(&file, body).unwrap();
        expect(
            simtape()
                .current_dir(repo())
                .args(["run", SCENARIO, "--seed", "3", "--decisions"])
                .arg(&file),
            2,
            needle,
        );
    }
}

#[test]
fn a_harness_crash_point_and_its_picks_are_decisions() {
    // Goal: the harness's own stream (its seeded crashes and the selector's picks) draws
    // named decisions too, so a shrink can turn a crash off.
    let dir = scratch_dir("harness");
    let out = dir.join("d.json");
    let output = simtape()
        .current_dir(repo())
        .args(["run", "scenarios/feature-list-broken.toml", "--seed", "7"])
        .arg("--decisions-out")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let json = crate::common::load_json(&out);
    let harness: Vec<&serde_json::Value> = json["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["name"].as_str().unwrap().starts_with("harness#"))
        .collect();
    assert!(
        harness.iter().any(|d| d["kind"] == "chance 1/4"),
        "the seeded crash's chance: {harness:?}"
    );
}
