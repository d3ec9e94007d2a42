//! Self-contained tapes: a tape carries every file its run read, so it replays alone in an
//! empty directory once the scenario and its files are gone; `tape unpack` writes them back
//! as a reproduction that runs to the same tape; a sweep's kept tapes share one store.

use std::path::{Path, PathBuf};

use crate::common::{expect, repo, run_ok, scratch, simtape, text};

/// Replays `tape` from `cwd`, asserting it is byte-identical.
fn replays(cwd: &Path, tape: &Path) {
    expect(
        simtape().current_dir(cwd).arg("replay").arg(tape),
        0,
        "byte-identical",
    );
}

/// Copies `from` (a directory tree of plain files) to `to`.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Runs `scenario` (a shipped one) at `seed` from a copy of `scenarios/`, then removes the
/// copy: the returned tape is all that is left of the run.
fn tape_of(dir: &Path, scenario: &str, seed: u64, extra: &[&str]) -> PathBuf {
    let copy = dir.join("project");
    copy_tree(&repo().join("scenarios"), &copy);
    let tape = dir.join("made").join(format!("{scenario}.tape"));
    run_ok(
        simtape()
            .arg("run")
            .arg(copy.join(format!("{scenario}.toml")))
            .args(["--seed", &seed.to_string(), "--tape"])
            .arg(&tape)
            .args(extra),
    );
    std::fs::remove_dir_all(&copy).unwrap();
    tape
}

/// The shipped scenarios that read files, one per kind of input, at a pinned seed.
const WITH_FILES: [(&str, u64); 6] = [
    ("ticket-retry", 0),      // an LLM fixture and an MCP world spec
    ("mcp-sampling", 0),      // an MCP cassette whose server asks the agent during calls
    ("refactor-files", 0),    // an [fs] tree and an LLM fixture
    ("recorded-pipeline", 0), // a process tape
    ("wasi-sleeper", 0),      // WASI modules
    ("overnight-backup", 1),  // all of [fs], [llm] and WASI
];

#[test]
fn a_tape_replays_alone_in_an_empty_directory_once_its_scenario_is_gone() {
    // Goal: for each kind of input, the tape copied alone into an empty directory replays
    // byte for byte there, with the scenario and its files deleted; its records are the
    // golden tape's bytes (the inputs follow the footer, so goldens did not change).
    for (scenario, seed) in WITH_FILES {
        let dir = scratch("tapes", &format!("alone-{scenario}"));
        let tape = tape_of(&dir, scenario, seed, &[]);
        let empty = dir.join("empty");
        std::fs::create_dir_all(&empty).unwrap();
        std::fs::copy(&tape, empty.join("copy.tape")).unwrap();
        replays(&empty, Path::new("copy.tape"));
        let written = std::fs::read(&tape).unwrap();
        let golden =
            std::fs::read(repo().join(format!("tapes/{scenario}/seed-{seed}.tape"))).unwrap();
        assert!(
            written.len() > golden.len() && written.starts_with(&golden),
            "{scenario}: the records differ from the golden tape's"
        );
        let left: Vec<_> = std::fs::read_dir(&empty).unwrap().collect();
        assert_eq!(
            left.len(),
            1,
            "{scenario}: replay left files behind: {left:?}"
        );
    }
}

#[test]
fn a_golden_tape_has_no_inputs_and_says_so_when_its_files_are_missing() {
    // Goal: a tape without an inputs section still replays as before, and without its
    // scenario file the error names the field and how to go on.
    let dir = scratch("tapes", "golden");
    std::fs::copy(
        repo().join("tapes/refactor-files/seed-0.tape"),
        dir.join("golden.tape"),
    )
    .unwrap();
    expect(
        simtape().current_dir(&dir).args(["replay", "golden.tape"]),
        2,
        "this tape carries no inputs",
    );
}

