//! The `simtape` command line, end to end: real processes, real files, exit codes.

use crate::common;
use crate::common::text;

use common::{load_json, repo, simtape};

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn scenario(name: &str) -> PathBuf {
    repo().join("scenarios").join(name)
}

fn run_ok(command: &mut Command) -> Output {
    let output = command.output().unwrap();
    assert!(
        output.status.success(),
        "{:?} failed:\n{}",
        command,
        text(&output)
    );
    output
}

#[test]
fn run_prints_the_seed_first_and_succeeds() {
    // Goal: the bundled scenario runs, and the first line names the seed.
    let dir = scratch("hello");
    let tape = dir.join("out/hello.tape");
    let output = run_ok(
        simtape()
            .arg("run")
            .arg(scenario("hello.toml"))
            .arg("--tape")
            .arg(&tape),
    );
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(stdout.starts_with("seed="), "{stdout}");
    assert!(stdout.contains("result: PASS"), "{stdout}");
    assert!(tape.exists());
}

/// Runs `file` at `seed` in its own process with a hostile environment, returns the tape.
fn tape_from_process(
    dir: &Path,
    (file, label): (&str, &str),
    seed: u64,
    env: &[(&str, &str)],
    cwd: &Path,
) -> Vec<u8> {
    let tape = dir.join(format!("{label}.tape"));
    let mut command = simtape();
    command
        .current_dir(cwd)
        .arg("run")
        .arg(scenario(file))
        .args(["--seed", &seed.to_string(), "--tape"])
        .arg(&tape);
    for (key, value) in env {
        command.env(key, value);
    }
    run_ok(&mut command);
    std::fs::read(tape).unwrap()
}

#[test]
fn same_seed_same_bytes_across_processes_and_environments() {
    // Goal: TZ, locale, HOME, cwd and unrelated variables never reach the tape: scripted
    // tasks, the agent loop over the overlay, an MCP world with seeded faults, and a WASI guest.
    let dir = scratch("env");
    let elsewhere = scratch("env-cwd");
    let files = [
        "random-delays.toml",
        "refactor-agent.toml",
        "ticket-retry.toml",
        "overnight-backup.toml",
    ];
    for file in files {
        let label = |run: &str| format!("{file}-{run}");
        let a = tape_from_process(
            &dir,
            (file, &label("a")),
            5,
            &[
                ("TZ", "UTC"),
                ("LANG", "C"),
                ("LC_ALL", "C"),
                ("HOME", "/nonexistent-a"),
            ],
            &repo(),
        );
        let b = tape_from_process(
            &dir,
            (file, &label("b")),
            5,
            &[
                ("TZ", "Pacific/Chatham"),
                ("LANG", "de_DE.UTF-8"),
                ("LC_ALL", "tr_TR.UTF-8"),
                ("HOME", "/tmp"),
                ("SIMTAPE_UNRELATED", "x"),
                ("RUST_BACKTRACE", "1"),
            ],
            &elsewhere,
        );
        assert_eq!(
            a, b,
            "{file}: same seed, different environment: tapes differ"
        );
        let c = tape_from_process(&dir, (file, &label("c")), 6, &[], &repo());
        assert_ne!(
            a, c,
            "{file}: different seeds of a randomized scenario gave identical tapes"
        );
    }
}

#[test]
fn check_determinism_runs_twice() {
    // Goal: --check-determinism reports byte-identical tapes for a deterministic scenario.
    let output = run_ok(
        simtape()
            .arg("run")
            .arg(scenario("random-delays.toml"))
            .arg("--check-determinism"),
    );
    assert!(
        text(&output).contains("byte-identical"),
        "{}",
        text(&output)
    );
}

