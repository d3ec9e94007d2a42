//! The workloads on simtape: one task per sleeper, `simtape::time::sleep`, named channels.
//!
//! Task names are `&'static str` so spawning allocates no name; the engine still records a
//! spawn record per task, which is part of what W3 measures.

use std::path::Path;
use std::time::Duration;

use ::simtape::limits::Limits;
use ::simtape::sync::bounded;
use ::simtape::time::{sleep, timeout};
use ::simtape::{spawn, Sim};

use super::{Outcome, TapeStats};
use crate::workloads::{FanOut, Mix, PingPong, Request, Shape, SplitMix64, Timers};

/// Runs `shape` once, streaming the tape to `tape_path` when there is one.
pub fn run(shape: Shape, tape_path: Option<&Path>) -> Outcome {
    let mut builder = Sim::builder();
    // The default event budget is a safety net for scenarios; a benchmark must never hit it.
    builder.limits(Limits {
        events_max: u64::MAX,
        ..Limits::default()
    });
    match tape_path {
        Some(path) => builder.tape(path),
        None => builder.no_tape(),
    };
    let sim = builder
        .build()
        .unwrap_or_else(|e| panic!("simtape build failed: {e}"));
    let report = sim
        .run(move |_host| workload(shape))
        .unwrap_or_else(|e| panic!("simtape run failed: {e}"));
    Outcome {
        events: report.summary.events,
        end_ns: report.summary.end_ns,
        fingerprint: Some(report.summary.fingerprint),
        tape: report.summary.tape.map(|tape| TapeStats {
            bytes: tape.bytes,
            records: tape.record_count,
        }),
    }
}

async fn workload(shape: Shape) {
    match shape {
        Shape::Timers(timers_shape) => timers(timers_shape).await,
        Shape::PingPong(ping_pong_shape) => ping_pong(ping_pong_shape).await,
        Shape::FanOut(fan_out_shape) => fan_out(fan_out_shape).await,
        Shape::Mix(mix_shape) => mix(mix_shape).await,
    }
}

async fn timers(shape: Timers) {
    let handles: Vec<_> = (0..shape.tasks)
        .map(|task| {
            spawn("sleeper", async move {
                let mut stream = SplitMix64::for_task(task);
                for _ in 0..shape.sleeps_per_task {
                    sleep(Duration::from_nanos(stream.draw() * shape.unit_ns)).await;
                }
            })
        })
        .collect();
    for handle in handles {
        handle.await.expect("no sleeper is aborted");
    }
}

async fn ping_pong(shape: PingPong) {
    assert!(
        shape.messages.is_multiple_of(2),
        "each side sends half of the messages"
    );
    let turns = shape.messages / 2;
    let hop = Duration::from_nanos(shape.hop_ns);
    // Capacity 1 is enough: the two sides strictly alternate, so no send ever waits.
    let (to_b, mut at_b) = bounded::<u64>("a_to_b", 1);
    let (to_a, mut at_a) = bounded::<u64>("b_to_a", 1);
    let a = spawn("a", async move {
        let mut message = 0;
        for _ in 0..turns {
            sleep(hop).await;
            to_b.send(message + 1)
                .await
                .expect("b receives until the last turn");
            message = at_a.recv().await.expect("b answers every message");
        }
        message
    });
    let b = spawn("b", async move {
        for _ in 0..turns {
            let message = at_b.recv().await.expect("a sends every turn");
            sleep(hop).await;
            to_a.send(message + 1)
                .await
                .expect("a receives until the last turn");
        }
    });
    b.await.expect("b is not aborted");
    let last = a.await.expect("a is not aborted");
    assert_eq!(last, shape.messages, "every message made its hop");
}

async fn fan_out(shape: FanOut) {
    let handles: Vec<_> = (0..shape.tasks)
        .map(|task| {
            spawn("fan_out", async move {
                let delay_ns = SplitMix64::for_task(task).draw() * shape.unit_ns;
                sleep(Duration::from_nanos(delay_ns)).await;
            })
        })
        .collect();
    for handle in handles {
        handle.await.expect("no task is aborted");
    }
}

async fn mix(shape: Mix) {
    let clients: Vec<_> = (0..shape.clients)
        .map(|client| spawn("client", mix_client(shape, client)))
        .collect();
    for client in clients {
        client.await.expect("no client is aborted");
    }
}

/// One W4 client: think, spawn a handler, send it the request, await the reply under a
/// timeout (and the late reply after a timeout that fired).
async fn mix_client(shape: Mix, client: u64) {
    let unit_ns = shape.unit_ns;
    let unit = move |units: u64| Duration::from_nanos(units * unit_ns);
    let mut stream = SplitMix64::for_task(client);
    // Capacity 1: each handler sends one reply, and the client takes it before the next.
    let (reply_to, mut replies) = bounded::<u64>("replies", 1);
    for _ in 0..shape.requests_per_client {
        let request = Request::draw(&mut stream);
        sleep(unit(request.think_units)).await;
        let (to_handler, mut at_handler) = bounded::<u64>("request", 1);
        let reply_to = reply_to.clone();
        spawn("handler", async move {
            let service_units = at_handler
                .recv()
                .await
                .expect("the client sends one request");
            sleep(unit(service_units)).await;
            reply_to
                .send(service_units)
                .await
                .expect("the client awaits every reply");
        })
        .detach();
        to_handler
            .send(request.service_units)
            .await
            .expect("the handler receives its request");
        let reply = match timeout(unit(shape.timeout_units), replies.recv()).await {
            Ok(reply) => reply,
            Err(_elapsed) => replies.recv().await,
        };
        assert_eq!(
            reply,
            Some(request.service_units),
            "each reply answers its request"
        );
    }
}