#[test]
fn unpack_writes_a_reproduction_that_runs_to_the_same_tape() {
    // Goal: `tape unpack` writes the scenario and its files; running the unpacked scenario
    // at the tape's seed writes the same bytes, inputs section included; unpacking onto
    // existing files is refused.
    let dir = scratch("tapes", "unpack");
    let tape = tape_of(&dir, "overnight-backup", 1, &[]);
    let unpacked = dir.join("repro");
    let output = run_ok(
        simtape()
            .arg("tape")
            .arg("unpack")
            .arg(&tape)
            .arg(&unpacked),
    );
    let shown = text(&output);
    let scenario = unpacked.join("overnight-backup.toml");
    assert!(scenario.is_file(), "{shown}");
    assert!(unpacked.join("data/overnight/worktree").is_dir(), "{shown}");
    assert!(shown.contains("--seed 1"), "{shown}");
    let again = dir.join("again.tape");
    run_ok(
        simtape()
            .arg("run")
            .arg(&scenario)
            .args(["--seed", "1", "--tape"])
            .arg(&again),
    );
    assert!(
        std::fs::read(&tape).unwrap() == std::fs::read(&again).unwrap(),
        "the unpacked scenario wrote another tape"
    );
    expect(
        simtape()
            .arg("tape")
            .arg("unpack")
            .arg(&tape)
            .arg(&unpacked),
        2,
        "exists",
    );
}

#[test]
fn sidecar_inputs_travel_with_their_store() {
    // Goal: with --sidecar-blobs the files go to <tape>.cas/, not into the tape; the tape
    // and its store, moved together, replay; the tape without its store names the file.
    let dir = scratch("tapes", "sidecar");
    let tape = tape_of(&dir, "refactor-files", 0, &["--sidecar-blobs"]);
    let embedded = tape_of(&dir.join("embedded"), "refactor-files", 0, &[]);
    let size = |path: &Path| std::fs::metadata(path).unwrap().len();
    assert!(
        size(&tape) < size(&embedded),
        "the files stayed in the tape"
    );
    let moved = dir.join("moved");
    std::fs::create_dir_all(&moved).unwrap();
    std::fs::copy(&tape, moved.join("r.tape")).unwrap();
    let store = PathBuf::from(format!("{}.cas", tape.display()));
    expect(
        simtape().current_dir(&moved).args(["replay", "r.tape"]),
        1,
        "is missing",
    );
    // A moved sidecar tape keeps its store's name: the tape's file name and `.cas`.
    std::fs::rename(moved.join("r.tape"), moved.join("refactor-files.tape")).unwrap();
    copy_tree(&store, &moved.join("refactor-files.tape.cas"));
    replays(&moved, Path::new("refactor-files.tape"));
}

