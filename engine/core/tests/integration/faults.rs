//! The fault plan's capability hooks: `LlmActor::with_faults`, `FsActor::with_fault_rules`,
//! `ProcessActor::with_faults`, and `Scenario::builder` wiring `[faults]` into them.

use std::path::{Path, PathBuf};

use serde_json::json;
use simtape::cap::fs::{FsActor, FsError, FsHandle};
use simtape::cap::llm::{ChatRequest, Llm, LlmActor, LlmError, LlmHandle, Message};
use simtape::cap::process::{
    Command, ExitStatus, ProcessActor, ProcessError, ProcessHandle, ProcessTape,
};
use simtape::rng::Ratio;
use simtape::scenario::{
    FsFault, FsFaultKind, LlmFault, LlmFaultKind, ProcessFault, ScenarioFailure, StreamFault,
    StreamMode, Trigger,
};
use simtape::time::now_ns;
use simtape::{RunReport, Sim};

/// Returns the bytes of a run's in-memory tape.
fn tape<T>(report: &RunReport<T>) -> Vec<u8> {
    report
        .summary
        .tape
        .as_ref()
        .and_then(|tape| tape.memory.clone())
        .expect("the run kept its tape in memory")
}

/// Returns the 1-based numbers of the calls whose result `faulted` picks.
fn failed<T>(results: &[T], faulted: impl Fn(&T) -> bool) -> Vec<usize> {
    results
        .iter()
        .enumerate()
        .filter(|(_, result)| faulted(result))
        .map(|(index, _)| index + 1)
        .collect()
}

/// Checks a seeded rate: `run(seed)` returns the numbers of the faulted calls and the tape;
/// `seed` gives the same calls and tape bytes twice, `seed + 1` other calls, and the count
/// of faulted calls lies in `count`.
fn assert_seeded(
    run: impl Fn(u64) -> (Vec<usize>, Vec<u8>),
    seed: u64,
    count: std::ops::RangeInclusive<usize>,
) {
    let (first, first_tape) = run(seed);
    let (again, again_tape) = run(seed);
    assert_eq!(first, again);
    assert!(
        first_tape == again_tape,
        "the same seed wrote other tape bytes"
    );
    assert_ne!(run(seed + 1).0, first);
    assert!(count.contains(&first.len()), "{first:?} faulted");
}

fn rate(numerator: u64, denominator: u64) -> Trigger {
    Trigger::Rate(Ratio::new(numerator, denominator).unwrap())
}

// ---------------------------------------------------------------------------------------------
// LLM

/// A fixture of two `once` entries, then a `sticky` one, answering anything, each in 100 ms
/// plus up to 50 ms of jitter.
fn llm_actor() -> LlmActor {
    let fixture = concat!(
        "{\"simtape_llm\": 1, \"latency\": {\"base_ms\": 100, \"per_output_token_us\": 0, \"jitter_ms\": 50}}\n",
        "{\"mode\": \"once\", \"response\": {\"text\": \"first\"}}\n",
        "{\"mode\": \"once\", \"response\": {\"text\": \"second\"}}\n",
        "{\"mode\": \"sticky\", \"response\": {\"text\": \"again\"}}\n",
    );
    Llm::replay_str("faults.jsonl", fixture).unwrap()
}

fn llm_fault(trigger: Trigger) -> LlmFault {
    LlmFault {
        trigger,
        kind: LlmFaultKind::Http {
            status: 429,
            retry_after_ms: Some(2_000),
            message: "rate limited".into(),
            lasts_ns: None,
        },
    }
}

/// Makes `calls` model calls; returns each result with its latency.
fn llm_calls(
    seed: u64,
    actor: LlmActor,
    calls: usize,
) -> RunReport<Vec<(Result<String, LlmError>, u64)>> {
    let mut builder = Sim::builder();
    builder.seed(seed).tape_in_memory();
    let llm = LlmHandle::new(builder.actor("llm", actor));
    builder
        .build()
        .unwrap()
        .run(move |_host| async move {
            let mut results = Vec::new();
            for _ in 0..calls {
                let start = now_ns();
                let request = ChatRequest::new("m", vec![Message::user("go")]);
                let result = llm.complete(request).await.map(|r| r.text);
                results.push((result, now_ns() - start));
            }
            results
        })
        .unwrap()
}