#[test]
fn replay_is_byte_identical_and_rejects_a_damaged_tape() {
    // Goal: `simtape replay` re-runs from the tape alone and matches it byte for byte.
    let dir = scratch("replay");
    let tape = dir.join("run.tape");
    run_ok(
        simtape()
            .arg("run")
            .arg(scenario("random-delays.toml"))
            .args(["--seed", "9", "--tape"])
            .arg(&tape),
    );
    let moved = dir.join("elsewhere.tape");
    std::fs::rename(&tape, &moved).unwrap();
    let temp = dir.join("temp");
    std::fs::create_dir_all(&temp).unwrap();
    let output = run_ok(
        simtape()
            .current_dir(&dir)
            .env("TMPDIR", &temp)
            .arg("replay")
            .arg(&moved),
    );
    assert!(
        text(&output).contains("byte-identical"),
        "{}",
        text(&output)
    );
    // A replay that matched leaves nothing in the temp directory.
    let left: Vec<_> = std::fs::read_dir(&temp).unwrap().collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    // Change one record's timing but keep the chain valid? Impossible: any edit breaks it.
    let mut bytes = std::fs::read(&moved).unwrap();
    let last = bytes.len() - 3;
    bytes[last] ^= 0xff;
    std::fs::write(&moved, &bytes).unwrap();
    let output = simtape()
        .arg("tape")
        .arg("verify")
        .arg(&moved)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
}

#[test]
fn a_failing_run_prints_the_command_that_reproduces_it() {
    // Goal: a deadlocked run exits 3 with its error, and the printed command reproduces it.
    let output = simtape()
        .arg("run")
        .arg(scenario("deadlock.toml"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(3), "{}", text(&output));
    let stdout = String::from_utf8(output.stdout.clone()).unwrap();
    assert!(stdout.contains("deadlock"), "{stdout}");
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("reproduce: "))
        .expect("a reproduce line");
    let words: Vec<&str> = line.split(' ').collect();
    assert_eq!(words[0], "simtape");
    let again = simtape().args(&words[1..]).output().unwrap();
    assert_eq!(again.status.code(), Some(3));
    let result = |o: &Output| {
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .find(|l| l.starts_with("result:"))
            .unwrap()
            .to_string()
    };
    assert_eq!(result(&output), result(&again));
}

#[test]
fn diff_exit_codes() {
    // Goal: diff exits 0 for equal tapes, 1 for divergent ones, 2 for unreadable input.
    let dir = scratch("diff");
    let tape = |seed: u64| {
        let path = dir.join(format!("{seed}.tape"));
        run_ok(
            simtape()
                .arg("run")
                .arg(scenario("random-delays.toml"))
                .args(["--seed", &seed.to_string(), "--tape"])
                .arg(&path),
        );
        path
    };
    let (a, b) = (tape(1), tape(2));
    let equal = simtape().arg("diff").arg(&a).arg(&a).output().unwrap();
    assert_eq!(equal.status.code(), Some(0), "{}", text(&equal));
    let differ = simtape().arg("diff").arg(&a).arg(&b).output().unwrap();
    assert_eq!(differ.status.code(), Some(1), "{}", text(&differ));
    let json = simtape()
        .arg("diff")
        .arg(&a)
        .arg(&b)
        .arg("--json")
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(report["equal"], serde_json::Value::Bool(false));
    let garbage = dir.join("garbage.tape");
    std::fs::write(&garbage, b"not a tape").unwrap();
    let error = simtape()
        .arg("diff")
        .arg(&a)
        .arg(&garbage)
        .output()
        .unwrap();
    assert_eq!(error.status.code(), Some(2), "{}", text(&error));
}

#[test]
fn export_writes_one_json_line_per_record() {
    // Goal: the JSONL export has the header first, then every record, each valid JSON.
    let dir = scratch("export");
    let tape = dir.join("run.tape");
    run_ok(
        simtape()
            .arg("run")
            .arg(scenario("hello.toml"))
            .arg("--tape")
            .arg(&tape),
    );
    let output = run_ok(simtape().args(["tape", "export", "--jsonl"]).arg(&tape));
    let lines: Vec<serde_json::Value> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(lines[0].get("header").is_some());
    assert_eq!(lines.last().unwrap()["kind"], "footer");
    let verify = run_ok(simtape().args(["tape", "verify"]).arg(&tape));
    let records: usize = text(&verify)
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(lines.len(), records + 2, "header + records + footer");
    run_ok(simtape().args(["tape", "show"]).arg(&tape));
}

