//! The workloads on nexosim 1.0, one thread, modelled the way nexosim models work.
//!
//! nexosim has no task spawning and no `sleep` in its model API: a model "sleeps" by
//! scheduling one of its own `#[nexosim(schedulable)]` inputs. So W1 is 10,000 sleeper models
//! that re-arm themselves, W2 is two models joined by output ports that schedule `emit` 1 µs
//! after each receive, and W3 is one model that schedules all its events from `init` (the
//! variant where nexosim does no per-task work, its fastest shape). W4's clients and servers
//! are models joined by ports; nexosim cannot add a model while it runs, so the handler a
//! client spawns per request is a server model built with the bench, one per client, that
//! serves that client's requests in turn.
//!
//! Models are moved into the simulation, so each counts its events into a shared atomic
//! (skipped by serde: nexosim requires models to be serialisable for save/restore).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ::nexosim::model::{schedulable, Context, Model};
use ::nexosim::ports::Output;
use ::nexosim::simulation::{EventKey, Mailbox, SimInit, Simulation};
use ::nexosim::time::MonotonicTime;
use serde::{Deserialize, Serialize};

use super::Outcome;
use crate::workloads::{FanOut, Mix, PingPong, Request, Shape, SplitMix64, Timers};

/// Runs `shape` once; bench assembly and `init` are part of the measured time.
pub fn run(shape: Shape) -> Outcome {
    let events = Arc::new(AtomicU64::new(0));
    let bench = SimInit::with_num_threads(1);
    let bench = match shape {
        Shape::Timers(timers_shape) => timers(bench, timers_shape, &events),
        Shape::PingPong(ping_pong_shape) => ping_pong(bench, ping_pong_shape, &events),
        Shape::FanOut(fan_out_shape) => fan_out(bench, fan_out_shape, &events),
        Shape::Mix(mix_shape) => mix(bench, mix_shape, &events),
    };
    let start = MonotonicTime::EPOCH;
    let mut simulation: Simulation = bench
        .init(start)
        .unwrap_or_else(|e| panic!("nexosim init failed: {e}"));
    simulation
        .run()
        .unwrap_or_else(|e| panic!("nexosim run failed: {e}"));
    let end_ns = u64::try_from(simulation.time().duration_since(start).as_nanos())
        .expect("the run ends within 584 years");
    Outcome {
        events: events.load(Ordering::Relaxed),
        end_ns,
        fingerprint: None,
        tape: None,
    }
}

/// A W1 task: sleeps `remaining` times, each for the next draw of its stream.
#[derive(Serialize, Deserialize)]
struct Sleeper {
    stream: SplitMix64,
    remaining: u64,
    unit_ns: u64,
    #[serde(skip)]
    events: Arc<AtomicU64>,
}

#[Model]
impl Sleeper {
    #[nexosim(init)]
    async fn init(&mut self, cx: &Context<Self>) {
        self.arm(cx);
    }

    #[nexosim(schedulable)]
    fn wake(&mut self, _: (), cx: &Context<Self>) {
        self.events.fetch_add(1, Ordering::Relaxed);
        self.arm(cx);
    }

    fn arm(&mut self, cx: &Context<Self>) {
        if self.remaining == 0 {
            return;
        }
        self.remaining -= 1;
        let delay = Duration::from_nanos(self.stream.draw() * self.unit_ns);
        cx.schedule_event(delay, schedulable!(Self::wake), ())
            .expect("a delay of at least 1 µs is in the future");
    }
}

fn timers(mut bench: SimInit, shape: Timers, events: &Arc<AtomicU64>) -> SimInit {
    for task in 0..shape.tasks {
        let sleeper = Sleeper {
            stream: SplitMix64::for_task(task),
            remaining: shape.sleeps_per_task,
            unit_ns: shape.unit_ns,
            events: Arc::clone(events),
        };
        bench = bench.add_model(sleeper, Mailbox::new(), &format!("sleeper{task}"));
    }
    bench
}

/// A W2 side: on each message it schedules `emit` one hop later, which sends the next one.
#[derive(Serialize, Deserialize)]
struct Player {
    output: Output<u64>,
    /// Only the first player serves the first message.
    serves: bool,
    messages: u64,
    hop_ns: u64,
    #[serde(skip)]
    events: Arc<AtomicU64>,
}

#[Model]
impl Player {
    #[nexosim(init)]
    async fn init(&mut self, cx: &Context<Self>) {
        if self.serves {
            self.schedule_emit(1, cx);
        }
    }

    fn receive(&mut self, message: u64, cx: &Context<Self>) {
        if message < self.messages {
            self.schedule_emit(message + 1, cx);
        }
    }

    #[nexosim(schedulable)]
    async fn emit(&mut self, message: u64) {
        self.events.fetch_add(1, Ordering::Relaxed);
        self.output.send(message).await;
    }

    fn schedule_emit(&mut self, message: u64, cx: &Context<Self>) {
        cx.schedule_event(
            Duration::from_nanos(self.hop_ns),
            schedulable!(Self::emit),
            message,
        )
        .expect("a hop of 1 µs is in the future");
    }
}

