//! Open runs: stepping, inboxes and outboxes, awaiting input, recorded inputs replayed byte
//! for byte, and the context guard.

use std::time::Duration;

use simtape::inbox::{Inbox, Outbox};
use simtape::limits::{LimitName, Limits};
use simtape::run::{recorded_inputs, DeliverError, Progress, ReplayInputError};
use simtape::tape::TapeReader;
use simtape::{Builder, Host, Sim, SimError};

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

/// A pipeline with concurrent timers and no input: two sleepers and a ticker.
async fn timers_only(host: Host) -> u64 {
    let a = host.spawn("a", async { simtape::time::sleep(secs(3)).await });
    let b = host.spawn("b", async { simtape::time::sleep(secs(1)).await });
    for _ in 0..3 {
        host.sleep(secs(2)).await;
    }
    a.await.unwrap();
    b.await.unwrap();
    host.now_ns()
}

fn tape_bytes<T>(report: &simtape::RunReport<T>) -> Vec<u8> {
    report
        .summary
        .tape
        .as_ref()
        .unwrap()
        .memory
        .clone()
        .unwrap()
}

#[test]
fn a_stepped_run_writes_the_same_tape_as_a_run_to_the_end() {
    // Goal: driving a closed pipeline step by step (and with run_until) changes nothing on
    // the tape: the same records, the same bytes, the same end.
    let mut builder = Sim::builder();
    builder.seed(5).tape_in_memory();
    let whole = builder.build().unwrap().run(timers_only).unwrap();

    let mut run = builder.build().unwrap().start(timers_only);
    assert_eq!(run.run_until(2_500_000_000), Progress::Paused);
    assert_eq!(
        run.now_ns(),
        2_000_000_000,
        "time stays at the last event at or before 2.5 s"
    );
    assert_eq!(run.next_timer_ns(), Some(3_000_000_000));
    let mut steps = 0;
    while run.step() == Progress::Paused {
        steps += 1;
        assert!(steps < 100, "the run ends");
    }
    assert_eq!(run.progress(), Progress::Finished);
    let stepped = run.finish().unwrap();
    assert_eq!(stepped.output, whole.output);
    assert_eq!(stepped.output, 6_000_000_000);
    assert_eq!(tape_bytes(&stepped), tape_bytes(&whole));
}

struct Doors {
    requests: Inbox<String>,
    answers: Outbox<String>,
}

fn doors(builder: &mut Builder) -> Doors {
    Doors {
        requests: builder.inbox::<String>("requests"),
        answers: builder.outbox::<String>("answers"),
    }
}