#[test]
fn a_killed_run_leaves_a_prefix_reported_as_truncated() {
    // Goal: SIGKILL mid-run leaves a readable prefix that verify calls truncated (exit 1).
    let dir = scratch("killed");
    let tape = dir.join("endless.tape");
    let endless = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/endless.toml");
    let mut child = simtape()
        .arg("run")
        .arg(endless)
        .arg("--tape")
        .arg(&tape)
        .spawn()
        .unwrap();
    let mut waited = 0;
    while std::fs::metadata(&tape).map(|m| m.len()).unwrap_or(0) < 256 * 1024 {
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(
            child.try_wait().unwrap().is_none(),
            "the endless run ended early"
        );
        waited += 1;
        assert!(waited < 1500, "the endless run wrote nothing in 30 s");
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let output = simtape()
        .args(["tape", "verify"])
        .arg(&tape)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert!(text(&output).contains("truncated"), "{}", text(&output));
}

#[test]
fn check_reports_file_line_and_field() {
    // Goal: a broken scenario is rejected by `check` with its location, exit 2.
    let dir = scratch("check");
    let bad = dir.join("bad.toml");
    std::fs::write(
        &bad,
        "[scenario]\nname = \"bad\"\n\n[[task]]\nname = \"t\"\nsteps = [{ sleep = \"soon\" }]\n",
    )
    .unwrap();
    let output = simtape().arg("check").arg(&bad).output().unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    assert!(text(&output).contains("bad.toml:6"), "{}", text(&output));
    run_ok(simtape().arg("check").arg(scenario("hello.toml")));
}

#[test]
fn help_documents_exit_codes() {
    // Goal: `--help` lists every exit code.
    let output = run_ok(simtape().arg("--help"));
    let help = text(&output);
    for code in [
        "0  success",
        "1  a finding",
        "2  bad usage",
        "3  the simulated run ended in error",
        "4  a policy blocked the run",
    ] {
        assert!(help.contains(code), "missing {code:?} in:\n{help}");
    }
}

#[test]
fn golden_tapes_match() {
    // Goal: every shipped scenario at its pinned seeds reproduces its golden tape exactly,
    // claude-code-fix-test (Claude Code itself, under simulation) included.
    let Some(claude) = crate::clients::claude() else {
        return;
    };
    let output = simtape()
        .arg("ci")
        .arg(repo())
        .env("SIMTAPE_CLAUDE_CODE_BIN", claude)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output));
}

#[test]
fn ci_reports_missing_and_changed_goldens_and_blesses() {
    // Goal: `simtape ci` fails on a missing or changed golden and `--bless` rewrites it.
    let dir = scratch("ci");
    std::fs::create_dir_all(dir.join("scenarios")).unwrap();
    std::fs::copy(
        scenario("random-delays.toml"),
        dir.join("scenarios/random-delays.toml"),
    )
    .unwrap();
    let missing = simtape().arg("ci").arg(&dir).output().unwrap();
    assert_eq!(missing.status.code(), Some(1), "{}", text(&missing));
    assert!(text(&missing).contains("MISSING"), "{}", text(&missing));
    run_ok(simtape().arg("ci").arg(&dir).arg("--bless"));
    run_ok(simtape().arg("ci").arg(&dir));
    // Replace one golden with another seed's tape: the oracle explains the difference.
    let goldens: Vec<PathBuf> = std::fs::read_dir(dir.join("tapes/random-delays"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(goldens.len() >= 2, "the scenario pins several seeds");
    std::fs::copy(&goldens[0], &goldens[1]).unwrap();
    let changed = simtape().arg("ci").arg(&dir).output().unwrap();
    assert_eq!(changed.status.code(), Some(1), "{}", text(&changed));
    assert!(text(&changed).contains("DIFFERS"), "{}", text(&changed));
}

#[test]
fn emit_diff_writes_the_unified_diff_and_needs_an_fs_table() {
    // Goal: `run --emit-diff` writes the fs diff and names it in the summary; a scenario
    // without [fs] makes the flag a usage error (exit 2).
    let dir = scratch("emit-diff");
    let diff = dir.join("refactor.diff");
    let output = run_ok(
        simtape()
            .arg("run")
            .arg(scenario("refactor-files.toml"))
            .arg("--emit-diff")
            .arg(&diff),
    );
    let summary = format!(
        "fs diff: 3 added, 2 modified, 2 deleted ({})",
        diff.display()
    );
    assert!(text(&output).contains(&summary), "{}", text(&output));
    let written = std::fs::read_to_string(&diff).unwrap();
    assert!(
        written.starts_with("diff --git a/CHANGELOG.md b/CHANGELOG.md\nnew file mode 100644\n"),
        "{written}"
    );
    assert!(
        written
            .contains("diff --git a/src/helpers.rs b/src/helpers.rs\ndeleted file mode 100644\n"),
        "{written}"
    );
    let refused = simtape()
        .arg("run")
        .arg(scenario("hello.toml"))
        .arg("--emit-diff")
        .arg(dir.join("hello.diff"))
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused));
    assert!(
        text(&refused).contains("has no [fs] table"),
        "{}",
        text(&refused)
    );
    assert!(!dir.join("hello.diff").exists());
}

