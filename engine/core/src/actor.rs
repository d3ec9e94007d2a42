//! The actor seam: the one way a task reaches outside itself.
//!
//! A task sends a request to a named actor; the actor decides the answer and its virtual
//! latency from its own state and its own RNG stream (forked from the seed by the actor's
//! name); the task resumes when the latency has passed. The request and the completion are
//! each a tape record (`request` and `reply`, payload `[operation, body]`). Capabilities (LLM,
//! filesystem, processes, network, MCP) are actors; the executor never knows which is which.

use std::any::Any;
use std::marker::PhantomData;

use serde::Serialize;

use crate::executor::with_core;
use crate::rng::RngStream;
use crate::tape::RecordKind;
use crate::time::Sleep;

/// The actor id of the engine itself (spawns, exits, tape meta records, the stop of an open
/// run).
pub const ENGINE_ACTOR: u16 = 0;
/// The actor id of the clock (timer wakes, `Host::wall_clock`).
pub const CLOCK_ACTOR: u16 = 1;
/// The actor id of the user-event actor (`Host::event`).
pub const EVENTS_ACTOR: u16 = 2;
/// The names of the built-in actors, indexed by their ids: every tape's actor table starts
/// with them.
pub(crate) const BUILTIN_ACTORS: [&str; 3] = ["engine", "clock", "events"];

/// What an actor sees while it answers a request.
#[derive(Debug)]
pub struct ActorContext<'a> {
    /// Virtual time of the request, in nanoseconds since the start of the run.
    pub now_ns: u64,
    /// The simulated wall clock, in nanoseconds since the Unix epoch.
    pub wall_clock_unix_ns: i64,
    /// The actor's own random stream.
    pub rng: &'a mut RngStream,
}

/// An actor's answer: the response and how much virtual time it takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer<T> {
    /// Virtual nanoseconds between the request and the completion.
    pub latency_ns: u64,
    /// The response.
    pub response: T,
}

/// A capability that answers requests in virtual time.
///
/// ```
/// use simtape::actor::{Actor, ActorContext, Answer};
///
/// #[derive(Clone)]
/// struct Dice;
/// impl Actor for Dice {
///     type Request = u64;
///     type Response = u64;
///     fn operation(&self, _: &u64) -> &'static str { "roll" }
///     fn handle(&mut self, sides: &u64, cx: &mut ActorContext<'_>) -> Answer<u64> {
///         Answer { latency_ns: 1_000, response: 1 + cx.rng.below(*sides) }
///     }
/// }
///
/// let mut builder = simtape::Sim::builder();
/// let dice = builder.seed(3).actor("dice", Dice);
/// let report = builder.build().unwrap().run(move |_host| async move {
///     dice.call(6).await
/// }).unwrap();
/// assert!((1..=6).contains(&report.output));
/// assert_eq!(report.summary.end_ns, 1_000);
/// ```
pub trait Actor: 'static {
    /// What a task asks.
    type Request: Serialize;
    /// What the actor answers.
    type Response: Serialize;
    /// Names the operation of `request` on the tape.
    fn operation(&self, request: &Self::Request) -> &'static str;
    /// Decides the response and its latency.
    fn handle(
        &mut self,
        request: &Self::Request,
        cx: &mut ActorContext<'_>,
    ) -> Answer<Self::Response>;
    /// Writes the body of `request`'s `request` record into `body` (MessagePack, rmp-serde's
    /// compact form) and returns `true`; or returns `false` to record `request` itself, which
    /// is the default. It runs right after [`Actor::handle`] answered `request`, so an actor
    /// can leave out what its earlier records already hold (the LLM actor records only the
    /// messages a conversation gained since the previous call).
    fn encode_request(&mut self, request: &Self::Request, body: &mut Vec<u8>) -> bool {
        let _ = (request, body);
        false
    }
}

/// One registered actor inside a running simulation.
pub(crate) struct ActorSlot {
    /// The actor's name, as in the tape's actor table.
    pub(crate) name: String,
    pub(crate) rng: RngStream,
    pub(crate) state: Option<Box<dyn Any>>,
}

/// A typed handle to a registered actor, valid inside the run it was registered for.
pub struct ActorRef<A> {
    id: u16,
    marker: PhantomData<fn() -> A>,
}

impl<A> Clone for ActorRef<A> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<A> Copy for ActorRef<A> {}

impl<A> std::fmt::Debug for ActorRef<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ActorRef").field("id", &self.id).finish()
    }
}

impl<A> ActorRef<A> {
    pub(crate) fn new(id: u16) -> Self {
        ActorRef {
            id,
            marker: PhantomData,
        }
    }

    /// Returns the actor id, as in the tape's actor table.
    pub fn id(&self) -> u16 {
        self.id
    }
}

impl<A: Actor> ActorRef<A> {
    /// Sends `request` and waits for the actor's answer, in virtual time.
    pub async fn call(&self, request: A::Request) -> A::Response {
        self.call_returning(request).await.1
    }

