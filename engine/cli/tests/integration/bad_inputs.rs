//! Bad input, as a tour of the command line found it: each case is a clear error naming the
//! file, the field or the argument, exit 2, and never a panic, a hang or an out-of-memory kill.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::common::{repo, scratch, simtape, text};

/// Runs `command` with stdin closed and returns its output.
fn run(command: &mut Command) -> Output {
    command.stdin(Stdio::null()).output().unwrap()
}

/// Asserts exit 2 and that the output contains every piece of `expected`.
fn assert_usage(output: &Output, expected: &[&str]) {
    let all = text(output);
    assert_eq!(output.status.code(), Some(2), "{all}");
    for piece in expected {
        assert!(all.contains(piece), "expected {piece:?} in:\n{all}");
    }
    assert!(!all.contains("panicked"), "{all}");
}

/// Copies the race-edit scenario and its data into `dir`, returning the copy's path.
fn race_edit_copy(dir: &Path) -> PathBuf {
    let scenario = dir.join("race-edit.toml");
    std::fs::copy(repo().join("scenarios/race-edit.toml"), &scenario).unwrap();
    let data = dir.join("data/race");
    std::fs::create_dir_all(data.join("worktree")).unwrap();
    std::fs::copy(
        repo().join("scenarios/data/race/worktree/config.toml"),
        data.join("worktree/config.toml"),
    )
    .unwrap();
    scenario
}

#[test]
fn devices_are_refused_as_inputs_naming_the_file() {
    // Goal: /dev/zero as a world spec, a cassette, a world state, or behind a fixture's link
    // is refused at once (exit 2) naming the path, never read until the OOM killer ends it.
    let dir = scratch("bad-inputs", "devices");
    let world = run(simtape().args(["mcp", "world", "--spec", "/dev/zero"]));
    assert_usage(
        &world,
        &[
            "/dev/zero",
            "world spec must be a file, not a character device",
        ],
    );
    let replay = run(simtape().args(["mcp", "replay", "--cassette", "/dev/zero"]));
    assert_usage(&replay, &["/dev/zero", "MCP cassette must be a file"]);
    let spec = repo().join("scenarios/worlds/ticket-tracker.json");
    let eval = run(simtape()
        .args(["mcp", "eval", "--state", "/dev/zero", "--spec"])
        .arg(&spec));
    assert_usage(&eval, &["/dev/zero", "world state must be a file"]);
    let scenario = race_edit_copy(&dir);
    std::os::unix::fs::symlink("/dev/zero", dir.join("data/race/llm.jsonl")).unwrap();
    let check = run(simtape().arg("check").arg(&scenario));
    assert_usage(
        &check,
        &[
            "llm.jsonl",
            "LLM fixture must be a file, not a character device",
        ],
    );
}

#[test]
fn a_file_past_its_cap_names_the_cap_and_the_setting_that_raises_it() {
    // Goal: a scenario one byte past 4 MiB is refused naming the cap and
    // SIMTAPE_INPUT_BYTES_MAX; with the setting raised, the same file is read (and fails
    // later, on its content).
    let dir = scratch("bad-inputs", "cap");
    let big = dir.join("big.toml");
    std::fs::write(&big, vec![b'#'; (4 << 20) + 1]).unwrap();
    let refused = run(simtape()
        .arg("check")
        .arg(&big)
        .env_remove("SIMTAPE_INPUT_BYTES_MAX"));
    assert_usage(
        &refused,
        &[
            "big.toml",
            "larger than 4194304 bytes",
            "SIMTAPE_INPUT_BYTES_MAX",
        ],
    );
    let raised = run(simtape()
        .arg("check")
        .arg(&big)
        .env("SIMTAPE_INPUT_BYTES_MAX", "8388608"));
    assert_eq!(raised.status.code(), Some(2), "{}", text(&raised));
    assert!(!text(&raised).contains("larger than"), "{}", text(&raised));
    let bad_setting = run(simtape()
        .arg("check")
        .arg(&big)
        .env("SIMTAPE_INPUT_BYTES_MAX", "lots"));
    assert_usage(&bad_setting, &["SIMTAPE_INPUT_BYTES_MAX=\"lots\""]);
}

