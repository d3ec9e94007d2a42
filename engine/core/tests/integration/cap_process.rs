//! The subprocess capability inside the core: replay through the process tape, matching,
//! divergence, exhaustion, hermetic mode, normalization, and the seam to real runs (which are
//! the gateway's: `engine/serve/tests/outside/process.rs` records and runs for real).

use std::future::Future;

use simtape::cap::process::{
    process_tape_from_tape, Command, Normalizer, ProcessActor, ProcessError, ProcessHandle,
    ProcessMode, ProcessTape, ProcessTapeError,
};
use simtape::{RunReport, Sim};

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

#[test]
fn real_and_record_modes_need_a_runner_from_outside() {
    // Goal: the core starts no process: a program in real or record mode without a runner
    // fails with NoRunner (record first needs its tape), and an uncovered one stays refused.
    let actor = ProcessActor::hermetic()
        .mode("echo", ProcessMode::Real)
        .mode("git", ProcessMode::Record);
    let report = run(actor, |process| async move {
        let echo = process
            .run(Command::new("echo").arg("ok"))
            .await
            .unwrap_err();
        let git = process.run(Command::new("git")).await.unwrap_err();
        let ls = process.run(Command::new("ls")).await.unwrap_err();
        (echo, git, ls)
    });
    assert_eq!(
        report.output.0,
        ProcessError::NoRunner {
            program: "echo".into(),
            mode: "real".into()
        }
    );
    assert_eq!(
        report.output.1,
        ProcessError::NoTape {
            program: "git".into(),
            mode: "record".into()
        }
    );
    assert_eq!(
        report.output.2.to_string(),
        r#"program "ls" is not covered: hermetic mode runs nothing; give it a mode in [process] programs (`replay`, `record`, `real` or `wasi`), or run it as a WASI module with --process-wasi DIR"#
    );
}