/// Answers each request after a virtual latency that depends on it, several at once.
async fn echo_server(host: Host, requests: Inbox<String>, answers: Outbox<String>) -> usize {
    let mut handled = 0;
    let mut tasks = Vec::new();
    while let Some(text) = requests.recv().await {
        handled += 1;
        let latency = secs(text.len() as u64);
        tasks.push(host.spawn(&format!("answer-{handled}"), async move {
            simtape::time::sleep(latency).await;
            answers.send(text.to_uppercase());
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    handled
}

#[test]
fn an_open_run_awaits_input_where_a_closed_run_deadlocks() {
    // Goal: a task blocked on an inbox makes a started run AwaitingInput (naming the inbox
    // among the waiting tasks), while the same pipeline under Sim::run is a deadlock.
    let mut builder = Sim::builder();
    let Doors { requests, answers } = doors(&mut builder);
    let mut run = builder
        .build()
        .unwrap()
        .start(move |host| echo_server(host, requests, answers));
    assert_eq!(run.run_until_idle(), Progress::AwaitingInput);
    let waiting = run.waiting_tasks();
    assert_eq!(waiting.len(), 1);
    assert_eq!(waiting[0].name, "main");
    assert_eq!(waiting[0].awaiting, "input on inbox \"requests\"");

    let error = builder
        .build()
        .unwrap()
        .run(move |host| echo_server(host, requests, answers))
        .unwrap_err();
    let SimError::Deadlock { waiting, .. } = &*error.error else {
        panic!("expected a deadlock, got {}", error.error);
    };
    assert_eq!(waiting[0].awaiting, "input on inbox \"requests\"");
}

/// Drives an echo run as a gateway would: deliveries at chosen instants, timers between.
fn drive_live(builder: &mut Builder, doors: &Doors) -> (simtape::RunReport<usize>, Vec<String>) {
    let (requests, answers) = (doors.requests, doors.answers);
    let mut run = builder
        .build()
        .unwrap()
        .start(move |host| echo_server(host, requests, answers));
    let mut seen = Vec::new();
    assert_eq!(run.run_until_idle(), Progress::AwaitingInput);
    run.deliver(requests, "four".into()).unwrap();
    run.deliver(requests, "sixsix".into()).unwrap();
    assert_eq!(run.run_until(2_000_000_000), Progress::Paused);
    run.deliver_at(3_000_000_000, requests, "x".into()).unwrap();
    assert_eq!(run.run_until_idle(), Progress::AwaitingInput);
    seen.extend(run.take(answers));
    assert_eq!(run.now_ns(), 6_000_000_000);
    run.close(requests).unwrap();
    assert_eq!(run.run_until_idle(), Progress::Finished);
    (run.finish().unwrap(), seen)
}

#[test]
fn recorded_inputs_replay_byte_for_byte() {
    // Goal: every delivery is an `input` record; a second run fed only the tape's inputs
    // (at the recorded steps and instants) writes the same tape bytes and the same output.
    let mut builder = Sim::builder();
    builder.seed(11).tape_in_memory();
    let doors = doors(&mut builder);
    let (live, seen) = drive_live(&mut builder, &doors);
    assert_eq!(
        seen,
        ["FOUR", "X", "SIXSIX"],
        "answers in (virtual time, arrival) order"
    );
    assert_eq!(live.output, 3);
    let bytes = tape_bytes(&live);

    let inputs = recorded_inputs(TapeReader::new(&bytes[..]).unwrap()).unwrap();
    let kinds: Vec<_> = inputs
        .iter()
        .map(|i| (i.actor.as_str(), i.t_ns, i.events))
        .collect();
    assert_eq!(
        kinds,
        [
            ("requests", 0, 0),
            ("requests", 0, 0),
            ("requests", 3_000_000_000, 0),
            ("requests", 6_000_000_000, 3)
        ]
    );

    let (requests, answers) = (doors.requests, doors.answers);
    let mut replay = builder
        .build()
        .unwrap()
        .start(move |host| echo_server(host, requests, answers));
    assert_eq!(replay.replay_inputs(&inputs).unwrap(), Progress::Finished);
    assert_eq!(replay.take(answers), ["FOUR", "X", "SIXSIX"]);
    let replayed = replay.finish().unwrap();
    assert_eq!(replayed.output, 3);
    assert_eq!(tape_bytes(&replayed), bytes);
}

#[test]
fn a_stopped_run_ends_in_error_and_replays_to_the_same_stop() {
    // Goal: finishing a run whose main task still waits records a `stop` input and ends in
    // SimError::Stopped; the replay of its inputs stops at the same point, same bytes.
    let mut builder = Sim::builder();
    builder.tape_in_memory();
    let Doors { requests, answers } = doors(&mut builder);
    let mut run = builder
        .build()
        .unwrap()
        .start(move |host| echo_server(host, requests, answers));
    run.deliver(requests, "abc".into()).unwrap();
    assert_eq!(run.step(), Progress::Paused);
    let stopped = run.finish().unwrap_err();
    assert!(
        matches!(&*stopped.error, SimError::Stopped { t_ns: 3_000_000_000, waiting } if !waiting.is_empty()),
        "{}",
        stopped.error
    );
    let bytes = stopped
        .summary
        .tape
        .as_ref()
        .unwrap()
        .memory
        .clone()
        .unwrap();
    let inputs = recorded_inputs(TapeReader::new(&bytes[..]).unwrap()).unwrap();
    assert_eq!(inputs.last().unwrap().actor, "engine");

    let mut replay = builder
        .build()
        .unwrap()
        .start(move |host| echo_server(host, requests, answers));
    assert_eq!(replay.replay_inputs(&inputs).unwrap(), Progress::Paused);
    let again = replay.finish().unwrap_err();
    assert_eq!(again.summary.tape.unwrap().memory.unwrap(), bytes);
}

#[test]
fn a_replay_into_a_different_pipeline_names_the_input_where_it_parts() {
    // Goal: inputs recorded after N timer events cannot be fed into a run that awaits input
    // earlier; the error names the input record and both event counts.
    let mut builder = Sim::builder();
    builder.tape_in_memory();
    let doors = doors(&mut builder);
    let (live, _) = drive_live(&mut builder, &doors);
    let bytes = tape_bytes(&live);
    let inputs = recorded_inputs(TapeReader::new(&bytes[..]).unwrap()).unwrap();

    let requests = doors.requests;
    let mut other = builder.build().unwrap().start(move |_host| async move {
        // Receives everything at once and never sleeps: it awaits input after 0 events.
        let mut n = 0;
        while requests.recv().await.is_some() {
            n += 1;
        }
        n
    });
    let error = other.replay_inputs(&inputs).unwrap_err();
    assert!(
        matches!(error, ReplayInputError::Diverged { events: 3, .. }),
        "{error}"
    );
    assert!(
        error.to_string().contains("after 3 timer events"),
        "{error}"
    );
}

#[test]
fn deliveries_are_checked_and_refused_without_changing_the_run() {
    // Goal: input in the past, after the next timer, into a closed or full inbox, or into an
    // ended run is refused with a named error, and the run's time is unchanged.
    let mut builder = Sim::builder();
    builder.limits(Limits {
        mailbox_len_max: 2,
        ..Limits::default()
    });
    let requests = builder.inbox::<u32>("requests");
    let mut run = builder.build().unwrap().start(move |host| async move {
        host.sleep(secs(5)).await;
        let mut got = Vec::new();
        while let Some(n) = requests.recv().await {
            got.push(n);
        }
        host.sleep(secs(1)).await;
        got
    });
    assert_eq!(
        run.deliver_at(6_000_000_000, requests, 1),
        Err(DeliverError::AfterNextTimer {
            at_ns: 6_000_000_000,
            timer_ns: 5_000_000_000
        })
    );
    assert_eq!(run.now_ns(), 0);
    run.deliver(requests, 1).unwrap();
    run.deliver(requests, 2).unwrap();
    assert_eq!(
        run.deliver(requests, 3),
        Err(DeliverError::Full { len_max: 2 })
    );
    assert_eq!(run.run_until_idle(), Progress::AwaitingInput);
    assert_eq!(
        run.deliver_at(1, requests, 4),
        Err(DeliverError::InThePast {
            at_ns: 1,
            now_ns: 5_000_000_000
        })
    );
    run.close(requests).unwrap();
    assert_eq!(run.deliver(requests, 5), Err(DeliverError::Closed));
    assert_eq!(run.run_until_idle(), Progress::Finished);
    assert_eq!(run.deliver(requests, 6), Err(DeliverError::Ended));
    assert_eq!(run.finish().unwrap().output, [1, 2]);
}

#[test]
fn an_outbox_nobody_empties_is_a_named_limit() {
    // Goal: output piling up past mailbox_len_max ends the run with that limit.
    let mut builder = Sim::builder();
    builder.limits(Limits {
        mailbox_len_max: 3,
        ..Limits::default()
    });
    let out = builder.outbox::<u8>("out");
    let mut run = builder.build().unwrap().start(move |host| async move {
        for n in 0..10 {
            out.send(n);
            host.sleep(secs(1)).await;
        }
    });
    assert_eq!(run.run_until_idle(), Progress::Failed);
    let error = run.finish().unwrap_err();
    assert!(
        matches!(
            &*error.error,
            SimError::LimitExceeded {
                limit: LimitName::MailboxLenMax,
                value: 3,
                ..
            }
        ),
        "{}",
        error.error
    );
}

/// A message whose encoding panics: user code that runs inside the simulation's context
/// but outside any task (the recorder encodes a delivery while the core is entered).
#[derive(serde::Deserialize)]
struct Unencodable;

impl serde::Serialize for Unencodable {
    fn serialize<S: serde::Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
        panic!("cannot encode")
    }
}

#[test]
fn a_panic_that_escapes_the_executor_leaves_the_thread_usable() {
    // Goal: the context is entered through a guard: when a panic escapes while the core is
    // entered (here a message whose Serialize panics during a delivery), the thread no longer
    // believes a simulation runs, and the next run on it works.
    let mut builder = Sim::builder();
    let inbox = builder.inbox::<Unencodable>("odd");
    let mut run = builder
        .build()
        .unwrap()
        .start(move |_host| async move { inbox.recv().await.is_some() });
    assert_eq!(run.run_until_idle(), Progress::AwaitingInput);
    assert!(
        !simtape::in_simulation(),
        "between calls the run is not entered"
    );
    let escaped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = run.deliver(inbox, Unencodable);
    }));
    assert!(escaped.is_err(), "the encoder's panic escapes the delivery");
    assert!(!simtape::in_simulation());
    std::mem::forget(run);
    let report = Sim::builder()
        .build()
        .unwrap()
        .run(|host| async move {
            host.sleep(secs(2)).await;
            host.now_ns()
        })
        .unwrap();
    assert_eq!(report.output, 2_000_000_000);
}

