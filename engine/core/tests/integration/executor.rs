//! The executor: virtual time, task lifecycle, deadlocks, panics, channels, limits.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use simtape::limits::{LimitName, Limits};
use simtape::time::{interval, now_ns, sleep, sleep_until, timeout};
use simtape::{Sim, SimError};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[test]
fn concurrent_sleeps_overlap_and_finish_in_deadline_order() {
    // Goal: five tasks sleeping 100..500 ms end at +500 ms, in deadline order.
    let report = Sim::builder()
        .build()
        .unwrap()
        .run(|host| async move {
            let order = Rc::new(RefCell::new(Vec::new()));
            let mut handles = Vec::new();
            for i in (1..=5u64).rev() {
                let order = Rc::clone(&order);
                handles.push(host.spawn(&format!("sleeper-{i}"), async move {
                    sleep(ms(100 * i)).await;
                    order.borrow_mut().push((i, now_ns()));
                }));
            }
            for handle in handles {
                handle.await.unwrap();
            }
            let order = order.borrow().clone();
            order
        })
        .unwrap();
    let expected: Vec<(u64, u64)> = (1..=5).map(|i| (i, i * 100_000_000)).collect();
    assert_eq!(report.output, expected);
    assert_eq!(report.summary.end_ns, 500_000_000);
    assert_eq!(report.summary.events, 5);
}

#[test]
fn deadlock_lists_every_waiting_task() {
    // Goal: tasks waiting on each other with no timer end the run with a deadlock report.
    let error = Sim::builder()
        .build()
        .unwrap()
        .run(|host| async move {
            let (_tx_keep, mut rx) = simtape::sync::channel::<u32>("never");
            let waiter = host.spawn("waiter", async move { rx.recv().await });
            sleep(ms(3)).await;
            waiter.await.unwrap()
        })
        .unwrap_err();
    match &*error.error {
        SimError::Deadlock { t_ns, waiting } => {
            assert_eq!(*t_ns, 3_000_000);
            let described: Vec<(&str, &str)> = waiting
                .iter()
                .map(|w| (w.name.as_str(), w.awaiting.as_str()))
                .collect();
            assert_eq!(
                described,
                vec![
                    ("main", "join of task \"waiter\" (#2)"),
                    ("waiter", "recv on channel \"never\"")
                ]
            );
        }
        other => panic!("expected a deadlock, got {other}"),
    }
    assert!(error.to_string().contains("deadlock at t=3ms"), "{error}");
}

#[test]
fn task_panic_names_the_task_and_time() {
    // Goal: a panic ends the run with the task's name and the virtual time.
    let error = Sim::builder()
        .build()
        .unwrap()
        .run(|host| async move {
            let bad = host.spawn("bad-tool", async {
                sleep(ms(7)).await;
                panic!("tool exploded");
            });
            bad.await.unwrap();
        })
        .unwrap_err();
    match &*error.error {
        SimError::TaskPanicked {
            name,
            t_ns,
            message,
            ..
        } => {
            assert_eq!(name, "bad-tool");
            assert_eq!(*t_ns, 7_000_000);
            assert_eq!(message, "tool exploded");
        }
        other => panic!("expected a panic, got {other}"),
    }
}

#[test]
fn abort_cancels_a_sleeping_task_without_advancing_time() {
    // Goal: an aborted task's pending timer is cancelled; time does not jump to it.
    let report = Sim::builder()
        .build()
        .unwrap()
        .run(|host| async move {
            let mut long = host.spawn("long", async { sleep(Duration::from_secs(3600)).await });
            sleep(ms(1)).await;
            long.abort();
            (long.await, now_ns())
        })
        .unwrap();
    assert_eq!(report.output.0, Err(simtape::JoinError::Aborted(2)));
    assert_eq!(report.summary.end_ns, 1_000_000);
}

#[test]
fn timeout_and_sleep_until_and_interval() {
    // Goal: timeout fires at its deadline; sleep_until and interval tick on schedule.
    let report = Sim::builder()
        .build()
        .unwrap()
        .run(|_host| async move {
            let timed_out = timeout(ms(10), sleep(ms(50))).await.is_err();
            let finished = timeout(ms(10), sleep(ms(5))).await.is_ok();
            let after_timeouts = now_ns();
            sleep_until(100_000_000).await;
            let mut ticks = Vec::new();
            let mut every = interval(ms(20));
            for _ in 0..3 {
                ticks.push(every.tick().await);
            }
            (timed_out, finished, after_timeouts, ticks)
        })
        .unwrap();
    assert_eq!(
        report.output,
        (
            true,
            true,
            15_000_000,
            vec![100_000_000, 120_000_000, 140_000_000]
        )
    );
}