#[test]
fn an_fs_root_outside_the_scenario_needs_an_explicit_opt_in() {
    // Goal: `root = "../../../../etc"` is refused by check at the field, naming the resolved
    // root and the opt-in; with `allow_outside = true` it checks, and check says so.
    let dir = scratch("bad-inputs", "fs-root");
    let scenario = dir.join("escape.toml");
    let head = "[scenario]\nname = \"escape\"\n[fs]\nroot = \"../../../../../../../../etc\"\n";
    let task = "[[task]]\nname = \"t\"\nsteps = [{ read = \"passwd\" }]\n";
    std::fs::write(&scenario, format!("{head}{task}")).unwrap();
    let refused = run(simtape().arg("check").arg(&scenario));
    assert_usage(
        &refused,
        &[
            "escape.toml:4",
            "fs.root",
            "/etc is outside the scenario's directory",
            "allow_outside = true",
        ],
    );
    std::fs::write(&scenario, format!("{head}allow_outside = true\n{task}")).unwrap();
    let allowed = run(simtape().arg("check").arg(&scenario));
    assert_eq!(allowed.status.code(), Some(0), "{}", text(&allowed));
    assert!(
        text(&allowed).contains("note: the [fs] root /etc is outside the scenario's directory"),
        "{}",
        text(&allowed)
    );
}

/// Writes a scenario whose one `[[mcp]]` server replays `cassette`, and returns its path.
fn scenario_with_cassette(dir: &Path, cassette: &serde_json::Value) -> PathBuf {
    std::fs::write(dir.join("c.cassette.json"), cassette.to_string()).unwrap();
    let scenario = dir.join("mcp.toml");
    std::fs::write(
        &scenario,
        "[scenario]\nname = \"mcp\"\n\n[[mcp]]\nname = \"sums\"\ncassette = \"c.cassette.json\"\n\n\
         [[task]]\nname = \"t\"\nsteps = [{ sleep = \"0s\" }]\n",
    )
    .unwrap();
    scenario
}

#[test]
fn check_refuses_cassettes_that_could_not_serve_a_run() {
    // Goal: a cassette whose tools/list result is not a list of tools, and an empty cassette,
    // are problems `check` reports at the [[mcp]] cassette field, naming the field inside.
    let dir = scratch("bad-inputs", "cassettes");
    let good: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("engine/agent/tests/data/sums.cassette.json"))
            .unwrap(),
    )
    .unwrap();
    let ok = run(simtape()
        .arg("check")
        .arg(scenario_with_cassette(&dir, &good)));
    assert_eq!(ok.status.code(), Some(0), "{}", text(&ok));
    let mut malformed = good.clone();
    malformed["messages"][1]["message"]["result"]["tools"] = "notalist".into();
    let check = run(simtape()
        .arg("check")
        .arg(scenario_with_cassette(&dir, &malformed)));
    assert_usage(
        &check,
        &[
            "mcp.toml:6",
            "mcp[0].cassette",
            "`result.tools` is \"notalist\", expected an array of tools",
        ],
    );
    let mut empty = good.clone();
    empty["messages"] = serde_json::json!([]);
    let check = run(simtape()
        .arg("check")
        .arg(scenario_with_cassette(&dir, &empty)));
    assert_usage(
        &check,
        &["mcp[0].cassette", "records no request from the client"],
    );
}

#[test]
fn jobs_are_capped() {
    // Goal: `--jobs 20000` is refused (exit 2) naming the cap, instead of starting 20,000
    // threads.
    let sweep = run(simtape()
        .arg("sweep")
        .arg(repo().join("scenarios/hello.toml"))
        .args(["--seeds", "0..3", "--jobs", "20000"]));
    assert_usage(&sweep, &["--jobs 20000", "at most 256 threads"]);
}