#[test]
fn a_denied_connect_is_blocked_naming_the_step() {
    // Goal: denied-egress is stopped by the network policy: BLOCKED (exit 4), printing the
    // denial with its task and step.
    let output = simtape()
        .arg("run")
        .arg(scenario("denied-egress.toml"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(4), "{}", text(&output));
    assert!(
        text(&output).contains("result: BLOCKED (net_denied) task \"fetcher\" failed at step task[0].steps[3] (`connect`): connection to pastebin.com:443 denied"),
        "{}",
        text(&output)
    );
}

#[test]
fn replay_of_a_scenario_with_files_takes_the_scenario_file() {
    // Goal: a golden tape of a scenario that references files replays byte for byte with
    // `--scenario`, since the tape records no host paths.
    let tape = repo().join("tapes/refactor-files/seed-0.tape");
    run_ok(
        simtape()
            .arg("replay")
            .arg(&tape)
            .arg("--scenario")
            .arg(scenario("refactor-files.toml")),
    );
}

#[test]
fn new_writes_a_scenario_that_checks_runs_and_replays() {
    // Goal: `simtape new` writes a working scenario; check, run, its printed replay command and
    // a second `new` (refused, nothing overwritten) behave as documented.
    let dir = scratch("new");
    run_ok(
        simtape()
            .current_dir(&dir)
            .args(["new", "starter", "--dir", "."]),
    );
    run_ok(simtape().current_dir(&dir).args(["check", "starter.toml"]));
    let output = run_ok(simtape().current_dir(&dir).args([
        "run",
        "starter.toml",
        "--tape",
        "out/starter.tape",
        "--emit-diff",
        "out/starter.diff",
    ]));
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(stdout.contains("result: PASS"), "{stdout}");
    assert!(stdout.contains("answer: notes.md reviewed"), "{stdout}");
    let diff = std::fs::read_to_string(dir.join("out/starter.diff")).unwrap();
    assert!(diff.contains("+- reviewed by the agent"), "{diff}");
    let replay = stdout
        .lines()
        .find_map(|l| l.strip_prefix("replay: "))
        .expect("a replay line");
    let words: Vec<&str> = replay.split(' ').collect();
    let again = run_ok(simtape().current_dir(&dir).args(&words[1..]));
    assert!(text(&again).contains("byte-identical"), "{}", text(&again));
    let refused = simtape()
        .current_dir(&dir)
        .args(["new", "starter", "--dir", "."])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused));
    let bad = simtape()
        .current_dir(&dir)
        .args(["new", "Bad Name"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad));
}

#[test]
fn evidence_of_an_agent_run_holds_the_transcript_and_the_world() {
    // Goal: the evidence of an eval run carries the verdict with every verifier, the agent's
    // transcript, and each world server's final state and report, all in the manifest.
    let dir = scratch("evidence-agent");
    let evidence = dir.join("ev");
    run_ok(
        simtape()
            .arg("run")
            .arg(scenario("ticket-retry.toml"))
            .arg("--evidence")
            .arg(&evidence),
    );
    let verdict = load_json(&evidence.join("verdict.json"));
    assert_eq!(verdict["verdict"], "pass");
    assert_eq!(verdict["verifiers"].as_array().unwrap().len(), 3);
    assert!(verdict["transcript"]["answer"]
        .as_str()
        .unwrap()
        .contains("closed as fixed"));
    let world = load_json(&evidence.join("world-tickets.json"));
    assert_eq!(world["state"]["tickets"]["T-1"]["status"], "closed");
    assert_eq!(world["report"]["passed"], true);
    let files = manifest_files(&evidence);
    assert!(files.iter().any(|f| f == "world-tickets.json"), "{files:?}");
}

