//! The subprocess capability: record and replay through the process tape, matching,
//! divergence, exhaustion, the output cap, process-group cleanup, hermetic mode and
//! normalization.

use std::future::Future;
use std::path::{Path, PathBuf};

use simtape::cap::process::{
    process_tape_from_tape, Command, ExitStatus, Normalizer, ProcessActor, ProcessError,
    ProcessHandle, ProcessMode, ProcessTape, ProcessTapeError,
};
use simtape::limits::Limits;
use simtape::{RunReport, Sim};

/// Returns an empty directory for one test under the cargo target's temp dir.
fn fresh_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("cap_process")
        .join(name);
    if dir.exists() {
        std::fs::remove_dir_all(&dir).unwrap();
    }
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn script(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/process")
        .join(name)
        .display()
        .to_string()
}

/// Runs `pipeline` with `actor` as the run's process actor.
fn run<F, Fut, T>(actor: ProcessActor, pipeline: F) -> RunReport<T>
where
    F: FnOnce(ProcessHandle) -> Fut,
    Fut: Future<Output = T> + 'static,
    T: 'static,
{
    let mut builder = Sim::builder();
    builder.seed(1).process(actor);
    builder
        .build()
        .unwrap()
        .run(|host| pipeline(host.process()))
        .unwrap()
}

fn tape_text(entries: &[&str]) -> String {
    let mut text = String::from("{\"simtape_process\": 1}\n");
    for entry in entries {
        text.push_str(entry);
        text.push('\n');
    }
    text
}

fn sh(command: &str) -> Command {
    Command::new("sh").arg("-c").arg(command)
}

#[test]
fn record_then_replay_round_trip() {
    // Goal: a replay gives back exactly what the recording saw, and takes the same virtual time.
    let dir = fresh_dir("round_trip");
    let tape_path = dir.join("run.process.jsonl");
    let commands = vec![
        Command::new("echo").arg("hi"),
        sh("cat; echo oops >&2; exit 3")
            .stdin("from stdin\n")
            .env("GREETING", "hello"),
    ];
    let recorded = run(ProcessActor::record(&tape_path).unwrap(), {
        let commands = commands.clone();
        |process| async move {
            let mut outputs = Vec::new();
            for command in commands {
                outputs.push(process.run(command).await.unwrap());
            }
            outputs
        }
    });
    let outputs = &recorded.output;
    assert_eq!(outputs[0].stdout, b"hi\n");
    assert_eq!(outputs[0].status, ExitStatus::Code(0));
    assert_eq!(outputs[1].stdout, b"from stdin\n");
    assert_eq!(outputs[1].stderr, b"oops\n");
    assert_eq!(outputs[1].status, ExitStatus::Code(3));
    let total_ns: u64 = outputs.iter().map(|o| o.duration_ns).sum();
    assert_eq!(recorded.summary.end_ns, total_ns);

    let tape = ProcessTape::load(&tape_path).unwrap();
    assert_eq!(tape.entries.len(), 2);
    assert_eq!(tape.entries[1].1.env.get("GREETING").unwrap(), "hello");

    let replayed = run(ProcessActor::replay(tape), |process| async move {
        let mut outputs = Vec::new();
        for command in commands {
            outputs.push(process.run(command).await.unwrap());
        }
        process.finish().await.unwrap();
        outputs
    });
    assert_eq!(&replayed.output, outputs);
    assert_eq!(replayed.summary.end_ns, total_ns);
    assert!(replayed.process().unwrap().unused_entries().is_empty());
}

#[test]
fn replay_starts_no_process() {
    // Goal: replay answers from the tape even for programs that are absent or would leave a trace.
    let dir = fresh_dir("no_process");
    let marker = dir.join("marker");
    let tape_path = dir.join("run.process.jsonl");
    let marker_command = Command::new(script("write_marker.sh")).arg(marker.display().to_string());
    let recorded = run(ProcessActor::record(&tape_path).unwrap(), {
        let command = marker_command.clone();
        |process| async move { process.run(command).await.unwrap() }
    });
    assert!(marker.exists(), "recording ran the script");
    std::fs::remove_file(&marker).unwrap();

    let mut text = std::fs::read_to_string(&tape_path).unwrap();
    text.push_str(
        r#"{"program": "/no/such/tool", "stdout": "tool output\n", "status": {"code": 0}, "duration_ns": 5}"#,
    );
    let tape = ProcessTape::parse("with-missing-tool", &text).unwrap();
    let replayed = run(ProcessActor::replay(tape), |process| async move {
        let marker_output = process.run(marker_command).await.unwrap();
        let tool = process.run(Command::new("/no/such/tool")).await.unwrap();
        (marker_output, tool.stdout)
    });
    assert_eq!(replayed.output.0, recorded.output);
    assert_eq!(replayed.output.1, b"tool output\n");
    assert!(!marker.exists(), "replay must not run the script");
}