#[test]
fn output_paths_are_checked_before_the_first_run() {
    // Goal: an unwritable --report-out stops the sweep before any seed runs, and bad --tape
    // paths are usage errors with the real reason: a file in the way, a directory, a place
    // that cannot be created.
    let dir = scratch("bad-inputs", "outputs");
    let hello = repo().join("scenarios/hello.toml");
    let sweep = run(simtape().arg("sweep").arg(&hello).args([
        "--seeds",
        "0..3",
        "--report-out",
        "/proc/report.json",
    ]));
    assert_usage(
        &sweep,
        &["--report-out /proc/report.json: cannot be written"],
    );
    assert!(
        !text(&sweep).contains("run(s) on"),
        "no run started: {}",
        text(&sweep)
    );
    std::fs::write(dir.join("file"), "").unwrap();
    let out = run(simtape()
        .arg("sweep")
        .arg(&hello)
        .args(["--seeds", "0..3", "--out"])
        .arg(dir.join("file")));
    assert_usage(&out, &["--out", "file is a file, not a directory"]);
    let cases = [
        ("/proc/x.tape", "cannot be written".to_string()),
        (
            "file/x.tape",
            format!(
                "cannot be created: {} is a file",
                dir.join("file").display()
            ),
        ),
        (".", "is a directory".to_string()),
    ];
    for (tape, why) in cases {
        let tape_path = dir.join(tape);
        let run_one = run(simtape()
            .arg("run")
            .arg(&hello)
            .arg("--tape")
            .arg(&tape_path));
        assert_usage(&run_one, &["--tape", &why]);
        assert!(!text(&run_one).contains("result:"), "{}", text(&run_one));
    }
}

#[test]
fn a_full_disk_while_writing_a_tape_is_not_the_scenarios_verdict() {
    // Goal: `--tape /dev/full` reports the write failure as what it is (exit 2), not an
    // ERROR verdict of the scenario (exit 3).
    let full = run(simtape()
        .arg("run")
        .arg(repo().join("scenarios/hello.toml"))
        .args(["--tape", "/dev/full"]));
    assert_usage(
        &full,
        &["writing the tape /dev/full failed: No space left on device"],
    );
    assert!(!text(&full).contains("result: ERROR"), "{}", text(&full));
}

#[test]
fn a_sleep_past_the_virtual_time_cap_is_reported_by_check_at_its_step() {
    // Goal: `sleep = "18446744073709551615"` and `"600000y"` fail check at the step that
    // passes the cap, naming the limit and the i64 bound, instead of a run that stops at t=0
    // with a misleading limit; so does a repeat that adds up past it.
    let dir = scratch("bad-inputs", "durations");
    let scenario = dir.join("d.toml");
    for (sleep, repeat) in [("18446744073709551615", 1), ("600000y", 1), ("200d", 3)] {
        std::fs::write(
            &scenario,
            format!(
                "[scenario]\nname = \"d\"\n\n[[task]]\nname = \"t\"\nrepeat = {repeat}\nsteps = [\n  {{ event = \"a\" }},\n  {{ sleep = \"{sleep}\" }},\n]\n"
            ),
        )
        .unwrap();
        let check = run(simtape().arg("check").arg(&scenario));
        assert_usage(
            &check,
            &[
                "d.toml:9:3",
                "task[0].steps[1]",
                "virtual_time_max_ns",
                "9223372036854775807ns",
            ],
        );
    }
}