#[test]
fn evidence_holds_every_artifact_with_its_sha256() {
    // Goal: --evidence writes the tape, fs diff, verdict, replay command and a manifest whose
    // hashes match the files; a failed run's verdict names the error.
    let dir = scratch("evidence");
    let evidence = dir.join("ok");
    run_ok(
        simtape()
            .arg("run")
            .arg(scenario("refactor-files.toml"))
            .arg("--evidence")
            .arg(&evidence),
    );
    let files = manifest_files(&evidence);
    assert_eq!(
        files,
        [
            "run.tape",
            "fs.diff",
            "fs-diff.json",
            "verdict.json",
            "replay.sh"
        ]
    );
    let manifest = load_json(&evidence.join("manifest.json"));
    for artifact in manifest["artifacts"].as_array().unwrap() {
        let bytes = std::fs::read(evidence.join(artifact["file"].as_str().unwrap())).unwrap();
        assert_eq!(artifact["sha256"], simtape::tape::sha256_hex(&bytes));
    }
    let verdict = load_json(&evidence.join("verdict.json"));
    assert_eq!(verdict["verdict"], "pass");
    run_ok(
        simtape()
            .args(["tape", "verify"])
            .arg(evidence.join("run.tape")),
    );
    let failed = dir.join("failed");
    let output = simtape()
        .arg("run")
        .arg(scenario("deadlock.toml"))
        .arg("--evidence")
        .arg(&failed)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(3), "{}", text(&output));
    let verdict = load_json(&failed.join("verdict.json"));
    assert_eq!(
        (
            verdict["verdict"].as_str(),
            verdict["error"]["kind"].as_str()
        ),
        (Some("error"), Some("deadlock"))
    );
}

#[test]
fn the_published_scenario_schema_accepts_every_shipped_scenario() {
    // Goal: docs/scenario.schema.json (for editors) agrees with the shipped scenarios and with
    // `simtape new`, and rejects an unknown step.
    let schema = load_json(&repo().join("docs/scenario.schema.json"));
    let validator = jsonschema::validator_for(&schema).unwrap();
    let as_json = |text: &str| -> serde_json::Value {
        serde_json::to_value(toml::from_str::<toml::Value>(text).unwrap()).unwrap()
    };
    let dir = scratch("schema");
    run_ok(
        simtape()
            .current_dir(&dir)
            .args(["new", "starter", "--dir", "."]),
    );
    let mut files: Vec<PathBuf> = std::fs::read_dir(repo().join("scenarios"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.push(dir.join("starter.toml"));
    assert!(files.len() >= 6);
    for file in &files {
        let value = as_json(&std::fs::read_to_string(file).unwrap());
        let errors: Vec<String> = validator
            .iter_errors(&value)
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{}: {errors:?}", file.display());
    }
    let bad =
        as_json("[scenario]\nname = \"x\"\n[[task]]\nname = \"t\"\nsteps = [{ slep = \"1s\" }]\n");
    assert!(!validator.is_valid(&bad));
    // The eval tables: the reference's complete eval scenario, and a rule with two triggers.
    let doc = std::fs::read_to_string(repo().join("docs/scenario-format.md")).unwrap();
    let marker = "<!-- complete eval example -->\n```toml\n";
    let start = doc.find(marker).unwrap() + marker.len();
    let eval = as_json(&doc[start..start + doc[start..].find("```").unwrap()]);
    let errors: Vec<String> = validator
        .iter_errors(&eval)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "eval example: {errors:?}");
    let agent = "[scenario]\nname = \"x\"\n[llm]\nfixture = \"f\"\n[agent]\ntask = \"t\"\n";
    assert!(validator.is_valid(&as_json(agent)));
    let two_triggers = format!("{agent}[[faults.llm]]\non_call = 1\nrate = \"1/2\"\n");
    assert!(!validator.is_valid(&as_json(&two_triggers)));
    let stream =
        format!("{agent}[[faults.llm]]\non_call = 1\nstream = \"cut\"\nafter_events = 2\n");
    assert!(validator.is_valid(&as_json(&stream)));
    let stream_status =
        format!("{agent}[[faults.llm]]\non_call = 1\nstream = \"stall\"\nstatus = 500\n");
    assert!(!validator.is_valid(&as_json(&stream_status)));
    let stray_after = format!("{agent}[[faults.llm]]\non_call = 1\nafter_events = 2\n");
    assert!(!validator.is_valid(&as_json(&stray_after)));
}

fn scratch(name: &str) -> PathBuf {
    common::scratch("cli-tests", name)
}

/// Returns the files an evidence directory's manifest lists, in its order.
fn manifest_files(evidence: &Path) -> Vec<String> {
    load_json(&evidence.join("manifest.json"))["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["file"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn output_into_a_closed_pipe_ends_quietly() {
    // Goal: `simtape tape show t.tape | head` does not panic when the reader stops early: the
    // pipe's reader is gone before the first line is written, so every write fails.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let output = simtape()
        .args(["tape", "show"])
        .arg(repo().join("tapes/race-edit/seed-0.tape"))
        .stdout(writer)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(output.status.signal(), Some(13), "{:?}", output.status);
    }
}

#[test]
fn a_run_a_policy_stopped_is_blocked_with_its_own_exit_code() {
    // Goal: a gate whose program `[process]` leaves hermetic cannot run: the run is BLOCKED
    // (exit 4, `tool_disabled`), in the text and the JSON, not FAIL or ERROR.
    let dir = scratch("blocked");
    let path = dir.join("blocked.toml");
    std::fs::write(
        &path,
        "[scenario]\nname = \"blocked\"\n\n[process]\ndefault = \"hermetic\"\n\n\
         [[task]]\nname = \"t\"\nsteps = [{ sleep = \"1ms\" }]\n\n\
         [[verify]]\nkind = \"gate\"\nprogram = \"cargo\"\nargs = [\"test\"]\n",
    )
    .unwrap();
    let output = simtape().arg("run").arg(&path).output().unwrap();
    assert_eq!(output.status.code(), Some(4), "{}", text(&output));
    assert!(
        text(&output).contains("result: BLOCKED (tool_disabled) verifier \"gate cargo test\": "),
        "{}",
        text(&output)
    );
    let output = simtape()
        .arg("run")
        .arg(&path)
        .arg("--json")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(4));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["verdict"], "blocked");
    assert_eq!(json["error"]["kind"], "tool_disabled");
}