#[test]
fn an_llm_fault_answers_its_call_with_the_http_error_and_uses_no_entry() {
    // Goal: the second model call gets the rule's 429 with its retry hint after 20 ms; no
    // fixture entry is used by it, so the third call gets the second entry.
    let actor = llm_actor().with_faults(vec![llm_fault(Trigger::OnCall(2))]);
    let report = llm_calls(1, actor, 3);
    let results: Vec<&Result<String, LlmError>> = report.output.iter().map(|(r, _)| r).collect();
    assert_eq!(results[0], &Ok("first".to_string()));
    assert_eq!(
        results[1],
        &Err(LlmError::Http {
            status: 429,
            message: "rate limited".into(),
            retry_after_ms: Some(2_000),
        })
    );
    assert_eq!(results[2], &Ok("second".to_string()));
    assert_eq!(report.output[1].1, 20_000_000);
    assert!(report.output[2].1 >= 100_000_000);
}

#[test]
fn an_llm_outage_answers_every_call_until_it_ends_and_counts_none_of_them() {
    // Goal: a rule with `lasts` (an outage of 250 ms) fails the call it fires on and every call
    // in the next 250 ms of virtual time with the same error, asking no fixture entry; the
    // first call after it is answered, and an `on_call` rule counts only the calls outside
    // the outage (its 2nd call is the one after the outage).
    let outage = LlmFault {
        trigger: Trigger::OnCall(1),
        kind: LlmFaultKind::Http {
            status: 529,
            retry_after_ms: None,
            message: "overloaded".into(),
            lasts_ns: Some(250_000_000),
        },
    };
    let actor = llm_actor().with_faults(vec![outage, llm_fault(Trigger::OnCall(2))]);
    // Calls at 0, 20, 40, … ms: those before 250 ms are in the outage.
    let report = llm_calls(1, actor, 15);
    let overloaded = Err(LlmError::Http {
        status: 529,
        message: "overloaded".into(),
        retry_after_ms: None,
    });
    let in_outage = report
        .output
        .iter()
        .take_while(|(result, _)| *result == overloaded)
        .count();
    assert_eq!(in_outage, 13, "0, 20, …, 240 ms: {:?}", report.output);
    let after: Vec<&Result<String, LlmError>> =
        report.output[in_outage..].iter().map(|(r, _)| r).collect();
    assert_eq!(
        after,
        [
            &Err(LlmError::Http {
                status: 429,
                message: "rate limited".into(),
                retry_after_ms: Some(2_000),
            }),
            &Ok("first".to_string()),
        ]
    );
}

#[test]
fn on_call_llm_faults_leave_the_other_calls_jitter_in_order() {
    // Goal: an on_call rule draws nothing and a faulted call takes no fixture draw, so the
    // other calls get, in order, the latencies of a run without faults.
    let plain = llm_calls(5, llm_actor(), 4);
    let faulted = llm_calls(
        5,
        llm_actor().with_faults(vec![llm_fault(Trigger::OnCall(2))]),
        5,
    );
    let latencies = |report: &RunReport<Vec<(Result<String, LlmError>, u64)>>| -> Vec<u64> {
        let ok = report.output.iter().filter(|(result, _)| result.is_ok());
        ok.map(|(_, latency)| *latency).collect()
    };
    assert_eq!(latencies(&faulted), latencies(&plain));
    // The jitter is real: the latencies differ between calls.
    assert_ne!(latencies(&plain)[0], latencies(&plain)[1]);
}