#[test]
fn a_sweeps_kept_tapes_share_one_store_and_replay_from_it() {
    // Goal: failing seeds' tapes under --out hold only the manifest of their inputs; the
    // files are stored once in --out's inputs.cas/; each kept tape replays after the
    // scenario is gone.
    let dir = scratch("tapes", "sweep");
    let copy = dir.join("project");
    copy_tree(&repo().join("scenarios"), &copy);
    let output = simtape()
        .current_dir(&dir)
        .args([
            "sweep",
            "project/race-edit.toml",
            "--seeds",
            "0..16",
            "--out",
            "out",
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    std::fs::remove_dir_all(&copy).unwrap();
    let kept: Vec<PathBuf> = std::fs::read_dir(dir.join("out/race-edit"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(kept.len() > 1, "{}", text(&output));
    let store: Vec<_> = std::fs::read_dir(dir.join("out/inputs.cas"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    // The worktree's one file and the fixture: two files, whatever the number of tapes.
    assert_eq!(store.len(), 2, "{store:?}");
    let fixture = std::fs::read(repo().join("scenarios/data/race/llm.jsonl")).unwrap();
    for tape in &kept {
        let bytes = std::fs::read(tape).unwrap();
        assert!(
            !bytes.windows(fixture.len()).any(|w| w == fixture),
            "{} holds the fixture",
            tape.display()
        );
        replays(&dir, tape);
    }
}

#[test]
fn the_process_wasi_modules_of_a_run_travel_with_its_tape() {
    // Goal: `run --process-wasi DIR` carries DIR's modules; the tape replays alone after the
    // scenario and the modules are gone, and unpack gives the flag back.
    let dir = scratch("tapes", "process-wasi");
    let project = dir.join("project");
    copy_tree(&repo().join("scenarios/data/wasi"), &project.join("guests"));
    let scenario = project.join("flag.toml");
    std::fs::write(
        &scenario,
        "[scenario]\nname = \"flag\"\n\n[process]\ndefault = \"hermetic\"\n\n[[task]]\nname = \"t\"\nsteps = [{ run = \"sleeper\", args = [\"60\"] }, { outcome = \"ran\", value = true }]\n\n[[verify]]\nkind = \"outcome\"\nname = \"ran\"\nvalue = true\n",
    )
    .unwrap();
    let tape = dir.join("made/flag.tape");
    run_ok(
        simtape()
            .arg("run")
            .arg(&scenario)
            .arg("--process-wasi")
            .arg(project.join("guests"))
            .arg("--tape")
            .arg(&tape),
    );
    std::fs::remove_dir_all(&project).unwrap();
    let alone = dir.join("alone");
    std::fs::create_dir_all(&alone).unwrap();
    std::fs::copy(&tape, alone.join("flag.tape")).unwrap();
    replays(&alone, Path::new("flag.tape"));
    expect(
        simtape()
            .arg("tape")
            .arg("unpack")
            .arg(&tape)
            .arg(dir.join("repro")),
        0,
        "--process-wasi",
    );
    assert!(dir.join("repro/process-wasi/sleeper.wasm").is_file());
}

#[test]
fn an_agent_program_named_by_a_path_travels_executable_and_runs_again_unpacked() {
    // Goal: `[agent] command = "./agent.sh"` is carried with its executable bit; the unpacked
    // reproduction runs the program again and writes the same tape.
    let dir = scratch("tapes", "agent-program");
    let project = dir.join("project");
    std::fs::create_dir_all(project.join("repo")).unwrap();
    std::fs::write(project.join("repo/a.txt"), "x\n").unwrap();
    std::fs::write(project.join("llm.jsonl"), "{\"simtape_llm\": 1}\n").unwrap();
    let program = project.join("agent.sh");
    std::fs::write(&program, "#!/bin/sh\necho done\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(
        project.join("prog.toml"),
        "[scenario]\nname = \"prog\"\n\n[fs]\nroot = \"repo\"\n\n[llm]\nfixture = \"llm.jsonl\"\n\n[agent]\nkind = \"command\"\nadapter = \"generic\"\ncommand = \"./agent.sh\"\ntask = \"t\"\n\n[[verify]]\nkind = \"answer\"\ncontains = \"done\"\n",
    )
    .unwrap();
    let tape = dir.join("first.tape");
    run_ok(
        simtape()
            .arg("run")
            .arg(project.join("prog.toml"))
            .arg("--tape")
            .arg(&tape),
    );
    std::fs::remove_dir_all(&project).unwrap();
    let unpacked = dir.join("repro");
    run_ok(
        simtape()
            .arg("tape")
            .arg("unpack")
            .arg(&tape)
            .arg(&unpacked),
    );
    let mode = std::fs::metadata(unpacked.join("agent.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o111, 0o111, "mode {mode:o}");
    let again = dir.join("again.tape");
    run_ok(
        simtape()
            .arg("run")
            .arg(unpacked.join("prog.toml"))
            .args(["--seed", "0", "--tape"])
            .arg(&again),
    );
    assert!(
        std::fs::read(&tape).unwrap() == std::fs::read(&again).unwrap(),
        "the unpacked program wrote another tape"
    );
}

#[test]
fn tapes_of_every_older_format_show_verify_diff_and_replay() {
    // Goal: golden tapes of formats 1, 2 and 3, kept byte for byte from the repository's
    // history, still read: verify, show, export, the diff against the format-3 golden of the
    // same run (equal records, the version noted) and a replay, which runs the scenario
    // again in today's format and finds every record equal: the three replays are the same
    // bytes, and diff finds them equal to the old tapes record for record.
    let dir = scratch("tapes", "older-formats");
    // The scenario as it was when these tapes were written, and its golden in format 3 (the
    // shipped scenario has gained properties since, and so records).
    let old = repo().join("engine/cli/tests/data/old-tapes");
    let golden = old.join("v3-race-edit-seed-0.tape");
    let mut replays = Vec::new();
    for version in [1, 2, 3] {
        let tape = repo().join(format!(
            "engine/cli/tests/data/old-tapes/v{version}-race-edit-seed-0.tape"
        ));
        expect(
            simtape().args(["tape", "verify"]).arg(&tape),
            0,
            "ok: 42 records",
        );
        expect(
            simtape().args(["tape", "show"]).arg(&tape),
            0,
            &format!("(format v{version}, engine 0.1.0)"),
        );
        let export = run_ok(simtape().args(["tape", "export"]).arg(&tape));
        assert_eq!(String::from_utf8_lossy(&export.stdout).lines().count(), 44);
        if version < 3 {
            let diff = run_ok(simtape().arg("diff").arg(&tape).arg(&golden));
            let shown = text(&diff);
            assert!(
                shown.starts_with("tapes equal (exact): 42 records in A, 42 in B"),
                "{shown}"
            );
            assert!(
                shown.contains(&format!("note: format version differs: A {version}, B 3")),
                "{shown}"
            );
        }
        let replayed = dir.join(format!("v{version}-replayed.tape"));
        expect(
            simtape()
                .arg("replay")
                .arg(&tape)
                .arg("--scenario")
                .arg(old.join("race-edit.toml"))
                .arg("--out")
                .arg(&replayed),
            0,
            &format!("is format version {version}, replayed as version 4"),
        );
        replays.push(std::fs::read(&replayed).unwrap());
        if version == 3 {
            expect(
                simtape().args(["tape", "verify"]).arg(&replayed),
                0,
                "ok: 42 records",
            );
            let diff = run_ok(simtape().arg("diff").arg(&replayed).arg(&golden));
            let shown = text(&diff);
            assert!(
                shown.starts_with("tapes equal (exact): 42 records in A, 42 in B"),
                "{shown}"
            );
            assert!(
                shown.contains("note: format version differs: A 4, B 3"),
                "{shown}"
            );
        }
    }
    assert!(replays[0] == replays[1] && replays[1] == replays[2]);
}

#[test]
fn a_truncated_tape_verifies_as_a_named_prefix_and_shows_and_diffs_up_to_its_cut() {
    // Goal: a tape cut mid-record is exit 1 for verify, naming the last whole record; show
    // and export print every whole record and name the cut (exit 1); diff compares its whole
    // records with the full tape's and reports the rest as inserted (exit 1, not 2).
    let dir = scratch("tapes", "truncated");
    let golden = repo().join("tapes/race-edit/seed-0.tape");
    let bytes = std::fs::read(&golden).unwrap();
    let cut = dir.join("cut.tape");
    std::fs::write(&cut, &bytes[..3000]).unwrap();
    expect(
        simtape().args(["tape", "verify"]).arg(&cut),
        1,
        "truncated tape: record 5 is incomplete (after 5 complete records, at byte offset \
         2666; the last whole record is 4, a reply of agent at t=0ns)",
    );
    let show = simtape().args(["tape", "show"]).arg(&cut).output().unwrap();
    assert_eq!(show.status.code(), Some(1), "{}", text(&show));
    let stdout = String::from_utf8_lossy(&show.stdout);
    assert_eq!(
        stdout.lines().filter(|l| l.contains(" t=")).count(),
        5,
        "{stdout}"
    );
    assert!(
        String::from_utf8_lossy(&show.stderr).contains("shown up to the last whole record"),
        "{}",
        text(&show)
    );
    expect(simtape().args(["tape", "export"]).arg(&cut), 1, "\"seq\":4");
    expect(
        simtape().arg("diff").arg(&cut).arg(&golden),
        1,
        "first divergence: model call 1, request\n  where: 41 records inserted in B at index 5",
    );
    expect(
        simtape().arg("diff").arg(&cut).arg(&golden),
        1,
        "note: tape A is a prefix: truncated tape: record 5 is incomplete",
    );
}