#[test]
fn channels_deliver_in_order_and_close() {
    // Goal: a bounded channel delivers FIFO, applies back-pressure, and closes.
    let report = Sim::builder()
        .build()
        .unwrap()
        .run(|host| async move {
            let (tx, mut rx) = simtape::sync::bounded("pipe", 2);
            let producer = host.spawn("producer", async move {
                for i in 0..5u32 {
                    tx.send(i).await.unwrap();
                    sleep(ms(1)).await;
                }
            });
            let mut got = Vec::new();
            while let Some(v) = rx.recv().await {
                got.push(v);
            }
            producer.await.unwrap();
            got
        })
        .unwrap();
    assert_eq!(report.output, vec![0, 1, 2, 3, 4]);
}

#[test]
fn limits_are_named_errors() {
    // Goal: the events and virtual-time limits end a run with their names and values.
    let run = |limits: Limits| {
        let mut builder = Sim::builder();
        builder.limits(limits);
        builder
            .build()
            .unwrap()
            .run(|_host| async {
                loop {
                    sleep(ms(1)).await;
                }
            })
            .unwrap_err()
    };
    let events = run(Limits {
        events_max: 10,
        ..Limits::default()
    });
    assert!(
        matches!(
            *events.error,
            SimError::LimitExceeded {
                limit: LimitName::EventsMax,
                value: 10,
                ..
            }
        ),
        "{}",
        events.error
    );
    let horizon = run(Limits {
        virtual_time_max_ns: 5_500_000,
        ..Limits::default()
    });
    assert!(matches!(
        *horizon.error,
        SimError::LimitExceeded {
            limit: LimitName::VirtualTimeMaxNs,
            value: 5_500_000,
            t_ns: 5_000_000
        }
    ));
    assert_eq!(
        horizon.to_string(),
        "limit virtual_time_max_ns = 5500000 reached at t=5ms"
    );
}

#[test]
fn run_queue_and_task_limits() {
    // Goal: spawning beyond tasks_max, or flooding the run queue, ends the run by name.
    let mut builder = Sim::builder();
    builder.limits(Limits {
        tasks_max: 3,
        ..Limits::default()
    });
    let error = builder
        .build()
        .unwrap()
        .run(|host| async move {
            for i in 0..5 {
                host.spawn(&format!("t{i}"), async {});
            }
        })
        .unwrap_err();
    assert!(matches!(
        *error.error,
        SimError::LimitExceeded {
            limit: LimitName::TasksMax,
            ..
        }
    ));
    let mut builder = Sim::builder();
    builder.limits(Limits {
        run_queue_len_max: 4,
        ..Limits::default()
    });
    let error = builder
        .build()
        .unwrap()
        .run(|host| async move {
            for i in 0..10 {
                host.spawn(&format!("t{i}"), async {});
            }
        })
        .unwrap_err();
    assert!(matches!(
        *error.error,
        SimError::LimitExceeded {
            limit: LimitName::RunQueueLenMax,
            value: 4,
            ..
        }
    ));
}

#[test]
// Threads are banned in the engine, but this test needs two to prove runs share nothing.
#[allow(clippy::disallowed_methods)]
fn many_runs_one_after_another_and_on_two_threads() {
    // Goal: runs share no state: sequential runs on one thread and parallel runs on two
    // threads give the same fingerprints.
    fn one(seed: u64) -> u64 {
        let mut builder = Sim::builder();
        builder.seed(seed);
        let dice = builder.actor("dice", Dice);
        builder
            .build()
            .unwrap()
            .run(move |host| async move {
                for _ in 0..20 {
                    let roll = dice.call(6).await;
                    host.sleep(ms(roll)).await;
                }
            })
            .unwrap()
            .summary
            .fingerprint
    }
    let sequential: Vec<u64> = (0..4).map(one).collect();
    let threads: Vec<_> = (0..2)
        .map(|t| {
            std::thread::spawn(move || (0..4).filter(|s| s % 2 == t).map(one).collect::<Vec<_>>())
        })
        .collect();
    let parallel: Vec<Vec<u64>> = threads.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(parallel[0], vec![sequential[0], sequential[2]]);
    assert_eq!(parallel[1], vec![sequential[1], sequential[3]]);
    assert_ne!(sequential[0], sequential[1]);
}