#[test]
fn matching_by_key_with_cwd_wildcard_and_stdin_digest() {
    // Goal: entries match on program, args, cwd (null = any) and stdin digest, repeats in order.
    let digest = simtape::tape::sha256_hex(b"input");
    let any_cwd = r#"{"program": "ls", "cwd": null, "stdout": "any\n", "status": {"code": 0}, "duration_ns": 1}"#;
    let exact_cwd = r#"{"program": "ls", "cwd": "/b", "stdout": "b\n", "status": {"code": 0}, "duration_ns": 10}"#;
    let with_stdin = format!(
        r#"{{"program": "wc", "stdin_sha256": "{digest}", "stdout": "first\n", "status": {{"code": 0}}, "duration_ns": 100}}"#
    );
    let again = format!(
        r#"{{"program": "wc", "stdin_sha256": "{digest}", "stdout": "second\n", "status": {{"code": 0}}, "duration_ns": 1000}}"#
    );
    let text = tape_text(&[any_cwd, exact_cwd, &with_stdin, &again]);
    let tape = ProcessTape::parse("inline", &text).unwrap();
    let report = run(ProcessActor::replay(tape), |process| async move {
        let mut seen = Vec::new();
        for command in [
            Command::new("wc").stdin("input"),
            Command::new("ls").cwd("/anywhere"),
            Command::new("ls").cwd("/b"),
            Command::new("wc").stdin("input"),
        ] {
            seen.push(String::from_utf8(process.run(command).await.unwrap().stdout).unwrap());
        }
        seen
    });
    // Each call takes the first unused entry that matches: the wildcard one, then /b's own.
    assert_eq!(report.output, ["first\n", "any\n", "b\n", "second\n"]);
    assert_eq!(report.summary.end_ns, 1111);
}

#[test]
fn divergence_names_call_field_expected_and_found() {
    // Goal: a call matching no entry reports its number, the first differing field, expected vs found.
    let entries = [
        r#"{"program": "git", "args": ["status"], "status": {"code": 0}, "duration_ns": 1}"#,
        r#"{"program": "git", "args": ["log"], "cwd": "/repo", "status": {"code": 0}, "duration_ns": 1}"#,
        r#"{"program": "cat", "status": {"code": 0}, "duration_ns": 1}"#,
    ];
    let tape = ProcessTape::parse("t.jsonl", &tape_text(&entries)).unwrap();
    let report = run(ProcessActor::replay(tape), |process| async move {
        process
            .run(Command::new("git").arg("status"))
            .await
            .unwrap();
        let args = process
            .run(Command::new("git").arg("diff"))
            .await
            .unwrap_err();
        let cwd = process
            .run(Command::new("git").arg("log").cwd("/elsewhere"))
            .await
            .unwrap_err();
        let program = process.run(Command::new("dog")).await.unwrap_err();
        let stdin = process
            .run(Command::new("git").arg("log").cwd("/repo").stdin("x"))
            .await
            .unwrap_err();
        [args, cwd, program, stdin].map(|e| e.to_string())
    });
    let [args, cwd, program, stdin] = &report.output;
    assert_eq!(
        args,
        r#"process tape diverged at call #2 (git): args differs from the entry at line 3: expected ["log"], found ["diff"]"#
    );
    assert_eq!(
        cwd,
        r#"process tape diverged at call #3 (git): cwd differs from the entry at line 3: expected "/repo", found "/elsewhere""#
    );
    assert_eq!(
        program,
        r#"process tape diverged at call #4 (dog): program differs from the entry at line 3: expected "git", found "dog""#
    );
    let empty = simtape::tape::sha256_hex(b"");
    let x = simtape::tape::sha256_hex(b"x");
    assert_eq!(
        stdin,
        &format!("process tape diverged at call #5 (git): stdin_sha256 differs from the entry at line 3: expected \"{empty}\", found \"{x}\"")
    );
}

