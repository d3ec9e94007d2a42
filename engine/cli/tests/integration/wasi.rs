//! `simtape` with WASI guests: the bundled `wasi-sleeper` scenario, `check` naming a missing
//! module at its field, and `run --process-wasi DIR`.

use crate::common;
use crate::common::text;

use common::{repo, scratch, simtape};

use std::path::PathBuf;

fn guests() -> PathBuf {
    repo().join("scenarios/data/wasi")
}

#[test]
fn the_sleeper_scenario_sleeps_a_day_deterministically() {
    // Goal: the shipped scenario's guest sleeps 24 h of virtual time, the other task's
    // outcome comes meanwhile, and two runs write byte-identical tapes.
    let dir = scratch("cli-wasi", "sleeper");
    let tape = dir.join("sleeper.tape");
    let output = simtape()
        .arg("run")
        .arg(repo().join("scenarios/wasi-sleeper.toml"))
        .arg("--tape")
        .arg(&tape)
        .arg("--check-determinism")
        .output()
        .unwrap();
    let shown = text(&output);
    assert!(output.status.success(), "{shown}");
    assert!(shown.contains("result: PASS at t=86400s"), "{shown}");
    assert!(shown.contains("outcome ticked = \"1h\""), "{shown}");
    assert!(shown.contains("byte-identical"), "{shown}");
    assert!(tape.exists());
}

#[test]
fn check_names_a_missing_module_at_its_field() {
    // Goal: a program in wasi mode without its module is a scenario error at its entry.
    let dir = scratch("cli-wasi", "missing");
    let scenario = dir.join("missing.toml");
    let text_of = format!(
        "[scenario]\nname = \"missing\"\n\n[process]\nwasi_dir = {:?}\nprograms = {{ nope = \"wasi\" }}\n\n[[task]]\nname = \"t\"\nsteps = [{{ run = \"nope\" }}]\n",
        guests().display().to_string()
    );
    std::fs::write(&scenario, text_of).unwrap();
    let output = simtape().arg("check").arg(&scenario).output().unwrap();
    let shown = text(&output);
    assert_eq!(output.status.code(), Some(2), "{shown}");
    assert!(shown.contains("missing.toml:6"), "{shown}");
    assert!(shown.contains("process.programs.nope"), "{shown}");
    assert!(shown.contains("nope.wasm"), "{shown}");
}

#[test]
fn process_wasi_runs_uncovered_programs_as_guests() {
    // Goal: with --process-wasi DIR, a program the scenario leaves hermetic runs as
    // DIR/<program>.wasm, and the reproduce line keeps the flag.
    let dir = scratch("cli-wasi", "flag");
    let scenario = dir.join("flag.toml");
    std::fs::write(
        &scenario,
        "[scenario]\nname = \"flag\"\n\n[process]\ndefault = \"hermetic\"\n\n[[task]]\nname = \"t\"\nsteps = [{ run = \"sleeper\", args = [\"60\"] }, { outcome = \"ran\", value = true }]\n\n[[verify]]\nkind = \"outcome\"\nname = \"ran\"\nvalue = true\n",
    )
    .unwrap();
    let hermetic = simtape().arg("run").arg(&scenario).output().unwrap();
    assert!(!hermetic.status.success(), "{}", text(&hermetic));
    let output = simtape()
        .arg("run")
        .arg(&scenario)
        .arg("--process-wasi")
        .arg(guests())
        .output()
        .unwrap();
    let shown = text(&output);
    assert!(output.status.success(), "{shown}");
    assert!(shown.contains("result: PASS at t=60s"), "{shown}");
    let json = simtape()
        .arg("run")
        .arg(&scenario)
        .arg("--process-wasi")
        .arg(guests())
        .arg("--json")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&json.stdout);
    let summary: serde_json::Value =
        serde_json::from_str(stdout.trim_start_matches(|c| c != '{')).unwrap();
    let reproduce = summary["reproduce"].as_str().unwrap();
    assert!(reproduce.contains(" --process-wasi "), "{reproduce}");
}

#[test]
fn process_wasi_needs_no_process_table() {
    // Goal: as docs/cli.md says, `--process-wasi DIR` gives a scenario without `[process]` its
    // programs as WASI guests (a `run` step and a gate); without the flag the same file is
    // refused at the step, naming the table.
    let dir = scratch("cli-wasi", "no-process-table");
    let path = dir.join("guest.toml");
    std::fs::write(
        &path,
        "[scenario]\nname = \"guest\"\n\n[[task]]\nname = \"t\"\n\
         steps = [{ run = \"sleeper\", log = \"slept\" }]\n\n\
         [[verify]]\nkind = \"gate\"\nprogram = \"sleeper\"\n",
    )
    .unwrap();
    let output = simtape()
        .arg("run")
        .arg(&path)
        .arg("--process-wasi")
        .arg(guests())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert!(text(&output).contains("result: PASS"), "{}", text(&output));
    let refused = simtape().arg("run").arg(&path).output().unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        text(&refused).contains("step `run` needs a [process] table"),
        "{}",
        text(&refused)
    );
}