    /// Like [`ActorRef::call`], and hands the request back with the answer, so a caller that
    /// asks again with a little more (a growing conversation) need not copy it each time.
    pub(crate) async fn call_returning(&self, request: A::Request) -> (A::Request, A::Response) {
        let id = self.id;
        let (operation, answer) = with_core(|core| {
            let now_ns = core.now_ns;
            let wall_clock_unix_ns = core.start_unix_ns.saturating_add(now_ns as i64);
            let ordinal = core.recorder.records();
            let (actor, rng) = slot_parts::<A>(&mut core.actors[usize::from(id)]);
            rng.at_record(ordinal);
            let operation = actor.operation(&request);
            let mut cx = ActorContext {
                now_ns,
                wall_clock_unix_ns,
                rng,
            };
            let answer = actor.handle(&request, &mut cx);
            let mut body = Vec::new();
            if actor.encode_request(&request, &mut body) {
                core.record_operation_body(id, RecordKind::Request, operation, &body);
            } else {
                core.record_value(id, RecordKind::Request, &(operation, &request));
            }
            (operation, answer)
        });
        if answer.latency_ns > 0 {
            let deadline = with_core(|core| core.now_ns.saturating_add(answer.latency_ns));
            // The completion is the `reply` record below, so the wake itself is not recorded.
            Sleep::for_actor(deadline, id, false).await;
        }
        with_core(|core| core.record_value(id, RecordKind::Reply, &(operation, &answer.response)));
        (request, answer.response)
    }

    /// Runs `f` on the actor's state and its random stream, without a tape record: the seam
    /// for work an actor hands back to the calling task (a WASI guest runs there, not inside
    /// `handle`), which then writes its records with [`ActorRef::record`].
    pub(crate) fn with_state_and_rng<R>(&self, f: impl FnOnce(&mut A, &mut RngStream) -> R) -> R {
        with_core(|core| {
            let ordinal = core.recorder.records();
            let (actor, rng) = slot_parts::<A>(&mut core.actors[usize::from(self.id)]);
            rng.at_record(ordinal);
            f(actor, rng)
        })
    }

    /// Writes a `request` or `reply` record of this actor, payload `[operation, body]`, as
    /// [`ActorRef::call`] does.
    pub(crate) fn record<B: Serialize + ?Sized>(
        &self,
        kind: RecordKind,
        operation: &str,
        body: &B,
    ) {
        with_core(|core| core.record_value(self.id, kind, &(operation, body)));
    }

    /// Runs `f` on the actor's state (to inspect it after a run step, for instance).
    pub fn with_state<R>(&self, f: impl FnOnce(&mut A) -> R) -> R {
        self.with_state_and_rng(|actor, _| f(actor))
    }
}

/// Returns a slot's actor, as its type, and its random stream.
fn slot_parts<A: 'static>(slot: &mut ActorSlot) -> (&mut A, &mut RngStream) {
    let actor = slot
        .state
        .as_mut()
        .expect("an actor's state is present between calls")
        .downcast_mut::<A>()
        .expect("an ActorRef's type matches its slot");
    (actor, &mut slot.rng)
}

/// The clock actor: reads of the simulated wall clock and sleeps, both on the tape.
#[derive(Debug, Clone, Default)]
pub struct Clock;

/// A request to the [`Clock`].
#[derive(Debug, Clone, Serialize)]
pub enum ClockRequest {
    /// Read the simulated wall clock (nanoseconds since the Unix epoch).
    Now,
    /// Sleep for this many nanoseconds.
    Sleep(u64),
}

impl Actor for Clock {
    type Request = ClockRequest;
    type Response = i64;

    fn operation(&self, request: &ClockRequest) -> &'static str {
        match request {
            ClockRequest::Now => "now",
            ClockRequest::Sleep(_) => "sleep",
        }
    }

    fn handle(&mut self, request: &ClockRequest, cx: &mut ActorContext<'_>) -> Answer<i64> {
        let latency_ns = match request {
            ClockRequest::Now => 0,
            ClockRequest::Sleep(ns) => *ns,
        };
        let response = cx.wall_clock_unix_ns.saturating_add(latency_ns as i64);
        Answer {
            latency_ns,
            response,
        }
    }
}

/// The user-event actor: a pipeline logs structured events onto the tape.
#[derive(Debug, Clone, Default)]
pub struct Events {
    logged: u64,
}

/// A structured user event.
#[derive(Debug, Clone, Serialize)]
pub struct UserEvent {
    /// The event's name.
    pub name: String,
    /// Its fields, as a JSON value.
    pub fields: serde_json::Value,
}

impl Actor for Events {
    type Request = UserEvent;
    type Response = u64;

    fn operation(&self, _: &UserEvent) -> &'static str {
        "log"
    }

    fn handle(&mut self, _: &UserEvent, _: &mut ActorContext<'_>) -> Answer<u64> {
        self.logged += 1;
        Answer {
            latency_ns: 0,
            response: self.logged,
        }
    }
}