fn ping_pong(bench: SimInit, shape: PingPong, events: &Arc<AtomicU64>) -> SimInit {
    let player = |serves| Player {
        output: Output::default(),
        serves,
        messages: shape.messages,
        hop_ns: shape.hop_ns,
        events: Arc::clone(events),
    };
    let (mut a, mut b) = (player(true), player(false));
    let (a_mailbox, b_mailbox) = (Mailbox::new(), Mailbox::new());
    a.output.connect(Player::receive, &b_mailbox);
    b.output.connect(Player::receive, &a_mailbox);
    bench
        .add_model(a, a_mailbox, "a")
        .add_model(b, b_mailbox, "b")
}

/// W3: one model schedules every task's single wake from `init`.
#[derive(Serialize, Deserialize)]
struct FanOutModel {
    tasks: u64,
    unit_ns: u64,
    #[serde(skip)]
    events: Arc<AtomicU64>,
}

#[Model]
impl FanOutModel {
    #[nexosim(init)]
    async fn init(&mut self, cx: &Context<Self>) {
        for task in 0..self.tasks {
            let delay = Duration::from_nanos(SplitMix64::for_task(task).draw() * self.unit_ns);
            cx.schedule_event(delay, schedulable!(Self::wake), ())
                .expect("a delay of at least 1 µs is in the future");
        }
    }

    #[nexosim(schedulable)]
    fn wake(&mut self) {
        self.events.fetch_add(1, Ordering::Relaxed);
    }
}

fn fan_out(bench: SimInit, shape: FanOut, events: &Arc<AtomicU64>) -> SimInit {
    let model = FanOutModel {
        tasks: shape.tasks,
        unit_ns: shape.unit_ns,
        events: Arc::clone(events),
    };
    bench.add_model(model, Mailbox::new(), "fan_out")
}

/// A W4 client: thinks, sends the request to its server, arms a keyed timeout, and on the
/// reply cancels the timeout (if it has not fired) and thinks again.
#[derive(Serialize, Deserialize)]
struct Client {
    requests: Output<u64>,
    stream: SplitMix64,
    remaining: u64,
    /// The service time of the request in flight.
    service_units: u64,
    unit_ns: u64,
    timeout_units: u64,
    #[serde(skip)]
    timeout: Option<EventKey>,
    #[serde(skip)]
    events: Arc<AtomicU64>,
}

#[Model]
impl Client {
    #[nexosim(init)]
    async fn init(&mut self, cx: &Context<Self>) {
        self.think(cx);
    }

    fn think(&mut self, cx: &Context<Self>) {
        if self.remaining == 0 {
            return;
        }
        self.remaining -= 1;
        let request = Request::draw(&mut self.stream);
        self.service_units = request.service_units;
        let delay = Duration::from_nanos(request.think_units * self.unit_ns);
        cx.schedule_event(delay, schedulable!(Self::send_request), ())
            .expect("a think time of at least 1 ms is in the future");
    }

    #[nexosim(schedulable)]
    async fn send_request(&mut self, _: (), cx: &Context<Self>) {
        self.events.fetch_add(1, Ordering::Relaxed);
        self.requests.send(self.service_units).await;
        let delay = Duration::from_nanos(self.timeout_units * self.unit_ns);
        let key = cx
            .schedule_keyed_event(delay, schedulable!(Self::time_out), ())
            .expect("the timeout is in the future");
        self.timeout = Some(key);
    }

    #[nexosim(schedulable)]
    fn time_out(&mut self) {
        self.events.fetch_add(1, Ordering::Relaxed);
        self.timeout = None;
    }

    fn reply(&mut self, service_units: u64, cx: &Context<Self>) {
        assert_eq!(
            service_units, self.service_units,
            "each reply answers its request"
        );
        if let Some(key) = self.timeout.take() {
            key.cancel();
        }
        self.think(cx);
    }
}

/// A W4 handler: on a request it waits the service time, then replies.
#[derive(Serialize, Deserialize)]
struct Server {
    replies: Output<u64>,
    unit_ns: u64,
    #[serde(skip)]
    events: Arc<AtomicU64>,
}

#[Model]
impl Server {
    fn request(&mut self, service_units: u64, cx: &Context<Self>) {
        let delay = Duration::from_nanos(service_units * self.unit_ns);
        cx.schedule_event(delay, schedulable!(Self::serve), service_units)
            .expect("a service time of at least 1 ms is in the future");
    }

    #[nexosim(schedulable)]
    async fn serve(&mut self, service_units: u64) {
        self.events.fetch_add(1, Ordering::Relaxed);
        self.replies.send(service_units).await;
    }
}

fn mix(mut bench: SimInit, shape: Mix, events: &Arc<AtomicU64>) -> SimInit {
    for client_id in 0..shape.clients {
        let mut client = Client {
            requests: Output::default(),
            stream: SplitMix64::for_task(client_id),
            remaining: shape.requests_per_client,
            service_units: 0,
            unit_ns: shape.unit_ns,
            timeout_units: shape.timeout_units,
            timeout: None,
            events: Arc::clone(events),
        };
        let mut server = Server {
            replies: Output::default(),
            unit_ns: shape.unit_ns,
            events: Arc::clone(events),
        };
        let (client_mailbox, server_mailbox) = (Mailbox::new(), Mailbox::new());
        client.requests.connect(Server::request, &server_mailbox);
        server.replies.connect(Client::reply, &client_mailbox);
        bench = bench
            .add_model(client, client_mailbox, &format!("client{client_id}"))
            .add_model(server, server_mailbox, &format!("server{client_id}"));
    }
    bench
}