#[test]
fn a_stream_fault_answers_its_call_and_marks_the_reply_without_moving_any_draw() {
    // Goal: a stream rule's call is answered by the fixture as usual (same entries, same
    // latencies as a run without faults); only its reply carries the rule's stream fault, and
    // only that reply's tape record grows by it.
    let cut = StreamFault {
        mode: StreamMode::Cut,
        after_events: Some(3),
    };
    let rule = LlmFault {
        trigger: Trigger::OnCall(2),
        kind: LlmFaultKind::Stream(cut),
    };
    let replies = |actor: LlmActor| {
        let mut builder = Sim::builder();
        builder.seed(5).tape_in_memory();
        let llm = LlmHandle::new(builder.actor("llm", actor));
        let report = builder
            .build()
            .unwrap()
            .run(move |_host| async move {
                let mut replies = Vec::new();
                for _ in 0..3 {
                    let start = now_ns();
                    let request = ChatRequest::new("m", vec![Message::user("go")]);
                    let reply = llm.complete_with_reply(request).await;
                    replies.push((reply, now_ns() - start));
                }
                replies
            })
            .unwrap();
        let tape = tape(&report);
        (report.output, tape)
    };
    let (plain, plain_tape) = replies(llm_actor());
    let (faulted, faulted_tape) = replies(llm_actor().with_faults(vec![rule]));
    let faults: Vec<Option<StreamFault>> = faulted.iter().map(|(r, _)| r.stream_fault).collect();
    assert_eq!(faults, [None, Some(cut), None]);
    for ((plain, plain_ns), (faulted, faulted_ns)) in plain.iter().zip(&faulted) {
        assert_eq!(plain.result, faulted.result);
        assert_eq!(plain_ns, faulted_ns);
    }
    assert!(faulted_tape.len() > plain_tape.len());
}

#[test]
fn rate_llm_faults_are_seeded() {
    // Goal: a rate rule fails the same calls for the same seed, byte for byte on the tape,
    // and other calls for another seed.
    let run = |seed| {
        let actor = llm_actor().with_faults(vec![llm_fault(rate(1, 3))]);
        let report = llm_calls(seed, actor, 30);
        let injected = |(result, _): &(Result<String, LlmError>, u64)| {
            matches!(result, Ok(_) | Err(LlmError::Http { status: 429, .. }))
        };
        assert!(report.output.iter().all(injected));
        let faulted = failed(&report.output, |(result, _)| result.is_err());
        (faulted, tape(&report))
    };
    assert_seeded(run, 7, 3..=20);
}

// ---------------------------------------------------------------------------------------------
// Filesystem