#[test]
fn an_empty_tape_is_bad_input_for_every_command_and_paths_are_printed_once() {
    // Goal: one rule: an empty file given as a tape is exit 2 from replay, diff, tape show,
    // export and verify alike; a missing tape names its path once.
    let dir = scratch("bad-inputs", "empty-tape");
    let empty = dir.join("empty.tape");
    std::fs::write(&empty, b"").unwrap();
    let commands: [&[&str]; 5] = [
        &["replay"],
        &["tape", "show"],
        &["tape", "verify"],
        &["tape", "export", "--jsonl"],
        &["diff", "TAPE"],
    ];
    // Each command with `tape` as its tape (both of diff's).
    let with = |args: &[&str], tape: &str| {
        let mut command = simtape();
        command.current_dir(&dir);
        for arg in args {
            command.arg(if *arg == "TAPE" { tape } else { arg });
        }
        run(command.arg(tape))
    };
    for args in commands {
        let out = with(args, "empty.tape");
        assert_usage(&out, &["empty.tape", "not a simtape tape"]);
    }
    for args in commands {
        let out = with(args, "nope.tape");
        let all = text(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {all}");
        assert_eq!(all.matches("nope.tape").count(), 1, "{args:?}: {all}");
    }
}

#[test]
fn seeds_too_large_say_overflow_and_name_the_field() {
    // Goal: `--seeds 0..99999999999999999999` says the seed overflows (not "expected A < B"),
    // and a seed past TOML's i64 names its field and the bound.
    let dir = scratch("bad-inputs", "seeds");
    let hello = repo().join("scenarios/hello.toml");
    let sweep = run(simtape()
        .arg("sweep")
        .arg(&hello)
        .args(["--seeds", "0..99999999999999999999"]));
    assert_usage(&sweep, &["overflows"]);
    assert!(!text(&sweep).contains("A < B"), "{}", text(&sweep));
    let scenario = dir.join("s.toml");
    std::fs::write(
        &scenario,
        "[scenario]\nname = \"s\"\nseeds = [18446744073709551615]\n\n[[task]]\nname = \"t\"\nsteps = [{ sleep = \"1s\" }]\n",
    )
    .unwrap();
    let check = run(simtape().arg("check").arg(&scenario));
    assert_usage(
        &check,
        &[
            "s.toml:3:10",
            "field `scenario.seeds`",
            "at most 9223372036854775807",
        ],
    );
}

#[test]
fn ci_refuses_two_scenarios_of_one_name_with_both_paths() {
    // Goal: two scenario files sharing a `name` would share golden tapes (bless says both
    // match, ci says DIFFERS forever): ci refuses them at once, naming both files.
    let dir = scratch("bad-inputs", "ci-names");
    std::fs::create_dir_all(dir.join("scenarios")).unwrap();
    let hello = std::fs::read_to_string(repo().join("scenarios/hello.toml")).unwrap();
    std::fs::write(dir.join("scenarios/a.toml"), &hello).unwrap();
    std::fs::write(dir.join("scenarios/b.toml"), &hello).unwrap();
    for bless in [false, true] {
        let mut command = simtape();
        command.arg("ci").arg(&dir);
        if bless {
            command.arg("--bless");
        }
        let ci = run(&mut command);
        assert_usage(&ci, &["a.toml and ", "b.toml are both named \"hello\""]);
    }
    assert!(!dir.join("tapes").exists(), "nothing blessed");
}

#[test]
fn new_refuses_a_name_its_scenario_could_not_carry() {
    // Goal: `simtape new` with a 100-character name is refused up front (names are capped
    // at 64), instead of writing a scenario that fails its own check.
    let dir = scratch("bad-inputs", "new-name");
    let long = "a".repeat(100);
    let new = run(simtape().arg("new").arg(&long).arg("--dir").arg(&dir));
    assert_usage(&new, &["at most 64 characters"]);
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        0,
        "nothing written"
    );
    let ok = run(simtape()
        .arg("new")
        .arg("a".repeat(64))
        .arg("--dir")
        .arg(&dir));
    assert_eq!(ok.status.code(), Some(0), "{}", text(&ok));
}

#[test]
fn check_refuses_a_wasi_module_that_is_not_webassembly() {
    // Goal: a garbage .wasm (no magic, or the magic then garbage) fails check at the program
    // that names it, as docs/cli.md says check validates WASI modules.
    let dir = scratch("bad-inputs", "wasm");
    let scenario = dir.join("wasi-sleeper.toml");
    std::fs::copy(repo().join("scenarios/wasi-sleeper.toml"), &scenario).unwrap();
    std::fs::create_dir_all(dir.join("data/wasi")).unwrap();
    let module = dir.join("data/wasi/sleeper.wasm");
    std::fs::copy(repo().join("scenarios/data/wasi/sleeper.wasm"), &module).unwrap();
    let ok = run(simtape().arg("check").arg(&scenario));
    assert_eq!(ok.status.code(), Some(0), "{}", text(&ok));
    for garbage in [&b"garbage"[..], &b"\0asm\x01\0\0\0garbage"[..]] {
        std::fs::write(&module, garbage).unwrap();
        let check = run(simtape().arg("check").arg(&scenario));
        assert_usage(
            &check,
            &["process.programs.sleeper", "sleeper.wasm is not valid"],
        );
    }
}