#[test]
fn json_output_is_one_document_on_stdout() {
    // Goal: `run --json` and `check --json` print pure JSON on stdout (a reader like jq takes
    // it whole); the seed line goes to stderr; a bad scenario's problems are JSON too, exit 2.
    let output = simtape()
        .arg("run")
        .arg(scenario("hello.toml"))
        .arg("--json")
        .output()
        .unwrap();
    let run: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let seed = run["seed"].as_u64().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.starts_with(&format!("seed={seed}\n")), "{stderr}");
    let output = run_ok(
        simtape()
            .arg("check")
            .arg(scenario("hello.toml"))
            .arg("--json"),
    );
    let check: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        (&check["ok"], &check["scenario"]),
        (&true.into(), &"hello".into())
    );
    let dir = scratch("check-json");
    let bad = dir.join("bad.toml");
    std::fs::write(&bad, "[scenario]\nname = \"bad\"\nseeds = \"x\"\n").unwrap();
    let output = simtape()
        .arg("check")
        .arg(&bad)
        .arg("--json")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let check: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(check["ok"], false);
    let seeds = &check["problems"][1];
    assert_eq!(
        (&seeds["line"], &seeds["column"]),
        (&3.into(), &9.into()),
        "{check}"
    );
    assert_eq!(seeds["field"], "scenario.seeds");
}

#[test]
fn the_run_example_in_docs_cli_md_is_what_run_prints() {
    // Goal: docs/cli.md shows exactly what `simtape run` prints for overnight-backup (the
    // tape's directory aside), fingerprint, bytes and hash included.
    let dir = scratch("doc-run");
    let tape = dir.join("run.tape");
    let output = run_ok(
        simtape()
            .current_dir(repo())
            .args(["run", "scenarios/overnight-backup.toml", "--tape"])
            .arg(&tape),
    );
    let stdout = String::from_utf8(output.stdout).unwrap();
    let shown = stdout.replace(&format!("{}/", dir.display()), "");
    common::check_doc_block(
        "docs/cli.md",
        "the_run_example_in_docs_cli_md_is_what_run_prints",
        &shown,
    );
}

/// Returns the files under `dir` (recursively) whose name ends with `suffix`, skipping
/// dependency and build directories.
fn files_ending(dir: &Path, suffix: &str, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() && !["node_modules", "target", ".git"].contains(&name.as_str()) {
            files_ending(&path, suffix, found);
        } else if name.ends_with(suffix) {
            found.push(path);
        }
    }
}