/// Returns an empty overlay root for one test.
fn fs_root(test: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("faults")
        .join(test);
    if dir.exists() {
        std::fs::remove_dir_all(&dir).unwrap();
    }
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Writes `files` files one after another; returns each result with its latency.
fn fs_writes(
    seed: u64,
    actor: FsActor,
    files: usize,
) -> RunReport<Vec<(Result<(), FsError>, u64)>> {
    let mut builder = Sim::builder();
    builder.seed(seed).tape_in_memory();
    let fs = FsHandle::new(builder.actor("fs", actor));
    builder
        .build()
        .unwrap()
        .run(move |_host| async move {
            let mut results = Vec::new();
            for index in 0..files {
                let start = now_ns();
                let result = fs.write(&format!("f{index}.txt"), "x").await;
                results.push((result, now_ns() - start));
            }
            results
        })
        .unwrap()
}

#[test]
fn fs_rules_count_their_operation_and_change_nothing_when_they_fire() {
    // Goal: `write` on_call 2 fails the second write with ENOSPC, `*` on_call 4 fails the
    // fourth operation of any kind with EIO, and neither faulted write lands.
    let root = fs_root("on-call");
    let rules = vec![
        FsFault {
            op: "write".into(),
            trigger: Trigger::OnCall(2),
            kind: FsFaultKind::Enospc,
        },
        FsFault {
            op: "*".into(),
            trigger: Trigger::OnCall(4),
            kind: FsFaultKind::Eio,
        },
    ];
    let mut builder = Sim::builder();
    builder.fs(FsActor::new(&root).unwrap().with_fault_rules(rules));
    let report = builder
        .build()
        .unwrap()
        .run(move |host| async move {
            let fs = host.fs();
            vec![
                fs.write("a.txt", "a").await.map_err(|e| e.to_string()),
                fs.read("a.txt").await.map(drop).map_err(|e| e.to_string()),
                fs.write("b.txt", "b").await.map_err(|e| e.to_string()),
                fs.write("c.txt", "c").await.map_err(|e| e.to_string()),
                fs.write("d.txt", "d").await.map_err(|e| e.to_string()),
            ]
        })
        .unwrap();
    assert_eq!(failed(&report.output, Result::is_err), [3, 4]);
    let diff = report.fs_diff().unwrap().unwrap();
    let added: Vec<&str> = diff.added.iter().map(|file| file.path.as_str()).collect();
    assert_eq!(added, ["a.txt", "d.txt"]);
}

#[test]
fn on_call_fs_rules_leave_every_latency_alone() {
    // Goal: an on_call rule draws nothing, so every operation but the faulted one takes the
    // latency it takes without the rule.
    let root = fs_root("latency");
    let plain = fs_writes(3, FsActor::new(&root).unwrap(), 6);
    let rule = FsFault {
        op: "write".into(),
        trigger: Trigger::OnCall(3),
        kind: FsFaultKind::Eio,
    };
    let faulted = fs_writes(
        3,
        FsActor::new(&root).unwrap().with_fault_rules(vec![rule]),
        6,
    );
    assert_eq!(failed(&faulted.output, |(result, _)| result.is_err()), [3]);
    for index in [0, 1, 3, 4, 5] {
        assert_eq!(
            faulted.output[index].1, plain.output[index].1,
            "write {index}"
        );
    }
}

#[test]
fn rate_fs_rules_are_seeded() {
    // Goal: a rate rule fails the same writes for the same seed, with the same tape bytes,
    // and other writes for another seed.
    let root = fs_root("rate");
    let run = |seed| {
        let rule = FsFault {
            op: "*".into(),
            trigger: rate(1, 4),
            kind: FsFaultKind::Enospc,
        };
        let actor = FsActor::new(&root).unwrap().with_fault_rules(vec![rule]);
        let report = fs_writes(seed, actor, 40);
        let injected = |(result, _): &(Result<(), FsError>, u64)| {
            matches!(result, Ok(()) | Err(FsError::NoSpace { .. }))
        };
        assert!(report.output.iter().all(injected));
        let faulted = failed(&report.output, |(result, _)| result.is_err());
        (faulted, tape(&report))
    };
    assert_seeded(run, 11, 3..=20);
}

// ---------------------------------------------------------------------------------------------
// Process

fn git_tape() -> ProcessTape {
    ProcessTape::parse(
        "inline",
        "{\"simtape_process\": 1}\n{\"program\": \"git\", \"args\": [\"status\"], \"stdout\": \"clean\\n\", \"status\": {\"code\": 0}, \"duration_ns\": 5000000}\n",
    )
    .unwrap()
}

/// What a run gave: status, stdout and stderr, or the error.
type Ran = Result<(ExitStatus, Vec<u8>, Vec<u8>), ProcessError>;

/// Runs `git status` `runs` times; returns each result.
fn git_runs(seed: u64, actor: ProcessActor, runs: usize) -> RunReport<Vec<Ran>> {
    let mut builder = Sim::builder();
    builder.seed(seed).tape_in_memory().process(actor);
    builder
        .build()
        .unwrap()
        .run(move |host| async move {
            let process: ProcessHandle = host.process();
            let mut results = Vec::new();
            for _ in 0..runs {
                let output = process.run(Command::new("git").arg("status")).await;
                results.push(output.map(|o| (o.status, o.stdout, o.stderr)));
            }
            results
        })
        .unwrap()
}

#[test]
fn a_process_fault_ends_the_run_at_once_and_uses_no_replay_entry() {
    // Goal: the first `git` run reports the rule's exit code, empty stdout and the fault on
    // stderr in no time; the replay entry is left for the second run, and a rule for another
    // program never fires.
    let rules = vec![
        ProcessFault {
            program: "cargo".into(),
            trigger: Trigger::OnCall(1),
            exit_code: 101,
        },
        ProcessFault {
            program: "git".into(),
            trigger: Trigger::OnCall(1),
            exit_code: 128,
        },
    ];
    let actor = ProcessActor::replay(git_tape()).with_faults(rules);
    let report = git_runs(0, actor, 2);
    assert_eq!(
        report.output[0],
        Ok((
            ExitStatus::Code(128),
            Vec::new(),
            b"injected fault: exit 128".to_vec()
        ))
    );
    assert_eq!(
        report.output[1],
        Ok((ExitStatus::Code(0), b"clean\n".to_vec(), Vec::new()))
    );
    // Only the replayed run took time.
    assert_eq!(report.summary.end_ns, 5_000_000);
    report.process().unwrap().check_unused().unwrap();
}

#[test]
fn rate_process_faults_are_seeded() {
    // Goal: over a hermetic actor, a rate rule turns the same runs into fault outputs for the
    // same seed (same tape bytes) and others for another seed; the rest stay uncovered.
    let run = |seed| {
        let actor = ProcessActor::hermetic().with_faults(vec![ProcessFault {
            program: "*".into(),
            trigger: rate(1, 2),
            exit_code: 1,
        }]);
        let report = git_runs(seed, actor, 30);
        let faulted = failed(&report.output, |ran| match ran {
            Ok((status, _, _)) => *status == ExitStatus::Code(1),
            Err(ProcessError::NotCovered { .. }) => false,
            Err(other) => panic!("unexpected {other}"),
        });
        (faulted, tape(&report))
    };
    assert_seeded(run, 21, 5..=25);
}

// ---------------------------------------------------------------------------------------------
// Scenario::builder

#[test]
fn the_scenario_builder_applies_the_fault_plan() {
    // Goal: `[[faults.llm]]`, `[[faults.fs]]` and `[[faults.process]]` reach the actors a
    // scenario builds: an `ask`, a `write` and a logged `run` each meet their fault.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/scenario");
    let root = fs_root("scenario");
    let path = dir.join("faults.toml");
    let head = format!(
        "[scenario]\nname = \"f\"\n[fs]\nroot = \"{}\"\nallow_outside = true\n[llm]\nfixture = \"ask.jsonl\"\n[process]\n",
        root.display()
    );
    let faults = "[[faults.llm]]\non_call = 1\nretry_after = \"2s\"\n[[faults.fs]]\nop = \"write\"\non_call = 1\nkind = \"enospc\"\n[[faults.process]]\nprogram = \"make\"\non_call = 1\nexit_code = 2\n";
    let run = |steps: &str| {
        let source = format!("{head}{faults}[[task]]\nname = \"t\"\nsteps = [{steps}]\n");
        let scenario = crate::scenario::parse_at(&source, &path).unwrap();
        let mut builder = scenario.builder(0);
        scenario.run(&mut builder)
    };
    let error = run("{ ask = \"What is the capital of France?\" }").unwrap_err();
    assert_eq!(
        error.to_string(),
        "task \"t\" failed at step task[0].steps[0] (`ask`): the model answered HTTP 429: injected fault: HTTP 429 (retry after 2000 ms)"
    );
    let error = run("{ write = \"a.txt\", content = \"x\" }").unwrap_err();
    let ScenarioFailure::Step(step) = &*error.error else {
        panic!("expected a step failure, got {}", error.error);
    };
    assert_eq!(
        step.error.to_string(),
        FsError::NoSpace {
            path: "a.txt".into()
        }
        .to_string()
    );
    // `make` has no mode (hermetic), so only the fault lets its run end without an error.
    let report = run("{ run = \"make\" }, { outcome = \"done\", value = true }").unwrap();
    assert_eq!(report.outcomes, [("done".to_string(), json!(true))]);
}