#[test]
fn exhausted_tape_and_unused_entries_are_errors() {
    // Goal: a call past the tape's end fails, and leftover entries fail the check unless relaxed.
    let entries = [
        r#"{"program": "a", "status": {"code": 0}, "duration_ns": 1}"#,
        r#"{"program": "b", "status": {"code": 0}, "duration_ns": 1}"#,
    ];
    let tape = ProcessTape::parse("t", &tape_text(&entries)).unwrap();
    let exhausted = run(ProcessActor::replay(tape.clone()), |process| async move {
        process.run(Command::new("a")).await.unwrap();
        process.run(Command::new("b")).await.unwrap();
        process.run(Command::new("c").arg("x")).await.unwrap_err()
    });
    assert_eq!(
        exhausted.output,
        ProcessError::Exhausted {
            call: 3,
            program: "c".into(),
            args: vec!["x".into()]
        }
    );
    assert_eq!(
        exhausted.output.to_string(),
        r#"process tape exhausted at call #3: c ["x"]"#
    );

    let unused = run(ProcessActor::replay(tape.clone()), |process| async move {
        process.run(Command::new("b")).await.unwrap();
        process.finish().await
    });
    let expected = ProcessError::UnusedEntries {
        count: 1,
        first_line: 2,
        first_program: "a".into(),
    };
    assert_eq!(unused.output, Err(expected.clone()));
    let actor = unused.process().unwrap();
    assert_eq!(actor.unused_entries().len(), 1);
    assert_eq!(actor.unused_entries()[0].line, 2);
    assert_eq!(actor.check_unused(), Err(expected));

    let relaxed = run(
        ProcessActor::replay(tape).strict_unused(false),
        |process| async move { process.finish().await },
    );
    assert_eq!(relaxed.output, Ok(()));
    assert_eq!(relaxed.process().unwrap().unused_entries().len(), 2);
}

#[test]
fn output_cap_is_recorded() {
    // Goal: output past the cap is dropped, and the drop is in the output and the process tape.
    let dir = fresh_dir("cap");
    let tape_path = dir.join("run.process.jsonl");
    let limits = Limits {
        process_output_bytes_max: 10,
        ..Limits::default()
    };
    let actor = ProcessActor::record(&tape_path).unwrap().limits(&limits);
    let report = run(actor, |process| async move {
        process
            .run(sh("printf 0123456789abcdef; printf 12 >&2"))
            .await
            .unwrap()
    });
    assert_eq!(report.output.stdout, b"0123456789");
    assert_eq!(report.output.stderr, b"12");
    assert_eq!(report.output.truncated.stdout_dropped_bytes, 6);
    assert_eq!(report.output.truncated.stderr_dropped_bytes, 0);
    assert!(report.output.truncated.is_truncated());
    let tape = ProcessTape::load(&tape_path).unwrap();
    assert_eq!(tape.entries[0].1.stdout_dropped_bytes, 6);
    assert_eq!(tape.entries[0].1.stdout.0, b"0123456789");
}

/// Returns whether `pid` runs (exists and is not a zombie waiting for a reaper).
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat[stat.rfind(')').unwrap() + 1..]
                .split_whitespace()
                .next()
                .unwrap();
            state != "Z" && state != "X"
        }
        Err(_) => false,
    }
}

#[test]
fn timeout_ends_the_whole_group() {
    // Goal: on timeout the program and the child it forked both die; no orphan survives.
    let actor = ProcessActor::real().timeout_ms(300).grace_ms(500);
    let report = run(actor, |process| async move {
        process
            .run(Command::new(script("fork_child.sh")))
            .await
            .unwrap()
    });
    let output = report.output;
    assert!(output.timed_out);
    assert_eq!(output.status, ExitStatus::Signal(15));
    let text = String::from_utf8(output.stdout).unwrap();
    let pid: u32 = text.trim().strip_prefix("child ").unwrap().parse().unwrap();
    assert!(!alive(pid), "the forked child {pid} survived the timeout");
    assert!(output.duration_ns >= 300_000_000);
}

#[test]
fn background_child_is_ended_after_a_normal_exit() {
    // Goal: a program that exits leaving a background child behind does not leave an orphan.
    let actor = ProcessActor::real().grace_ms(500);
    let report = run(actor, |process| async move {
        process.run(sh("sleep 300 & echo $!")).await.unwrap()
    });
    let pid: u32 = String::from_utf8(report.output.stdout)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_eq!(report.output.status, ExitStatus::Code(0));
    assert!(!alive(pid), "the background child {pid} survived");
}