#[test]
fn docs_cite_nothing_outside_the_repository_and_ci_means_true() {
    // Goal: no doc sends a reader to a notes file or an issue number the repository does not
    // hold; no test treats `CI=false` as CI (only `true` or `1` count).
    let root = repo();
    let mut docs = vec![root.join("README.md"), root.join("bench/README.md")];
    files_ending(&root.join("docs"), ".md", &mut docs);
    for doc in &docs {
        let text = std::fs::read_to_string(doc).unwrap();
        assert!(
            !text.contains("shared/notes"),
            "{} cites shared/notes",
            doc.display()
        );
        let words: Vec<&str> = text.split_whitespace().collect();
        for pair in words.windows(2) {
            let number = pair[1].trim_matches(|c: char| !c.is_ascii_digit());
            let cites = pair[0].eq_ignore_ascii_case("issue") && !number.is_empty();
            assert!(!cites, "{} cites `{} {}`", doc.display(), pair[0], pair[1]);
        }
    }
    let mut sources = Vec::new();
    files_ending(&root.join("engine"), ".rs", &mut sources);
    files_ending(&root.join("bench"), ".rs", &mut sources);
    let wanted = ["var_os(\"CI\")", ".is_some()"].concat();
    for source in sources {
        let text = std::fs::read_to_string(&source).unwrap();
        assert!(
            !text.contains(&wanted),
            "{} treats any CI value as CI",
            source.display()
        );
    }
}

#[test]
fn the_complete_example_passes_as_its_header_says() {
    // Goal: docs/scenario-format.md's complete example, run as a user would, PASSes at both
    // seeds its header names (it used to FAIL with "no verifier ran").
    let doc = std::fs::read_to_string(repo().join("docs/scenario-format.md")).unwrap();
    let marker = "<!-- complete example -->\n```toml\n";
    let start = doc.find(marker).unwrap() + marker.len();
    let example = &doc[start..start + doc[start..].find("```").unwrap()];
    assert!(
        example.contains("Expected outcome: PASS at both seeds"),
        "{example}"
    );
    let dir = scratch("complete-example");
    let path = dir.join("review.toml");
    std::fs::write(&path, example).unwrap();
    for seed in ["1", "2"] {
        let output = run_ok(simtape().arg("run").arg(&path).args(["--seed", seed]));
        assert!(text(&output).contains("result: PASS"), "{}", text(&output));
    }
}

#[test]
fn the_readme_set_up_is_true() {
    // Goal: the README says how to get `simtape` on PATH, builds the binary without wasmtime
    // with the package and flag that do it, and records MCP servers without npx (which
    // docs/mcp.md warns against).
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    assert!(readme.contains("cargo install --path engine/cli"));
    assert!(readme.contains("-p simtape-cli --no-default-features"));
    let cli = std::fs::read_to_string(repo().join("engine/cli/Cargo.toml")).unwrap();
    assert!(cli.contains("name = \"simtape-cli\"") && cli.contains("default = [\"wasi\"]"));
    let recorded: Vec<&str> = readme
        .lines()
        .filter(|l| l.starts_with("simtape mcp record"))
        .collect();
    assert!(
        !recorded.is_empty() && recorded.iter().all(|l| !l.contains("npx")),
        "{recorded:?}"
    );
}

#[test]
fn a_new_scenario_starts_blessed_and_its_help_names_one_default() {
    // Goal: in the layout `simtape ci` checks, `simtape new` writes the new scenario's golden
    // tapes, so the next `simtape ci` passes (it reported MISSING and exited 1); `new --help`
    // states its default directory once.
    let dir = scratch("new-blessed");
    std::fs::create_dir_all(dir.join("scenarios")).unwrap();
    std::fs::create_dir_all(dir.join("tapes")).unwrap();
    let created = run_ok(simtape().current_dir(&dir).args(["new", "my-agent"]));
    assert!(
        text(&created).contains("wrote golden tape tapes/my-agent/seed-1.tape"),
        "{}",
        text(&created)
    );
    let ci = run_ok(simtape().current_dir(&dir).arg("ci"));
    assert!(
        text(&ci).contains("3 tape(s) match, 0 failed"),
        "{}",
        text(&ci)
    );
    let help = text(&run_ok(simtape().args(["new", "--help"])));
    assert!(!help.contains("[default:"), "{help}");
    assert_eq!(help.matches("default").count(), 1, "{help}");
}