#[test]
fn an_open_run_waiting_for_input_has_written_every_record_to_its_tape_file() {
    // Goal: while a run awaits input (an agent thinking, for as long as it likes), the tape
    // file holds every record so far, so killing the process then loses none: read as a
    // prefix, it ends at the last record before the wait.
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("open-run-flush");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("open.tape");
    let mut builder = Sim::builder();
    builder.tape(&path);
    let Doors { requests, answers } = doors(&mut builder);
    let mut run = builder
        .build()
        .unwrap()
        .start(move |host| echo_server(host, requests, answers));
    assert_eq!(run.run_until_idle(), Progress::AwaitingInput);
    run.deliver(requests, "four".into()).unwrap();
    assert_eq!(run.run_until_idle(), Progress::AwaitingInput);
    let mut reader = simtape::tape::TapeReader::open(&path)
        .unwrap()
        .up_to_truncation();
    let mut kinds = Vec::new();
    while let Some(record) = reader.next_record().unwrap() {
        kinds.push(record.kind.name());
    }
    let cut = reader.truncation().expect("no footer yet").to_string();
    // The spawn of main, the input, the answer task's spawn, wake and exit: all on disk.
    assert!(kinds.contains(&"input"), "{kinds:?}");
    assert_eq!(kinds.last(), Some(&"exit"), "{kinds:?}");
    assert!(
        cut.contains(&format!(
            "the footer is missing (after {} complete records",
            kinds.len()
        )),
        "{cut}"
    );
    assert!(cut.contains("the last whole record is"), "{cut}");
    drop(run);
}
