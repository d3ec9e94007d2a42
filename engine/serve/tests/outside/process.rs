//! Real program runs, the gateway's side of the process seam: record then replay through
//! the process tape, the output cap, process-group cleanup, and real mode beside hermetic
//! refusals (the core's replay-only tests are in `engine/core/tests/integration/cap_process.rs`).

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use simtape::cap::process::{
    Command, ExitStatus, ProcessActor, ProcessError, ProcessHandle, ProcessMode, ProcessTape,
};
use simtape::limits::Limits;
use simtape::{RunReport, Sim};
use simtape_serve::outside::{ProcessTapeWriter, Spawner};

/// Returns an actor that runs every program for real, through the gateway's spawner.
fn real() -> ProcessActor {
    ProcessActor::real().with_runner(Arc::new(Spawner))
}

/// Returns an actor that runs and records every program into a new process tape at `path`.
fn record(path: &Path) -> ProcessActor {
    ProcessActor::hermetic()
        .default_mode(ProcessMode::Record)
        .with_runner(Arc::new(Spawner))
        .with_recorder(ProcessTapeWriter::create(path).unwrap())
}

/// Returns an empty directory for one test under the cargo target's temp dir.
fn fresh_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("outside_process")
        .join(name);
    if dir.exists() {
        std::fs::remove_dir_all(&dir).unwrap();
    }
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn script(name: &str) -> String {
    // The scripts are the core's test data: the same programs its replay tests name.
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../core/tests/data/process")
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
    let recorded = run(record(&tape_path), {
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
    let recorded = run(record(&tape_path), {
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
fn output_cap_is_recorded() {
    // Goal: output past the cap is dropped, and the drop is in the output and the process tape.
    let dir = fresh_dir("cap");
    let tape_path = dir.join("run.process.jsonl");
    let limits = Limits {
        process_output_bytes_max: 10,
        ..Limits::default()
    };
    let actor = record(&tape_path).limits(&limits);
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
    let actor = real().timeout_ms(300).grace_ms(500);
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
    let actor = real().grace_ms(500);
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
    let actor = ProcessActor::hermetic()
        .mode("echo", ProcessMode::Real)
        .with_runner(Arc::new(Spawner));
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
    let recorded = run(record(&tape_path), {
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