#[test]
fn hermetic_mode_refuses_uncovered_programs() {
    // Goal: by default nothing runs; only programs given a mode are covered.
    let actor = ProcessActor::hermetic().mode("echo", ProcessMode::Real);
    let report = run(actor, |process| async move {
        let echo = process.run(Command::new("echo").arg("ok")).await.unwrap();
        let ls = process.run(Command::new("ls")).await.unwrap_err();
        (echo.stdout, ls)
    });
    assert_eq!(report.output.0, b"ok\n");
    assert_eq!(
        report.output.1,
        ProcessError::NotCovered {
            program: "ls".into()
        }
    );
    assert_eq!(
        report.output.1.to_string(),
        r#"program "ls" is not covered: hermetic mode runs nothing; give it a mode in [process] programs (`replay`, `record`, `real` or `wasi`), or run it as a WASI module with --process-wasi DIR"#
    );
    let no_tape = run(
        ProcessActor::hermetic().mode("git", ProcessMode::Replay),
        |process| async move { process.run(Command::new("git")).await.unwrap_err() },
    );
    assert_eq!(
        no_tape.output,
        ProcessError::NoTape {
            program: "git".into(),
            mode: "replay".into()
        }
    );
}

#[test]
fn malformed_tapes_are_named_errors() {
    // Goal: a bad header or entry names the file, line, expected and found.
    let bad_header = ProcessTape::parse("p.jsonl", "{\"simtape_process\": 9}\n").unwrap_err();
    assert_eq!(
        bad_header.to_string(),
        r#"p.jsonl:1: expected the header {"simtape_process": 1}, found version 9"#
    );
    let text = tape_text(&[
        "# a comment",
        r#"{"program": 3, "status": {"code": 0}, "duration_ns": 1}"#,
    ]);
    let ProcessTapeError::Malformed {
        path,
        line,
        expected,
        found,
    } = ProcessTape::parse("p.jsonl", &text).unwrap_err()
    else {
        panic!("expected a malformed-entry error");
    };
    assert_eq!(
        (path.as_str(), line, expected.as_str()),
        ("p.jsonl", 3, "a process tape entry")
    );
    assert!(
        found.contains("invalid type: integer `3`, expected a string"),
        "{found}"
    );
    assert!(matches!(
        ProcessTape::load("/no/such.jsonl"),
        Err(ProcessTapeError::Io { .. })
    ));
}

#[test]
fn normalization_rules() {
    // Goal: timestamps, durations, pids and worktree paths are masked in views; raw bytes stay.
    let n = Normalizer::new().worktree("/home/dev/checkout/").pid(4242);
    let cases = [
        (
            "built /home/dev/checkout/src/a.rs",
            "built <worktree>/src/a.rs",
        ),
        ("at 2026-01-01T10:00:00Z", "at <timestamp>"),
        ("at 2026-01-01 10:00:00.125+02:00 ok", "at <timestamp> ok"),
        ("on 2026-03-04", "on <timestamp>"),
        (
            "clock 10:11:12.5 but 10:30 stays",
            "clock <timestamp> but 10:30 stays",
        ),
        (
            "took 1.5s, 120ms, 3µs, 1m20s",
            "took <duration>, <duration>, <duration>, <duration>",
        ),
        ("sha1s v2s 5seconds stay", "sha1s v2s 5seconds stay"),
        (
            "pid 77, PID=78, pid: 79, child 4242, 42420",
            "pid <pid>, PID=<pid>, pid: <pid>, child <pid>, 42420",
        ),
    ];
    for (raw, normalized) in cases {
        assert_eq!(n.text(raw), normalized, "normalizing {raw:?}");
    }
    // Two recordings that differ only in masked details compare equal as views.
    let a = r#"{"program": "make", "cwd": "/home/dev/checkout", "stdout": "done in 3s at 2026-01-01T00:00:00Z\n", "status": {"code": 0}, "duration_ns": 3000000000}"#;
    let b = r#"{"program": "make", "cwd": "/home/dev/checkout", "stdout": "done in 4s at 2026-01-02T00:00:09Z\n", "status": {"code": 0}, "duration_ns": 4100000000}"#;
    let tape = ProcessTape::parse("t", &tape_text(&[a, b])).unwrap();
    let (first, second) = (&tape.entries[0].1, &tape.entries[1].1);
    assert_eq!(n.entry(first), n.entry(second));
    assert_ne!(first, second, "the raw entries keep their differences");
    assert_eq!(first.stdout.0, b"done in 3s at 2026-01-01T00:00:00Z\n");
}