#[derive(Clone)]
struct Dice;

impl simtape::actor::Actor for Dice {
    type Request = u64;
    type Response = u64;
    fn operation(&self, _: &u64) -> &'static str {
        "roll"
    }
    fn handle(
        &mut self,
        sides: &u64,
        cx: &mut simtape::actor::ActorContext<'_>,
    ) -> simtape::actor::Answer<u64> {
        simtape::actor::Answer {
            latency_ns: 10,
            response: 1 + cx.rng.below(*sides),
        }
    }
}

#[test]
fn primitives_outside_a_run_panic_with_a_clear_message() {
    // Goal: using a simulation primitive outside Sim::run says so.
    let panic = std::panic::catch_unwind(now_ns).unwrap_err();
    let message = panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default();
    assert!(message.contains("inside Sim::run"), "{message}");
}

#[test]
fn tape_and_payload_limits_are_named_errors() {
    // Goal: a tape or a payload beyond its limit ends the run with the limit's name.
    let mut builder = Sim::builder();
    builder.tape_in_memory().limits(Limits {
        tape_bytes_max: 2_000,
        ..Limits::default()
    });
    let error = builder
        .build()
        .unwrap()
        .run(|_host| async {
            loop {
                sleep(ms(1)).await;
            }
        })
        .unwrap_err();
    assert!(
        matches!(
            *error.error,
            SimError::LimitExceeded {
                limit: LimitName::TapeBytesMax,
                value: 2_000,
                ..
            }
        ),
        "{error}"
    );
    let mut builder = Sim::builder();
    builder.limits(Limits {
        payload_bytes_max: 100,
        ..Limits::default()
    });
    let error = builder
        .build()
        .unwrap()
        .run(|host| async move {
            host.event("big", serde_json::json!({ "text": "x".repeat(500) }))
                .await;
        })
        .unwrap_err();
    assert!(
        matches!(
            *error.error,
            SimError::LimitExceeded {
                limit: LimitName::PayloadBytesMax,
                value: 100,
                ..
            }
        ),
        "{error}"
    );
}

#[test]
fn the_clock_and_event_actors_go_through_the_seam() {
    // Goal: clock reads, clock sleeps and user events are request/reply records on the tape,
    // with the actor's name, the operation, and the reply at the right virtual time.
    use simtape::actor::ClockRequest;
    use simtape::tape::{payload_to_json, RecordKind, TapeReader};
    let mut builder = Sim::builder();
    builder
        .tape_in_memory()
        .start_at("2026-05-01T00:00:00Z")
        .unwrap();
    let report = builder
        .build()
        .unwrap()
        .run(|host| async move {
            let before = host.wall_clock().await;
            let after = host.clock().call(ClockRequest::Sleep(2_000_000)).await;
            let number = host
                .event("checked", serde_json::json!({ "ok": true }))
                .await;
            (before, after, number)
        })
        .unwrap();
    let start = simtape::time::parse_instant("2026-05-01T00:00:00Z").unwrap();
    assert_eq!(report.output, (start, start + 2_000_000, 1));
    let bytes = report.summary.tape.unwrap().memory.unwrap();
    let mut reader = TapeReader::new(&bytes[..]).unwrap();
    let mut seen = Vec::new();
    while let Some(record) = reader.next_record().unwrap() {
        if matches!(record.kind, RecordKind::Request | RecordKind::Reply) {
            let payload = payload_to_json(&record.payload).unwrap();
            let actor = reader.actor_name(record.actor).to_string();
            seen.push((record.t_ns, actor, record.kind.name(), payload[0].clone()));
        }
    }
    let expected: Vec<(u64, String, &str, serde_json::Value)> = vec![
        (0, "clock".into(), "request", "now".into()),
        (0, "clock".into(), "reply", "now".into()),
        (0, "clock".into(), "request", "sleep".into()),
        (2_000_000, "clock".into(), "reply", "sleep".into()),
        (2_000_000, "events".into(), "request", "log".into()),
        (2_000_000, "events".into(), "reply", "log".into()),
    ];
    assert_eq!(seen, expected);
}
