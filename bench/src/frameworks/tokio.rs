//! The workloads on tokio: a current-thread runtime with a paused clock (what
//! `#[tokio::test(start_paused = true)]` builds), `tokio::spawn`, `tokio::time::sleep` and
//! unbounded mpsc channels.
//!
//! tokio's timer wheel rounds every deadline up to the next millisecond, so W1's µs sleeps
//! all last 1 ms (end 100 ms instead of 61.7 ms) and W2's hops 1 ms each; W1ms is the fair
//! timer comparison. Events are counted by the tasks themselves and summed at the joins.

use std::time::Duration;

use ::tokio::runtime::Builder;
use ::tokio::sync::mpsc::unbounded_channel;
use ::tokio::time::{sleep, timeout, Instant};

use super::Outcome;
use crate::workloads::{FanOut, Mix, PingPong, Request, Shape, SplitMix64, Timers};

/// Runs `shape` once on a fresh runtime (its construction is part of the measured time).
pub fn run(shape: Shape) -> Outcome {
    let runtime = Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime builds");
    runtime.block_on(async move {
        let start = Instant::now();
        let events = match shape {
            Shape::Timers(timers_shape) => timers(timers_shape).await,
            Shape::PingPong(ping_pong_shape) => ping_pong(ping_pong_shape).await,
            Shape::FanOut(fan_out_shape) => fan_out(fan_out_shape).await,
            Shape::Mix(mix_shape) => mix(mix_shape).await,
        };
        let end_ns =
            u64::try_from(start.elapsed().as_nanos()).expect("the run ends within 584 years");
        Outcome {
            events,
            end_ns,
            fingerprint: None,
            tape: None,
        }
    })
}

async fn timers(shape: Timers) -> u64 {
    let handles: Vec<_> = (0..shape.tasks)
        .map(|task| {
            ::tokio::spawn(async move {
                let mut stream = SplitMix64::for_task(task);
                for _ in 0..shape.sleeps_per_task {
                    sleep(Duration::from_nanos(stream.draw() * shape.unit_ns)).await;
                }
                shape.sleeps_per_task
            })
        })
        .collect();
    let mut events = 0;
    for handle in handles {
        events += handle.await.expect("no sleeper panics");
    }
    events
}

async fn ping_pong(shape: PingPong) -> u64 {
    assert!(
        shape.messages.is_multiple_of(2),
        "each side sends half of the messages"
    );
    let turns = shape.messages / 2;
    let hop = Duration::from_nanos(shape.hop_ns);
    let (to_b, mut at_b) = unbounded_channel::<u64>();
    let (to_a, mut at_a) = unbounded_channel::<u64>();
    let a = ::tokio::spawn(async move {
        let mut message = 0;
        for _ in 0..turns {
            sleep(hop).await;
            to_b.send(message + 1)
                .expect("b receives until the last turn");
            message = at_a.recv().await.expect("b answers every message");
        }
        message
    });
    let b = ::tokio::spawn(async move {
        for _ in 0..turns {
            let message = at_b.recv().await.expect("a sends every turn");
            sleep(hop).await;
            to_a.send(message + 1)
                .expect("a receives until the last turn");
        }
        turns
    });
    let b_events = b.await.expect("b does not panic");
    let last = a.await.expect("a does not panic");
    assert_eq!(last, shape.messages, "every message made its hop");
    turns + b_events
}

async fn fan_out(shape: FanOut) -> u64 {
    let handles: Vec<_> = (0..shape.tasks)
        .map(|task| {
            ::tokio::spawn(async move {
                let delay_ns = SplitMix64::for_task(task).draw() * shape.unit_ns;
                sleep(Duration::from_nanos(delay_ns)).await;
            })
        })
        .collect();
    let mut events = 0;
    for handle in handles {
        handle.await.expect("no task panics");
        events += 1;
    }
    events
}

async fn mix(shape: Mix) -> u64 {
    let clients: Vec<_> = (0..shape.clients)
        .map(|client| ::tokio::spawn(mix_client(shape, client)))
        .collect();
    let mut events = 0;
    for client in clients {
        events += client.await.expect("no client panics");
    }
    events
}

/// One W4 client (see `Mix`); returns its events: its thinks, its handlers' services (one
/// per reply) and its fired timeouts.
async fn mix_client(shape: Mix, client: u64) -> u64 {
    let unit_ns = shape.unit_ns;
    let unit = move |units: u64| Duration::from_nanos(units * unit_ns);
    let mut stream = SplitMix64::for_task(client);
    let (reply_to, mut replies) = unbounded_channel::<u64>();
    let mut events = 0;
    for _ in 0..shape.requests_per_client {
        let request = Request::draw(&mut stream);
        sleep(unit(request.think_units)).await;
        let (to_handler, mut at_handler) = unbounded_channel::<u64>();
        let reply_to = reply_to.clone();
        drop(::tokio::spawn(async move {
            let service_units = at_handler
                .recv()
                .await
                .expect("the client sends one request");
            sleep(unit(service_units)).await;
            reply_to
                .send(service_units)
                .expect("the client awaits every reply");
        }));
        to_handler
            .send(request.service_units)
            .expect("the handler receives its request");
        let reply = match timeout(unit(shape.timeout_units), replies.recv()).await {
            Ok(reply) => reply,
            Err(_elapsed) => {
                events += 1;
                replies.recv().await
            }
        };
        assert_eq!(
            reply,
            Some(request.service_units),
            "each reply answers its request"
        );
        events += 2;
    }
    events
}