#[test]
fn git_status_and_echo_record_then_replay() {
    // Goal: the classic case: record `git status` and `echo hi`, replay with no process and exact virtual time.
    let dir = fresh_dir("git");
    let repo = dir.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    let init = std::process::Command::new("git")
        .args(["init", "-q", "-b", "main"])
        .current_dir(&repo)
        .status()
        .unwrap();
    assert!(init.success());
    std::fs::write(repo.join("notes.txt"), "draft\n").unwrap();
    let tape_path = dir.join("git.process.jsonl");
    let repo_text = repo.display().to_string();
    let commands = vec![
        Command::new("git")
            .args(["status", "--short", "--branch"])
            .cwd(repo_text.as_str())
            .env("LC_ALL", "C"),
        Command::new("echo").arg("hi"),
    ];
    let recorded = run(ProcessActor::record(&tape_path).unwrap(), {
        let commands = commands.clone();
        |process| async move {
            let mut outputs = Vec::new();
            for command in commands {
                let before = simtape::time::now_ns();
                let output = process.run(command).await.unwrap();
                outputs.push((output, simtape::time::now_ns() - before));
            }
            outputs
        }
    });
    let status = String::from_utf8(recorded.output[0].0.stdout.clone()).unwrap();
    assert!(status.contains("?? notes.txt"), "{status}");
    assert_eq!(recorded.output[1].0.stdout, b"hi\n");
    for (output, elapsed_ns) in &recorded.output {
        assert_eq!(*elapsed_ns, output.duration_ns);
    }

    // Without the repository, a real `git status` would fail: the replay cannot be running it.
    std::fs::remove_dir_all(&repo).unwrap();
    let tape = ProcessTape::load(&tape_path).unwrap();
    let replayed = run(ProcessActor::replay(tape), |process| async move {
        let mut outputs = Vec::new();
        for command in commands {
            let before = simtape::time::now_ns();
            let output = process.run(command).await.unwrap();
            outputs.push((output, simtape::time::now_ns() - before));
        }
        process.finish().await.unwrap();
        outputs
    });
    assert_eq!(replayed.output, recorded.output);
    assert_eq!(replayed.summary.end_ns, recorded.summary.end_ns);
    let recorded_ns: u64 = recorded.output.iter().map(|(o, _)| o.duration_ns).sum();
    assert_eq!(replayed.summary.end_ns, recorded_ns);
}

#[test]
fn a_process_tape_from_a_run_tape_takes_output_by_digest() {
    // Goal: `process_tape_from_tape` writes an entry per run whose output it can supply: an
    // empty output needs no source, other output is found by SHA-256 in the process tapes
    // given; without them that run is counted as unknown, and a failed call as failed. The
    // tape it writes replays the same run.
    let recorded = ProcessTape::parse(
        "recorded",
        "{\"simtape_process\": 1}\n\
         {\"program\": \"git\", \"args\": [\"status\"], \"stdout\": \"clean\\n\", \"status\": {\"code\": 0}, \"duration_ns\": 5000000}\n\
         {\"program\": \"true\", \"status\": {\"code\": 0}, \"duration_ns\": 1000000}\n",
    )
    .unwrap();
    let pipeline = |host: simtape::Host| async move {
        let process = host.process();
        let git = process.run(Command::new("git").arg("status")).await;
        let quiet = process.run(Command::new("true")).await;
        let missing = process.run(Command::new("ls")).await;
        (git.unwrap().stdout, quiet.unwrap().stdout, missing.is_err())
    };
    let tape_of = |actor: ProcessActor| {
        let mut builder = Sim::builder();
        builder.process(actor).tape_in_memory();
        let report = builder.build().unwrap().run(pipeline).unwrap();
        let tape = report.summary.tape.unwrap().memory.unwrap();
        (report.output, tape)
    };
    let (output, tape) = tape_of(ProcessActor::replay(recorded.clone()));
    assert_eq!(output, (b"clean\n".to_vec(), Vec::new(), true));
    let read = || simtape::tape::TapeReader::new(&tape[..]).unwrap();
    let alone = process_tape_from_tape(read(), "t", &[]).unwrap();
    assert_eq!(
        (alone.entries, alone.unknown_output, alone.failed),
        (1, 1, 1)
    );
    let made = process_tape_from_tape(read(), "t", std::slice::from_ref(&recorded)).unwrap();
    assert_eq!((made.entries, made.unknown_output, made.failed), (2, 0, 1));
    let again = ProcessTape::parse("made", &made.text).unwrap();
    let (replayed, replayed_tape) = tape_of(ProcessActor::replay(again));
    assert_eq!(replayed, output);
    assert_eq!(replayed_tape, tape, "the same records, byte for byte");
}
